package hostfill

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestDamagedPackHealed: a pack whose member fails verification does not
// keep its file from fresh hosts for good. The host whose fill refused it
// does not count the file as published, so once it has a verified copy of
// its own (JAX compiled it) its publisher publishes it again, and the
// next fresh host installs that copy. Before, every name in every index
// counted as published and the file was never sent again.
func TestDamagedPackHealed(t *testing.T) {
	for _, key := range [][]byte{nil, []byte("job key")} {
		t.Run(map[bool]string{false: "unsigned", true: "signed"}[key != nil], func(t *testing.T) {
			ctx := context.Background()
			store := memblob.New(memblob.Options{})
			a, b, c := newHost(t, key), newHost(t, key), newHost(t, key)
			for _, h := range []*hostDir{&a, &b, &c} {
				h.o.Kernels = false
			}
			rel := jaxKey("jit_f", 1) + "-cache"
			data := jaxEntry(t, jaxcache.CodecZlib, 2, []byte(strings.Repeat("executable ", 50)))
			a.write(t, rel, data)
			if err := newPublisher(store, a.o, nil).Publish(ctx, false); err != nil {
				t.Fatal(err)
			}
			// One byte of the member flips on the store.
			objs, _ := store.List(ctx, Prefix)
			for _, o := range objs {
				if strings.HasSuffix(o.Name, packSuffix) {
					pack, _ := store.Get(ctx, o.Name)
					pack = bytes.Clone(pack)
					pack[len(pack)-40] ^= 1
					store.PutRaw(o.Name, pack)
				}
			}
			st, err := fill(ctx, store, b.o)
			if err != nil || st.Files != 0 || st.Refused == 0 {
				t.Fatalf("fill of the damaged pack: %+v, %v", st, err)
			}
			if st.Remote[rel] {
				t.Fatalf("%s counts as published, though its only copy failed verification", rel)
			}
			b.write(t, rel, data) // b compiles it itself
			pb := newPublisher(store, b.o, st.Remote)
			if err := pb.Publish(ctx, false); err != nil || pb.Stats().Files != 1 {
				t.Fatalf("b did not republish %s: %+v, %v", rel, pb.Stats(), err)
			}
			st, err = fill(ctx, store, c.o)
			if got, _ := c.read(t, rel); err != nil || !bytes.Equal(got, data) {
				t.Fatalf("fresh host c did not get %s: %+v, %v", rel, st, err)
			}
		})
	}
}

// TestForgedIndexDoesNotSuppressPublish: with a signing key, an index
// nobody signed (anyone who can write the bucket can list the names a job
// will produce) does not make a host take those names as published: the
// host publishes its own verified copy. Before, it never did. Indexes this
// package writes under a key are signed, and do count.
func TestForgedIndexDoesNotSuppressPublish(t *testing.T) {
	ctx := context.Background()
	key := []byte("job key")
	store := memblob.New(memblob.Options{})
	h := newHost(t, key)
	h.o.Kernels = false
	rel := jaxKey("jit_f", 2) + "-cache"
	data := jaxEntry(t, jaxcache.CodecZlib, 2, []byte("the job's executable"))
	h.write(t, rel, data)
	// The forger lists rel (an unsigned member: they have no key).
	forged := plantPacks(t, store, 1, func(int) map[string][]byte { return map[string][]byte{rel: data} })
	if len(forged) != 1 {
		t.Fatal("nothing planted")
	}
	st, err := fill(ctx, store, h.o)
	if err != nil {
		t.Fatal(err)
	}
	if st.Remote[rel] {
		t.Fatalf("an unsigned index made %s count as published", rel)
	}
	p := newPublisher(store, h.o, st.Remote)
	if err := p.Publish(ctx, false); err != nil || p.Stats().Files != 1 {
		t.Fatalf("the host's copy was not published: %+v, %v", p.Stats(), err)
	}
	// Its own, signed, index counts from now on: nothing more to publish.
	st, err = fill(ctx, store, h.o)
	if err != nil || !st.Remote[rel] {
		t.Fatalf("a signed index of the job's key does not count: %+v, %v", st, err)
	}
	if names, err := remoteNames(ctx, store, h.o); err != nil || !names[rel] || len(names) != 1 {
		t.Fatalf("remoteNames: %v, %v", names, err)
	}
	// The index on the store is sealed under the key.
	objs, _ := store.List(ctx, Prefix)
	signed := 0
	for _, o := range objs {
		if strings.HasSuffix(o.Name, indexSuffix) {
			b, _ := store.Get(ctx, o.Name)
			id := strings.TrimSuffix(strings.TrimPrefix(o.Name, Prefix), indexSuffix)
			if _, trusted, err := openIndex(b, id, sign.NewHMAC(key)); err == nil && trusted {
				signed++
			}
			if _, trusted, _ := openIndex(b, id, sign.NewHMAC([]byte("another key"))); trusted {
				t.Errorf("%s trusted under another key", o.Name)
			}
		}
	}
	if signed != 1 {
		t.Errorf("%d signed indexes on the store, want 1 (the host's)", signed)
	}
}

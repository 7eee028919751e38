package dirsync

import (
	"bytes"
	"context"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
)

// pushedBounded populates a cache directory (entries signed with key,
// none when nil), opens it with a bound on the shared objects read and
// pushes it to a new in-memory store.
func pushedBounded(t *testing.T, key []byte, bound int64) (*memblob.Store, string, *cache.Cache) {
	t.Helper()
	store, dir, _ := populated(t, key)
	c := openBounded(t, dir, key, bound)
	if res, err := Push(context.Background(), c, store); err != nil || res.Entries != 3 {
		t.Fatalf("push: %+v %v", res, err)
	}
	return store, dir, c
}

// openBounded is openWith with a bound on the shared objects read.
func openBounded(t *testing.T, dir string, key []byte, bound int64) *cache.Cache {
	t.Helper()
	return openWith(t, dir, key, func(o *config.Options) { o.SharedMaxObjectSize = bound })
}

// Issue 10 item 8: `sync push` replaces a remote object that fails
// verification (or that no host can read, being over the size bound) with
// the local entry, conditionally on the damaged object's ETag, instead of
// skipping it because the name is taken.
func TestPushReplacesDamagedRemote(t *testing.T) {
	ctx := context.Background()
	key := []byte("sync-key")
	const bound = 1 << 20
	store, adir, a := pushedBounded(t, key, bound)
	ents, err := cache.List(ctx, adir)
	if err != nil || len(ents) != 3 {
		t.Fatalf("entries %v, %v", ents, err)
	}
	damaged := layout.ObjectName(ents[0].Tier, ents[0].Key)
	data, _ := store.Get(ctx, damaged)
	data[len(data)/2] ^= 0xFF
	store.PutRaw(damaged, data)
	huge := layout.ObjectName(ents[1].Tier, ents[1].Key)
	store.PutRaw(huge, bytes.Repeat([]byte{'x'}, 2*bound))

	res, err := Push(ctx, a, store)
	if err != nil || res.Replaced != 2 || res.Skipped != 1 || res.Entries != 0 {
		t.Fatalf("push over a damaged and an oversize object: %+v %v", res, err)
	}
	for i, name := range []string{damaged, huge} {
		got, err := store.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := entry.DecodeAs(got, ents[i].Key, sign.NewHMAC(key)); err != nil {
			t.Errorf("%s not repaired: %v", name, err)
		}
	}
	if store.Calls("replace") != 2 {
		t.Errorf("%d replaces, want 2", store.Calls("replace"))
	}
	// Now everything is sound: nothing more to replace, and identical
	// objects are recognised by their ETag without being downloaded.
	gets := store.Calls("get")
	if res, err := Push(ctx, a, store); err != nil || res.Replaced != 0 || res.Skipped != 3 {
		t.Fatalf("third push: %+v %v", res, err)
	}
	if n := store.Calls("get") - gets; n != 0 {
		t.Errorf("a push over identical objects downloaded %d of them", n)
	}
}

// Issue 10 item 4: `sync pull` refuses an object larger than the bound
// from its size, and copies the rest.
func TestPullRefusesOversize(t *testing.T) {
	ctx := context.Background()
	const bound = 1 << 20
	store, adir, _ := pushedBounded(t, nil, bound)
	ents, _ := cache.List(ctx, adir)
	store.PutRaw(layout.ObjectName(ents[0].Tier, ents[0].Key), bytes.Repeat([]byte{'x'}, 32*bound))
	b := openBounded(t, t.TempDir(), nil, bound)
	var res Result
	var err error
	n := memtest.Allocated(func() { res, err = Pull(ctx, b, store) })
	if err == nil || res.Refused != 1 || res.Entries != 2 {
		t.Fatalf("pull with an oversize object: %+v %v", res, err)
	}
	if n > 8*bound {
		t.Errorf("the pull allocated %d bytes: the %d-byte object was read before its size was checked", n, 32*bound)
	}
}

// Issue 20 item 5: a push with another key (a mistyped one) never
// replaces objects whose checksum holds but whose signature does not
// verify with it.
func TestPushLeavesObjectsSignedWithAnotherKey(t *testing.T) {
	ctx := context.Background()
	store, _, _ := pushedBounded(t, []byte("the right key"), 1<<20)
	before := map[string][]byte{}
	infos, err := store.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		before[in.Name], _ = store.Get(ctx, in.Name)
	}
	wrong := []byte("the rihgt key")
	_, bdir, _ := populated(t, wrong)
	b := openBounded(t, bdir, wrong, 1<<20)
	res, err := Push(ctx, b, store)
	if err != nil || res.Replaced != 0 {
		t.Fatalf("push with another key: %+v %v", res, err)
	}
	if n := store.Calls("replace"); n != 0 {
		t.Errorf("%d objects replaced by a host with another key", n)
	}
	for name, want := range before {
		if got, _ := store.Get(ctx, name); !bytes.Equal(got, want) {
			t.Errorf("%s was rewritten", name)
		}
	}
}

package cache

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
)

// Issue 10 items 4 and 8 at the cache's level: the bound on what is read
// from the shared tier, and the repair of damaged shared objects. The S3
// store is checked against versitygw in the root package and in
// internal/s3blob.

// sharedHost opens a cache on its own directory with the shared store,
// the XLA raw subcaches left out.
func sharedHost(t *testing.T, shared blob.Store, mod func(*config.Options), w *logBuffer) *Cache {
	t.Helper()
	o := testOptions(t.TempDir())
	o.Subcaches, o.SubcachesExplicit = nil, true
	if mod != nil {
		mod(&o)
	}
	if w == nil {
		return mustOpen(t, o, nil, WithShared(shared))
	}
	return mustOpen(t, o, w, WithShared(shared))
}

// publish compiles p on a fresh writer host, so that shared holds its
// executable, and returns the object's name and key.
func publish(t *testing.T, shared blob.Store, b *fakeBackend, p Program) (string, Key) {
	t.Helper()
	c := sharedHost(t, shared, nil, nil)
	_, r := compileOK(t, c, b, p)
	if !r.Stored {
		t.Fatalf("not stored: %+v", r)
	}
	k, err := keyFromText(r.Key)
	if err != nil {
		t.Fatal(err)
	}
	return layout.ObjectName(ExecutablesTier, k.String()), k
}

// Item 4: an object larger than the configured bound is a miss with one log
// line, refused from its size without being read; an object within the
// bound that is not an entry is refused after its header, without its body
// being read.
func TestSharedObjectSizeBound(t *testing.T) {
	shared := memblob.New(memblob.Options{})
	b := &fakeBackend{}
	p := Program{Name: "f", Text: []byte("planted")}
	name, key := publish(t, shared, b, p)
	const bound = 1 << 20
	shared.PutRaw(name, bytes.Repeat([]byte{'x'}, 8*bound))

	var logs logBuffer
	c := sharedHost(t, shared, func(o *config.Options) { o.SharedMaxObjectSize = bound }, &logs)
	tier := c.Tier(ExecutablesTier)
	var ok bool
	n := memtest.Allocated(func() { _, ok = tier.Get(context.Background(), key) })
	if ok {
		t.Fatal("an oversize shared object was a hit")
	}
	if n > bound/2 {
		t.Errorf("refusing an %d-byte object with a %d-byte bound allocated %d bytes: it was read", 8*bound, bound, n)
	}
	if got := c.Stats().Errors["toolarge"]; got != 1 {
		t.Errorf("errors %v, want toolarge 1", c.Stats().Errors)
	}
	// The compile goes on, and the oversize object costs one log line
	// however often it is met.
	compileOK(t, c, b, p)
	tier.Get(context.Background(), key)
	if got := strings.Count(logs.String(), "level=WARN"); got != 1 || !strings.Contains(logs.String(), config.EnvSharedMaxObjectSize) {
		t.Errorf("%d warnings, want one naming %s:\n%s", got, config.EnvSharedMaxObjectSize, logs.String())
	}

	// Within the bound but not an entry: refused from its first bytes.
	shared.PutRaw(name, bytes.Repeat([]byte{'y'}, bound/2))
	c2 := sharedHost(t, shared, func(o *config.Options) { o.SharedMaxObjectSize = bound }, nil)
	n = memtest.Allocated(func() { _, ok = c2.Tier(ExecutablesTier).Get(context.Background(), key) })
	if ok {
		t.Fatal("a foreign shared object was a hit")
	}
	if n > bound/8 {
		t.Errorf("refusing a foreign %d-byte object allocated %d bytes: its body was read before its header was checked", bound/2, n)
	}
	if c2.Stats().Errors["foreign"] != 1 {
		t.Errorf("errors %v, want foreign 1", c2.Stats().Errors)
	}
}

// damage flips a byte in the middle of name's object, as a foreign tool or
// a bad disk would, and returns the damaged bytes.
func damage(t *testing.T, shared *memblob.Store, name string) []byte {
	t.Helper()
	data, err := shared.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xFF
	shared.PutRaw(name, data)
	return data
}

func decodes(t *testing.T, shared blob.Store, name string, key Key) bool {
	t.Helper()
	data, err := shared.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	_, err = entry.DecodeAs(data, key.String(), nil)
	return err == nil
}

// Item 8: a damaged shared object is replaced by the next writer that
// compiles the program (conditional on the damaged object's ETag) and
// counted, so that later hosts hit instead of recompiling forever.
func TestSharedDamagedObjectReplaced(t *testing.T) {
	shared := memblob.New(memblob.Options{})
	b := &fakeBackend{}
	p := Program{Name: "f", Text: []byte("damaged in the bucket")}
	name, key := publish(t, shared, b, p)
	damaged := damage(t, shared, name)

	// A reader never writes the store: the object stays damaged.
	r := sharedHost(t, shared, func(o *config.Options) { o.Role = config.RoleReader }, nil)
	if _, rep := compileOK(t, r, b, p); rep.Hit {
		t.Fatal("a damaged shared object was a hit")
	}
	if got, _ := shared.Get(context.Background(), name); !bytes.Equal(got, damaged) {
		t.Fatal("a reader wrote the shared store")
	}

	// A writer refuses it, compiles, and replaces it.
	w := sharedHost(t, shared, nil, nil)
	if _, rep := compileOK(t, w, b, p); rep.Hit {
		t.Fatal("a damaged shared object was a hit")
	}
	if !decodes(t, shared, name, key) {
		t.Fatal("the damaged shared object was not replaced")
	}
	if e := w.Stats().Errors; e["replaced"] != 1 || e["corrupt"] != 1 {
		t.Errorf("errors %v, want corrupt 1 and replaced 1", e)
	}
	compiles := b.compiles.Load()

	// Every later host hits.
	for _, role := range []config.Role{config.RoleReader, config.RoleWriter} {
		h := sharedHost(t, shared, func(o *config.Options) { o.Role = role }, nil)
		if _, rep := compileOK(t, h, b, p); !rep.Hit || rep.Source != "shared" {
			t.Fatalf("%v after the repair: %+v", role, rep)
		}
	}
	if b.compiles.Load() != compiles {
		t.Errorf("%d compiles after the repair", b.compiles.Load()-compiles)
	}
}

// racingStore runs before, once, ahead of the first PutIfAbsent: another
// writer acting between a lookup and a publish.
type racingStore struct {
	*memblob.Store
	before func()
}

func (s *racingStore) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if f := s.before; f != nil {
		s.before = nil
		f()
	}
	return s.Store.PutIfAbsent(ctx, name, data)
}

// Item 8: the replacement is conditional. When another writer replaced the
// damaged object first, its object stays: this writer's replace fails its
// precondition and is not counted.
func TestSharedDamagedObjectReplacedOnce(t *testing.T) {
	mem := memblob.New(memblob.Options{})
	b := &fakeBackend{}
	p := Program{Name: "f", Text: []byte("replaced by another writer first")}
	name, key := publish(t, mem, b, p)
	good, err := mem.Get(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	damage(t, mem, name)
	other := append([]byte(nil), good...) // the other writer's copy
	race := &racingStore{Store: mem, before: func() { mem.PutRaw(name, other) }}
	w := sharedHost(t, race, nil, nil)
	if _, rep := compileOK(t, w, b, p); rep.Hit {
		t.Fatal("a damaged shared object was a hit")
	}
	if got, _ := mem.Get(context.Background(), name); !bytes.Equal(got, other) {
		t.Fatal("the other writer's good object was overwritten")
	}
	if !decodes(t, mem, name, key) {
		t.Fatal("the shared object does not decode")
	}
	if e := w.Stats().Errors; e["replaced"] != 0 {
		t.Errorf("errors %v: a replace that lost its precondition was counted", e)
	}
	if mem.Calls("replace") != 1 {
		t.Errorf("%d conditional replaces, want 1", mem.Calls("replace"))
	}
}

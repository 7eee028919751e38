package retention_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
	"github.com/xlacache/xlacache/internal/testsupport/sharedtest"
	"github.com/xlacache/xlacache/retention"
)

// bucketFixture is a bucket on a real server (versitygw or
// fake-gcs-server) holding n published entries.
type bucketFixture struct {
	srv   sharedtest.Server
	store blob.Store
	// aged, on a server whose clock tests cannot set (fake-gcs-server
	// stamps objects with its own), is store: it shifts the times the
	// server reports.
	aged   *agedStore
	prefix string
	keys   []cache.Key
	// payload is entry i's payload.
	payload func(i int) []byte
}

func (f *bucketFixture) open(t *testing.T, role config.Role) *cache.Cache {
	t.Helper()
	o := config.Defaults()
	o.Dir, o.Role, o.MinCompileTime = t.TempDir(), role, 0
	o.Subcaches, o.SubcachesExplicit = nil, true
	c, err := cache.Open(context.Background(), o, quiet(), cache.WithShared(nopClose{f.store}))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// age sets the LastModified of object name to age ago: on versitygw
// through the posix backend's file, whose modification time it reports;
// on fake-gcs-server, which keeps objects in memory, through the
// fixture's agedStore.
func (f *bucketFixture) age(t *testing.T, name string, age time.Duration) {
	t.Helper()
	at := time.Now().Add(-age)
	if f.aged != nil {
		f.aged.setAge(name, age)
	} else {
		p := filepath.Join(f.srv.(*s3test.Server).Root, "bkt", filepath.FromSlash(f.prefix), filepath.FromSlash(name))
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
	}
	in, err := f.store.Stat(context.Background(), name)
	if err != nil || in.ModTime.After(at.Add(time.Second)) {
		t.Fatalf("aging %s: the server reports %v (%v), want %v", name, in.ModTime, err, at)
	}
}

func newBucket(t *testing.T, k sharedtest.Kind, n int) *bucketFixture {
	t.Helper()
	srv := k.Start(t, "bkt")
	f := &bucketFixture{srv: srv, prefix: "team/cache"}
	f.store = sharedtest.Open(t, srv, "bkt", f.prefix)
	if k.Name != "s3" {
		f.aged = &agedStore{Store: f.store, age: map[string]time.Duration{}}
		f.store = f.aged
	}
	f.payload = func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 4096+i) }
	w := f.open(t, config.RoleWriter)
	for i := range n {
		k := key("train_step", i)
		if err := w.Tier(cache.ExecutablesTier).Put(context.Background(), k, f.payload(i), time.Second); err != nil {
			t.Fatal(err)
		}
		f.keys = append(f.keys, k)
	}
	w.Close()
	return f
}

// readers runs readers on the bucket until stop is closed: each looks
// every key up on the shared tier (a reader keeps no local copy) and
// fails the test on a hit with the wrong payload. It returns the hits and
// misses seen.
func (f *bucketFixture) readers(t *testing.T, n int, stop <-chan struct{}) (wait func() (hits, misses int64)) {
	var wg sync.WaitGroup
	var hits, misses atomic.Int64
	for range n {
		c := f.open(t, config.RoleReader)
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer c.Close()
			for {
				for i, k := range f.keys {
					select {
					case <-stop:
						return
					default:
					}
					got, ok := c.Tier(cache.ExecutablesTier).Get(context.Background(), k)
					switch {
					case !ok:
						misses.Add(1)
					case !bytes.Equal(got, f.payload(i)):
						t.Errorf("a reader got a wrong or partial payload for entry %d (%d bytes)", i, len(got))
						return
					default:
						hits.Add(1)
					}
				}
			}
		}()
	}
	return func() (int64, int64) { wg.Wait(); return hits.Load(), misses.Load() }
}

// TestPruneBucketByAgeWithReaders: against a real S3 and GCS server, `prune
// --shared --older-than` removes the entries not used for the age (by
// LastModified, or by the usage marker a writer's hit refreshed) while
// readers keep hitting every entry: no reader ever sees a partial or wrong
// object (a removed one is a miss), and nothing used within the threshold
// goes.
func TestPruneBucketByAgeWithReaders(t *testing.T) {
	sharedtest.Run(t, testPruneBucketByAgeWithReaders)
}

func testPruneBucketByAgeWithReaders(t *testing.T, k sharedtest.Kind) {
	ctx := context.Background()
	f := newBucket(t, k, 12)
	const day = 24 * time.Hour
	// Entries 0-5 were published 40 days ago, 6-11 yesterday.
	for i := range 6 {
		f.age(t, obj(f.keys[i]), 40*day)
	}
	for i := 6; i < 12; i++ {
		f.age(t, obj(f.keys[i]), day)
	}
	// A writer on another host used entries 0 and 1 today: their markers.
	w := f.open(t, config.RoleWriter)
	for _, i := range []int{0, 1} {
		if got, ok := w.Tier(cache.ExecutablesTier).Get(ctx, f.keys[i]); !ok || !bytes.Equal(got, f.payload(i)) {
			t.Fatalf("writer hit %d: %v", i, ok)
		}
	}
	w.Close()
	for _, i := range []int{0, 1} {
		if _, err := f.store.Stat(ctx, layout.UsedMarker(obj(f.keys[i]))); err != nil {
			t.Fatalf("no usage marker for entry %d after a writer's hit: %v", i, err)
		}
	}
	stop := make(chan struct{})
	wait := f.readers(t, 4, stop)
	res, err := retention.Prune(ctx, f.store, retention.Options{OlderThan: 30 * day, Logger: quiet()})
	close(stop)
	hits, misses := wait()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 2; i < 6; i++ {
		want = append(want, obj(f.keys[i]))
	}
	slices.Sort(want)
	got := slices.Clone(res.Removed)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("removed %v\nwant the unused 40-day-old entries %v", got, want)
	}
	for i, k := range f.keys {
		_, err := f.store.Stat(ctx, obj(k))
		if gone := err != nil; gone != (i >= 2 && i < 6) {
			t.Errorf("entry %d: gone %v after the prune", i, gone)
		}
	}
	t.Logf("readers during the prune: %d hits, %d misses", hits, misses)
	if hits == 0 {
		t.Error("the readers never hit: the test did not exercise concurrent reads")
	}
}

// TestPruneBucketBySizeWithReaders: `prune --shared --max-size` removes
// least recently used entries first until the rest fit, with readers
// hitting concurrently; the entries a writer used recently stay although
// they were published first.
func TestPruneBucketBySizeWithReaders(t *testing.T) {
	sharedtest.Run(t, testPruneBucketBySizeWithReaders)
}

func testPruneBucketBySizeWithReaders(t *testing.T, k sharedtest.Kind) {
	ctx := context.Background()
	f := newBucket(t, k, 10)
	const hour = time.Hour
	// Entry i was published (10-i) hours ago: 0 is the oldest.
	for i, k := range f.keys {
		f.age(t, obj(k), time.Duration(10-i)*hour)
	}
	// Entries 0 and 1 were used just now by a writer.
	w := f.open(t, config.RoleWriter)
	for _, i := range []int{0, 1} {
		if _, ok := w.Tier(cache.ExecutablesTier).Get(ctx, f.keys[i]); !ok {
			t.Fatalf("writer missed %d", i)
		}
	}
	w.Close()
	var total int64
	sizes := map[string]int64{}
	objs, _, err := retention.Scan(ctx, f.store)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		total += o.Size
		sizes[o.Name] = o.Size
	}
	// Room for about half: 2..6 (the least recently used) must go.
	bound := total
	for i := 2; i < 7; i++ {
		bound -= sizes[obj(f.keys[i])]
	}
	stop := make(chan struct{})
	wait := f.readers(t, 4, stop)
	res, err := retention.Prune(ctx, f.store, retention.Options{MaxSize: bound, Logger: quiet()})
	close(stop)
	hits, _ := wait()
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for i := 2; i < 7; i++ {
		want = append(want, obj(f.keys[i]))
	}
	if !slices.Equal(res.Removed, want) || res.After != bound || res.Markers != 0 {
		t.Errorf("removed %v (after %d, markers %d)\nwant %v (after %d)", res.Removed, res.After, res.Markers, want, bound)
	}
	if hits == 0 {
		t.Error("the readers never hit")
	}
	t.Logf("%d entries, %d bytes -> %d; readers hit %d times meanwhile", res.Objects, res.Bytes, res.After, hits)
}

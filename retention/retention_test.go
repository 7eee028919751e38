package retention_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/retention"
)

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// agedStore reports objects as modified age[name] earlier than they were,
// standing in for time passing on a store whose clock tests cannot set.
// onStat, when set, runs before each Stat (a concurrent writer's turn).
type agedStore struct {
	blob.Store
	mu     sync.Mutex
	age    map[string]time.Duration
	onStat func(name string)
}

func (s *agedStore) setAge(name string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.age[name] = d
}

func (s *agedStore) shift(in blob.Info) blob.Info {
	s.mu.Lock()
	defer s.mu.Unlock()
	in.ModTime = in.ModTime.Add(-s.age[in.Name])
	return in
}

func (s *agedStore) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	l, err := s.Store.List(ctx, prefix)
	for i := range l {
		l[i] = s.shift(l[i])
	}
	return l, err
}

func (s *agedStore) Stat(ctx context.Context, name string) (blob.Info, error) {
	if s.onStat != nil {
		s.onStat(name)
	}
	in, err := s.Store.Stat(ctx, name)
	return s.shift(in), err
}

// key returns a valid cache key of module m.
func key(m string, i int) cache.Key {
	return cache.NewKey(m, []cache.KeyPart{{Name: "program", Data: []byte(fmt.Sprint(i))}})
}

func obj(k cache.Key) string { return layout.ObjectName(cache.ExecutablesTier, k.String()) }

// TestPruneByAgeAndSize: the age rule removes what was last used before
// the threshold, by the later of the object's and its marker's times; the
// size rule then removes least recently used first; other objects in the
// bucket are never touched; orphaned markers go; a dry run removes
// nothing and reports the same.
func TestPruneByAgeAndSize(t *testing.T) {
	ctx := context.Background()
	mem := memblob.New(memblob.Options{})
	s := &agedStore{Store: mem, age: map[string]time.Duration{}}
	const day = 24 * time.Hour
	// Entry i was published 10*i days ago; entry 4 (oldest) was used a
	// day ago per its marker.
	var names []string
	for i := range 5 {
		n := obj(key("f", i))
		if err := s.PutIfAbsent(ctx, n, make([]byte, 100)); err != nil {
			t.Fatal(err)
		}
		s.setAge(n, time.Duration(i)*10*day)
		names = append(names, n)
	}
	s.PutIfAbsent(ctx, layout.UsedMarker(names[4]), []byte("2026-01-01\n"))
	s.setAge(layout.UsedMarker(names[4]), day)
	// Not xlacache entries: never touched, however old.
	others := []string{"xla_gpu_per_fusion_autotune_cache_dir/QUJD.textproto", "xla_gpu_kernel_cache_file.parts/ab", "leases/" + obj(key("held", 0)), "hostfill/v1/abc.pack", "notes.txt"}
	for _, n := range others {
		s.PutIfAbsent(ctx, n, []byte("x"))
		s.setAge(n, 400*day)
	}
	orphan := layout.UsedMarker(obj(key("gone", 0)))
	s.PutIfAbsent(ctx, orphan, []byte("x"))
	s.setAge(orphan, 2*day)

	dry, err := retention.Prune(ctx, s, retention.Options{OlderThan: 25 * day, DryRun: true, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if mem.Len() != 12 {
		t.Fatalf("dry run removed objects: %d left", mem.Len())
	}
	res, err := retention.Prune(ctx, s, retention.Options{OlderThan: 25 * day, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	// 30 and 20... days: entries 3 (30d); entry 4 was used a day ago.
	want := []string{names[3]}
	if !slices.Equal(res.Removed, want) || !slices.Equal(dry.Removed, want) || res.Objects != 5 || res.Bytes != 500 || res.After != 400 {
		t.Errorf("age prune removed %v (dry run %v), result %+v; want %v", res.Removed, dry.Removed, res, want)
	}
	if res.Markers != 1 {
		t.Errorf("markers removed %d, want the orphan", res.Markers)
	}
	for _, n := range others {
		if _, err := mem.Stat(ctx, n); err != nil {
			t.Errorf("pruned %s, which is not an xlacache entry: %v", n, err)
		}
	}
	// Size: keep 200 bytes: the least recently used go first: 2 (20d),
	// then 1 (10d); 0 (now) and 4 (used a day ago) stay.
	res, err = retention.Prune(ctx, s, retention.Options{MaxSize: 200, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{names[2], names[1]}; !slices.Equal(res.Removed, want) || res.After != 200 {
		t.Errorf("size prune removed %v, after %d; want %v", res.Removed, res.After, want)
	}
	if _, err := mem.Stat(ctx, names[4]); err != nil {
		t.Errorf("the entry used a day ago went: %v", err)
	}
	if _, err := retention.Prune(ctx, s, retention.Options{}); err == nil {
		t.Error("a prune with neither rule did not fail")
	}
	// Entry 0 was published just now: the size rule leaves it, and
	// reports the bound unmet. The age rule still applies to what is
	// older than its age, whatever SizeGrace.
	res, err = retention.Prune(ctx, s, retention.Options{MaxSize: 1, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{names[4]}; !slices.Equal(res.Removed, want) || !res.Short || res.After != 100 {
		t.Errorf("size prune to 1 byte removed %v, after %d, short %v; want %v removed and entry 0 kept", res.Removed, res.After, res.Short, want)
	}
	s.setAge(names[0], 2*time.Minute)
	res, err = retention.Prune(ctx, s, retention.Options{OlderThan: time.Minute, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{names[0]}; !slices.Equal(res.Removed, want) || res.Short {
		t.Errorf("age prune at a minute removed %v (short %v); want %v", res.Removed, res.Short, want)
	}
}

// TestPruneRechecks: an object used (marker refreshed) or rewritten
// between the listing and its removal stays.
func TestPruneRechecks(t *testing.T) {
	ctx := context.Background()
	mem := memblob.New(memblob.Options{})
	s := &agedStore{Store: mem, age: map[string]time.Duration{}}
	used, rewritten, old := obj(key("u", 0)), obj(key("r", 0)), obj(key("o", 0))
	for _, n := range []string{used, rewritten, old} {
		s.PutIfAbsent(ctx, n, []byte("data"))
		s.setAge(n, 60*24*time.Hour)
	}
	// A writer's hit refreshes used's marker, and rewritten is replaced,
	// just as the prune is about to look at them again.
	s.onStat = func(name string) {
		switch name {
		case used:
			mem.PutIfAbsent(ctx, layout.UsedMarker(used), []byte("today\n"))
		case rewritten:
			s.setAge(rewritten, 0)
		}
	}
	res, err := retention.Prune(ctx, s, retention.Options{OlderThan: 30 * 24 * time.Hour, Logger: quiet()})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(res.Removed, []string{old}) || len(res.Kept) != 2 {
		t.Errorf("removed %v, kept %+v; want only %s removed", res.Removed, res.Kept, old)
	}
}

// TestUsageMarkers: a writer's hit on the shared tier writes the object's
// usage marker once (a second hit in the same process asks the store
// nothing more), a hit on a fresh marker only looks at it, and a reader's
// hits write nothing.
func TestUsageMarkers(t *testing.T) {
	ctx := context.Background()
	mem := memblob.New(memblob.Options{})
	open := func(role config.Role) *cache.Cache {
		o := config.Defaults()
		o.Dir, o.Role, o.MinCompileTime = t.TempDir(), role, 0
		o.Subcaches, o.SubcachesExplicit = nil, true
		c, err := cache.Open(ctx, o, quiet(), cache.WithShared(nopClose{mem}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	k := key("m", 1)
	w := open(config.RoleWriter)
	if err := w.Tier(cache.ExecutablesTier).Put(ctx, k, []byte("payload"), time.Second); err != nil {
		t.Fatal(err)
	}
	w.Close()
	if _, err := mem.Stat(ctx, layout.UsedMarker(obj(k))); err == nil {
		t.Fatal("publishing wrote a usage marker: the object's own time says as much")
	}

	r := open(config.RoleReader)
	for range 3 {
		if _, ok := r.Tier(cache.ExecutablesTier).Get(ctx, k); !ok {
			t.Fatal("reader missed")
		}
	}
	r.Close()
	if n := mem.Calls("put") + mem.Calls("replace"); n != 1 {
		t.Errorf("a reader's hits wrote to the store (%d writes)", n-1)
	}

	// Hits on two fresh writers (no local copy: every lookup goes to the
	// shared tier).
	for round := range 2 {
		stats := mem.Calls("stat")
		w := open(config.RoleWriter)
		o := w.Options()
		for range 3 {
			// Remove the local copy so that the hit is on the shared tier.
			if _, ok := w.Tier(cache.ExecutablesTier).Get(ctx, k); !ok {
				t.Fatal("writer missed")
			}
			removeLocal(t, o.Dir, k)
		}
		w.Close()
		if got := mem.Calls("stat") - stats; got != 1 {
			t.Errorf("round %d: %d marker lookups for 3 hits, want 1", round, got)
		}
		if _, err := mem.Stat(ctx, layout.UsedMarker(obj(k))); err != nil {
			t.Fatalf("round %d: no usage marker after a writer's hit: %v", round, err)
		}
		if n := mem.Calls("put") + mem.Calls("replace"); n != 2 {
			t.Errorf("round %d: %d writes in all, want the entry and one marker", round, n)
		}
	}
}

// nopClose keeps a cache's Close from closing the shared store the test
// reuses.
type nopClose struct{ blob.Store }

func (nopClose) Close() error { return nil }

var _ io.Closer = nopClose{}

// gatedMarkers holds every Stat of a usage marker until gate is closed.
type gatedMarkers struct {
	blob.Store
	gate chan struct{}
}

func (s gatedMarkers) Stat(ctx context.Context, name string) (blob.Info, error) {
	if strings.HasPrefix(name, layout.UsedPrefix) {
		select {
		case <-s.gate:
		case <-ctx.Done():
			return blob.Info{}, ctx.Err()
		}
	}
	return s.Store.Stat(ctx, name)
}

func (gatedMarkers) Close() error { return nil }

// A burst of shared hits, more than the refreshes that run at once, marks
// every entry, not just the first few: a job that fetches its programs in
// the same order every run would otherwise keep marking the same ones,
// and the others would age out of the bucket while in use.
func TestUsageMarkersBurst(t *testing.T) {
	ctx := context.Background()
	mem := memblob.New(memblob.Options{})
	open := func(st blob.Store) *cache.Cache {
		o := config.Defaults()
		o.Dir, o.Role, o.MinCompileTime = t.TempDir(), config.RoleWriter, 0
		o.Subcaches, o.SubcachesExplicit = nil, true
		c, err := cache.Open(ctx, o, quiet(), cache.WithShared(st))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	const n = 40
	w := open(nopClose{mem})
	for i := range n {
		if err := w.Tier(cache.ExecutablesTier).Put(ctx, key("burst", i), []byte("payload"), time.Second); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()

	st := gatedMarkers{Store: mem, gate: make(chan struct{})}
	w = open(st)
	for i := range n {
		if _, ok := w.Tier(cache.ExecutablesTier).Get(ctx, key("burst", i)); !ok {
			t.Fatalf("entry %d missed", i)
		}
	}
	// Every refresh so far is stuck on its marker's Stat; let them go.
	close(st.gate)
	w.Close()
	for i := range n {
		if _, err := mem.Stat(ctx, layout.UsedMarker(obj(key("burst", i)))); err != nil {
			t.Errorf("entry %d hit but not marked: %v", i, err)
		}
	}
}

// Close does not wait for a store that never answers a marker's refresh:
// the queue gets a bounded time after Close begins, then is dropped.
func TestUsageMarkersCloseWithStuckStore(t *testing.T) {
	ctx := context.Background()
	mem := memblob.New(memblob.Options{})
	o := config.Defaults()
	o.Dir, o.Role, o.MinCompileTime = t.TempDir(), config.RoleWriter, 0
	o.Subcaches, o.SubcachesExplicit = nil, true
	w, err := cache.Open(ctx, o, quiet(), cache.WithShared(nopClose{mem}))
	if err != nil {
		t.Fatal(err)
	}
	k := key("stuck", 0)
	if err := w.Tier(cache.ExecutablesTier).Put(ctx, k, []byte("payload"), time.Second); err != nil {
		t.Fatal(err)
	}
	w.Close()
	o.Dir = t.TempDir()
	st := gatedMarkers{Store: mem, gate: make(chan struct{})} // never opened
	w, err = cache.Open(ctx, o, quiet(), cache.WithShared(st))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		if err := w.Tier(cache.ExecutablesTier).Put(ctx, key("stuck", i+1), []byte("payload"), time.Second); err != nil {
			t.Fatal(err)
		}
		removeLocal(t, o.Dir, key("stuck", i+1))
	}
	for i := range 11 {
		if _, ok := w.Tier(cache.ExecutablesTier).Get(ctx, key("stuck", i)); !ok {
			t.Fatalf("entry %d missed", i)
		}
	}
	w.Close() // returns: a hang fails the test by its timeout
	if _, err := mem.Stat(ctx, layout.UsedMarker(obj(k))); err == nil {
		t.Fatal("a marker was written through a store that never answered")
	}
}

package hostfill

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
)

// packNames lists the pack and index objects on store.
func packNames(t *testing.T, store blob.Store) (packs, indexes int) {
	t.Helper()
	objs, err := store.List(context.Background(), Prefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range objs {
		switch {
		case strings.HasSuffix(o.Name, packSuffix):
			packs++
		case strings.HasSuffix(o.Name, indexSuffix):
			indexes++
		}
	}
	return packs, indexes
}

// TestPrunePacksByAge: packs older than the age go with their indexes,
// younger ones stay, a dry run removes nothing, and a fill afterwards
// installs what the remaining packs hold without error.
func TestPrunePacksByAge(t *testing.T) {
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	a := newHost(t, nil)
	a.o.Kernels = false
	a.write(t, autotuneName(1), []byte("results { old: 1 }\n"))
	if err := newPublisher(store, a.o, nil).Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	a.write(t, autotuneName(2), []byte("results { young: 1 }\n"))
	if err := newPublisher(store, a.o, map[string]bool{autotuneName(1): true}).Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	if p, i := packNames(t, store); p != 2 || i != 2 {
		t.Fatalf("%d packs, %d indexes published, want 2 and 2", p, i)
	}
	// An hour later, with an age between the two publishes.
	objs, _ := store.List(ctx, Prefix)
	var first, last time.Time
	for _, o := range objs {
		if strings.HasSuffix(o.Name, packSuffix) {
			if first.IsZero() || o.ModTime.Before(first) {
				first = o.ModTime
			}
			if o.ModTime.After(last) {
				last = o.ModTime
			}
		}
	}
	if !last.After(first) {
		t.Skip("the store's clock gave both publishes one time")
	}
	at := time.Now().Add(time.Hour)
	later := func() time.Time { return at }
	age := at.Sub(first.Add(last.Sub(first) / 2))
	dry, err := PrunePacks(ctx, store, PruneOptions{OlderThan: age, Now: later, DryRun: true})
	if err != nil || len(dry.Removed) != 1 || dry.Packs != 2 {
		t.Fatalf("dry run: %+v, %v", dry, err)
	}
	if p, _ := packNames(t, store); p != 2 {
		t.Fatalf("a dry run removed packs")
	}
	res, err := PrunePacks(ctx, store, PruneOptions{OlderThan: age, Now: later})
	if err != nil || len(res.Removed) != 1 || res.RemovedBytes <= 0 || len(res.Kept) != 0 {
		t.Fatalf("prune: %+v, %v", res, err)
	}
	if p, i := packNames(t, store); p != 1 || i != 1 {
		t.Fatalf("left %d packs, %d indexes, want 1 and 1", p, i)
	}
	b := newHost(t, nil)
	b.o.Kernels = false
	st, err := fill(ctx, store, b.o)
	if err != nil || st.Files != 1 || st.Refused != 0 {
		t.Fatalf("fill after the prune: %+v, %v", st, err)
	}
	if _, ok := b.read(t, autotuneName(2)); !ok {
		t.Error("the young pack's file was not filled")
	}
	if _, ok := b.read(t, autotuneName(1)); ok {
		t.Error("the pruned pack's file was filled")
	}
	// The writer's next run publishes what the store no longer has.
	names, err := remoteNames(ctx, store, a.o)
	if err != nil || names[autotuneName(1)] || !names[autotuneName(2)] {
		t.Fatalf("remote names after the prune: %v, %v", names, err)
	}
	if _, err := PrunePacks(ctx, store, PruneOptions{}); err == nil {
		t.Error("PrunePacks without an age succeeded")
	}
}

// TestPrunePacksOrphans: half a pack (an index without its pack, a pack
// without its index) goes once old; a fresh one, which may be a publish
// in progress, stays.
func TestPrunePacksOrphans(t *testing.T) {
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	m, err := Seal(autotuneName(1), []byte("results { a: 1 }\n"), nil)
	if err != nil {
		t.Fatal(err)
	}
	pack, index, err := EncodePack([]Member{m})
	if err != nil {
		t.Fatal(err)
	}
	_, in := ObjectNames(pack)
	store.PutIfAbsent(ctx, in, index) // its pack never arrived
	m2, _ := Seal(autotuneName(2), []byte("results { b: 1 }\n"), nil)
	pack2, _, _ := EncodePack([]Member{m2})
	pn2, _ := ObjectNames(pack2)
	store.PutIfAbsent(ctx, pn2, pack2) // its index never arrived
	res, err := PrunePacks(ctx, store, PruneOptions{OlderThan: time.Hour})
	if err != nil || res.Orphans != 0 {
		t.Fatalf("fresh halves: %+v, %v", res, err)
	}
	res, err = PrunePacks(ctx, store, PruneOptions{OlderThan: time.Hour, Now: func() time.Time { return time.Now().Add(25 * time.Hour) }})
	if err != nil || res.Orphans != 2 {
		t.Fatalf("old halves: %+v, %v", res, err)
	}
	if p, i := packNames(t, store); p+i != 0 {
		t.Errorf("left %d packs and %d indexes", p, i)
	}
}

// vanishingStore removes every pack right after a fill lists them: the
// fill lost the race with a prune.
type vanishingStore struct {
	blob.Store
	fired atomic.Bool
}

func (v *vanishingStore) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	objs, err := v.Store.List(ctx, prefix)
	if err == nil && prefix == Prefix && !v.fired.Swap(true) {
		for _, o := range objs {
			if strings.HasSuffix(o.Name, packSuffix) {
				v.Store.Delete(ctx, o.Name)
			}
		}
	}
	return objs, err
}

// TestFillSkipsPrunedPack: a fill that listed a pack a prune then removed
// installs nothing from it, refuses nothing, and reports no error.
func TestFillSkipsPrunedPack(t *testing.T) {
	ctx := context.Background()
	mem := memblob.New(memblob.Options{})
	a := newHost(t, nil)
	a.o.Kernels = false
	a.write(t, autotuneName(1), []byte("results { a: 1 }\n"))
	if err := newPublisher(mem, a.o, nil).Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	b := newHost(t, nil)
	b.o.Kernels = false
	st, err := fill(ctx, &vanishingStore{Store: mem}, b.o)
	if err != nil || st.Files != 0 || st.Refused != 0 || st.Indexes != 1 {
		t.Fatalf("fill: %+v, %v", st, err)
	}
	if _, ok := b.read(t, autotuneName(1)); ok {
		t.Error("a file of the removed pack appeared")
	}
}

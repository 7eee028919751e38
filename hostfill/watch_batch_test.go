package hostfill

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
)

// waitFor polls cond until it holds (30 s at most).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond) // polling a condition another goroutine sets
	}
}

// held reports whether the publisher has taken rel: sent, or sealed and
// waiting to be.
func (p *Publisher) held(rel string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done[rel] || p.pendingNames[rel]
}

// TestWatchRescansWhatChanged: after a burst of events the watcher looks
// at the files the events named, not the whole directory (2,000 files
// looked at again for each new one before).
func TestWatchRescansWhatChanged(t *testing.T) {
	const existing = 2000
	h := newHost(t, nil)
	h.o.Kernels = false
	for i := range existing {
		h.write(t, autotuneName(i), []byte(fmt.Sprintf("results { run: %d }\n", i)))
	}
	store := memblob.New(memblob.Options{})
	p := newPublisher(store, h.o, nil)
	if err := p.Publish(context.Background(), false); err != nil || p.Stats().Files != existing {
		t.Fatalf("%+v %v", p.Stats(), err)
	}
	defer startWatch(p, WatchOptions{Dir: h.path, Poll: time.Hour, Settle: 10 * time.Millisecond, BatchDelay: time.Millisecond})()
	waitFor(t, "the watcher's first scan", func() bool { return p.Stats().Examined >= 2*existing })
	before := p.Stats().Examined
	for i := existing; i < existing+5; i++ {
		rel := autotuneName(i)
		h.write(t, rel, []byte("results { new: 1 }\n"))
		waitFor(t, rel, func() bool { return p.held(rel) })
	}
	if n := p.Stats().Examined - before; n > 50 {
		t.Errorf("5 new files made the watcher look at %d files: it rescanned the directory", n)
	}
}

// TestWatchBatchesPacks: files that appear one by one while the job runs
// are sent together, by size and time, not one pack per file (30 packs for
// 30 files before, 61 requests for a fresh host to fetch them).
func TestWatchBatchesPacks(t *testing.T) {
	h := newHost(t, nil)
	h.o.Kernels = false
	h.write(t, autotuneName(0), []byte("results { before: 1 }\n")) // the autotune directory exists
	store := memblob.New(memblob.Options{})
	p := newPublisher(store, h.o, nil)
	stop := startWatch(p, WatchOptions{Dir: h.path, Poll: time.Hour, Settle: 10 * time.Millisecond, BatchDelay: time.Hour})
	for i := 1; i <= 30; i++ {
		rel := autotuneName(i)
		h.write(t, rel, []byte(fmt.Sprintf("results { during: %d }\n", i)))
		waitFor(t, rel, func() bool { return p.held(rel) })
	}
	stop()
	if err := p.Publish(context.Background(), true); err != nil {
		t.Fatal(err)
	}
	st := p.Stats()
	if st.Files != 31 || st.Packs > 2 {
		t.Errorf("31 files in %d packs (%+v): want them batched", st.Packs, st)
	}
	// A full pack is sent at once, without waiting for the delay.
	h2 := newHost(t, nil)
	h2.o.Kernels, h2.o.PackFiles = false, 4
	h2.write(t, autotuneName(0), []byte("results { before: 1 }\n"))
	p2 := newPublisher(store, h2.o, nil)
	defer startWatch(p2, WatchOptions{Dir: h2.path, Poll: time.Hour, Settle: 10 * time.Millisecond, BatchDelay: time.Hour})()
	for i := 100; i < 108; i++ {
		h2.write(t, autotuneName(i), []byte(fmt.Sprintf("results { during: %d }\n", i)))
	}
	waitFor(t, "two full packs sent", func() bool { return p2.Stats().Packs >= 2 })
}

// TestScanPathsListsEachFileOnce: a file named by an event and also under
// a directory named by another is listed once; twice, it would make a
// pack that names a file twice, which every reader refuses.
func TestScanPathsListsEachFileOnce(t *testing.T) {
	h := newHost(t, nil)
	rel := autotuneName(1)
	h.write(t, rel, []byte("results { a: 1 }\n"))
	files, err := scanPaths(context.Background(), h.o.Root, []string{"xla_gpu_per_fusion_autotune_cache_dir", rel, "."})
	if err != nil || len(files) != 1 {
		t.Fatalf("%d files listed (%v), want 1", len(files), err)
	}
}

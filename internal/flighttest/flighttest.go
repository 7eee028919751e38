// Package flighttest is the conformance suite of xlacache's single-flight
// implementations (cache.Flight), as internal/blobtest is for stores: the
// lease files of internal/lease, the lease objects of internal/blobflight
// and the two-level combination of the root package all run it, so that
// the one protocol they implement behaves the same over every medium.
//
// The contract, in the words of cache.Flight: Acquire returns nil once
// ready() reports the entry present; a real release when this flight now
// holds the claim; a no-op release when the caller should compile by
// itself (the wait ran out, claims are impossible, the holder released
// without publishing). The error is non-nil only when ctx is done.
package flighttest

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Flight is what the suite tests: cache.Flight (not imported, so that the
// packages cache depends on can run the suite in their tests).
type Flight interface {
	Acquire(ctx context.Context, name string, ready func() bool) (release func(), err error)
}

// Options are what a case asks of a flight it makes.
type Options struct {
	// Stale is the stale interval (heartbeat Stale/4).
	Stale time.Duration
	// Wait bounds Acquire's wait; negative: do not wait.
	Wait time.Duration
	// ReaderGrace bounds a reader's wait while no lease exists.
	ReaderGrace time.Duration
	// Reader makes the flight one that never claims.
	Reader bool
}

// Medium makes flights that share one medium (a directory, a store, or
// both): each flight stands for one process or host.
type Medium struct {
	// New returns a new flight on the medium.
	New func(t *testing.T, o Options) Flight
	// Abandon leaves a lease on name whose holder is dead: it never
	// refreshes it and never releases it.
	Abandon func(t *testing.T, name string)
}

// Run runs the suite; setup returns a fresh medium for each case.
func Run(t *testing.T, setup func(t *testing.T) Medium) {
	cases := []struct {
		name string
		run  func(t *testing.T, m Medium)
	}{
		{"ReadyFirst", testReadyFirst},
		{"OneOfManyCompiles", testOneOfManyCompiles},
		{"ReleaseWithoutPublishing", testReleaseWithoutPublishing},
		{"WaitIsBounded", testWaitIsBounded},
		{"NoWait", testNoWait},
		{"Cancel", testCancel},
		{"ReaderNeverClaims", testReaderNeverClaims},
		{"ReaderWaitsForWriter", testReaderWaitsForWriter},
		{"LiveHolderNotTakenOver", testLiveHolderNotTakenOver},
		{"DeadHolderTakenOverOnce", testDeadHolderTakenOverOnce},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { c.run(t, setup(t)) })
	}
}

// name is the flight name every case uses: an entry object's name, which
// is also what the cache passes.
const name = "executables/flighttest-0000000000000000000000000000000000000000000000000000000000000000"

// long is a bound no case should reach: a stale interval or wait that
// must not end during the case.
const long = 20 * time.Second

// entry is a published flag standing for the entry in the cache.
type entry struct{ ok atomic.Bool }

func (e *entry) ready() bool { return e.ok.Load() }

// result is one Acquire's outcome.
type result struct {
	release func()
	err     error
	took    time.Duration
}

// acquire runs Acquire in the background.
func acquire(ctx context.Context, f Flight, ready func() bool) <-chan result {
	ch := make(chan result, 1)
	go func() {
		start := time.Now()
		rel, err := f.Acquire(ctx, name, ready)
		ch <- result{rel, err, time.Since(start)}
	}()
	return ch
}

// hold makes a flight claim name and fails the test if it does not.
func hold(t *testing.T, m Medium, o Options, e *entry) func() {
	t.Helper()
	rel, err := m.New(t, o).Acquire(context.Background(), name, e.ready)
	if err != nil || rel == nil {
		t.Fatalf("uncontended Acquire: release %v, err %v; want a claim", rel != nil, err)
	}
	return rel
}

// waitFor fails the test when r does not arrive within d.
func waitFor(t *testing.T, ch <-chan result, d time.Duration, what string) result {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(d):
		t.Fatalf("%s: Acquire did not return within %v", what, d)
		return result{}
	}
}

// stillWaiting fails the test when ch delivers within d: a waiter that
// must keep waiting.
func stillWaiting(t *testing.T, ch <-chan result, d time.Duration, what string) {
	t.Helper()
	select {
	case r := <-ch:
		t.Fatalf("%s: Acquire returned (release %v, err %v) while it should wait", what, r.release != nil, r.err)
	case <-time.After(d):
	}
}

func testReadyFirst(t *testing.T, m Medium) {
	f := m.New(t, Options{Stale: long, Wait: long})
	rel, err := f.Acquire(context.Background(), name, func() bool { return true })
	if rel != nil || err != nil {
		t.Fatalf("entry present: release %v, err %v; want nil, nil", rel != nil, err)
	}
}

// Of several flights that miss at once, one compiles and the others load
// what it published.
func testOneOfManyCompiles(t *testing.T, m Medium) {
	var e entry
	compiles, loads := race(t, m, 5, Options{Stale: long, Wait: long}, &e, nil)
	if compiles != 1 || loads != 4 {
		t.Fatalf("%d compiles and %d loads, want 1 and 4", compiles, loads)
	}
}

// race makes n flights with options o miss e at once: each that is told to
// compile compiles (after calling claimed, when set), publishes e and
// releases. It returns how many compiled and how many loaded.
func race(t *testing.T, m Medium, n int, o Options, e *entry, claimed func()) (compiles, loads int32) {
	t.Helper()
	var nc, nl atomic.Int32
	var wg sync.WaitGroup
	for range n {
		f := m.New(t, o)
		wg.Go(func() {
			rel, err := f.Acquire(context.Background(), name, e.ready)
			switch {
			case err != nil:
				t.Error(err)
			case rel == nil:
				nl.Add(1)
			default:
				if claimed != nil {
					claimed()
				}
				nc.Add(1)
				// The compile: long enough that the others find the lease.
				time.Sleep(200 * time.Millisecond)
				e.ok.Store(true)
				rel()
			}
		})
	}
	wg.Wait()
	return nc.Load(), nl.Load()
}

// A holder that releases without publishing (its compile failed, or was
// below the storing thresholds) sends its waiters to compile at once.
func testReleaseWithoutPublishing(t *testing.T, m Medium) {
	var e entry
	rel := hold(t, m, Options{Stale: long, Wait: long}, &e)
	ch := acquire(context.Background(), m.New(t, Options{Stale: long, Wait: long}), e.ready)
	stillWaiting(t, ch, 200*time.Millisecond, "holder compiling")
	rel()
	rel() // a second release does nothing
	if r := waitFor(t, ch, 5*time.Second, "holder released"); r.err != nil || r.release == nil {
		t.Fatalf("holder released without publishing: release %v, err %v; want told to compile", r.release != nil, r.err)
	} else {
		r.release()
	}
}

// A waiter gives up after Wait, long before a live holder goes stale.
func testWaitIsBounded(t *testing.T, m Medium) {
	var e entry
	rel := hold(t, m, Options{Stale: long, Wait: long}, &e)
	defer rel()
	const wait = 300 * time.Millisecond
	r := waitFor(t, acquire(context.Background(), m.New(t, Options{Stale: long, Wait: wait}), e.ready), 5*time.Second, "bounded wait")
	if r.err != nil || r.release == nil || r.took < wait {
		t.Fatalf("after %v (wait %v): release %v, err %v; want told to compile once the wait ran out", r.took, wait, r.release != nil, r.err)
	}
	r.release()
}

// With a negative Wait a waiter does not wait for a holder at all.
func testNoWait(t *testing.T, m Medium) {
	var e entry
	rel := hold(t, m, Options{Stale: long, Wait: long}, &e)
	defer rel()
	r := waitFor(t, acquire(context.Background(), m.New(t, Options{Stale: long, Wait: -1}), e.ready), 5*time.Second, "no wait")
	if r.err != nil || r.release == nil {
		t.Fatalf("wait disabled: release %v, err %v; want told to compile", r.release != nil, r.err)
	}
	r.release()
}

// A waiter whose context ends returns its error.
func testCancel(t *testing.T, m Medium) {
	var e entry
	rel := hold(t, m, Options{Stale: long, Wait: long}, &e)
	defer rel()
	ctx, cancel := context.WithCancel(context.Background())
	ch := acquire(ctx, m.New(t, Options{Stale: long, Wait: long}), e.ready)
	stillWaiting(t, ch, 100*time.Millisecond, "before cancel")
	cancel()
	if r := waitFor(t, ch, 5*time.Second, "cancelled"); !errors.Is(r.err, context.Canceled) {
		t.Fatalf("cancelled wait: err %v, want context.Canceled", r.err)
	}
}

// A reader alone waits at most its grace, and leaves no lease behind: a
// writer after it claims at once.
func testReaderNeverClaims(t *testing.T, m Medium) {
	var e entry
	const grace = 200 * time.Millisecond
	r := waitFor(t, acquire(context.Background(), m.New(t, Options{Stale: long, Wait: long, ReaderGrace: grace, Reader: true}), e.ready), 5*time.Second, "lone reader")
	if r.err != nil || r.release == nil {
		t.Fatalf("lone reader: release %v, err %v; want told to compile", r.release != nil, r.err)
	}
	r.release()
	w := waitFor(t, acquire(context.Background(), m.New(t, Options{Stale: long, Wait: long}), e.ready), 5*time.Second, "writer after a reader")
	if w.err != nil || w.release == nil {
		t.Fatalf("writer after a reader: release %v, err %v", w.release != nil, w.err)
	}
	// The writer holds a real claim: another writer waits for it.
	ch := acquire(context.Background(), m.New(t, Options{Stale: long, Wait: long}), e.ready)
	stillWaiting(t, ch, 200*time.Millisecond, "second writer")
	e.ok.Store(true)
	w.release()
	if r := waitFor(t, ch, 5*time.Second, "second writer"); r.err != nil || r.release != nil {
		t.Fatalf("second writer after publication: release %v, err %v; want told to load", r.release != nil, r.err)
	}
}

// A reader that finds a writer's lease waits for its entry, past its grace.
func testReaderWaitsForWriter(t *testing.T, m Medium) {
	var e entry
	rel := hold(t, m, Options{Stale: long, Wait: long}, &e)
	const grace = 100 * time.Millisecond
	ch := acquire(context.Background(), m.New(t, Options{Stale: long, Wait: long, ReaderGrace: grace, Reader: true}), e.ready)
	stillWaiting(t, ch, 4*grace, "reader")
	e.ok.Store(true)
	rel()
	if r := waitFor(t, ch, 5*time.Second, "reader"); r.err != nil || r.release != nil {
		t.Fatalf("reader after publication: release %v, err %v; want told to load", r.release != nil, r.err)
	}
}

// A holder whose heartbeat runs keeps its lease for many stale intervals.
func testLiveHolderNotTakenOver(t *testing.T, m Medium) {
	var e entry
	const stale = 300 * time.Millisecond
	rel := hold(t, m, Options{Stale: stale, Wait: long}, &e)
	ch := acquire(context.Background(), m.New(t, Options{Stale: stale, Wait: long}), e.ready)
	stillWaiting(t, ch, 4*stale, "waiter of a live holder")
	e.ok.Store(true)
	rel()
	if r := waitFor(t, ch, 5*time.Second, "waiter"); r.err != nil || r.release != nil {
		t.Fatalf("waiter after publication: release %v, err %v; want told to load", r.release != nil, r.err)
	}
}

// A lease whose holder died is taken over after the stale interval, by
// exactly one of its waiters; the others load what it publishes.
func testDeadHolderTakenOverOnce(t *testing.T, m Medium) {
	if m.Abandon == nil {
		t.Skip("the medium cannot leave a dead holder's lease")
	}
	m.Abandon(t, name)
	var e entry
	const stale = 400 * time.Millisecond
	start := time.Now()
	compiles, loads := race(t, m, 3, Options{Stale: stale, Wait: long}, &e, func() {
		if took := time.Since(start); took < stale {
			t.Errorf("took the lease over after %v, before it was stale (%v)", took, stale)
		}
	})
	if compiles != 1 || loads != 2 {
		t.Fatalf("%d compiles and %d loads after a dead holder, want 1 and 2", compiles, loads)
	}
}

// Package pollwait holds what xlacache's two single-flight implementations
// share: internal/lease (lease files in a cache directory) and
// internal/blobflight (lease objects in a shared store) both wait for
// another holder by polling with jittered exponential backoff, bounded in
// time, and take a lease over after its heartbeat has stopped for a stale
// interval. Their timing options and their defaulting rules are the same.
package pollwait

import (
	"context"
	"crypto/rand"
	"fmt"
	"math/big"
	"sync"
	"time"
)

// Defaults both single-flight implementations share.
const (
	// DefaultStale is how long a lease's heartbeat may stay unchanged
	// before the lease is taken over. It is generous because network
	// filesystems cache attributes for tens of seconds.
	DefaultStale = 30 * time.Second
	// DefaultWait bounds how long a waiter waits for another holder.
	DefaultWait = 120 * time.Second
	// DefaultReaderGrace is how long a process that cannot claim waits
	// when nobody holds a lease at all: long enough for a writer that
	// started a moment later to claim, short enough that a lone reader is
	// not stalled.
	DefaultReaderGrace = 2 * time.Second
)

// Timing is the timing of a single-flight implementation.
type Timing struct {
	// Stale is how long an unchanged heartbeat makes a lease stale.
	Stale time.Duration
	// Heartbeat is how often a holder refreshes its lease (default
	// Stale/4); it must be shorter than Stale.
	Heartbeat time.Duration
	// Wait bounds how long a waiter waits before compiling by itself; a
	// negative value means do not wait at all.
	Wait time.Duration
	// ReaderGrace bounds how long a process that cannot claim waits while
	// no lease exists; it is capped at Wait.
	ReaderGrace time.Duration
	// PollMin and PollMax bound a waiter's exponential backoff.
	PollMin, PollMax time.Duration
}

// WithDefaults returns t with its zero (or, for Stale, ReaderGrace and
// PollMin, non-positive) fields taken from def, Heartbeat defaulting to
// Stale/4 and ReaderGrace capped at a positive Wait. It fails when
// Heartbeat is not shorter than Stale: a holder would look stale between
// two beats.
func (t Timing) WithDefaults(def Timing) (Timing, error) {
	if t.Stale <= 0 {
		t.Stale = def.Stale
	}
	if t.Heartbeat <= 0 {
		t.Heartbeat = t.Stale / 4
	}
	if t.Heartbeat >= t.Stale {
		return Timing{}, fmt.Errorf("heartbeat %v must be shorter than the stale timeout %v", t.Heartbeat, t.Stale)
	}
	if t.Wait == 0 {
		t.Wait = def.Wait
	}
	if t.ReaderGrace <= 0 {
		t.ReaderGrace = def.ReaderGrace
	}
	if t.Wait > 0 && t.ReaderGrace > t.Wait {
		t.ReaderGrace = t.Wait
	}
	if t.PollMin <= 0 {
		t.PollMin = def.PollMin
	}
	if t.PollMax < t.PollMin {
		t.PollMax = max(def.PollMax, t.PollMin)
	}
	return t, nil
}

// Jitter spreads waiters' polls so that they do not hit the filesystem or
// the store in lockstep: it returns a duration in [d/2, d].
func Jitter(d time.Duration) time.Duration {
	if d <= 1 {
		return d
	}
	n, err := rand.Int(rand.Reader, big.NewInt(int64(d/2)+1))
	if err != nil {
		return d
	}
	return d/2 + time.Duration(n.Int64())
}

// Sleep waits for d, or until ctx is done (then it returns ctx.Err()).
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// FruitlessGraces is how many reader grace periods in a row may expire with
// nobody claiming before a process stops granting them: the writers are
// evidently not compiling what this process compiles (or compile it below
// the storing thresholds), so waiting again only adds latency.
const FruitlessGraces = 1

// Graces counts a process's reader grace periods (see
// Timing.ReaderGrace) that ended with nobody claiming. The zero value is
// ready, and it is safe for concurrent use.
type Graces struct {
	mu        sync.Mutex
	fruitless int
}

// Exhausted reports whether the last FruitlessGraces grace periods in a
// row ended with nobody claiming, so that no more should be granted.
func (g *Graces) Exhausted() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.fruitless >= FruitlessGraces
}

// Outcome records whether a grace period ended with the entry published
// by another process (useful) or with nobody claiming.
func (g *Graces) Outcome(useful bool) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if useful {
		g.fruitless = 0
	} else {
		g.fruitless++
	}
}

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
	"encoding/hex"
	"fmt"
	"math/big"
	"os"
	"sync"
	"sync/atomic"
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

// Defaults returns the default timing of a single-flight implementation
// whose waiter backs off between pollMin and pollMax: the bounds depend
// on what a look costs (a stat of a file, or two requests to a store);
// the rest is the same for both.
func Defaults(pollMin, pollMax time.Duration) Timing {
	return Timing{Stale: DefaultStale, Wait: DefaultWait, ReaderGrace: DefaultReaderGrace, PollMin: pollMin, PollMax: pollMax}
}

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

// Resolve fills in the six timing options of a single-flight
// implementation in place, as Timing.WithDefaults does, from def: the
// options live in each implementation's own Options struct, so they come
// as pointers.
func Resolve(def Timing, stale, heartbeat, wait, readerGrace, pollMin, pollMax *time.Duration) error {
	t, err := Timing{
		Stale: *stale, Heartbeat: *heartbeat, Wait: *wait,
		ReaderGrace: *readerGrace, PollMin: *pollMin, PollMax: *pollMax,
	}.WithDefaults(def)
	if err != nil {
		return err
	}
	*stale, *heartbeat, *wait = t.Stale, t.Heartbeat, t.Wait
	*readerGrace, *pollMin, *pollMax = t.ReaderGrace, t.PollMin, t.PollMax
	return nil
}

// Token returns a new random holder token: a claim's identity, which a
// holder compares with what the lease holds before it refreshes or
// removes it.
func Token() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand never fails on Linux; a time-derived token keeps the
		// lease usable if it ever does.
		return fmt.Sprintf("t%x-%d", time.Now().UnixNano(), os.Getpid())
	}
	return hex.EncodeToString(b[:])
}

// Heartbeat is a lease holder's heartbeat: a goroutine that calls beat
// every interval until Stop, or until beat reports the lease lost.
type Heartbeat struct {
	stop, done chan struct{}
	once       sync.Once
	lost       atomic.Bool
}

// StartHeartbeat starts calling beat every interval. beat refreshes the
// lease and returns false when it finds the lease no longer this
// holder's (taken over): the heartbeat then ends and Lost reports true.
func StartHeartbeat(interval time.Duration, beat func() bool) *Heartbeat {
	h := &Heartbeat{stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(h.done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-h.stop:
				return
			case <-t.C:
			}
			if !beat() {
				h.lost.Store(true)
				return
			}
		}
	}()
	return h
}

// Stop ends the heartbeat and waits until no beat runs. It reports true
// to its first caller only, which then releases the lease; later calls
// do nothing.
func (h *Heartbeat) Stop() bool {
	first := false
	h.once.Do(func() {
		first = true
		close(h.stop)
		<-h.done
	})
	return first
}

// Lost reports whether a beat found the lease taken over.
func (h *Heartbeat) Lost() bool { return h.lost.Load() }

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

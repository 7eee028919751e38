package blobflight

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/layout"
)

// probeRetry is how long after a probe that could not finish (the store
// failed) the next Acquire probes again; meanwhile callers compile without
// leases in the store.
const probeRetry = 30 * time.Second

// probe outcomes.
const (
	probeUnknown = iota // not probed yet, or the store failed mid-probe
	probeOn             // conditional writes hold: leases on
	probeOff            // they do not: leases off for the process
)

// probeCleanup bounds the removal of the probe's scratch objects, which
// runs even when the caller's context is done.
const probeCleanup = 10 * time.Second

// probeState remembers, per store, what the probe found.
type probeState struct {
	// lock (a channel, so that a waiter can give up when its context
	// ends) serializes probes and guards result and last.
	lock   chan struct{}
	result int
	last   time.Time // when a probe last ended unknown
}

// probes maps a store's name (its String, e.g. "s3://bucket/prefix
// (http://host)") to its probeState, so that several caches a process
// opens on one bucket probe it once.
var probes sync.Map

func probeFor(st blob.Store) *probeState {
	key := fmt.Sprintf("%T:%p", st, st)
	if s, ok := st.(fmt.Stringer); ok {
		key = s.String()
	}
	p, _ := probes.LoadOrStore(key, &probeState{lock: make(chan struct{}, 1)})
	return p.(*probeState)
}

// leasesOn returns the probe's answer for the flight's store, probing
// first if no answer is known. A probe runs at most once at a time per
// store; concurrent callers wait for it, or until their ctx is done (then
// the answer is probeUnknown).
func (f *Flight) leasesOn(ctx context.Context) int {
	p := f.probe
	select {
	case p.lock <- struct{}{}:
	case <-ctx.Done():
		return probeUnknown
	}
	defer func() { <-p.lock }()
	if p.result != probeUnknown {
		return p.result
	}
	if !p.last.IsZero() && time.Since(p.last) < probeRetry {
		return probeUnknown
	}
	err := Probe(ctx, f.st)
	var bad *UnsupportedError
	switch {
	case err == nil:
		p.result = probeOn
		f.log.Debug("xlacache: the shared store honours conditional writes; single-flight across hosts is on")
	case errors.As(err, &bad):
		p.result = probeOff
		f.logs.Warn("blobflight-probe", "xlacache: the shared store does not honour conditional writes; single-flight across hosts is off (publishing stays first-writer-wins, entries are verified on read)",
			"store", fmt.Sprint(f.st), "err", err)
	case ctx.Err() != nil:
		// The caller gave up, not the store: the next caller probes.
	default:
		p.last = time.Now()
		f.storeFailure("probing conditional writes", layout.ProbePrefix, err)
	}
	return p.result
}

// UnsupportedError reports a conditional-write semantic the store does not
// honour.
type UnsupportedError struct {
	// What names the semantic, e.g. "If-None-Match: * on an existing object".
	What string
}

// Error implements error.
func (e *UnsupportedError) Error() string {
	return "shared store does not honour " + e.What
}

// Probe checks, on scratch objects (layout.ProbeObject), that st honours
// the conditional writes leases rely on: a conditional create of an
// existing object fails, a conditional overwrite with a wrong ETag fails,
// a conditional overwrite with the right ETag succeeds and changes the
// ETag, and a conditional overwrite of a missing object fails without
// creating it. It returns nil when they all hold, an *UnsupportedError
// when one does not, and another error when the store failed (the answer
// is then unknown). It removes its scratch objects.
func Probe(ctx context.Context, st blob.Store) (err error) {
	a, b := layout.ProbeObject(newToken())
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), probeCleanup)
		defer cancel()
		st.Delete(cctx, a)
		st.Delete(cctx, b)
	}()
	if err := st.PutIfAbsent(ctx, a, []byte("probe 1\n")); err != nil {
		return fmt.Errorf("probe: creating %s: %w", a, err)
	}
	info, err := st.Stat(ctx, a)
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if info.ETag == "" {
		return &UnsupportedError{What: "ETags (none reported)"}
	}
	switch err := st.PutIfAbsent(ctx, a, []byte("probe 2\n")); {
	case err == nil:
		return &UnsupportedError{What: "If-None-Match: * on an existing object (it was overwritten)"}
	case !errors.Is(err, blob.ErrExist):
		return fmt.Errorf("probe: %w", err)
	}
	wrong := `00000000000000000000000000000000`
	if info.ETag == wrong {
		wrong = `11111111111111111111111111111111`
	}
	switch _, err := st.ReplaceIfMatch(ctx, a, wrong, []byte("probe 3\n")); {
	case err == nil:
		return &UnsupportedError{What: "If-Match with a wrong ETag (the object was overwritten)"}
	case !errors.Is(err, blob.ErrPrecondition):
		return fmt.Errorf("probe: %w", err)
	}
	etag, err := st.ReplaceIfMatch(ctx, a, info.ETag, []byte("probe 4\n"))
	switch {
	case errors.Is(err, blob.ErrPrecondition):
		return &UnsupportedError{What: "If-Match with the object's own ETag (refused)"}
	case err != nil:
		return fmt.Errorf("probe: %w", err)
	}
	if etag == "" {
		i, err := st.Stat(ctx, a)
		if err != nil {
			return fmt.Errorf("probe: %w", err)
		}
		etag = i.ETag
	}
	if etag == info.ETag {
		return &UnsupportedError{What: "a new ETag for new content"}
	}
	switch _, err := st.ReplaceIfMatch(ctx, b, etag, []byte("probe 5\n")); {
	case err == nil:
		return &UnsupportedError{What: "If-Match on a missing object (it was created)"}
	case !errors.Is(err, blob.ErrPrecondition):
		return fmt.Errorf("probe: %w", err)
	}
	switch _, err := st.Stat(ctx, b); {
	case err == nil:
		return &UnsupportedError{What: "If-Match on a missing object (it was created)"}
	case !errors.Is(err, blob.ErrNotExist):
		return fmt.Errorf("probe: %w", err)
	}
	return nil
}

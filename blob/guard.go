package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"time"
)

// Defaults for GuardOptions fields left zero.
const (
	DefaultTimeout  = 30 * time.Second
	DefaultCooldown = 60 * time.Second
)

// GuardOptions configures Guard.
type GuardOptions struct {
	// Timeout bounds each call, reading the object included
	// (DefaultTimeout when zero).
	Timeout time.Duration
	// Cooldown is how long the store is skipped after a failure
	// (DefaultCooldown when zero).
	Cooldown time.Duration
	// Logger receives the one Warn line when the store starts failing and
	// the Info line when it is reachable again (discarded when nil).
	Logger *slog.Logger
	// Name names the store in logs and errors; by default the store's
	// String method, if it has one.
	Name string
}

// Guard wraps s so that an unreachable or misconfigured store costs one
// timeout and one log line, not one per call: every call is bounded by
// Timeout, and after a failure the guard fails fast with ErrUnavailable for
// Cooldown, then lets one call probe the store; the others keep failing fast
// until the probe succeeds. ErrNotExist, ErrExist, ErrTooLarge and
// ErrPrecondition are answers, so they count as success; a caller's own
// cancellation says nothing about the store. Invalid names are refused before any call.
func Guard(s Store, o GuardOptions) Store {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Cooldown <= 0 {
		o.Cooldown = DefaultCooldown
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Name == "" {
		if sn, ok := s.(fmt.Stringer); ok {
			o.Name = sn.String()
		} else {
			o.Name = fmt.Sprintf("%T", s)
		}
	}
	return &guard{s: s, opts: o, now: time.Now}
}

var _ Store = (*guard)(nil)

// guard is the Store Guard returns.
type guard struct {
	s    Store
	opts GuardOptions
	// now is time.Now; tests replace it to step through a cool-down.
	now func() time.Time

	mu        sync.Mutex
	open      bool // failing: calls fail fast until openUntil
	openUntil time.Time
	probing   bool // one call is testing the store after the cool-down
	logged    bool // the Warn line of the current outage was written
	lastErr   error
}

// String names the guarded store.
func (g *guard) String() string { return g.opts.Name }

// call runs op under the breaker and the per-call timeout.
func (g *guard) call(ctx context.Context, what, name string, op func(ctx context.Context) error) error {
	cctx, cancel, err := g.begin(ctx, what, name)
	if err != nil {
		return err
	}
	defer cancel()
	return g.end(ctx, what, name, op(cctx))
}

// begin checks the caller's context and the breaker, and returns the
// context, bounded by the per-call timeout, that the call runs under.
func (g *guard) begin(ctx context.Context, what, name string) (context.Context, context.CancelFunc, error) {
	if err := ctx.Err(); err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", what, name, err)
	}
	if err := g.allow(); err != nil {
		return nil, nil, fmt.Errorf("%s %s: %w", what, name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	return cctx, cancel, nil
}

// end feeds the outcome of a call begun by begin to the breaker and
// returns the error the caller sees.
func (g *guard) end(ctx context.Context, what, name string, err error) error {
	switch {
	case err == nil, errors.Is(err, ErrNotExist), errors.Is(err, ErrExist), errors.Is(err, ErrTooLarge), errors.Is(err, ErrPrecondition):
		g.success()
		return err
	case ctx.Err() != nil:
		// The caller gave up; that says nothing about the store.
		g.release()
		return fmt.Errorf("%s %s: %w", what, name, ctx.Err())
	default:
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %v: %w", g.opts.Timeout, err)
		}
		g.failure(err)
		if errors.Is(err, ErrUnavailable) {
			return fmt.Errorf("%s %s on %s: %w", what, name, g.opts.Name, err)
		}
		return fmt.Errorf("%s %s on %s: %w (%w)", what, name, g.opts.Name, ErrUnavailable, err)
	}
}

func (g *guard) allow() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.open {
		return nil
	}
	if g.probing || g.now().Before(g.openUntil) {
		return fmt.Errorf("%w: %s skipped after a failure (last error: %v)", ErrUnavailable, g.opts.Name, g.lastErr)
	}
	g.probing = true
	return nil
}

func (g *guard) success() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.open {
		g.opts.Logger.Info("xlacache: shared store reachable again", "store", g.opts.Name)
	}
	g.open, g.probing, g.logged = false, false, false
}

// release ends a probe that says nothing about the store (the caller gave
// up), so that another call may probe.
func (g *guard) release() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.probing = false
}

func (g *guard) failure(err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open, g.probing = true, false
	g.openUntil = g.now().Add(g.opts.Cooldown)
	g.lastErr = err
	if !g.logged {
		g.logged = true
		g.opts.Logger.Warn("xlacache: shared store failed; using the local tier only", "store", g.opts.Name, "retry_in", g.opts.Cooldown, "err", err)
	} else {
		g.opts.Logger.Debug("xlacache: shared store still failing", "store", g.opts.Name, "err", err)
	}
}

// Get implements Store.
func (g *guard) Get(ctx context.Context, name string) ([]byte, error) {
	if err := ValidName(name); err != nil {
		return nil, fmt.Errorf("get: %w", err)
	}
	return callValue(ctx, g, "get", name, g.s.Get)
}

// Open implements Store. The per-call timeout covers reading the body
// too: it runs until the reader is closed. A read that fails (the store
// stopped answering mid-body) counts as a failure of the store.
func (g *guard) Open(ctx context.Context, name string) (io.ReadCloser, Info, error) {
	if err := ValidName(name); err != nil {
		return nil, Info{}, fmt.Errorf("open: %w", err)
	}
	cctx, cancel, err := g.begin(ctx, "open", name)
	if err != nil {
		return nil, Info{}, err
	}
	rc, info, err := g.s.Open(cctx, name)
	if err := g.end(ctx, "open", name, err); err != nil {
		cancel()
		return nil, Info{}, err
	}
	return &guardReader{g: g, ctx: ctx, name: name, rc: rc, cancel: cancel}, info, nil
}

// guardReader is the body of an object opened through a guard.
type guardReader struct {
	g      *guard
	ctx    context.Context // the caller's
	name   string
	rc     io.ReadCloser
	cancel context.CancelFunc
	failed bool
}

func (r *guardReader) Read(p []byte) (int, error) {
	n, err := r.rc.Read(p)
	if err != nil && err != io.EOF && !r.failed {
		r.failed = true
		err = r.g.end(r.ctx, "reading", r.name, err)
	}
	return n, err
}

func (r *guardReader) Close() error {
	defer r.cancel()
	return r.rc.Close()
}

// ReplaceIfMatch implements Store.
func (g *guard) ReplaceIfMatch(ctx context.Context, name, etag string, data []byte) (string, error) {
	if err := ValidName(name); err != nil {
		return "", fmt.Errorf("replace: %w", err)
	}
	var newETag string
	err := g.call(ctx, "replace", name, func(ctx context.Context) error {
		var err error
		newETag, err = g.s.ReplaceIfMatch(ctx, name, etag, data)
		return err
	})
	if err != nil {
		return "", err
	}
	return newETag, nil
}

// PutIfAbsent implements Store.
func (g *guard) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if err := ValidName(name); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	return g.call(ctx, "put", name, func(ctx context.Context) error {
		return g.s.PutIfAbsent(ctx, name, data)
	})
}

// Stat implements Store.
func (g *guard) Stat(ctx context.Context, name string) (Info, error) {
	if err := ValidName(name); err != nil {
		return Info{}, fmt.Errorf("stat: %w", err)
	}
	return callValue(ctx, g, "stat", name, g.s.Stat)
}

// List implements Store.
func (g *guard) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := ValidPrefix(prefix); err != nil {
		return nil, fmt.Errorf("list: %w", err)
	}
	return callValue(ctx, g, "list", prefix, g.s.List)
}

// Delete implements Store.
func (g *guard) Delete(ctx context.Context, name string) error {
	if err := ValidName(name); err != nil {
		return fmt.Errorf("delete: %w", err)
	}
	return g.call(ctx, "delete", name, func(ctx context.Context) error {
		return g.s.Delete(ctx, name)
	})
}

// callValue is g.call for a store method that returns a value: f(ctx, name)
// runs under the guard, and a failed call returns T's zero value.
func callValue[T any](ctx context.Context, g *guard, op, name string, f func(context.Context, string) (T, error)) (T, error) {
	var v T
	err := g.call(ctx, op, name, func(ctx context.Context) error {
		var err error
		v, err = f(ctx, name)
		return err
	})
	if err != nil {
		var zero T
		return zero, err
	}
	return v, nil
}

// Close closes the guarded store.
func (g *guard) Close() error { return g.s.Close() }

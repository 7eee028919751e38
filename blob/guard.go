package blob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
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
// until the probe succeeds. ErrNotExist, ErrExist and ErrTooLarge are
// answers, so they count as success; a caller's own cancellation says
// nothing about the store. Invalid names are refused before any call.
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
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s %s: %w", what, name, err)
	}
	if err := g.allow(); err != nil {
		return fmt.Errorf("%s %s: %w", what, name, err)
	}
	cctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	err := op(cctx)
	switch {
	case err == nil, errors.Is(err, ErrNotExist), errors.Is(err, ErrExist), errors.Is(err, ErrTooLarge):
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
	var data []byte
	err := g.call(ctx, "get", name, func(ctx context.Context) error {
		var err error
		data, err = g.s.Get(ctx, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return data, nil
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
	var info Info
	err := g.call(ctx, "stat", name, func(ctx context.Context) error {
		var err error
		info, err = g.s.Stat(ctx, name)
		return err
	})
	if err != nil {
		return Info{}, err
	}
	return info, nil
}

// List implements Store.
func (g *guard) List(ctx context.Context, prefix string) ([]Info, error) {
	if p := strings.TrimSuffix(prefix, "/"); p != "" {
		if err := ValidName(p); err != nil {
			return nil, fmt.Errorf("list: %w", err)
		}
	}
	var infos []Info
	err := g.call(ctx, "list", prefix, func(ctx context.Context) error {
		var err error
		infos, err = g.s.List(ctx, prefix)
		return err
	})
	if err != nil {
		return nil, err
	}
	return infos, nil
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

// Close closes the guarded store.
func (g *guard) Close() error { return g.s.Close() }

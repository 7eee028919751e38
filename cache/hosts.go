package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/lease"
	"github.com/xlacache/xlacache/s3store"
)

// Environment knobs of the single-flight lease that are not part of
// config.Options: they matter only on unusual filesystems and in tests.
const (
	// envLeaseStale sets the heartbeat timeout in seconds after which a
	// silent lease holder is considered dead (default 30).
	envLeaseStale = "XLACACHE_LEASE_STALE_SECS"
	// envLeasePIDCheck=0 turns off the same-host shortcut that declares a
	// holder dead as soon as its pid is gone.
	envLeasePIDCheck = "XLACACHE_LEASE_PID_CHECK"
)

// warnUnsignedOnce makes the unsigned-shared-cache warning one line per
// process, however many caches are opened.
var warnUnsignedOnce sync.Once

// unsignedSharedWarning is the text of that warning (tests look for it).
const unsignedSharedWarning = "shared cache without signing: anyone who can write to it can make readers run their code; set XLACACHE_SIGNING_KEY (or XLACACHE_SIGNING_KEY_FILE) on every host"

// openShared opens the shared object-store tier named by opts.SharedURL, or
// returns nil when none is configured.
func openShared(ctx context.Context, opts config.Options, logger *slog.Logger) (SharedStore, error) {
	if opts.SharedURL == "" {
		return nil, nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	cfg, err := s3store.ParseURL(opts.SharedURL, os.Getenv)
	if err != nil {
		return nil, err
	}
	st, err := s3store.Open(cfg, logger)
	if err != nil {
		return nil, err
	}
	if len(opts.SigningKey) == 0 {
		warnUnsignedOnce.Do(func() {
			logger.Warn(unsignedSharedWarning, "url", opts.SharedURL)
		})
	}
	return &sharedAdapter{st: st, mirror: newMirror(st, opts)}, nil
}

func newMirror(objs s3store.Objects, opts config.Options) *s3store.Mirror {
	return s3store.NewMirror(objs, s3store.MirrorOptions{
		Dir:        opts.Dir,
		Autotune:   opts.HasSubcache(config.SubcacheAutotune),
		Kernels:    opts.HasSubcache(config.SubcacheKernels),
		SigningKey: opts.SigningKey,
		DirMode:    opts.EffectiveDirMode(),
		FileMode:   opts.EffectiveFileMode(),
	})
}

// sharedAdapter turns s3store's errors into the cache's sentinels while
// keeping s3store's, so both packages' errors.Is checks hold.
type sharedAdapter struct {
	st     *s3store.Store
	mirror *s3store.Mirror
}

func mapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, s3store.ErrNotExist):
		return fmt.Errorf("%w: %w", ErrNotExist, err)
	case errors.Is(err, s3store.ErrExist):
		return fmt.Errorf("%w: %w", ErrExist, err)
	case errors.Is(err, s3store.ErrUnavailable):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

func (a *sharedAdapter) Get(ctx context.Context, name string) ([]byte, error) {
	b, err := a.st.Get(ctx, name)
	return b, mapErr(err)
}

func (a *sharedAdapter) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	return mapErr(a.st.PutIfAbsent(ctx, name, data))
}

func (a *sharedAdapter) List(ctx context.Context, prefix string) ([]string, error) {
	names, err := a.st.List(ctx, prefix)
	return names, mapErr(err)
}

func (a *sharedAdapter) Close() error { return a.st.Close() }

func (a *sharedAdapter) String() string { return a.st.String() }

// objectsAdapter lets the mirror use any SharedStore (tests plug in other
// implementations): it makes the cache's sentinels match s3store's.
type objectsAdapter struct{ s SharedStore }

func unmapErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrNotExist) && !errors.Is(err, s3store.ErrNotExist):
		return fmt.Errorf("%w: %w", s3store.ErrNotExist, err)
	case errors.Is(err, ErrExist) && !errors.Is(err, s3store.ErrExist):
		return fmt.Errorf("%w: %w", s3store.ErrExist, err)
	}
	return err
}

func (o objectsAdapter) Get(ctx context.Context, name string) ([]byte, error) {
	b, err := o.s.Get(ctx, name)
	return b, unmapErr(err)
}

func (o objectsAdapter) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	return unmapErr(o.s.PutIfAbsent(ctx, name, data))
}

func (o objectsAdapter) List(ctx context.Context, prefix string) ([]string, error) {
	n, err := o.s.List(ctx, prefix)
	return n, unmapErr(err)
}

// mirrorFor returns the mirror of the raw subcaches for shared. Stores
// other than s3store's (test doubles) get a fresh mirror per call: correct,
// since merging the same kernel part twice changes nothing, just slower.
func mirrorFor(shared SharedStore, opts config.Options) *s3store.Mirror {
	if a, ok := shared.(*sharedAdapter); ok && a.mirror != nil {
		return a.mirror
	}
	return newMirror(objectsAdapter{shared}, opts)
}

// newFlight returns the single-flight coordinator for the cache directory,
// or nil when none is available.
func newFlight(opts config.Options, logger *slog.Logger) Flight {
	if opts.Dir == "" {
		return nil
	}
	if logger == nil {
		logger = slog.Default()
	}
	lo := lease.Options{
		Dir:      opts.Dir,
		Wait:     opts.WaitTimeout,
		NoClaim:  !opts.Writer(),
		DirMode:  opts.EffectiveDirMode(),
		FileMode: opts.EffectiveFileMode(),
		Logger:   logger,
		WriterPresent: func() bool {
			// A writer's Open creates the state directory first thing.
			_, err := os.Stat(filepath.Join(opts.Dir, StateDir))
			return err == nil
		},
	}
	if opts.WaitTimeout <= 0 {
		// config treats 0 as "do not wait"; lease treats 0 as its default.
		lo.Wait = -1
	}
	if v := os.Getenv(envLeaseStale); v != "" {
		secs, err := strconv.ParseFloat(v, 64)
		if err != nil || secs <= 0 || secs > 24*3600 {
			logger.Warn("ignoring invalid "+envLeaseStale+"; using the default", "value", v, "default", lease.DefaultStale)
		} else {
			lo.Stale = time.Duration(secs * float64(time.Second))
		}
	}
	if v := os.Getenv(envLeasePIDCheck); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			logger.Warn("ignoring invalid "+envLeasePIDCheck+" (want 0 or 1)", "value", v)
		} else {
			lo.NoPIDCheck = !on
		}
	}
	m, err := lease.New(lo)
	if err != nil {
		logger.Warn("single-flight compilation unavailable", "dir", opts.Dir, "err", err)
		return nil
	}
	return m
}

// pullSubcaches copies the XLA-style raw subcache files (the autotune
// directory and the kernel cache file under dir) from the shared store into
// the local directory before a compile, so that XLA, which needs a POSIX
// path, sees what other hosts produced. Failures are logged, never returned.
func pullSubcaches(ctx context.Context, shared SharedStore, opts config.Options, logger *slog.Logger) {
	if shared == nil || opts.Dir == "" || !rawSubcachesOn(opts) {
		return
	}
	if !opts.Writer() {
		// XLA reads its subcaches only from a POSIX path, so a reader too
		// mirrors them into the node-local directory (it still never
		// writes to the shared tier). It does not create the directory:
		// with none, it compiles without them.
		if _, err := os.Stat(opts.Dir); err != nil {
			return
		}
	}
	st, err := mirrorFor(shared, opts).Pull(ctx)
	logMirror(logger, "pulling XLA subcaches from the shared tier", st, err)
}

// pushSubcaches publishes new local XLA-style subcache files to the shared
// store after a compile. Only writers call it.
func pushSubcaches(ctx context.Context, shared SharedStore, opts config.Options, logger *slog.Logger) {
	if shared == nil || opts.Dir == "" || !opts.Writer() || !rawSubcachesOn(opts) {
		return
	}
	st, err := mirrorFor(shared, opts).Push(ctx)
	logMirror(logger, "pushing XLA subcaches to the shared tier", st, err)
}

func rawSubcachesOn(opts config.Options) bool {
	return opts.HasSubcache(config.SubcacheAutotune) || opts.HasSubcache(config.SubcacheKernels)
}

// mirrorLogged keeps mirror failures to one Warn line per kind of failure
// per process; the shared store's own breaker already logs outages.
var mirrorLogged sync.Map

func logMirror(logger *slog.Logger, what string, st s3store.MirrorStats, err error) {
	if logger == nil {
		logger = slog.Default()
	}
	if st.Pulled+st.Pushed > 0 {
		logger.Debug(what, "pulled", st.Pulled, "pushed", st.Pushed, "refused", st.Refused, "bytes", st.Bytes)
	}
	if err == nil {
		return
	}
	kind := "io"
	switch {
	case errors.Is(err, s3store.ErrUnavailable):
		kind = "unavailable"
	case errors.Is(err, s3store.ErrBadObject):
		kind = "refused"
	}
	if _, seen := mirrorLogged.LoadOrStore(what+kind, true); seen || kind == "unavailable" {
		logger.Debug(what, "err", err)
		return
	}
	logger.Warn(what+" failed; compiling with the local subcaches", "err", err)
}

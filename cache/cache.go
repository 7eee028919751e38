// Package cache is xlacache's core: one directory that holds every caching
// tier (whole executables, and each backend's autotune and kernel
// subcaches), safe for many processes, bounded in size, verified on read,
// and never able to break a compile.
//
// Use Open to get a *Cache and Compile to compile through it. A cache that
// cannot use its directory degrades to compiling normally, with one log line.
package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/logonce"
	"github.com/xlacache/xlacache/internal/sign"
)

// Names of fixed paths under the cache directory, kept here for callers of
// this package; internal/layout owns them.
const (
	// ExecutablesDir holds xlacache's own whole-program entries.
	ExecutablesDir = layout.ExecutablesDir
	// QuarantineDir receives corrupt, truncated and foreign entries.
	QuarantineDir = layout.QuarantineDir
	// StateDir holds the size ledger, the stats file and lock files.
	StateDir = layout.StateDir
	// ExecutablesTier is the tier name of ExecutablesDir.
	ExecutablesTier = layout.ExecutablesDir
)

// touchInterval is how stale an entry's mtime must be before a hit
// refreshes it: like Go's build cache, LRU order needs only coarse access
// times, and a hit must not cost a write.
const touchInterval = time.Hour

// Cache is an open cache directory. All methods are safe for concurrent use
// and nil-safe: a nil *Cache behaves like a disabled cache.
type Cache struct {
	// dirErr is why Open found the directory unusable (nil when usable):
	// NoKeyReason reports it rather than touch a refused directory again.
	dirErr error
	opts   config.Options
	logger *slog.Logger

	// dir is the usable cache directory (symbolic links resolved), ""
	// when caching is off or the directory cannot be used at all.
	dir string
	// root confines every file operation under dir (see confine.go); nil
	// when dir is "" or does not exist (a reader's missing directory).
	root *os.Root
	// views is what lookups read through (view.go): root, or the root a
	// reader opened later when dir was missing at Open.
	views viewState
	// writer is true when this process may write to dir.
	writer bool
	// signingKey copies opts.SigningKey.
	signingKey *sign.Keys

	shared blob.Store

	// badShared maps the name of a shared object that failed verification
	// to its ETag, so that this writer's next put replaces exactly that
	// object (blob.Store.ReplaceIfMatch).
	badShared sync.Map
	// used remembers the shared objects whose usage marker this writer
	// refreshed or found fresh (sharedstore.go).
	used usedMarks

	flight Flight
	ledger *ledger
	hooks  fsHooks

	stats   counters
	metrics metricsState // WithMetrics (metrics.go)

	tiersMu sync.Mutex
	tiers   map[string]*Tier

	logs *logonce.Logger // failures that repeat are logged once per kind

	trimming      atomic.Bool
	trimPuts      trimPutLog // this process's puts during a trim pass (trimcursor.go)
	trimWanted    atomic.Bool
	lastReconcile atomic.Int64
	lastFlush     atomic.Int64
	bgCtx         context.Context
	bgCancel      context.CancelFunc
	bg            sync.WaitGroup
	closeOnce     sync.Once
}

// fsHooks are seams for fault-injection tests; nil fields mean the real
// operation.
type fsHooks struct {
	// write writes an entry's bytes to its temporary file.
	write func(f *os.File, b []byte) (int, error)
	// createTemp creates an entry's temporary file.
	createTemp func(dir, pattern string) (*os.File, error)
}

// Open opens (creating if needed) the cache directory named by opts.Dir.
// Invalid options are an error; an unusable directory is not: the cache
// then logs one line and serves reads only, or nothing at all. With
// opts.Dir == "" the cache is disabled and every lookup misses.
//
// The shared tier and single-flight compilation are options (WithShared,
// WithFlight): this package does not build them from opts.SharedURL.
// xlacache.Open does, and is what programs normally call.
func Open(ctx context.Context, opts config.Options, logger *slog.Logger, options ...Option) (*Cache, error) {
	var oo openOptions
	for _, o := range options {
		o(&oo)
	}
	// The cache owns the shared store it is given, also when it cannot
	// use it.
	dropShared := func() {
		if oo.shared != nil {
			oo.shared.Close()
		}
	}
	if err := opts.Validate(); err != nil {
		dropShared()
		return nil, fmt.Errorf("cache options: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	logger = logger.With("component", "xlacache")
	c := &Cache{
		opts:       opts,
		logger:     logger,
		signingKey: opts.SigningKey,
		tiers:      map[string]*Tier{},
	}
	if oo.logs != nil {
		c.logs = logonce.From(oo.logs)
	} else {
		c.logs = logonce.New(logger)
	}
	if opts.Enabled() && opts.VerifyOnly() {
		// One line at open: the role is a consequence of the keys. It is
		// a warning when it overrides XLACACHE_ROLE=writer (the operator
		// must learn why the role is not honoured), else information: a
		// reader host is what public keys alone are for.
		level := slog.LevelInfo
		if opts.Role == config.RoleWriter {
			level = slog.LevelWarn
		}
		logger.Log(ctx, level, VerifyOnlyLine, "keys", opts.SigningKey.String(), "role", opts.Role.String())
	}
	c.stats.init()
	c.bgCtx, c.bgCancel = context.WithCancel(context.WithoutCancel(ctx))
	defer c.startMetrics(oo.metrics) // at return: the role is known then
	if !opts.Enabled() {
		dropShared()
		return c, nil
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		dropShared()
		logger.Warn("cache directory unusable; compiling without a cache", "dir", opts.Dir, "err", err)
		return c, nil
	}
	c.opts.Dir = dir
	if err := c.openDir(dir); err != nil {
		// openDir logged why; compile without a local directory.
		c.dir, c.root, c.dirErr = "", nil, err
	}
	if oo.parts != nil {
		// The role is known now: openDir made a writer whose directory
		// cannot be written a reader.
		p := oo.parts(c.opts, c.writer)
		dropShared()
		oo.shared, oo.flight = p.Shared, p.Flight
	}
	if oo.shared != nil {
		c.attachShared(oo.shared)
	}
	if oo.flight != nil && c.dir != "" {
		c.flight = oo.flight
	}
	c.trimAtOpen()
	return c, nil
}

// VerifyOnlyLine is the line Open logs for a process whose keys verify
// but cannot sign (config.Options.VerifyOnly).
const VerifyOnlyLine = "verify-only signing keys (Ed25519 public keys, no private key): this process reads the signed cache and never stores, repairs or removes anything in it"

// initWriter creates the writer's fixed directories and the ledger inside
// c.root. Any of them being a symbolic link or another non-directory is
// damage that makes this process a reader.
func (c *Cache) initWriter() error {
	mode := c.opts.EffectiveDirMode()
	mk := func(rel string) error {
		return atomicfile.MkdirAllIn(c.root, rel, mode)
	}
	if err := mk(ExecutablesTier); err != nil {
		return fmt.Errorf("creating executables tier: %w", err)
	}
	if err := mk(layout.StateDir); err != nil {
		return fmt.Errorf("creating state directory: %w", err)
	}
	if c.opts.HasSubcache(config.SubcacheAutotune) {
		if err := mk(layout.XLAAutotuneDir); err != nil {
			return fmt.Errorf("creating autotune subcache: %w", err)
		}
	}
	l, err := openLedger(c.root, layout.LedgerRel, c.opts.EffectiveFileMode())
	if err != nil {
		return err
	}
	c.writer, c.ledger = true, l
	return nil
}

// Options returns the options the cache was opened with (Dir made
// absolute).
func (c *Cache) Options() config.Options {
	if c == nil {
		return config.Options{}
	}
	return c.opts
}

// Dir returns the usable cache directory, or "" when the cache is disabled
// or degraded to compile-only.
func (c *Cache) Dir() string {
	if c == nil {
		return ""
	}
	return c.dir
}

// Writer reports whether this process writes to the cache.
func (c *Cache) Writer() bool { return c != nil && c.writer }

// Shared returns the shared tier, or nil.
func (c *Cache) Shared() blob.Store {
	if c == nil {
		return nil
	}
	return c.shared
}

// enabled reports whether any tier can be consulted.
func (c *Cache) enabled() bool { return c != nil && (c.dir != "" || c.shared != nil) }

// Close waits for background work (trimming), closes the flight if it can
// be closed, persists the counters of a writer and releases the shared
// tier.
func (c *Cache) Close() error {
	if c == nil {
		return nil
	}
	var err error
	c.closeOnce.Do(func() {
		c.bgCancel()
		c.bg.Wait()
		if fc, ok := c.flight.(interface{ Close() error }); ok {
			if ferr := fc.Close(); ferr != nil {
				err = fmt.Errorf("closing single-flight: %w", ferr)
			}
		}
		c.flushStats()
		c.writeMetrics()
		if c.ledger != nil {
			err = c.ledger.close()
		}
		c.closeView()
		if c.root != nil {
			c.root.Close()
		}
		if c.shared != nil {
			if serr := c.shared.Close(); serr != nil {
				err = errors.Join(err, fmt.Errorf("closing shared tier: %w", serr))
			}
		}
	})
	return err
}

// ValidTierName reports whether name is an acceptable tier name:
// "executables", or "<backend>/<sub>" with lower-case segments (the rule is
// layout.ValidTierName).
func ValidTierName(name string) error { return layout.ValidTierName(name) }

// Tier returns the named tier: "executables", or a backend subcache tier
// such as "cpu/autotune" or "cpu/kernels". It returns nil (a tier that
// always misses and ignores puts) when the cache is disabled or the name is
// invalid; an invalid name is logged.
func (c *Cache) Tier(name string) *Tier {
	if !c.enabled() {
		return nil
	}
	if err := ValidTierName(name); err != nil {
		c.logOnce("tier:"+name, "invalid tier name; caching off for it", "err", err)
		return nil
	}
	c.tiersMu.Lock()
	defer c.tiersMu.Unlock()
	if t, ok := c.tiers[name]; ok {
		return t
	}
	t := &Tier{c: c, name: name, thresholds: name == ExecutablesTier, localOnly: isAliasTier(name)}
	if c.dir != "" {
		t.dir = layout.Dir(c.dir).Tier(name)
	}
	c.tiers[name] = t
	return t
}

// logOnce logs msg at Warn the first time key is seen, at Debug after.
func (c *Cache) logOnce(key, msg string, args ...any) { c.logs.Warn(key, msg, args...) }

// kindOf classifies a failure for Stats.Errors.
func kindOf(err error) string {
	var pe *fs.PathError
	switch {
	case err == nil:
		return ""
	case errors.Is(err, fs.ErrPermission):
		return "permission"
	case isNoSpace(err):
		return "nospace"
	case errors.As(err, &pe), errors.Is(err, fs.ErrNotExist):
		return "io"
	}
	return "io"
}

// Package xlacache opens a persistent compilation cache with the parts its
// configuration names: the node-local directory (package cache), the
// shared S3 tier behind it (XLACACHE_SHARED_URL, guarded so an unreachable
// store never slows a compile) and single-flight compilation: across the
// processes that share the directory (leases in the directory) and, with a
// shared tier, across hosts (leases in the bucket: internal/blobflight).
//
// Package cache depends only on the blob.Store and cache.Flight
// interfaces; this package is where the real implementations are chosen.
package xlacache

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/blobflight"
	"github.com/xlacache/xlacache/internal/gcsblob"
	"github.com/xlacache/xlacache/internal/lease"
	"github.com/xlacache/xlacache/internal/logonce"
	"github.com/xlacache/xlacache/internal/s3blob"
	"github.com/xlacache/xlacache/metrics"
)

var (
	_ cache.Flight = (*lease.Manager)(nil)
	_ cache.Flight = (*blobflight.Flight)(nil)
	_ cache.Flight = (*twoLevel)(nil)
)

// Open opens the cache that opts describe, as cache.Open does, with the
// shared tier of opts.SharedURL and single-flight compilation on the cache
// directory. Invalid options are an error; a shared tier or lease manager
// that cannot be set up is not: the cache then works without it, after one
// log line.
func Open(ctx context.Context, opts config.Options, logger *slog.Logger) (*cache.Cache, error) {
	if logger == nil {
		logger = slog.Default()
	}
	// Metrics come from every process (readers, and with caching off).
	metricsOpt := cache.WithMetrics(nil, 0)
	if opts.MetricsFile != "" {
		metricsOpt = cache.WithMetrics(metrics.FileSink(opts.MetricsFile, opts.EffectiveFileMode()), 0)
	}
	// The parts log as the cache does, and through one log-once filter: a
	// full disk, a read-only mount or a permission problem is one line per
	// process, whichever part meets it first.
	clog := logger.With("component", "xlacache")
	logs := logonce.New(clog)
	// cache.Open validates opts and makes the directory absolute once, and
	// decides the role before the parts exist: connect builds them from
	// its options (a later chdir cannot move the leases) and role (a
	// writer by configuration whose directory turned out unusable for
	// writing publishes nothing, so it must claim nothing in the bucket:
	// other hosts would wait for an entry that never comes).
	connect := func(opts config.Options, writer bool) cache.Parts {
		var p cache.Parts
		shared, err := openShared(opts.SharedURL, opts.SharedMaxObjectSize, clog)
		if err != nil {
			clog.Warn("shared cache tier unusable; using the local directory only", "url", s3blob.Redact(opts.SharedURL), "err", err)
			shared = nil
		}
		p.Shared = shared
		lo := lease.OptionsFor(opts, clog)
		lo.Logs = logs
		m, err := lease.New(lo)
		if err != nil {
			clog.Warn("single-flight compilation unavailable", "dir", opts.Dir, "err", err)
		} else if f := hostFlight(shared, opts, writer, clog, logs); f != nil {
			p.Flight = newTwoLevel(m, f, writer)
		} else {
			p.Flight = m
		}
		return p
	}
	return cache.Open(ctx, opts, logger, cache.WithLogs(logs.Slog()), metricsOpt, cache.WithParts(connect))
}

// hostFlight returns the single-flight across hosts through lease objects
// in the shared store, or nil without a shared store. It claims only for a
// writer. Whether the store
// honours conditional writes is probed on the first miss, not here: Open
// never contacts the store.
func hostFlight(shared blob.Store, opts config.Options, writer bool, logger *slog.Logger, logs *logonce.Logger) *blobflight.Flight {
	if shared == nil {
		return nil
	}
	bo := blobflight.Options{
		Store:   shared,
		Stale:   opts.LeaseStale,
		Wait:    opts.WaitTimeout,
		NoClaim: !writer,
		Logger:  logger,
		Logs:    logs,
		// With a key, only leases signed with it are waited for.
		SigningKey: opts.SigningKey,
	}
	if opts.WaitTimeout <= 0 {
		// config treats 0 as "do not wait"; blobflight treats 0 as its default.
		bo.Wait = -1
	}
	f, err := blobflight.New(bo)
	if err != nil {
		logger.Warn("single-flight compilation across hosts unavailable", "err", err)
		return nil
	}
	return f
}

// twoLevel is single-flight in two levels: first among the processes that
// share the cache directory (a lease file: cheap, and on this host usually
// the only contention), then, for the one process of the directory that
// got past it, among hosts (a lease object in the shared store). So a host
// with many processes costs the store one claimer per entry, not one per
// process, and hosts that share a directory (a network filesystem) are
// still coordinated by it. The wait bound is shared by both levels.
type twoLevel struct {
	local *lease.Manager
	hosts *blobflight.Flight
	// writer: this process can hold directory leases and copies shared
	// hits into the directory (a reader does neither).
	writer bool

	// handoffs are the goroutines holding a directory lease until another
	// host's entry shows in the directory; Close ends them (closing done)
	// and waits, so no lease is released into the directory after the
	// cache has closed.
	handoffs  sync.WaitGroup
	done      chan struct{}
	closeOnce sync.Once
}

// newTwoLevel coordinates first through local, then through hosts.
func newTwoLevel(local *lease.Manager, hosts *blobflight.Flight, writer bool) *twoLevel {
	return &twoLevel{local: local, hosts: hosts, writer: writer, done: make(chan struct{})}
}

// Close implements the optional Close of a cache.Flight: it ends pending
// handoffs, releasing their directory leases, and waits for them.
func (t *twoLevel) Close() error {
	t.closeOnce.Do(func() { close(t.done) })
	t.handoffs.Wait()
	return nil
}

// handoffWait bounds how long the holder of a directory lease keeps it
// after the entry turned up in the shared store, while the cache copies it
// into the directory: until then the directory's waiters would see the
// lease released without an entry and compile.
const handoffWait = 10 * time.Second

// Acquire implements cache.Flight.
func (t *twoLevel) Acquire(ctx context.Context, name string, ready func() bool) (func(), error) {
	start := time.Now()
	rl, err := t.local.Acquire(ctx, name, ready)
	if err != nil || rl == nil {
		// The entry is in the directory, or ctx is done.
		return rl, err
	}
	rh, err := t.hosts.AcquireSince(ctx, name, ready, start)
	switch {
	case err != nil:
		rl()
		return nil, err
	case rh == nil && !t.writer:
		rl()
		return nil, nil
	case rh == nil:
		// Another host published the entry: the caller now copies it into
		// the directory. Keep the directory lease until that copy shows,
		// so that this directory's waiters load it rather than compile;
		// never longer than handoffWait.
		t.handoffs.Add(1)
		go func() {
			defer t.handoffs.Done()
			defer rl()
			deadline := time.NewTimer(handoffWait)
			defer deadline.Stop()
			// ready() is a stat of the entry: polling it every 5 ms costs
			// little, and the copy it waits for takes milliseconds.
			tick := time.NewTicker(5 * time.Millisecond)
			defer tick.Stop()
			for !ready() {
				select {
				case <-tick.C:
				case <-deadline.C:
					return
				case <-ctx.Done():
					return
				case <-t.done:
					return
				}
			}
		}()
		return nil, nil
	}
	return func() { rh(); rl() }, nil
}

// OpenShared opens the shared store an XLACACHE_SHARED_URL names
// (s3://bucket/prefix or gs://bucket/prefix), wrapped in blob.Guard with the
// URL's timeout and cool-down, or returns nil for an empty URL. The store is
// not contacted: an unreachable one shows on first use. AWS_* variables
// complete an s3:// URL (see s3blob.ParseURL), STORAGE_EMULATOR_HOST a
// gs:// one (see gcsblob.ParseURL).
func OpenShared(url string, logger *slog.Logger) (blob.Store, error) {
	return openShared(url, 0, logger)
}

// CheckSharedURL reports whether url is an XLACACHE_SHARED_URL that
// OpenShared can open (scheme, bucket, parameters), without contacting the
// store.
func CheckSharedURL(url string) error {
	_, err := parseShared(url, 0)
	return err
}

// sharedConfig is a parsed XLACACHE_SHARED_URL: exactly one of s3 and gcs.
type sharedConfig struct {
	s3  *s3blob.Config
	gcs *gcsblob.Config
}

// parseShared parses url by its scheme, with the bound on objects read
// (0 for the default).
func parseShared(url string, maxObjectSize int64) (sharedConfig, error) {
	scheme, _, found := strings.Cut(url, "://")
	if !found {
		scheme = ""
	}
	switch strings.ToLower(scheme) {
	case "gs":
		cfg, err := gcsblob.ParseURL(url, os.Getenv)
		if err != nil {
			return sharedConfig{}, err
		}
		if maxObjectSize > 0 {
			cfg.MaxObjectSize = maxObjectSize
		}
		return sharedConfig{gcs: &cfg}, nil
	case "s3":
		cfg, err := s3blob.ParseURL(url, os.Getenv)
		if err != nil {
			return sharedConfig{}, err
		}
		if maxObjectSize > 0 {
			cfg.MaxObjectSize = maxObjectSize
		}
		return sharedConfig{s3: &cfg}, nil
	}
	return sharedConfig{}, fmt.Errorf("shared URL %q: scheme %q is not supported (want s3://bucket/prefix or gs://bucket/prefix)", config.RedactURL(url), scheme)
}

// openShared is OpenShared with the bound on objects read
// (config.Options.SharedMaxObjectSize; 0 for the default).
func openShared(url string, maxObjectSize int64, logger *slog.Logger) (blob.Store, error) {
	if url == "" {
		return nil, nil
	}
	sc, err := parseShared(url, maxObjectSize)
	if err != nil {
		return nil, err
	}
	var (
		st                store
		timeout, cooldown time.Duration
	)
	if sc.gcs != nil {
		st, err = gcsblob.Open(*sc.gcs)
		timeout, cooldown = sc.gcs.Timeout, sc.gcs.Cooldown
	} else {
		st, err = s3blob.Open(*sc.s3)
		timeout, cooldown = sc.s3.Timeout, sc.s3.Cooldown
	}
	if err != nil {
		return nil, err
	}
	return blob.Guard(st, blob.GuardOptions{
		Timeout:  timeout,
		Cooldown: cooldown,
		Logger:   logger,
		Name:     st.String(),
	}), nil
}

// store is what openShared needs of a store it opens: a name for logs.
type store interface {
	blob.Store
	String() string
}

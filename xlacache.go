// Package xlacache opens a persistent compilation cache with the parts its
// configuration names: the node-local directory (package cache), the
// shared S3 tier behind it (XLACACHE_SHARED_URL, guarded so an unreachable
// store never slows a compile) and single-flight compilation across the
// processes that share the directory (leases in the directory).
//
// Package cache depends only on the blob.Store and cache.Flight
// interfaces; this package is where the real implementations are chosen.
package xlacache

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/lease"
	"github.com/xlacache/xlacache/internal/logonce"
	"github.com/xlacache/xlacache/internal/s3blob"
)

var _ cache.Flight = (*lease.Manager)(nil)

// Open opens the cache that opts describe, as cache.Open does, with the
// shared tier of opts.SharedURL and single-flight compilation on the cache
// directory. Invalid options are an error; a shared tier or lease manager
// that cannot be set up is not: the cache then works without it, after one
// log line.
func Open(ctx context.Context, opts config.Options, logger *slog.Logger) (*cache.Cache, error) {
	if err := opts.Validate(); err != nil {
		return nil, fmt.Errorf("cache options: %w", err)
	}
	if logger == nil {
		logger = slog.Default()
	}
	if !opts.Enabled() {
		return cache.Open(ctx, opts, logger)
	}
	// The parts log as the cache does, and through one log-once filter: a
	// full disk, a read-only mount or a permission problem is one line per
	// process, whichever part meets it first.
	clog := logger.With("component", "xlacache")
	logs := logonce.New(clog)
	options := []cache.Option{cache.WithLogs(logs)}
	shared, err := openShared(opts.SharedURL, opts.SharedMaxObjectSize, clog)
	if err != nil {
		clog.Warn("shared cache tier unusable; using the local directory only", "url", s3blob.Redact(opts.SharedURL), "err", err)
	} else if shared != nil {
		options = append(options, cache.WithShared(shared))
	}
	lopts := opts
	if abs, err := filepath.Abs(opts.Dir); err == nil {
		// As cache.Open does: a later chdir must not move the leases.
		lopts.Dir = abs
	}
	lo := lease.OptionsFor(lopts, clog)
	lo.Logs = logs
	m, err := lease.New(lo)
	if err != nil {
		clog.Warn("single-flight compilation unavailable", "dir", opts.Dir, "err", err)
	} else {
		options = append(options, cache.WithFlight(m))
	}
	return cache.Open(ctx, opts, logger, options...)
}

// OpenShared opens the shared store an XLACACHE_SHARED_URL names, wrapped
// in blob.Guard with the URL's timeout and cool-down, or returns nil for an
// empty URL. The store is not contacted: an unreachable one shows on first
// use. AWS_* variables complete the URL (see s3blob.ParseURL).
func OpenShared(url string, logger *slog.Logger) (blob.Store, error) {
	return openShared(url, 0, logger)
}

// openShared is OpenShared with the bound on objects read
// (config.Options.SharedMaxObjectSize; 0 for the default).
func openShared(url string, maxObjectSize int64, logger *slog.Logger) (blob.Store, error) {
	if url == "" {
		return nil, nil
	}
	cfg, err := s3blob.ParseURL(url, os.Getenv)
	if err != nil {
		return nil, err
	}
	if maxObjectSize > 0 {
		cfg.MaxObjectSize = maxObjectSize
	}
	st, err := s3blob.Open(cfg)
	if err != nil {
		return nil, err
	}
	return blob.Guard(st, blob.GuardOptions{
		Timeout:  cfg.Timeout,
		Cooldown: cfg.Cooldown,
		Logger:   logger,
		Name:     st.String(),
	}), nil
}

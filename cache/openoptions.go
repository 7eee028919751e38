package cache

import (
	"context"
	"log/slog"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
)

// Flight coordinates processes (on one host or many, through the cache
// directory) that miss the same entry at once, so that one compiles and the
// rest load its result.
type Flight interface {
	// Acquire returns when one of three things is true:
	//   - ready() reports the entry is now present: release is nil, and the
	//     caller should read the entry;
	//   - this process holds the claim: release is non-nil, and the caller
	//     compiles, publishes, then calls release;
	//   - the bounded wait ran out, or claims are impossible (reader role,
	//     read-only directory): release is a non-nil no-op, and the caller
	//     compiles itself.
	// An error is returned only when ctx is done.
	Acquire(ctx context.Context, name string, ready func() bool) (release func(), err error)
}

// Option adds an optional part to a cache at Open. The package itself
// knows no transport and no lock protocol: the caller (xlacache.Open for
// the configured ones, tests for in-memory ones) chooses them.
type Option func(*openOptions)

type openOptions struct {
	shared  blob.Store
	flight  Flight
	parts   func(opts config.Options, writer bool) Parts
	logs    *slog.Logger
	metrics metricsOptions
}

// WithShared gives the cache a tier shared between hosts behind its local
// directory: misses fall through to it and writers publish to it. The
// store should be bounded in time and fail fast when unreachable (wrap it
// in blob.Guard). The cache owns it from then on and closes it on Close
// (or at once, when caching is off). A nil store means none.
func WithShared(s blob.Store) Option {
	return func(o *openOptions) { o.shared = s }
}

// WithLogs makes the cache log the failures that repeat (a full disk, a
// read-only mount, a permission problem) through logs, once per kind of
// failure (logonce.FailureKey) and process. When logs carries a log-once
// filter of other parts of the process (xlacache.Open gives the leases and
// the cache one), the cache shares it: whichever part meets a failure
// first logs it. A nil logs means Open's logger, with the cache's own
// filter.
func WithLogs(logs *slog.Logger) Option {
	return func(o *openOptions) { o.logs = logs }
}

// WithFlight gives the cache single-flight compilation across processes:
// of the processes that miss one entry at once, one compiles and the rest
// wait for it (bounded). A nil Flight means none: every process compiles.
// The flight is used only when the cache has a directory. If f also has a
// Close method, the cache's Close calls it before releasing the shared
// tier, so that a flight's background work ends with the cache.
func WithFlight(f Flight) Option {
	return func(o *openOptions) { o.flight = f }
}

// Parts are the optional parts WithParts attaches: a shared tier and a
// Flight, as WithShared and WithFlight would (nil: none).
type Parts struct {
	Shared blob.Store
	Flight Flight
}

// WithParts lets the caller choose the shared tier and the Flight once
// Open knows what they depend on: connect gets the options validated, with
// Dir made absolute (and symbolic links resolved, when the directory
// opened), and whether this process writes the directory (the configured
// role, unless the directory turned out unusable for writing; see
// Cache.Writer). A writer by configuration that cannot write must not
// claim entries it will never publish, and a part keyed by the directory
// must not move with a later chdir: deciding both here means nobody fixes
// them after Open. connect is called once, only when caching is enabled
// and the options valid; the parts it returns replace those of WithShared
// and WithFlight.
func WithParts(connect func(opts config.Options, writer bool) Parts) Option {
	return func(o *openOptions) { o.parts = connect }
}

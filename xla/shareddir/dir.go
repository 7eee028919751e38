package shareddir

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// PruneDir bounds a node-local cache directory to opts.MaxSize
// (XLACACHE_MAX_SIZE), whatever it holds: xlacache's tiers, XLA's
// subcaches, JAX's entries, or a mix. It is what `xlacache exec` runs at
// exit, and it has the protections of every deleting path in a directory
// shared with JAX and XLA (see jaxcache.Prune and internal/inuse): the trim lock
// and JAX's .lockfile, a grace period (jaxcache.DefaultGrace) for files XLA or JAX
// may be writing, no removal of a file a process on this host has open for
// writing, and a re-check of each file just before it goes. Temporary
// files XLA's crashed writers left (autotune results in tmp/,
// "xla_gpu_kernel_cache_file.tmp.*") count toward the bound and go once
// out of the grace period.
//
// c is the caller's open cache, used when it is a writer on opts.Dir (a
// second writer in the same process would find the trim lock held by the
// first's background trim); otherwise, when the directory holds
// xlacache's state, PruneDir opens a local writer on it for the prune
// (never touching the shared tier). With opts.MaxSize <= 0 only garbage
// goes: stale temporary files and JAX's orphaned atime files.
func PruneDir(ctx context.Context, c *cache.Cache, opts config.Options, logger *slog.Logger) (Result, error) {
	var res Result
	if logger == nil {
		logger = slog.Default()
	}
	dir := opts.Dir
	if st, err := os.Stat(dir); err != nil {
		return res, fmt.Errorf("prune %s: %w", dir, err)
	} else if !st.IsDir() {
		return res, fmt.Errorf("prune %s: not a directory", dir)
	}
	lay, err := Inspect(ctx, dir)
	if err != nil {
		return res, fmt.Errorf("prune %s: %w", dir, err)
	}
	if !lay.Own {
		jres, err := jaxcache.Prune(ctx, dir, jaxcache.PruneOptions{MaxSize: opts.MaxSize, FileMode: opts.EffectiveFileMode(), Logger: logger})
		res.JAX = jres
		return res, err
	}
	if c == nil || !c.Writer() || c.Dir() != dir {
		o := opts
		// No bound on the cache itself: opening over the bound would
		// start a background trim that does the work unreported.
		o.SharedURL, o.Role, o.MaxSize = "", config.RoleWriter, 0
		own, err := cache.Open(ctx, o, logger)
		if err != nil {
			return res, fmt.Errorf("prune %s: %w", dir, err)
		}
		defer own.Close()
		if !own.Writer() {
			return res, errors.New("prune " + dir + ": the directory is not writable (see the log line above)")
		}
		c = own
	}
	if lay.JAX {
		return Prune(ctx, c, dir, opts.MaxSize, false, logger)
	}
	xres, err := c.Prune(ctx, opts.MaxSize, false)
	if err != nil {
		return res, err
	}
	return Result{Own: xres, OwnBefore: xres.Bytes, OwnLeft: xres.Left()}, nil
}

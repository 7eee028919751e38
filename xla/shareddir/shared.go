// Package shareddir enforces one size bound over a cache directory shared
// by xlacache and JAX. `xlacache env` points JAX_COMPILATION_CACHE_DIR at
// the xlacache directory, so a directory commonly holds both xlacache's
// tiers and JAX's "<module>-<hash>-cache" entries, with XLA's raw files in
// it once, counted as xlacache's. The JAX side is package jaxcache (which
// knows only JAX's format); the xlacache side is the core, package cache.
package shareddir

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// Result reports what Prune did (or would do).
type Result struct {
	// Own is xlacache's part (tiers, XLA's subcaches, quarantine):
	// Removed, RemovedBytes and StaleTemps summed over its passes.
	Own cache.PruneResult
	// OwnBefore and OwnLeft are xlacache's bytes before and after.
	OwnBefore, OwnLeft int64
	// JAX is JAX's part (entries and atime files).
	JAX jaxcache.PruneResult
}

// Before is the whole directory's bytes before the prune.
func (r Result) Before() int64 { return r.OwnBefore + r.JAX.Before }

// After is the whole directory's bytes after the prune.
func (r Result) After() int64 { return r.OwnLeft + r.JAX.After }

// pruneFile is one file in the global least-recently-used order of a
// shared directory.
type pruneFile struct {
	own     bool // xlacache's (tiers, XLA subcaches, quarantine); else a JAX entry
	size    int64
	lastUse time.Time
}

// Prune enforces one bound, maxSize, on a directory holding both
// xlacache's part (c's directory) and JAX entries, evicting least recently
// used files first across both: xlacache files by modification time, which
// its hits refresh; JAX entries by their atime files. It prunes xlacache's
// share of that plan through c.Prune, then JAX's through Prune with
// xlacache's actual remaining bytes counted against the bound, then
// xlacache again if JAX kept files it could not remove (being written, or
// in the grace period) and xlacache still has some.
//
// Both parts have the same protections against removing a file someone is
// writing (internal/inuse): JAX's part under JAX's .lockfile, xlacache's
// under its trim lock, and in both XLA's files (kernel cache, autotune
// results and their temporaries) and JAX's entries are kept while in the
// grace period or open for writing on this host, and re-checked just
// before removal. maxSize <= 0 removes only garbage (stale temporary
// files, orphaned atime files).
func Prune(ctx context.Context, c *cache.Cache, dir string, maxSize int64, dryRun bool, logger *slog.Logger) (Result, error) {
	var res Result
	if maxSize <= 0 {
		xres, err := c.Prune(ctx, 0, dryRun)
		if err != nil {
			return res, err
		}
		jres, err := jaxcache.Prune(ctx, dir, jaxcache.PruneOptions{SkipSubcaches: true, DryRun: dryRun, Logger: logger})
		return Result{Own: xres, OwnBefore: xres.Bytes, OwnLeft: xres.Left(), JAX: jres}, err
	}
	jd, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return res, err
	}
	u, err := cache.Scan(ctx, dir)
	if err != nil {
		return res, err
	}
	files, err := cache.Files(ctx, dir)
	if err != nil {
		return res, err
	}
	own := make([]pruneFile, len(files))
	for i, f := range files {
		own[i] = pruneFile{own: true, size: f.Size, lastUse: f.ModTime}
	}
	// c.Prune treats a bound <= 0 as "no bound": 1 byte evicts every
	// non-empty file.
	target := max(planOwnTarget(u.Bytes, own, jd, maxSize), 1)
	xres, err := c.Prune(ctx, target, dryRun)
	if err != nil {
		return res, err
	}
	ownBefore := xres.Bytes
	ownLeft := xres.Left()
	jres, err := jaxcache.Prune(ctx, dir, jaxcache.PruneOptions{MaxSize: maxSize, OtherBytes: ownLeft, SkipSubcaches: true, DryRun: dryRun, Logger: logger})
	if err != nil {
		return res, err
	}
	if ownLeft+jres.After > maxSize && ownLeft > 0 {
		more, err := c.Prune(ctx, max(maxSize-jres.After, 1), dryRun)
		if err != nil {
			return res, err
		}
		if dryRun {
			// A dry run removed nothing: the second plan counts from the
			// same files and includes the first.
			xres = more
		} else {
			xres.Removed += more.Removed
			xres.RemovedBytes += more.RemovedBytes
			xres.StaleTemps += more.StaleTemps
			xres.StaleTempBytes += more.StaleTempBytes
		}
		ownLeft = ownBefore - xres.RemovedBytes - xres.StaleTempBytes
	}
	return Result{Own: xres, OwnBefore: ownBefore, OwnLeft: ownLeft, JAX: jres}, nil
}

// planOwnTarget returns the bytes xlacache's part of a shared directory
// may keep so that evicting least recently used files across both parts
// brings the total to maxSize: it walks all files oldest first, as one
// LRU would, and sums the xlacache ones it passes. ownTotal is xlacache's
// total as its prune counts it; JAX's orphaned atime files are garbage
// that JAX's prune removes anyway, so they do not take a place in the
// order.
func planOwnTarget(ownTotal int64, own []pruneFile, jd *jaxcache.Dir, maxSize int64) int64 {
	files := append([]pruneFile(nil), own...)
	total := ownTotal
	for _, e := range jd.Entries {
		files = append(files, pruneFile{size: e.Size + e.AtimeSize, lastUse: e.LastUse})
		total += e.Size + e.AtimeSize
	}
	sort.SliceStable(files, func(i, j int) bool { return files[i].lastUse.Before(files[j].lastUse) })
	var evict int64
	for _, f := range files {
		if total <= maxSize {
			break
		}
		total -= f.size
		if f.own {
			evict += f.size
		}
	}
	return ownTotal - evict
}

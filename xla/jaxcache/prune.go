package jaxcache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/xlacache/xlacache/internal/inuse"
	"github.com/xlacache/xlacache/internal/logonce"
)

// DefaultGrace is how recently a file may have been modified and still be
// left alone by Prune: JAX writes entries in place and XLA rewrites its
// kernel cache file in place, so a young file may be half written. It is
// generous because the writer may be on another host of a shared
// filesystem, where neither locks nor /proc can see it. xlacache's own
// trims use the same period for XLA's files (internal/inuse).
const DefaultGrace = inuse.Grace

// clockAndGrace fills in the defaults of the Now and Grace options Prune
// and Verify share: the wall clock, and DefaultGrace for zero or less.
func clockAndGrace(now func() time.Time, grace time.Duration) (func() time.Time, time.Duration) {
	if now == nil {
		now = time.Now
	}
	if grace <= 0 {
		grace = DefaultGrace
	}
	return now, grace
}

// PruneOptions configures Prune.
type PruneOptions struct {
	// MaxSize bounds the directory's bytes (entries, atime files and XLA's
	// subcaches) plus OtherBytes. <= 0 removes only garbage (orphaned
	// atime files and stale XLA temporary files).
	MaxSize int64
	// OtherBytes are bytes of other tiers sharing the directory (such as
	// xlacache's own) that count against MaxSize but are not Prune's.
	OtherBytes int64
	// SkipSubcaches leaves XLA's subcache files to another pruner: they
	// are neither counted (Before, After) nor removed. xlacache sets it in
	// a directory it shares with JAX, where its own pruning counts and
	// evicts the subcaches, so that they are counted once.
	SkipSubcaches bool
	// Grace protects recently modified files; zero means DefaultGrace.
	Grace time.Duration
	// LockTimeout bounds the wait for JAX's lock; zero means 30s.
	LockTimeout time.Duration
	// DryRun reports what would be removed without removing it.
	DryRun bool
	// FileMode is used if the lock file must be created; zero means 0600.
	FileMode os.FileMode
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
}

// Kept is a file Prune would have removed but left in place.
type Kept struct {
	Path   string
	Reason string
}

// PruneResult reports what Prune did.
type PruneResult struct {
	// Before and After are the directory's bytes (without OtherBytes).
	Before, After int64
	Removed       []string
	RemovedBytes  int64
	Kept          []Kept
	// Locked says JAX's lock was held while pruning.
	Locked bool
}

// unit is what Prune removes together: an entry's two files, or one
// subcache file.
type unit struct {
	paths   []string
	size    int64
	lastUse time.Time
	modTime time.Time
	garbage bool
	what    string
}

// Prune evicts least recently used entries and XLA subcache files until
// the directory fits MaxSize. It never removes a file being written:
//   - it holds JAX's own lock (flock on .lockfile) while it works, which
//     excludes every JAX process that bounds its cache;
//   - it skips files any local process has open for writing (/proc);
//   - it skips files modified within the grace period, which covers
//     JAX processes without the lock and writers on other hosts;
//   - it re-checks each file's modification time just before removing it.
func Prune(ctx context.Context, dir string, po PruneOptions) (PruneResult, error) {
	var res PruneResult
	now, grace := clockAndGrace(po.Now, po.Grace)
	lockTimeout := po.LockTimeout
	if lockTimeout <= 0 {
		lockTimeout = 30 * time.Second
	}
	mode := po.FileMode
	if mode == 0 {
		mode = 0o600
	}
	logger := po.Logger
	if logger == nil {
		logger = slog.Default()
	}
	// A read-only or foreign-owned directory fails every removal the same
	// way: one line per kind of failure.
	logs := logonce.New(logger)
	unlock, held, err := lockJAX(ctx, dir, mode, !po.DryRun, lockTimeout)
	if err != nil {
		return res, fmt.Errorf("prune JAX cache %s: %w", dir, err)
	}
	defer unlock()
	res.Locked = held

	d, err := Scan(ctx, dir)
	if err != nil {
		return res, err
	}
	// Removals go through a root on dir: a directory swapped for a
	// symbolic link after the scan cannot redirect one outside.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return res, fmt.Errorf("prune JAX cache %s: %w", dir, err)
	}
	defer root.Close()
	if po.SkipSubcaches {
		d.Subcaches = nil
	}
	res.Before = d.Stats().TotalBytes
	res.After = res.Before
	guard := inuse.New(dir, root, grace, now)
	t0 := now()

	var units []unit
	for _, p := range d.OrphanAtimes {
		if info, err := os.Lstat(p); err == nil {
			units = append(units, unit{paths: []string{p}, size: info.Size(), lastUse: info.ModTime(), modTime: info.ModTime(), garbage: true, what: "orphaned atime file"})
		}
	}
	for _, e := range d.Entries {
		u := unit{paths: []string{e.Path}, size: e.Size + e.AtimeSize, lastUse: e.LastUse, modTime: e.ModTime, what: "JAX entry " + e.Key}
		if e.AtimeSize > 0 || e.HasAtime {
			u.paths = append(u.paths, e.Path[:len(e.Path)-len(CacheSuffix)]+AtimeSuffix)
		}
		units = append(units, u)
	}
	for _, f := range d.Subcaches {
		units = append(units, unit{paths: []string{f.Path}, size: f.Size, lastUse: f.LastUse, modTime: f.ModTime, garbage: f.Temp, what: "XLA " + f.Subcache + " file"})
	}
	// Garbage first, then least recently used first.
	sort.SliceStable(units, func(i, j int) bool {
		if units[i].garbage != units[j].garbage {
			return units[i].garbage
		}
		return units[i].lastUse.Before(units[j].lastUse)
	})

	for _, u := range units {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		over := po.MaxSize > 0 && res.After+po.OtherBytes > po.MaxSize
		if !u.garbage && !over {
			continue
		}
		if reason := inFlight(dir, u, guard, t0, grace); reason != "" {
			res.Kept = append(res.Kept, Kept{u.paths[0], reason})
			continue
		}
		if po.DryRun {
			res.Removed = append(res.Removed, u.paths...)
			res.RemovedBytes += u.size
			res.After -= u.size
			continue
		}
		removed, err := removeUnit(root, dir, u)
		res.Removed = append(res.Removed, removed...)
		if err != nil {
			logs.Warn(logonce.FailureKey(err), "xlacache: prune could not remove a JAX cache file", "file", u.paths[0], "err", err)
			res.Kept = append(res.Kept, Kept{u.paths[0], err.Error()})
			continue
		}
		res.RemovedBytes += u.size
		res.After -= u.size
	}
	return res, nil
}

// inFlight says why a unit (files under dir) must not be removed now, or
// "".
func inFlight(dir string, u unit, guard *inuse.Guard, now time.Time, grace time.Duration) string {
	for _, p := range u.paths {
		if rel, err := filepath.Rel(dir, p); err == nil && guard.Busy(filepath.ToSlash(rel)) {
			return "open for writing by a running process"
		}
	}
	// Only the data file's age matters: JAX rewrites an entry's atime
	// file on every read, and losing that 8-byte file mid-write is
	// harmless (JAX recreates it).
	if info, err := os.Lstat(u.paths[0]); err == nil && now.Sub(info.ModTime()) < grace {
		return fmt.Sprintf("modified %v ago, within the %v grace period (may be being written)", now.Sub(info.ModTime()).Round(time.Second), grace)
	}
	if !u.modTime.IsZero() {
		if info, err := os.Lstat(u.paths[0]); err == nil && !info.ModTime().Equal(u.modTime) {
			return "modified since the scan"
		}
	}
	return ""
}

// removeUnit removes a unit's files (paths under dir) through root, the
// data file first so that a JAX reader never finds an entry without its
// content. A file already gone is not an error.
func removeUnit(root *os.Root, dir string, u unit) ([]string, error) {
	var removed []string
	for _, p := range u.paths {
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return removed, err
		}
		if err := root.Remove(filepath.ToSlash(rel)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return removed, err
		}
		removed = append(removed, p)
	}
	return removed, nil
}

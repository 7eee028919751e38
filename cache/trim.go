package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"time"

	"github.com/xlacache/xlacache/internal/inuse"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/lockedfile"
)

// lowWater is the fraction of MaxSize a trim shrinks the cache to. Trimming
// below the bound (not just to it) spaces scans out: a full scan happens
// once per (1-lowWater)*MaxSize bytes written, so its cost per put stays
// constant however many entries exist.
const lowWater = 0.9

// reconcileInterval bounds how often a writer that handed XLA a raw
// subcache path recounts the directory (XLA writes there behind our back).
const reconcileInterval = 10 * time.Minute

// addSizeAt records that this process wrote delta bytes at rel (relative
// to the cache directory) and starts a background trim when the running
// total passes the bound.
func (c *Cache) addSizeAt(rel string, delta int64) {
	if c.ledger == nil {
		return
	}
	c.trimPuts.note(rel, delta)
	total, err := c.ledger.add(delta)
	if err != nil {
		c.failure("", "updating the size ledger", c.ledger.path, err)
		return
	}
	if c.opts.MaxSize > 0 && total > c.opts.MaxSize {
		c.startTrim()
	}
}

// startTrim asks for a trim and runs it in the background unless this
// process is trimming already; a request that arrives during a trim makes
// the running goroutine go round again, so no crossing of the bound is lost.
func (c *Cache) startTrim() {
	if !c.writer {
		return
	}
	c.trimWanted.Store(true)
	if !c.trimming.CompareAndSwap(false, true) {
		return
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		// The first pass starts even when Close came first: a short
		// run still owes the directory its pass's budget (passBudget).
		first := true
		for {
			for c.trimWanted.Swap(false) && (first || c.bgCtx.Err() == nil) {
				first = false
				c.lastReconcile.Store(time.Now().UnixNano())
				target := int64(0)
				if c.opts.MaxSize > 0 {
					target = int64(float64(c.opts.MaxSize) * lowWater)
				}
				// A pass resumes where the last process left it and
				// records its progress, so that short runs converge
				// (trimcursor.go).
				again, err := c.trimPass(c.bgCtx, c.opts.MaxSize, target)
				if err != nil && !errors.Is(err, errTrimBusy) && !errors.Is(err, errTrimPaused) && c.bgCtx.Err() == nil {
					c.failure("", "trimming the cache", c.dir, err)
				}
				if again {
					c.trimWanted.Store(true)
				}
			}
			c.trimming.Store(false)
			if !c.trimWanted.Load() || c.bgCtx.Err() != nil || !c.trimming.CompareAndSwap(false, true) {
				return
			}
		}
	}()
}

// trimAtOpen starts a background trim for a writer that opens a directory
// whose size total is unknown or stale (XLA's subcaches grew behind our
// back; the pass also removes stale temporary files, at most about once per
// touchInterval for the whole directory, as the recount rewrites the time),
// over its bound, or with a trim pass that an earlier process left
// unfinished.
func (c *Cache) trimAtOpen() {
	if !c.writer || c.ledger == nil {
		return
	}
	total, last, err := c.ledger.read()
	if err != nil {
		return
	}
	if time.Since(last) > touchInterval || (c.opts.MaxSize > 0 && total > c.opts.MaxSize) || c.trimPending() {
		c.startTrim()
	}
}

// waitBackground waits for background trims to finish without cancelling
// them (Close cancels).
func (c *Cache) waitBackground() { c.bg.Wait() }

// fileInfo is one file found by a scan.
type fileInfo struct {
	path  string // absolute
	rel   string // slash-separated, relative to the cache directory
	size  int64
	mtime time.Time
	// class is what layout.Classify says the file is: an entry, a file of
	// XLA's subcaches or a quarantined file (only those are counted).
	class layout.Class
	// info is what the scan saw, for the re-check before a removal.
	info fs.FileInfo
	// stale marks a temporary file old enough to be garbage.
	stale bool
}

// staleAfter is how old a temporary file must be before it is garbage:
// xlacache's own after staleTemp (a big entry written to a slow network
// filesystem takes a while), XLA's (an autotune result in tmp/, a kernel
// cache temporary) after the grace period of internal/inuse, since XLA
// renames them as soon as they are written.
func staleAfter(rel string, class layout.Class) time.Duration {
	if layout.XLAOwned(rel, class) {
		return inuse.Grace
	}
	return staleTemp
}

// removeVeto says why the counted file f must not be removed now, or "".
// XLA's files (kernel cache, autotune results) get every protection of
// internal/inuse: XLA writes them behind xlacache's back, in place in
// older releases. xlacache's own entries are written whole and renamed
// into place, so they only get the re-check: one whose modification time
// changed since the scan was hit (or rewritten) meanwhile and is no longer
// the least recently used.
func removeVeto(g *inuse.Guard, root *os.Root, rel string, class layout.Class, seen fs.FileInfo) string {
	if layout.XLAOwned(rel, class) {
		return g.Veto(rel, seen)
	}
	cur, err := root.Lstat(rel)
	if err != nil {
		return ""
	}
	return inuse.Changed(seen, cur)
}

// removeStaleTemp removes a stale temporary file (f.stale) unless a
// process on this host holds it open for writing or it changed since the
// scan; dryRun only checks. It reports whether the file is (or would be)
// gone.
func removeStaleTemp(g *inuse.Guard, root *os.Root, f fileInfo, dryRun bool) bool {
	if !f.stale || g.Veto(f.rel, f.info) != "" {
		return false
	}
	if dryRun {
		return true
	}
	return root.Remove(f.rel) == nil
}

// PruneResult reports what a trim or prune did.
type PruneResult struct {
	// Files and Bytes found by the scan.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// Removed files and the bytes they held.
	Removed      int   `json:"removed"`
	RemovedBytes int64 `json:"removed_bytes"`
	// StaleTemps are leftover temporary files removed (writers killed
	// mid-write leave them), and StaleTempBytes their bytes. Stale ones
	// count toward the bound while they exist (in Bytes); young ones
	// belong to writes in progress and are neither counted nor removed.
	StaleTemps     int   `json:"stale_temps"`
	StaleTempBytes int64 `json:"stale_temp_bytes"`
}

// Left is the bytes the directory holds after the trim (or would, after a
// dry run): what was counted less what was removed.
func (r PruneResult) Left() int64 { return r.Bytes - r.RemovedBytes - r.StaleTempBytes }

// errTrimBusy: another process holds the trim lock (and is doing the work).
var errTrimBusy = errors.New("another process is trimming the cache; try again shortly")

// lockTrim takes the trim lock, which makes one process at a time trim the
// directory: errTrimBusy when another holds it.
func (c *Cache) lockTrim() (*lockedfile.File, error) {
	lock, err := lockedfile.TryLock(layout.TrimLockRel, lockedfile.Options{Perm: c.opts.EffectiveFileMode(), Root: c.root})
	if errors.Is(err, lockedfile.ErrLocked) {
		return nil, errTrimBusy
	}
	if err != nil {
		return nil, fmt.Errorf("trim lock: %w", err)
	}
	return lock, nil
}

// trim scans the cache directory, removes stale temporary files and, when
// the total exceeds bound (> 0), removes least-recently-used files until
// it is at most target. It then rewrites the size ledger. Only one process
// trims at a time; others get errTrimBusy at once.
func (c *Cache) trim(ctx context.Context, bound, target int64, dryRun bool) (PruneResult, error) {
	var res PruneResult
	if c.dir == "" || !c.writer {
		return res, nil
	}
	lock, err := c.lockTrim()
	if err != nil {
		return res, err
	}
	defer lock.Unlock()

	var before int64
	if c.ledger != nil {
		before, _, _ = c.ledger.read()
	}
	sc, err := scanFiles(ctx, c.root, c.dir)
	if err != nil {
		return res, err
	}
	files := sc.files
	res.Files = len(files)
	// The trim lock keeps other xlacache trims out; the guard covers the
	// writers no lock reaches (XLA, JAX, other hosts).
	guard := inuse.New(c.dir, c.root, 0, nil)
	for _, f := range files {
		res.Bytes += f.size
	}
	// Stale temporary files (left by writers killed mid-write) count
	// toward the bound while they exist, and are removed here. A young
	// one belongs to a write in progress, which counts its bytes when it
	// completes (addSize).
	remaining := res.Bytes
	for _, f := range sc.temps {
		if !f.stale {
			continue
		}
		res.Bytes += f.size
		remaining += f.size
		if removeStaleTemp(guard, c.root, f, dryRun) {
			res.StaleTemps++
			res.StaleTempBytes += f.size
			remaining -= f.size
		}
	}
	if bound > 0 && remaining > bound {
		sort.Slice(files, func(i, j int) bool { return files[i].mtime.Before(files[j].mtime) })
		for _, f := range files {
			if remaining <= target {
				break
			}
			if ctx.Err() != nil {
				break
			}
			if reason := removeVeto(guard, c.root, f.rel, f.class, f.info); reason != "" {
				c.logger.Debug("trim: keeping file", "path", f.path, "reason", reason)
				continue
			}
			if dryRun {
				// Count it as if removed.
			} else if err := c.root.Remove(f.rel); err != nil {
				if !errors.Is(err, fs.ErrNotExist) {
					c.logger.Debug("trim: removing file", "path", f.path, "err", err)
				}
				continue
			}
			remaining -= f.size
			res.Removed++
			res.RemovedBytes += f.size
		}
		if dryRun {
			return res, nil
		}
		c.logger.Info("trimmed cache", "dir", c.dir, "removed_files", res.Removed, "removed_bytes", res.RemovedBytes, "bytes", remaining, "max_size", bound)
	}
	if !dryRun {
		// This exact trim makes an unfinished pass (and its fraction,
		// computed from an older total) moot.
		c.dropTrimCursor()
	}
	if c.ledger != nil && !dryRun {
		err := c.ledger.locked(func() error {
			cur, _, err := c.ledger.readLocked()
			if err != nil {
				return err
			}
			// Puts that landed during the scan moved the ledger from
			// before to cur; keep their delta on top of the scanned truth.
			return c.ledger.writeLocked(remaining+(cur-before), time.Now())
		})
		if err != nil {
			return res, err
		}
	}
	return res, nil
}

// scan is what scanFiles found.
type scan struct {
	// files count toward the size bound (layout.Class.Counted) and are
	// regular files.
	files []fileInfo
	// temps are temporary files (layout.Temp), stale or not.
	temps []fileInfo
	// odd are non-regular files (symbolic links, FIFOs, sockets,
	// devices) where the layout expects a counted file: damage, never
	// opened, reported by Verify.
	odd []fileInfo
}

// scanFiles lists every file under the cache directory (opened as root;
// dir is its path, for the absolute paths it reports) that counts toward
// the size bound (layout.Class.Counted): entries of every tier, XLA's
// subcaches, quarantined files. Nothing else is counted or ever evicted:
// not the state directory, not the single-flight lease directory (removing
// a live lease would break single-flight), and not files xlacache does not
// own — a user's file, a stray file in a tier that is not an entry, or the
// entries of a JAX cache sharing the directory, which JAX manages under its
// own lock. Temporary files (layout.Temp) are returned separately, marked
// stale when older than staleTemp (young ones belong to writes in
// progress; XLA's get a shorter age, staleAfter). The walk goes through
// root and never descends into a symbolic link.
func scanFiles(ctx context.Context, root *os.Root, dir string) (scan, error) {
	var sc scan
	now := time.Now()
	err := layout.Walk(ctx, root.FS(), func(lf layout.File, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		rel, d, class := lf.Rel, lf.Entry, lf.Class
		p := layout.Dir(dir).Join(rel)
		if class.Kind != layout.Temp && !class.Counted() {
			return nil
		}
		info, err := d.Info()
		if err != nil {
			return nil // vanished
		}
		f := fileInfo{path: p, rel: rel, size: info.Size(), mtime: info.ModTime(), class: class, info: info}
		switch {
		case !d.Type().IsRegular():
			if class.Kind != layout.Temp {
				f.size = 0
				sc.odd = append(sc.odd, f)
			}
		case class.Kind == layout.Temp:
			f.stale = now.Sub(info.ModTime()) > staleAfter(rel, class)
			sc.temps = append(sc.temps, f)
		default:
			sc.files = append(sc.files, f)
		}
		return nil
	})
	if err != nil {
		return scan{}, fmt.Errorf("scanning %s: %w", dir, err)
	}
	return sc, nil
}

// Prune removes least-recently-used files until the directory holds at
// most maxSize bytes (every tier, subcaches and quarantine included) and
// removes stale temporary files. maxSize <= 0 only removes temporaries and
// recounts. The cache must be a writer. With dryRun nothing is removed and
// the result says what would be.
func (c *Cache) Prune(ctx context.Context, maxSize int64, dryRun bool) (PruneResult, error) {
	if c == nil || c.dir == "" {
		return PruneResult{}, errors.New("prune: no usable cache directory")
	}
	if !c.writer {
		return PruneResult{}, fmt.Errorf("prune %s: this process is a reader (role %s, index %d)", c.dir, c.opts.Role, c.opts.ProcessIndex)
	}
	// A background trim of this process (started at Open) holds the trim
	// lock; let it finish rather than report a busy lock.
	c.waitBackground()
	return c.trim(ctx, maxSize, maxSize, dryRun)
}

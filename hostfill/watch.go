package hostfill

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/fsnotify/fsnotify"

	"github.com/xlacache/xlacache/internal/layout"
)

// WatchOptions configure Watch.
type WatchOptions struct {
	// Dir is the directory's path (the watcher needs a path; reads and
	// publishes still go through the Publisher's root).
	Dir string
	// Poll is the interval of full scans: the fallback for filesystems
	// without inotify (NFS, some FUSE mounts) and for events the kernel
	// dropped. 0 means 10 s, or 2 s when no watcher could be set up.
	Poll time.Duration
	// Settle is how long the directory must be quiet after an event
	// before a publish; 0 means 200 ms. JAX writes an entry in place, so
	// one entry is many write events.
	Settle time.Duration
	// NoNotify skips file events and relies on scans alone (tests, and
	// filesystems where events are known not to arrive).
	NoNotify bool
	// BatchDelay is the longest a new complete file waits to be sent with
	// the ones after it: files are sent in one pack once the pack is full
	// (Options.PackFiles, PackBytes) or once the first has waited this
	// long, not one pack per burst; 0 means 5 s. The caller's final
	// Publish sends what is left.
	BatchDelay time.Duration
	// OnError receives each failed publish (the caller logs once per
	// kind); nil ignores them.
	OnError func(error)
}

// Watch publishes new complete files of the directory until ctx is done:
// after each burst of file events (fsnotify) it looks at the paths the
// events named, and every Poll at the whole directory; files are sent in
// packs by size and time (BatchDelay). It returns when ctx is done; the
// caller then makes the final publish, which sends what is held.
func Watch(ctx context.Context, p *Publisher, wo WatchOptions) {
	settle := wo.Settle
	if settle <= 0 {
		settle = 200 * time.Millisecond
	}
	poll := wo.Poll
	var w *fsnotify.Watcher
	err := errors.New("file events off")
	if !wo.NoNotify {
		w, err = fsnotify.NewWatcher()
	}
	var events <-chan fsnotify.Event
	var werrs <-chan error
	if err == nil {
		defer w.Close()
		if err = addWatches(ctx, w, wo.Dir, wo.Dir); err == nil {
			events, werrs = w.Events, w.Errors
		}
		// else: no watch on the directory itself (inotify's watch limit
		// reached, say): scans alone, at the fallback's pace.
	}
	if poll <= 0 {
		poll = 10 * time.Second
		if err != nil {
			poll = 2 * time.Second
		}
	}
	report := func(err error) {
		if err != nil && wo.OnError != nil && ctx.Err() == nil {
			wo.OnError(err)
		}
	}
	batchDelay := wo.BatchDelay
	if batchDelay <= 0 {
		batchDelay = 5 * time.Second
	}
	// One scan once the watches are set: a file that appeared before them
	// sent no event the watcher saw.
	report(p.collect(ctx, nil))
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	var settleC, flushC <-chan time.Time
	var settleT, flushT *time.Timer
	// arm schedules a publish once the directory has been quiet for
	// settle.
	arm := func() {
		if settleT == nil {
			settleT = time.NewTimer(settle)
		} else {
			settleT.Reset(settle)
		}
		settleC = settleT.C
	}
	// armFlush schedules the sending of held files when they are due.
	armFlush := func() {
		due, ok := p.flushDue(batchDelay)
		if !ok || flushC != nil {
			return
		}
		d := max(time.Until(due), 0)
		if flushT == nil {
			flushT = time.NewTimer(d)
		} else {
			flushT.Reset(d)
		}
		flushC = flushT.C
	}
	armFlush()
	// changed are the paths (relative to the directory) of the events
	// since the last publish: a publish after a burst looks at those
	// alone; full is set when the kernel dropped events.
	changed := map[string]bool{}
	full := false
	for {
		select {
		case <-ctx.Done():
			for _, t := range []*time.Timer{settleT, flushT} {
				if t != nil {
					t.Stop()
				}
			}
			return
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			if ev.Has(fsnotify.Create) && w != nil {
				// A new directory (the autotune directory, a tier's
				// shard) is watched too.
				_ = addWatches(ctx, w, wo.Dir, ev.Name)
			}
			if rel, err := filepath.Rel(wo.Dir, ev.Name); err == nil && filepath.IsLocal(rel) {
				changed[filepath.ToSlash(rel)] = true
			} else {
				full = true
			}
			arm()
		case err, ok := <-werrs:
			if !ok {
				werrs = nil
				continue
			}
			if errors.Is(err, fsnotify.ErrEventOverflow) {
				// The kernel dropped events: scan once the burst settles
				// rather than at the next poll.
				full = true
				arm()
			}
		case <-settleC:
			settleC = nil
			var rels []string
			if !full {
				rels = make([]string, 0, len(changed))
				for rel := range changed {
					rels = append(rels, rel)
				}
			}
			changed, full = map[string]bool{}, false
			if rels == nil || len(rels) > 0 {
				report(p.collect(ctx, rels))
			}
			armFlush()
		case <-ticker.C:
			report(p.collect(ctx, nil))
			armFlush()
		case <-flushC:
			flushC = nil
			if due, ok := p.flushDue(batchDelay); ok && !time.Now().Before(due) {
				report(p.flush(ctx))
			}
			armFlush()
		}
	}
}

// addWatches watches p (a path under root, the cache directory) and the
// directories below it that layout.WalkDirs says a scan looks in: the
// cache directory, the autotune directory and xlacache's tiers, never the
// state or locks directory or a directory the cache does not own. Two
// directories a scan looks in are left out because they never hold a
// packed file: the quarantine and XLA's autotune tmp directory (a result
// renamed out of it is an event in the autotune directory). An empty
// top-level directory named like a backend is watched too: it is not a
// tier yet only because its tiers are not made yet, and the event of
// their making is what gets them watched. It returns the error of the
// watch on p itself.
func addWatches(ctx context.Context, w *fsnotify.Watcher, root, p string) error {
	top, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(top) && top != "." {
		return nil
	}
	if top != "." {
		// Most events name files: those need no walk.
		if info, err := os.Lstat(p); err != nil || !info.IsDir() {
			return nil
		}
	}
	top = filepath.ToSlash(top)
	var first error
	watch := func(rel string) {
		if err := w.Add(filepath.Join(root, filepath.FromSlash(rel))); err != nil && rel == top {
			first = err
		}
	}
	fsys := os.DirFS(root)
	watched := false
	_ = layout.WalkDirs(ctx, fsys, top, func(rel string, err error) error {
		if err != nil {
			return nil
		}
		if rel == layout.QuarantineDir || rel == layout.XLAAutotuneDir+"/"+layout.XLAAutotuneTmpDir {
			return fs.SkipDir
		}
		watch(rel)
		watched = watched || rel == top
		if rel == "." {
			watchNewTiers(fsys, watch)
		}
		return nil
	})
	if !watched && !strings.Contains(top, "/") && mayBecomeTier(fsys, top) {
		watch(top)
	}
	return first
}

// watchNewTiers watches the empty top-level directories that may become
// backend tiers (mayBecomeTier), which a walk of the directory passes by.
func watchNewTiers(fsys fs.FS, watch func(rel string)) {
	ents, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return
	}
	for _, e := range ents {
		if e.IsDir() && mayBecomeTier(fsys, e.Name()) {
			watch(e.Name())
		}
	}
}

// mayBecomeTier reports whether the top-level directory name is empty and
// named like a backend, so that it becomes a tier directory (one
// layout.OwnedTopDir accepts) once its tiers are made in it.
func mayBecomeTier(fsys fs.FS, name string) bool {
	if layout.ValidTierName(name+"/"+layout.AutotuneSub) != nil {
		return false
	}
	info, err := fs.Lstat(fsys, name)
	if err != nil || !info.IsDir() {
		return false
	}
	ents, err := fs.ReadDir(fsys, name)
	return err == nil && len(ents) == 0
}

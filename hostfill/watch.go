package hostfill

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
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
	// OnError receives each failed publish (the caller logs once per
	// kind); nil ignores them.
	OnError func(error)
}

// Watch publishes new complete files of the directory until ctx is done:
// after each burst of file events (fsnotify), and on a full scan every
// Poll. It returns when ctx is done; the caller then makes the final
// publish.
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
		if err = addWatches(w, wo.Dir, wo.Dir); err == nil {
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
	// One scan once the watches are set: a file that appeared before them
	// sent no event the watcher saw.
	report(p.Publish(ctx, false))
	ticker := time.NewTicker(poll)
	defer ticker.Stop()
	var settleC <-chan time.Time
	var settleT *time.Timer
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
	for {
		select {
		case <-ctx.Done():
			if settleT != nil {
				settleT.Stop()
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
				_ = addWatches(w, wo.Dir, ev.Name)
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
				arm()
			}
		case <-settleC:
			settleC = nil
			report(p.Publish(ctx, false))
		case <-ticker.C:
			report(p.Publish(ctx, false))
		}
	}
}

// addWatches watches p if it is a directory that can hold packed files,
// and its subdirectories: the cache directory, the autotune directory and
// xlacache's tiers, never the state, locks, quarantine or XLA's tmp.
// It returns the error of the watch on p itself.
func addWatches(w *fsnotify.Watcher, root, p string) error {
	var first error
	_ = filepath.WalkDir(p, func(q string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return nil
		}
		if q != root {
			switch d.Name() {
			case layout.StateDir, layout.LocksDir, layout.QuarantineDir, layout.XLAAutotuneTmpDir:
				return fs.SkipDir
			}
		}
		if err := w.Add(q); err != nil && q == p {
			first = err
		}
		return nil
	})
	return first
}

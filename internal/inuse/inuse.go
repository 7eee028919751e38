// Package inuse decides whether a file in a cache directory may be removed
// now, or may be being written by someone else: XLA rewriting its kernel
// cache file, an autotune result waiting in XLA's tmp directory for its
// rename, a JAX entry written in place, a writer on another host of a
// shared filesystem. Every path that deletes in a directory shared with
// XLA or JAX (xlacache's trims and prune, JAX's prune, verify --repair)
// asks the same Guard, so that they all have the same protections:
//
//   - a grace period: a file modified less than Grace ago is kept (it
//     covers writers this host cannot see, on other hosts);
//   - a re-check: a file whose modification time or size changed since the
//     caller chose it is kept (someone wrote or used it meanwhile);
//   - an open-for-write check: a file a process on this host holds open
//     for writing is kept (from /proc on Linux).
//
// The caller holds whatever lock excludes its own kind of writer (the trim
// lock, JAX's .lockfile); the guard covers the writers no lock reaches.
package inuse

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Grace is how recently a file may have been modified and still be left
// alone. XLA writes an autotune result to tmp/ and renames it at once, and
// writes its kernel cache file whole (in place in older releases, through
// "<file>.tmp.*" and a rename in newer ones): minutes are far more than
// any of those writes take, even on a network filesystem from another
// host, where neither locks nor /proc can see the writer.
const Grace = 5 * time.Minute

// refresh bounds how old the open-for-write snapshot may be when a Veto
// consults it: a pass over a big directory takes a new one now and then
// rather than one /proc walk per file.
const refresh = 2 * time.Second

// Guard answers Veto for files under one directory. It is not safe for
// concurrent use.
type Guard struct {
	dir   string
	root  *os.Root
	grace time.Duration
	now   func() time.Time

	busy   map[string]bool
	busyAt time.Time
	// openForWrite lists open-for-write files (a seam for tests).
	openForWrite func(dir string) map[string]bool
}

// New returns a guard for the files under dir. root, when not nil, is dir
// opened as a root, through which files are looked at (so that a directory
// swapped for a symbolic link cannot point the checks elsewhere). grace <= 0
// means Grace; now nil means time.Now.
func New(dir string, root *os.Root, grace time.Duration, now func() time.Time) *Guard {
	if grace <= 0 {
		grace = Grace
	}
	if now == nil {
		now = time.Now
	}
	return &Guard{dir: dir, root: root, grace: grace, now: now, openForWrite: OpenForWrite}
}

// Grace returns the guard's grace period.
func (g *Guard) Grace() time.Duration { return g.grace }

func (g *Guard) lstat(rel string) (fs.FileInfo, error) {
	if g.root != nil {
		return g.root.Lstat(filepath.FromSlash(rel))
	}
	return os.Lstat(filepath.Join(g.dir, filepath.FromSlash(rel)))
}

// Veto says why the file at rel (slash-separated, relative to the
// directory) must not be removed now, or "" when it may be. seen is what
// the caller saw when it chose the file (nil: no re-check); a file that is
// gone is not vetoed (removing it again is a no-op).
func (g *Guard) Veto(rel string, seen fs.FileInfo) string {
	info, err := g.lstat(rel)
	if err != nil {
		return ""
	}
	if age := g.now().Sub(info.ModTime()); age < g.grace {
		return fmt.Sprintf("modified %v ago, within the %v grace period (may be being written)", age.Round(time.Second), g.grace)
	}
	if reason := Changed(seen, info); reason != "" {
		return reason
	}
	if g.Busy(rel) {
		return "open for writing by a running process"
	}
	return ""
}

// Changed says how now differs from seen (the same file looked at twice),
// or "" when it does not: a write or a hit in between means the caller's
// choice was made on stale information.
func Changed(seen, now fs.FileInfo) string {
	switch {
	case seen == nil:
		return ""
	case !os.SameFile(seen, now):
		return "replaced since it was chosen"
	case !seen.ModTime().Equal(now.ModTime()) || seen.Size() != now.Size():
		return "modified since it was chosen"
	}
	return ""
}

// Busy reports whether a process on this host has the file at rel open for
// writing, from a snapshot at most a couple of seconds old.
func (g *Guard) Busy(rel string) bool {
	if g.busy == nil || g.now().Sub(g.busyAt) > refresh {
		g.busy, g.busyAt = g.openForWrite(g.dir), g.now()
	}
	return g.busy[rel]
}

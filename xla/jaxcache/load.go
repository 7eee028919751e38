package jaxcache

import (
	"context"
	"fmt"
	"io/fs"
	"path/filepath"
	"sort"
	"time"
)

// Whether JAX loaded an entry.
//
// JAX keeps no record of its loads unless its own size bound is on (the
// "-atime" files), which xlacache exec does not set. But JAX's
// LRUCache.get reads the whole "-cache" file, and Linux then moves the
// file's access time: always under strictatime, and under relatime (the
// default) when the access time is not after the modification time or
// the change time, or is a day old. JAX writes an entry once (its put
// skips an existing key), so an access time after the modification time
// means the entry was read after it was written. xlacache's own readers
// open entries with O_NOATIME (OpenEntry), so they do not count.
//
// Limits: a noatime mount keeps no access times (AtimeNever: loads are
// unknown, never reported as none); any other reader counts as a load
// (cat, a backup, another user's xlacache, whose O_NOATIME the kernel
// refuses); and a load that XLA then rejects (jax-ml/jax#38445: JAX logs
// "Error reading persistent compilation cache entry", compiles, and skips
// its put because the key exists) reads the file, so it looks like a load.

// AtimeMode is how the filesystem holding a directory keeps access times.
type AtimeMode string

// The access time modes, from the mount's flags.
const (
	// AtimeUnknown: not found out (outside Linux, or statfs failed).
	AtimeUnknown AtimeMode = "unknown"
	// AtimeRelatime is Linux's default: a read moves the access time when
	// it is not after the modification or change time, or a day old.
	AtimeRelatime AtimeMode = "relatime"
	// AtimeStrict: every read moves the access time.
	AtimeStrict AtimeMode = "strictatime"
	// AtimeNever: the filesystem is mounted noatime; reads leave no trace.
	AtimeNever AtimeMode = "noatime"
)

// Tells reports whether access times tell loads under this mode.
func (m AtimeMode) Tells() bool { return m == AtimeRelatime || m == AtimeStrict }

// LoadState says whether an entry was read since it was written.
type LoadState string

// The load states of an entry.
const (
	// LoadUnknown: the filesystem keeps no access times (AtimeMode).
	LoadUnknown LoadState = "unknown"
	// NotLoaded: the access time is not after the modification time.
	NotLoaded LoadState = "not_loaded"
	// Loaded: read at least once since written.
	Loaded LoadState = "loaded"
)

// loadState is an entry's state from its times under mode.
func loadState(mode AtimeMode, atime, mtime time.Time) LoadState {
	if !mode.Tells() || atime.IsZero() {
		return LoadUnknown
	}
	if atime.After(mtime) {
		return Loaded
	}
	return NotLoaded
}

// RunStart is a JAX directory as it was before a run (an exec job step)
// started: which entries and XLA subcache files it held, with each
// entry's access time armed so that the run's first read of it moves it.
// End compares the directory after the run with it.
type RunStart struct {
	dir       string
	mode      AtimeMode
	entries   map[string]entryMark
	subcaches map[string]fileMark
}

type entryMark struct {
	size  int64
	mtime time.Time
	atime time.Time
	// watched is whether a read during the run will move the access time.
	watched bool
}

type fileMark struct {
	size  int64
	mtime time.Time
}

// BeginRun records dir's JAX entries and XLA subcache files before a run
// starts. An entry whose access time relatime would not move on the next
// read (read already since it was written, less than a day ago) is
// re-armed: its change time is set to now (rearm), which leaves its times
// as they were. An entry that cannot be re-armed (another user's) is not
// watched, and End counts it as unobserved.
func BeginRun(ctx context.Context, dir string, now time.Time) (*RunStart, error) {
	d, err := Scan(ctx, dir)
	if err != nil {
		return nil, err
	}
	s := &RunStart{dir: dir, mode: d.AtimeMode, entries: make(map[string]entryMark, len(d.Entries)), subcaches: map[string]fileMark{}}
	for _, e := range d.Entries {
		m := entryMark{size: e.Size, mtime: e.ModTime, atime: e.Atime}
		if s.mode.Tells() && !e.Atime.IsZero() {
			m.watched = s.mode == AtimeStrict || !e.Atime.After(e.ModTime) || !e.Atime.After(e.Ctime) || now.Sub(e.Atime) >= 24*time.Hour
			if !m.watched {
				m.watched = rearm(e.Path, e.Atime) == nil
			}
		}
		s.entries[e.Key] = m
	}
	for _, f := range d.Subcaches {
		if !f.Temp {
			s.subcaches[f.Rel] = fileMark{f.Size, f.ModTime}
		}
	}
	return s, nil
}

// RunActivity is what JAX and XLA did in a directory during a run.
type RunActivity struct {
	// AtimeMode is the filesystem's; under AtimeNever or AtimeUnknown
	// loads are not known (Loaded and NotLoaded are zero, LoadsKnown false).
	AtimeMode AtimeMode `json:"atime_mode"`
	// Present is the number of entries present when the run started.
	Present int `json:"present"`
	// Written are the keys of the entries written during the run, new or
	// rewritten: each one is a compile JAX stored.
	Written []string `json:"written"`
	// Loaded counts the entries present at the start that were read
	// during the run; NotLoaded those that were not.
	Loaded    int `json:"loaded"`
	NotLoaded int `json:"not_loaded"`
	// Unobserved counts entries present at the start whose loads could
	// not be watched (another user's files, which cannot be re-armed).
	Unobserved int `json:"unobserved"`
	// NeverLoaded counts the entries in the directory after the run that
	// have not been read since they were written (the run's own included).
	NeverLoaded int `json:"never_loaded"`
	// XLAFiles are XLA subcache files (autotune results, the kernel cache
	// file) new or changed during the run, relative to the directory:
	// compiles XLA did, which a warm run does not repeat.
	XLAFiles []string `json:"xla_files"`
}

// LoadsKnown reports whether the filesystem told loads.
func (a RunActivity) LoadsKnown() bool { return a.AtimeMode.Tells() }

// End scans the directory again and says what the run did since s.
func (s *RunStart) End(ctx context.Context) (RunActivity, error) {
	d, err := Scan(ctx, s.dir)
	if err != nil {
		return RunActivity{}, err
	}
	a := RunActivity{AtimeMode: s.mode, Present: len(s.entries)}
	for _, e := range d.Entries {
		if e.Load == NotLoaded {
			a.NeverLoaded++
		}
		m, ok := s.entries[e.Key]
		switch {
		case !ok || e.Size != m.size || !e.ModTime.Equal(m.mtime):
			a.Written = append(a.Written, e.Key)
		case !s.mode.Tells():
		case !m.watched:
			a.Unobserved++
		case e.Atime.After(m.atime):
			a.Loaded++
		default:
			a.NotLoaded++
		}
	}
	for _, f := range d.Subcaches {
		if f.Temp {
			continue
		}
		if m, ok := s.subcaches[f.Rel]; !ok || m.size != f.Size || !m.mtime.Equal(f.ModTime) {
			a.XLAFiles = append(a.XLAFiles, filepath.ToSlash(f.Rel))
		}
	}
	sort.Strings(a.Written)
	sort.Strings(a.XLAFiles)
	return a, nil
}

// Compiles names what the run compiled, for logs and require-hit: the
// module and key of each entry written, and each XLA subcache file.
func (a RunActivity) Compiles() []string {
	out := make([]string, 0, len(a.Written)+len(a.XLAFiles))
	for _, k := range a.Written {
		if m, _, ok := SplitKey(k); ok {
			out = append(out, fmt.Sprintf("JAX module %s (entry %s)", m, k))
		} else {
			out = append(out, "JAX entry "+k)
		}
	}
	for _, f := range a.XLAFiles {
		out = append(out, "XLA file "+f)
	}
	return out
}

// entryTimes fills e's access and change times and load state from info
// under mode.
func entryTimes(e *Entry, info fs.FileInfo, mode AtimeMode) {
	if at, ok := fileAtime(info); ok {
		e.Atime = at
	}
	if ct, ok := fileCtime(info); ok {
		e.Ctime = ct
	}
	e.Load = loadState(mode, e.Atime, e.ModTime)
}

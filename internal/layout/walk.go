package layout

import (
	"context"
	"errors"
	"io/fs"
	"strings"
)

// File is one file Walk found.
type File struct {
	// Rel is the file's path relative to the cache directory,
	// slash-separated.
	Rel string
	// Class is what Classify says the file is.
	Class Class
	// Entry is the file's directory entry. Its type tells a regular file
	// from a symbolic link, FIFO, socket or device, which Walk reports
	// (never follows) and callers decide about.
	Entry fs.DirEntry
}

// WalkFunc is called by Walk for each file, or with the error of a
// directory Walk could not read (then File.Rel names the directory and
// Class is empty). Returning nil after an error skips that directory;
// returning an error ends the walk with it, and fs.SkipAll ends it with
// none.
type WalkFunc func(f File, err error) error

// Walk calls fn for every file under the cache directory fsys (an
// *os.Root's FS, or os.DirFS of the directory) that a scan of the cache
// looks at, in lexical order, each with its classification. It is the one
// walk of a cache directory, so that trims, verifies, exports, packs and
// mirrors agree on which files there are and what each is:
//
//   - the files directly in the directory (XLA's kernel cache file, JAX's
//     entries, temporaries, whatever else is there, classified Foreign);
//   - everything under the top-level directories OwnedTopDir accepts (the
//     executables tier, backend tiers, XLA's autotune cache with its tmp
//     directory, the quarantine);
//   - nothing under any other top-level directory: not the state
//     directory, not the lease files, not a user's or a neighbour's
//     directory.
//
// Directories are not reported; symbolic links are reported as files and
// never followed. Walk checks ctx before each file and directory and
// returns its error once it is done.
func Walk(ctx context.Context, fsys fs.FS, fn WalkFunc) error {
	return WalkUnder(ctx, fsys, ".", fn)
}

// WalkUnder is Walk confined to top: "." for the whole directory, or a
// slash-separated path under it (a top-level directory such as
// XLAAutotuneDir, a tier's shard, one file), which it walks only where
// Walk would reach it: below a top-level directory OwnedTopDir accepts,
// through no symbolic link. A file at top (one directly in the
// directory, or deeper) is reported alone, as Walk would report it; a
// link at top is reported, not followed. A top that does not exist (or
// whose parent does not) reaches fn as an fs.ErrNotExist error; one Walk
// would never reach is not walked and no error.
//
// fsys should implement fs.ReadLinkFS (os.DirFS and an *os.Root's FS
// do), so that links on the way to top are seen as links; for one that
// does not, they are followed.
func WalkUnder(ctx context.Context, fsys fs.FS, top string, fn WalkFunc) error {
	return walk(ctx, fsys, top, fn, nil)
}

// DirFunc is called by WalkDirs for each directory the walk descends
// into, or with the error of one it could not read. Returning fs.SkipDir
// skips the directory; fs.SkipAll ends the walk with no error; any other
// error ends it with that error.
type DirFunc func(rel string, err error) error

// WalkDirs calls fn for every directory WalkUnder(ctx, fsys, top, ...)
// would descend into, top itself first: the directories a scan of top
// looks in, for a caller that watches them rather than lists their files.
func WalkDirs(ctx context.Context, fsys fs.FS, top string, fn DirFunc) error {
	return walk(ctx, fsys, top, nil, fn)
}

// walk is WalkUnder reporting files to fileFn and directories to dirFn,
// each when set.
func walk(ctx context.Context, fsys fs.FS, top string, fileFn WalkFunc, dirFn DirFunc) error {
	if fileFn == nil {
		fileFn = func(File, error) error { return nil }
	}
	if top != "." {
		dir, err := reachable(ctx, fsys, top)
		switch {
		case err != nil:
			var pe *reachErr
			if errors.As(err, &pe) {
				if dirFn != nil {
					return skipped(dirFn(pe.rel, pe.err))
				}
				return skipped(fileFn(File{Rel: pe.rel}, pe.err))
			}
			return err
		case dir == nil:
			return nil
		case !dir.IsDir():
			if err := ctx.Err(); err != nil {
				return err
			}
			return skipped(fileFn(File{Rel: top, Class: Classify(top), Entry: dir}, nil))
		}
	}
	return fs.WalkDir(fsys, top, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			if dirFn != nil {
				if d == nil || d.IsDir() {
					return dirFn(rel, err)
				}
				return nil
			}
			return fileFn(File{Rel: rel, Entry: d}, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if rel != "." && !strings.Contains(rel, "/") && !ownedTop(fsys, rel) {
				return fs.SkipDir
			}
			if dirFn != nil {
				return dirFn(rel, nil)
			}
			return nil
		}
		return fileFn(File{Rel: rel, Class: Classify(rel), Entry: d}, nil)
	})
}

// skipped turns the "stop" answers of a callback about top itself into
// the walk's return: no error.
func skipped(err error) error {
	if errors.Is(err, fs.SkipDir) || errors.Is(err, fs.SkipAll) {
		return nil
	}
	return err
}

// reachErr is an error met on the way to a walk's top, with the path it
// was met at.
type reachErr struct {
	rel string
	err error
}

func (e *reachErr) Error() string { return e.rel + ": " + e.err.Error() }
func (e *reachErr) Unwrap() error { return e.err }

// reachable says whether Walk reaches top (not "."), and what it is: a
// directory entry of top when Walk descends into it (a directory) or
// reports it (anything else), nil when Walk does neither. Every directory
// on the way must be a directory, not a link to one, and the top-level
// one owned; a missing path on the way is a *reachErr.
func reachable(ctx context.Context, fsys fs.FS, top string) (fs.DirEntry, error) {
	if !fs.ValidPath(top) {
		return nil, &reachErr{rel: top, err: fs.ErrInvalid}
	}
	first, _, nested := strings.Cut(top, "/")
	for i := 0; ; {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		j := strings.IndexByte(top[i:], '/')
		rel := top
		if j >= 0 {
			rel = top[:i+j]
		}
		info, err := fs.Lstat(fsys, rel)
		if err != nil {
			return nil, &reachErr{rel: rel, err: err}
		}
		d := fs.FileInfoToDirEntry(info)
		if j < 0 {
			// top itself: a directory is walked below an owned top-level
			// directory (checked below), anything else is reported.
			if d.IsDir() && !nested && !ownedTop(fsys, first) {
				return nil, nil
			}
			return d, nil
		}
		if !d.IsDir() {
			// A file, or a link Walk would not follow, on the way.
			return nil, nil
		}
		if rel == first && !ownedTop(fsys, first) {
			return nil, nil
		}
		i += j + 1
	}
}

// ownedTop is OwnedTopDir for the top-level directory name of fsys.
func ownedTop(fsys fs.FS, name string) bool {
	if strings.Contains(name, "/") {
		return false
	}
	return ownedTopDir(name, func() ([]fs.DirEntry, error) { return fs.ReadDir(fsys, name) })
}

package layout

import (
	"context"
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

// WalkUnder is Walk confined to top: "." for the whole directory, or the
// name of one top-level directory (XLAAutotuneDir, ExecutablesDir, a
// backend's directory), which it walks only if OwnedTopDir accepts it.
// A top that does not exist reaches fn as an fs.ErrNotExist error.
func WalkUnder(ctx context.Context, fsys fs.FS, top string, fn WalkFunc) error {
	if top != "." && !ownedTop(fsys, top) {
		return nil
	}
	return fs.WalkDir(fsys, top, func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return fn(File{Rel: rel, Entry: d}, err)
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if d.IsDir() {
			if rel != "." && !strings.Contains(rel, "/") && !ownedTop(fsys, rel) {
				return fs.SkipDir
			}
			return nil
		}
		return fn(File{Rel: rel, Class: Classify(rel), Entry: d}, nil)
	})
}

// ownedTop is OwnedTopDir for the top-level directory name of fsys.
func ownedTop(fsys fs.FS, name string) bool {
	if strings.Contains(name, "/") {
		return false
	}
	return ownedTopDir(name, func() ([]fs.DirEntry, error) { return fs.ReadDir(fsys, name) })
}

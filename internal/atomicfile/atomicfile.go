// Package atomicfile writes files so that a reader sees either nothing, the
// old content or the whole new content, never a torn file, even when the
// writer is killed or the machine crashes: the bytes go to a temporary file
// in the target's directory, are flushed to stable storage (fsync), and the
// temporary file is then linked or renamed into place.
//
// Two ways to install a file:
//   - Publish: first writer wins. The temporary file is hard-linked to the
//     final name, which fails when the name exists, so of many racing
//     writers exactly one installs its bytes and the rest learn they lost.
//     Where hard links are not supported (some FUSE and SMB mounts) it
//     falls back to rename after an existence check, accepting that two
//     racing writers both install complete, equivalent files.
//   - Replace: last writer wins, by rename.
//
// Temporary files are named layout.TempPrefix+"*", so scans skip them and
// remove them once stale.
//
// Writers into a cache directory confine every operation to it with
// Options.Root (an *os.Root): no symbolic link planted in the tree can
// redirect a write outside it, and a link or special file where a
// directory or the target belongs is refused (ErrNotRegular). OpenRegular
// and ReadRegular are the matching reads, which never block on a FIFO.
package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/xlacache/xlacache/internal/layout"
)

// Options control how a file is written. The zero value writes a 0600 file
// into an existing directory.
type Options struct {
	// Perm is the final file's mode; 0 means 0600. The temporary file is
	// created 0600 and changed to Perm before it is installed, so that a
	// half-written file is never readable by others.
	Perm fs.FileMode
	// DirPerm, when non-zero, creates missing parent directories with it.
	DirPerm fs.FileMode
	// Root, when set, confines the write to the directory tree it opens:
	// the path is then slash-separated and relative to Root, every
	// operation goes through it (so no symbolic link planted in the tree
	// can redirect the write outside), and a symbolic link or other
	// non-directory where a parent directory belongs, or a non-regular
	// file at the target of a Replace, is refused with ErrNotRegular.
	// Writers into a cache directory always set it.
	Root *os.Root

	// CreateTemp and Write replace os.CreateTemp and (*os.File).Write;
	// they are seams for fault-injection tests and nil in production.
	CreateTemp func(dir, pattern string) (*os.File, error)
	Write      func(f *os.File, b []byte) (int, error)
}

// Publish installs data at path unless a file is already there. It returns
// whether this call created the file; a lost race is not an error.
func Publish(path string, data []byte, o Options) (created bool, err error) {
	return PublishFrom(path, func(w io.Writer) error { return o.write(w, data) }, o)
}

// PublishFrom is Publish with the content produced by fill, for content
// too large to hold in memory. When fill fails, nothing is installed.
func PublishFrom(path string, fill func(w io.Writer) error, o Options) (created bool, err error) {
	if _, err := o.lstat(path); err == nil {
		return false, nil // cheap early exit: the common case for a hit race
	}
	tmp, err := o.makeTemp(path, fill)
	if err != nil {
		return false, err
	}
	defer o.remove(tmp) // after a link, the temporary name is just a second name
	lerr := o.link(tmp, path)
	switch {
	case lerr == nil:
		return true, nil
	case errors.Is(lerr, fs.ErrExist):
		return false, nil
	}
	if _, err := o.lstat(path); err == nil {
		return false, nil
	}
	if err := o.rename(tmp, path); err != nil {
		return false, fmt.Errorf("installing %s: %w", path, err)
	}
	return true, nil
}

// Replace installs data at path, replacing any file there.
func Replace(path string, data []byte, o Options) error {
	return ReplaceFrom(path, func(w io.Writer) error { return o.write(w, data) }, o)
}

// ReplaceFrom is Replace with the content produced by fill. When fill
// fails, the old file stays. Inside a Root, a target that is not a regular
// file (a planted symlink, FIFO or directory) is refused with
// ErrNotRegular rather than replaced.
func ReplaceFrom(path string, fill func(w io.Writer) error, o Options) error {
	if o.Root != nil {
		if st, err := o.Root.Lstat(path); err == nil && !st.Mode().IsRegular() {
			return fmt.Errorf("replacing %s: it is a %s: %w", path, TypeName(st.Mode()), ErrNotRegular)
		}
	}
	tmp, err := o.makeTemp(path, fill)
	if err != nil {
		return err
	}
	if err := o.rename(tmp, path); err != nil {
		o.remove(tmp)
		return fmt.Errorf("installing %s: %w", path, err)
	}
	return nil
}

// The file operations of both protocols above, on host paths or, with
// o.Root set, on paths relative to the root and confined to it.

func (o Options) makeTemp(path string, fill func(w io.Writer) error) (string, error) {
	if o.Root != nil {
		return o.rootWriteTemp(path, fill)
	}
	return o.writeTemp(path, fill)
}

func (o Options) lstat(p string) (fs.FileInfo, error) {
	if o.Root != nil {
		return o.Root.Lstat(p)
	}
	return os.Lstat(p)
}

func (o Options) link(oldname, newname string) error {
	if o.Root != nil {
		return o.Root.Link(oldname, newname)
	}
	return os.Link(oldname, newname)
}

func (o Options) rename(oldname, newname string) error {
	if o.Root != nil {
		return o.Root.Rename(oldname, newname)
	}
	return os.Rename(oldname, newname)
}

func (o Options) remove(p string) error {
	if o.Root != nil {
		return o.Root.Remove(p)
	}
	return os.Remove(p)
}

// write writes data to w, through the Write seam when w is the temporary
// file.
func (o Options) write(w io.Writer, data []byte) error {
	if f, ok := w.(*os.File); ok && o.Write != nil {
		_, err := o.Write(f, data)
		return err
	}
	_, err := w.Write(data)
	return err
}

// writeTemp creates a temporary file next to path, fills it, sets its mode
// and flushes it to stable storage. On error nothing is left behind.
func (o Options) writeTemp(path string, fill func(w io.Writer) error) (string, error) {
	dir := filepath.Dir(path)
	if o.DirPerm != 0 {
		if err := os.MkdirAll(dir, o.DirPerm); err != nil {
			return "", err
		}
	}
	createTemp := o.CreateTemp
	if createTemp == nil {
		createTemp = os.CreateTemp
	}
	f, err := createTemp(dir, layout.TempPrefix+"*")
	if err != nil {
		return "", err
	}
	tmp := f.Name()
	if err := o.finishTemp(f, fill); err != nil {
		os.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// finishTemp fills the new temporary file f, sets its final mode, flushes
// it to stable storage and closes it. The caller removes it on error.
func (o Options) finishTemp(f *os.File, fill func(w io.Writer) error) error {
	err := fill(f)
	if perm := o.perm(); err == nil && perm != 0o600 {
		err = f.Chmod(perm)
	}
	if err == nil {
		// Without the fsync a crash after the link could leave a complete
		// name with incomplete content on filesystems that reorder
		// metadata and data writes.
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (o Options) perm() fs.FileMode {
	if o.Perm == 0 {
		return 0o600
	}
	return o.Perm
}

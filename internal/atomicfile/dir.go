package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"sync/atomic"
)

// Dir is a directory held open for reading the files under it quickly
// with every protection of OpenRegular: no symbolic link followed, at
// the end or anywhere on the way; nothing outside the directory reached;
// only a regular file handed back; never a block on a FIFO. Where the
// kernel has openat2 (Linux 5.6 and later) one system call resolves the
// whole path under those rules from the directory's descriptor, kept open
// for the Dir's life, and an fstat on the opened descriptor checks what
// was opened; os.Root resolves a path one component at a time and checks
// it with an Lstat besides, several times the system calls for the small
// files a cache hit reads. Elsewhere, and where a sandbox refuses openat2,
// Dir falls back to OpenRegular on its os.Root.
//
// A Dir is safe for concurrent use.
type Dir struct {
	root *os.Root
	// f is the directory itself (opened through root, so it is the very
	// directory the root holds), nil when it could not be opened: then
	// only the fallback is used.
	f *os.File
	// slow is set once openat2 turned out to be unavailable.
	slow atomic.Bool
}

// NewDir returns a Dir reading under root. The Dir does not own root:
// closing the Dir leaves root open, and root must stay open while the Dir
// is used.
func NewDir(root *os.Root) *Dir {
	d := &Dir{root: root}
	if fastOpenAvailable {
		if f, err := root.Open("."); err == nil {
			d.f = f
		}
	}
	return d
}

// Root returns the os.Root the Dir reads under.
func (d *Dir) Root() *os.Root { return d.root }

// Close releases the Dir's directory descriptor (not its root).
func (d *Dir) Close() error {
	if d.f == nil {
		return nil
	}
	return d.f.Close()
}

// OpenRegular is OpenRegular(d.Root(), rel), in one openat2 where the
// kernel allows, with one difference: a symbolic link anywhere on the path
// is refused, not only at its end (the layout never puts one there).
// Refusals of a link, FIFO, socket or device at the end wrap
// ErrNotRegular; a link on the way and a path that would leave the
// directory are errors that do not.
func (d *Dir) OpenRegular(rel string) (*os.File, fs.FileInfo, error) {
	if d.f != nil && !d.slow.Load() {
		f, err, ok := d.fastOpen(rel)
		if ok {
			if err != nil {
				return nil, nil, err
			}
			return keepRegular(f, rel)
		}
	}
	return OpenRegular(d.root, rel)
}

// fastOpen opens rel with openat2. ok is false when openat2 cannot be
// used for it (then the caller falls back to os.Root).
func (d *Dir) fastOpen(rel string) (f *os.File, err error, ok bool) {
	rc, cerr := d.f.SyscallConn()
	if cerr != nil {
		return nil, nil, false
	}
	var fd int
	var oerr error
	attempted := false
	// Control keeps the directory descriptor from being closed (and its
	// number reused) while openat2 runs.
	if cerr := rc.Control(func(dirfd uintptr) {
		attempted = true
		fd, oerr = openat2Beneath(int(dirfd), rel)
	}); cerr != nil || !attempted {
		return nil, nil, false
	}
	switch {
	case oerr == nil:
		return os.NewFile(uintptr(fd), d.root.Name()+"/"+rel), nil, true
	case errors.Is(oerr, errFastUnavailable):
		d.slow.Store(true)
		return nil, nil, false
	case errors.Is(oerr, errFastRetry):
		return nil, nil, false
	case errors.Is(oerr, errFastRefused):
		// A symbolic link on the path, or a socket or other file that
		// cannot be opened: say which, without following anything.
		return nil, d.classify(rel, oerr), true
	}
	return nil, &fs.PathError{Op: "openat2", Path: rel, Err: unwrapErrno(oerr)}, true
}

// classify explains why openat2 refused rel (errFastRefused): a symbolic
// link or special file at the end wraps ErrNotRegular; a symbolic link
// on the way is an error that does not (the file itself was not looked
// at, and whatever is behind the link is not the caller's to act on). It
// looks with Lstat only.
func (d *Dir) classify(rel string, cause error) error {
	if dir := path.Dir(rel); dir != "." {
		if err := CheckDirIn(d.root, dir); err != nil {
			return &fs.PathError{Op: "openat2", Path: rel, Err: fmt.Errorf("%v; not followed", err)}
		}
	}
	st, err := d.root.Lstat(rel)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() {
		return notRegular(rel, st.Mode())
	}
	// Changed since openat2 looked: report what openat2 said.
	return &fs.PathError{Op: "openat2", Path: rel, Err: unwrapErrno(cause)}
}

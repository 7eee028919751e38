package atomicfile

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/xlacache/xlacache/internal/layout"
)

// ErrNotRegular is wrapped by errors about a path where a regular file or
// a real directory was expected and something else is: a symbolic link, a
// FIFO, a socket, a device. Such a path is damage (planted or left by a
// crash) and is never followed, opened for writing or waited on.
var ErrNotRegular = errors.New("not a regular file or directory")

// Root-confined operations. With Options.Root set, every path given to
// Publish, PublishFrom, Replace and ReplaceFrom is slash-separated and
// relative to the root, and every file operation goes through the
// *os.Root, which refuses to leave the tree whatever symbolic links are
// planted in it. On top of that, a symbolic link on the way to the target
// (a parent directory) or at the target is refused outright rather than
// followed inside the tree: the layout never puts one there.

// rootWriteTemp creates the temporary file next to rel inside o.Root with
// an unpredictable name and O_EXCL (so a planted name is never opened),
// fills it, sets its mode and flushes it. It returns the temporary
// file's root-relative name.
func (o Options) rootWriteTemp(rel string, fill func(w io.Writer) error) (string, error) {
	dir := path.Dir(rel)
	if o.DirPerm != 0 {
		if err := MkdirAllIn(o.Root, dir, o.DirPerm); err != nil {
			return "", err
		}
	} else if err := CheckDirIn(o.Root, dir); err != nil {
		return "", err
	}
	var f *os.File
	var tmp string
	if o.CreateTemp != nil {
		// Test seam: it works on host paths.
		var err error
		f, err = o.CreateTemp(filepath.Join(o.Root.Name(), filepath.FromSlash(dir)), layout.TempPrefix+"*")
		if err != nil {
			return "", err
		}
		r, rerr := filepath.Rel(o.Root.Name(), f.Name())
		if rerr != nil {
			f.Close()
			os.Remove(f.Name())
			return "", rerr
		}
		tmp = filepath.ToSlash(r)
	} else {
		for range 100 {
			tmp = path.Join(dir, layout.TempPrefix+strconv.FormatUint(rand.Uint64(), 36))
			var err error
			f, err = o.Root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
			if err == nil {
				break
			}
			if !errors.Is(err, fs.ErrExist) {
				return "", err
			}
		}
		if f == nil {
			return "", fmt.Errorf("creating a temporary file in %s: too many collisions", dir)
		}
	}
	if err := o.finishTemp(f, fill); err != nil {
		o.Root.Remove(tmp)
		return "", err
	}
	return tmp, nil
}

// CheckDirIn reports an error unless rel (slash-separated, relative to
// root; "." is the root) is a chain of real directories: a missing one is
// an error wrapping fs.ErrNotExist, a symbolic link or other file one
// wrapping ErrNotRegular.
func CheckDirIn(root *os.Root, rel string) error {
	return walkDirsIn(root, rel, 0)
}

// MkdirAllIn creates directory rel (slash-separated, relative to root) and
// its missing parents with mode perm. Unlike os.MkdirAll and
// os.Root.MkdirAll it follows no symbolic link, not even one pointing
// inside the tree: a link where a directory belongs is an error wrapping
// ErrNotRegular.
func MkdirAllIn(root *os.Root, rel string, perm fs.FileMode) error {
	if perm == 0 {
		perm = 0o700
	}
	return walkDirsIn(root, rel, perm)
}

func walkDirsIn(root *os.Root, rel string, perm fs.FileMode) error {
	rel = path.Clean(rel)
	if rel == "." {
		return nil
	}
	if err := layout.ValidRel(rel); err != nil {
		return err
	}
	cur := ""
	for seg := range strings.SplitSeq(rel, "/") {
		cur = path.Join(cur, seg)
		st, err := root.Lstat(cur)
		if errors.Is(err, fs.ErrNotExist) && perm != 0 {
			if err := root.Mkdir(cur, perm); err == nil {
				// Exactly the configured mode, not mode minus umask: a
				// group-shared cache needs its group bits, and XLA, which
				// creates its autotune tmp directory 0755 itself, must
				// find this one already made.
				if err := root.Chmod(cur, perm); err != nil {
					return err
				}
			} else if !errors.Is(err, fs.ErrExist) {
				return err
			}
			// Another process may have raced a link into place.
			st, err = root.Lstat(cur)
		}
		switch {
		case err != nil:
			return err
		case !st.IsDir():
			return fmt.Errorf("%s is a %s, not a directory: %w", cur, TypeName(st.Mode()), ErrNotRegular)
		}
	}
	return nil
}

// OpenRegular opens rel (slash-separated, relative to root) for reading
// without ever blocking or following a symbolic link at its end: a FIFO,
// socket, device or link there is refused with an error wrapping
// ErrNotRegular. Readers of files others may have planted use it, so that
// a FIFO cannot hang them.
func OpenRegular(root *os.Root, rel string) (*os.File, fs.FileInfo, error) {
	return openRegular(root, rel, 0)
}

// openRegular is OpenRegular with extra flags for the open (noAtime).
func openRegular(root *os.Root, rel string, extra int) (*os.File, fs.FileInfo, error) {
	if st, err := root.Lstat(rel); err != nil {
		return nil, nil, err
	} else if !st.Mode().IsRegular() {
		return nil, st, notRegular(rel, st.Mode())
	}
	// O_NONBLOCK: a FIFO swapped in after the Lstat does not block the
	// open (and it is then refused by the Stat below).
	f, err := root.OpenFile(rel, os.O_RDONLY|noFollow|noBlock|extra, 0)
	if err != nil {
		return nil, nil, err
	}
	return keepRegular(f, rel)
}

// keepRegular returns the open file f (named name in errors) and its
// FileInfo if it is a regular file, and closes it otherwise: what was
// opened may not be what an earlier Lstat saw.
func keepRegular(f *os.File, name string) (*os.File, fs.FileInfo, error) {
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, st, notRegular(name, st.Mode())
	}
	return f, st, nil
}

// ReadRegular reads rel whole through OpenRegular, refusing files larger
// than limit bytes (limit > 0).
func ReadRegular(root *os.Root, rel string, limit int64) ([]byte, error) {
	f, st, err := OpenRegular(root, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, st, rel, limit)
}

// readLimited reads f whole, refusing more than limit bytes (limit > 0).
func readLimited(f *os.File, st fs.FileInfo, rel string, limit int64) ([]byte, error) {
	if limit > 0 && st.Size() > limit {
		return nil, fmt.Errorf("%s: %d bytes, more than the %d expected", rel, st.Size(), limit)
	}
	r := io.Reader(f)
	if limit > 0 {
		r = io.LimitReader(f, limit+1)
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, err
	}
	if limit > 0 && int64(len(b)) > limit {
		return nil, fmt.Errorf("%s: more than the %d bytes expected", rel, limit)
	}
	return b, nil
}

// OpenRegularPath is OpenRegular for a host path: the last element must be
// a regular file (not a symbolic link, FIFO, socket or device), checked
// without blocking. Readers of a cache directory's files that work on
// paths (scans of a JAX cache, export) use it.
func OpenRegularPath(p string) (*os.File, fs.FileInfo, error) {
	return openRegularPath(p, 0)
}

// openRegularPath is OpenRegularPath with extra flags for the open.
func openRegularPath(p string, extra int) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(p, os.O_RDONLY|noFollow|noBlock|extra, 0)
	if err != nil {
		if st, lerr := os.Lstat(p); lerr == nil && !st.Mode().IsRegular() {
			return nil, st, notRegular(p, st.Mode())
		}
		return nil, nil, err
	}
	return keepRegular(f, p)
}

// ReadRegularPath is ReadRegular for a host path (see OpenRegularPath).
func ReadRegularPath(p string, limit int64) ([]byte, error) {
	f, st, err := OpenRegularPath(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return readLimited(f, st, p, limit)
}

// notRegular is the error about name, found to be of mode m where a
// regular file belongs.
func notRegular(name string, m fs.FileMode) error {
	return fmt.Errorf("%s is a %s: %w", name, TypeName(m), ErrNotRegular)
}

// TypeName names what kind of file mode m describes ("symbolic link",
// "named pipe (FIFO)", "directory", ...), for errors and log lines about
// a path that is not what the layout puts there.
func TypeName(m fs.FileMode) string {
	switch {
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	case m.IsDir():
		return "directory"
	case m.IsRegular():
		return "regular file"
	}
	return "special file"
}

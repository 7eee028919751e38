package atomicfile

import (
	"errors"
	"io/fs"
	"os"
)

// The NoAtime readers are for files whose access time is someone else's
// signal: JAX's cache entries, whose atime moving past their mtime is the
// only sign that JAX loaded them (xla/jaxcache, "load state"). xlacache's
// own reads of them (publish, verify, export, ls) must not look like
// loads. O_NOATIME is allowed only to the file's owner (or a process with
// CAP_FOWNER); elsewhere the open fails with EPERM and the file is opened
// the ordinary way, and kept is false: that read may then count as a load
// to whoever reads access times.

// OpenRegularNoAtime is OpenRegular, leaving the file's access time as it
// is where the kernel allows (kept true).
func OpenRegularNoAtime(root *os.Root, rel string) (f *os.File, st fs.FileInfo, kept bool, err error) {
	if noAtime != 0 {
		f, st, err = openRegular(root, rel, noAtime)
		if !errors.Is(err, fs.ErrPermission) {
			return f, st, err == nil, err
		}
	}
	f, st, err = openRegular(root, rel, 0)
	return f, st, false, err
}

// OpenRegularPathNoAtime is OpenRegularPath, leaving the file's access
// time as it is where the kernel allows (kept true).
func OpenRegularPathNoAtime(p string) (f *os.File, st fs.FileInfo, kept bool, err error) {
	if noAtime != 0 {
		f, st, err = openRegularPath(p, noAtime)
		if !errors.Is(err, fs.ErrPermission) {
			return f, st, err == nil, err
		}
	}
	f, st, err = openRegularPath(p, 0)
	return f, st, false, err
}

// ReadRegularNoAtime is ReadRegular through OpenRegularNoAtime.
func ReadRegularNoAtime(root *os.Root, rel string, limit int64) (data []byte, kept bool, err error) {
	f, st, kept, err := OpenRegularNoAtime(root, rel)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = readLimited(f, st, rel, limit)
	return data, kept, err
}

// ReadRegularPathNoAtime is ReadRegularPath through
// OpenRegularPathNoAtime.
func ReadRegularPathNoAtime(p string, limit int64) (data []byte, kept bool, err error) {
	f, st, kept, err := OpenRegularPathNoAtime(p)
	if err != nil {
		return nil, false, err
	}
	defer f.Close()
	data, err = readLimited(f, st, p, limit)
	return data, kept, err
}

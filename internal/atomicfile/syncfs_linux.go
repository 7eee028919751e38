package atomicfile

import (
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/sys/unix"
)

// syncfs flushes the whole filesystem holding f to stable storage.
func syncfs(f *os.File) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := rc.Control(func(fd uintptr) {
		for {
			serr = unix.Syncfs(int(fd))
			if serr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("syncfs", serr)
	}
	return nil
}

var syncfsOK = sync.OnceValue(func() bool {
	var u unix.Utsname
	if err := unix.Uname(&u); err != nil {
		return false
	}
	return kernelAtLeast(unix.ByteSliceToString(u.Release[:]), 5, 8)
})

// syncfsReportsErrors reports whether syncfs(2) returns writeback errors
// (Linux 5.8, commit 735e4ae5ba28): before that a failed write of a
// file's data could pass unnoticed, so a batch fsyncs each file instead.
func syncfsReportsErrors() bool { return syncfsOK() }

// kernelAtLeast parses a release string such as "6.8.0-45-generic".
func kernelAtLeast(release string, major, minor int) bool {
	parts := strings.SplitN(release, ".", 3)
	if len(parts) < 2 {
		return false
	}
	maj, err1 := strconv.Atoi(parts[0])
	minStr := parts[1]
	if i := strings.IndexFunc(minStr, func(r rune) bool { return r < '0' || r > '9' }); i >= 0 {
		minStr = minStr[:i]
	}
	mnr, err2 := strconv.Atoi(minStr)
	if err1 != nil || err2 != nil {
		return false
	}
	return maj > major || (maj == major && mnr >= minor)
}

// fileDev returns the device of the filesystem st is on.
func fileDev(st os.FileInfo) uint64 {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(sys.Dev)
	}
	return 0
}

// renameNoReplace renames old to name, both single names in the
// directory dir, unless name exists (fs.ErrExist): one directory
// operation where link and unlink are two. errNoReplace means the
// filesystem does not support it.
func renameNoReplace(dir *os.File, old, name string) error {
	rc, err := dir.SyscallConn()
	if err != nil {
		return errNoReplace
	}
	var rerr error
	if err := rc.Control(func(fd uintptr) {
		for {
			rerr = unix.Renameat2(int(fd), old, int(fd), name, unix.RENAME_NOREPLACE)
			if rerr != unix.EINTR {
				return
			}
		}
	}); err != nil {
		return errNoReplace
	}
	switch rerr {
	case nil:
		return nil
	case unix.EEXIST:
		return os.ErrExist
	case unix.EINVAL, unix.ENOSYS, unix.ENOTSUP:
		return errNoReplace
	}
	return &os.LinkError{Op: "renameat2", Old: old, New: name, Err: rerr}
}

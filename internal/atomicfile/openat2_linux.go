//go:build linux

package atomicfile

import (
	"errors"

	"golang.org/x/sys/unix"
)

// fastOpenAvailable: Dir tries openat2 on this system.
const fastOpenAvailable = true

// Errors of openat2Beneath that Dir tells apart.
var (
	// errFastUnavailable: the kernel (or a seccomp sandbox) has no
	// openat2, or not these flags: use os.Root from now on.
	errFastUnavailable = errors.New("openat2 unavailable")
	// errFastRetry: openat2 saw a concurrent rename and gave up; this
	// one open goes through os.Root.
	errFastRetry = errors.New("openat2 raced with a rename")
	// errFastRefused: a symbolic link on the path, or a file that is no
	// regular file and cannot be opened.
	errFastRefused = errors.New("refused by openat2")
)

// fastErr keeps the errno beside the kind, for messages.
type fastErr struct {
	kind  error
	errno unix.Errno
}

func (e *fastErr) Error() string { return e.kind.Error() + ": " + e.errno.Error() }
func (e *fastErr) Unwrap() []error {
	return []error{e.kind, e.errno}
}

// openHow resolves a path beneath the directory descriptor without any
// symbolic link (nor /proc's magic links), and opens only its last
// element, read-only, without blocking on a FIFO and without making a
// terminal the controlling one.
var openHow = unix.OpenHow{
	Flags:   unix.O_RDONLY | unix.O_CLOEXEC | unix.O_NOFOLLOW | unix.O_NONBLOCK | unix.O_NOCTTY,
	Resolve: unix.RESOLVE_BENEATH | unix.RESOLVE_NO_SYMLINKS | unix.RESOLVE_NO_MAGICLINKS,
}

// openat2Beneath opens rel under dirfd with openHow.
func openat2Beneath(dirfd int, rel string) (int, error) {
	how := openHow
	for range 3 {
		fd, err := unix.Openat2(dirfd, rel, &how)
		switch err {
		case nil:
			return fd, nil
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			// A rename elsewhere in the system during the lookup.
			continue
		case unix.ENOSYS, unix.EPERM, unix.EINVAL, unix.E2BIG:
			// No openat2 (older kernel), a sandbox's refusal, or flags
			// this kernel does not know.
			return -1, &fastErr{errFastUnavailable, err.(unix.Errno)}
		case unix.ELOOP, unix.ENXIO, unix.ENODEV, unix.EOPNOTSUPP:
			return -1, &fastErr{errFastRefused, err.(unix.Errno)}
		}
		if errno, ok := err.(unix.Errno); ok {
			return -1, errno
		}
		return -1, err
	}
	return -1, &fastErr{errFastRetry, unix.EAGAIN}
}

// unwrapErrno returns the errno inside err, or err.
func unwrapErrno(err error) error {
	var fe *fastErr
	if errors.As(err, &fe) {
		return fe.errno
	}
	return err
}

//go:build cgo

package cc

import (
	"fmt"
	"sync"

	"golang.org/x/sys/unix"
)

// memfdOff makes OpenBytes use the temporary directory; tests set it to
// cover that path on machines that have memory files.
var memfdOff bool

// memfdOK is whether this process can create a memory file and reach it
// through /proc/self/fd, probed once.
var memfdOK = sync.OnceValue(func() bool {
	fd, err := unix.MemfdCreate("xlacache-probe", unix.MFD_CLOEXEC)
	if err != nil {
		return false
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	return unix.Stat(procFD(fd), &st) == nil
})

func useMemfd() bool { return !memfdOff && memfdOK() }

func procFD(fd int) string { return fmt.Sprintf("/proc/self/fd/%d", fd) }

// maxNameTries bounds the descriptors openMemfd tries before it falls back.
const maxNameTries = 16

// openMemfd writes a shared object to an anonymous memory file and
// dlopens it as /proc/self/fd/N, closing the descriptor right after (the
// mapping keeps the object alive). This skips the directory, file and
// removal a temporary file costs, most of a warm start of a small program.
// A memory file has no name in any directory, so no one can replace it
// between the write and dlopen; it is close-on-exec, and freed when the
// last mapping goes.
//
// The loader finds objects it already has by the name they were opened
// as, and descriptor numbers are reused once closed: a library loaded as
// /proc/self/fd/7 and still open would be handed back for a new object
// that got descriptor 7 — the wrong kernels. So a name the loader already
// has is skipped for a duplicate of the descriptor under another number.
// While this call holds descriptor N, no other OpenBytes can load that
// name, so the check cannot race with another load here.
func openMemfd(data []byte) (*Library, error) {
	fd, err := unix.MemfdCreate("xlacache-so", unix.MFD_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errNoMemfd, err)
	}
	fds := []int{fd}
	defer func() {
		for _, f := range fds {
			unix.Close(f)
		}
	}()
	for off := 0; off < len(data); {
		n, err := unix.Write(fd, data[off:])
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%w: writing %d bytes: %w", errNoMemfd, len(data), err)
		}
		off += n
	}
	for len(fds) <= maxNameTries {
		name := procFD(fds[len(fds)-1])
		if !loaded(name) {
			return Open(name)
		}
		d, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return nil, fmt.Errorf("%w: duplicating descriptor: %w", errNoMemfd, err)
		}
		fds = append(fds, d)
	}
	return nil, fmt.Errorf("%w: %d descriptor names already loaded", errNoMemfd, maxNameTries)
}

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

// memfdFlags are the memfd_create flags that give a memory file dlopen can
// map, reachable through /proc/self/fd, probed once; -1 when none do.
// MFD_EXEC asks for an executable file outright (Linux 6.3 and later warn
// once about a memfd_create with neither MFD_EXEC nor MFD_NOEXEC_SEAL);
// older kernels reject the flag, as does vm.memfd_noexec=2, so plain
// MFD_CLOEXEC is tried next. The probe maps a page executable, as dlopen
// maps code: where a security policy forbids that for shared memory,
// OpenBytes uses the temporary directory rather than fail every load.
var memfdFlags = sync.OnceValue(func() int {
	for _, fl := range []int{unix.MFD_CLOEXEC | unix.MFD_EXEC, unix.MFD_CLOEXEC} {
		fd, err := unix.MemfdCreate("xlacache-probe", fl)
		if err != nil {
			continue
		}
		ok := mapsExec(fd)
		unix.Close(fd)
		if ok {
			return fl
		}
	}
	return -1
})

// mapsExec reports whether a page of the memory file fd can be mapped
// executable, as dlopen maps code, and /proc/self/fd names it.
func mapsExec(fd int) bool {
	var st unix.Stat_t
	if unix.Ftruncate(fd, 4096) != nil || unix.Stat(procFD(fd), &st) != nil {
		return false
	}
	m, err := unix.Mmap(fd, 0, 4096, unix.PROT_READ|unix.PROT_EXEC, unix.MAP_PRIVATE)
	if err != nil {
		return false
	}
	unix.Munmap(m)
	return true
}

func useMemfd() bool { return !memfdOff && memfdFlags() >= 0 }

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
	fd, err := unix.MemfdCreate("xlacache-so", memfdFlags())
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

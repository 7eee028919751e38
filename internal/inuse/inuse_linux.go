//go:build linux

package inuse

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// OpenForWrite returns the files under dir (slash-separated paths relative
// to it) that a process on this host has open for writing, read from
// /proc/<pid>/fd and fdinfo. It sees only processes whose /proc entries
// this user may read (all of them for root, the user's own otherwise),
// which covers the usual case of one user's jobs sharing a cache; other
// hosts on a shared filesystem are covered by the grace period instead.
func OpenForWrite(dir string) map[string]bool {
	out := map[string]bool{}
	root, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return out
	}
	prefix := root + string(filepath.Separator)
	procs, err := os.ReadDir("/proc")
	if err != nil {
		return out
	}
	for _, p := range procs {
		if _, err := strconv.Atoi(p.Name()); err != nil {
			continue
		}
		fdDir := filepath.Join("/proc", p.Name(), "fd")
		fds, err := os.ReadDir(fdDir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			target, err := os.Readlink(filepath.Join(fdDir, fd.Name()))
			if err != nil || !strings.HasPrefix(target, prefix) {
				continue
			}
			if fdWritable(filepath.Join("/proc", p.Name(), "fdinfo", fd.Name())) {
				out[filepath.ToSlash(strings.TrimPrefix(target, prefix))] = true
			}
		}
	}
	return out
}

// fdWritable reads the "flags:" line of an fdinfo file (octal open flags)
// and reports whether the descriptor was opened for writing. Unreadable
// information counts as writable: keeping a file is the safe mistake.
func fdWritable(fdinfo string) bool {
	f, err := os.Open(fdinfo)
	if err != nil {
		return true
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			if err != nil {
				return true
			}
			return flags&uint64(os.O_WRONLY|os.O_RDWR) != 0
		}
	}
	return true
}

//go:build linux

package jaxcache

import (
	"io/fs"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// fileAtime returns the filesystem's access time. XLA reads its subcache
// files without touching them otherwise, so the access time (updated at
// least daily under Linux's default relatime) is the only sign of use.
func fileAtime(info fs.FileInfo) (time.Time, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Atim.Sec, st.Atim.Nsec), true
}

// fileCtime returns the inode's change time.
func fileCtime(info fs.FileInfo) (time.Time, bool) {
	st, ok := info.Sys().(*syscall.Stat_t)
	if !ok {
		return time.Time{}, false
	}
	return time.Unix(st.Ctim.Sec, st.Ctim.Nsec), true
}

// dirAtimeMode says how the filesystem holding dir keeps access times,
// from statfs's mount flags: ST_NOATIME never, ST_RELATIME as relatime
// does (see LoadState), otherwise on every read.
func dirAtimeMode(dir string) AtimeMode {
	var st unix.Statfs_t
	if err := unix.Statfs(dir, &st); err != nil {
		return AtimeUnknown
	}
	switch {
	case st.Flags&unix.ST_NOATIME != 0:
		return AtimeNever
	case st.Flags&unix.ST_RELATIME != 0:
		return AtimeRelatime
	}
	return AtimeStrict
}

// rearm sets the change time of the file at p to now by setting its
// access time to the value it has (atime) and leaving its modification
// time alone, never following a symbolic link. Under relatime the next
// read then moves the access time again (a change time at or after the
// access time is one of relatime's reasons to update it). Setting times
// is the owner's: another user's file gives EPERM.
func rearm(p string, atime time.Time) error {
	ts := []unix.Timespec{unix.NsecToTimespec(atime.UnixNano()), {Sec: 0, Nsec: unix.UTIME_OMIT}}
	return unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW)
}

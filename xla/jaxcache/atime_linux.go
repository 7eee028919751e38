//go:build linux

package jaxcache

import (
	"io/fs"
	"syscall"
	"time"
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

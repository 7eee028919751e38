package cc

import (
	"os"
	"syscall"
)

// inode returns the file's inode number where the platform has one, so a
// compiler replaced in place (same size and time) still changes the memo key.
func inode(st os.FileInfo) uint64 {
	if s, ok := st.Sys().(*syscall.Stat_t); ok {
		return uint64(s.Ino)
	}
	return 0
}

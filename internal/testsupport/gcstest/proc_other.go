//go:build !linux

package gcstest

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's; on
// other systems the server is stopped by Stop (and by t.Cleanup).
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

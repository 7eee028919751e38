//go:build !linux

package s3test

import "syscall"

// dieWithParent: only Linux can tie a child's life to its parent's; on
// other systems the server is stopped by Stop (and by t.Cleanup).
func dieWithParent() *syscall.SysProcAttr { return &syscall.SysProcAttr{} }

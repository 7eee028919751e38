//go:build linux

package gcstest

import "syscall"

// dieWithParent makes the kernel kill the server when the test process
// dies, so a crashed test leaves no server behind.
func dieWithParent() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}

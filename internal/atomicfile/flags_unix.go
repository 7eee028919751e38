//go:build unix

package atomicfile

import "syscall"

// noFollow and noBlock are the open flags that refuse a symbolic link at
// the last path element and keep a FIFO from blocking the open.
const (
	noFollow = syscall.O_NOFOLLOW
	noBlock  = syscall.O_NONBLOCK
)

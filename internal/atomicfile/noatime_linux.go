//go:build linux

package atomicfile

import "syscall"

// noAtime is the open flag that leaves a file's access time alone.
const noAtime = syscall.O_NOATIME

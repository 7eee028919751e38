//go:build unix && !linux

package lease

import (
	"time"

	"golang.org/x/sys/unix"
)

// heartbeatTimes is this host's "now": the systems without UTIME_NOW in
// golang.org/x/sys/unix get the local clock, which is enough, since
// observers look only for a change of mtime.
func heartbeatTimes() []unix.Timespec {
	now := unix.NsecToTimespec(time.Now().UnixNano())
	return []unix.Timespec{now, now}
}

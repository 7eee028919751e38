//go:build unix

package jaxcache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// lockJAX takes the lock JAX's LRUCache takes around every read and write
// when its size bound is set: an exclusive flock(2) on "<dir>/.lockfile"
// (the py-filelock package's UnixFileLock). While it is held, no such JAX
// process writes an entry. The file is created when absent unless create
// is false, in which case there is nothing to hold and unlock is a no-op.
func lockJAX(ctx context.Context, dir string, mode os.FileMode, create bool, timeout time.Duration) (unlock func(), held bool, err error) {
	p := filepath.Join(dir, LockName)
	flags := os.O_RDWR
	if create {
		flags |= os.O_CREATE
	}
	f, err := os.OpenFile(p, flags|unix.O_NOFOLLOW, mode)
	if errors.Is(err, os.ErrPermission) {
		// Another user's lock file: flock works on a read-only descriptor.
		f, err = os.OpenFile(p, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	}
	if errors.Is(err, os.ErrNotExist) && !create {
		return func() {}, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("open JAX lock file: %w", err)
	}
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			return func() {
				_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
				_ = f.Close()
			}, true, nil
		}
		if !errors.Is(err, unix.EWOULDBLOCK) {
			f.Close()
			return nil, false, fmt.Errorf("lock %s: %w", p, err)
		}
		if time.Now().After(deadline) {
			f.Close()
			return nil, false, fmt.Errorf("lock %s: held by a JAX process for more than %v", p, timeout)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, false, ctx.Err()
		case <-tick.C:
		}
	}
}

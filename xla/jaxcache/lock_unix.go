//go:build unix

package jaxcache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/lockedfile"
)

// lockJAX takes the lock JAX's LRUCache takes around every read and write
// when its size bound is set: an exclusive flock(2) on "<dir>/.lockfile"
// (the py-filelock package's UnixFileLock). While it is held, no such JAX
// process writes an entry. The file is created when absent unless create
// is false, in which case there is nothing to hold and unlock is a no-op.
func lockJAX(ctx context.Context, dir string, mode os.FileMode, create bool, timeout time.Duration) (unlock func(), held bool, err error) {
	p := layout.Dir(dir).Join(LockName)
	// Another user's lock file opens read-only: flock works on a read-only
	// descriptor.
	o := lockedfile.Options{Perm: mode, NoCreate: !create, ReadOnlyFallback: true}
	f, err := lockedfile.LockWait(ctx, p, o, timeout)
	switch {
	case err == nil:
		return func() { _ = f.Unlock() }, true, nil
	case !create && errors.Is(err, fs.ErrNotExist):
		return func() {}, false, nil
	case errors.Is(err, lockedfile.ErrLocked):
		return nil, false, fmt.Errorf("lock %s: held by a JAX process for more than %v", p, timeout)
	case ctx.Err() != nil:
		return nil, false, ctx.Err()
	}
	return nil, false, fmt.Errorf("JAX lock file: %w", err)
}

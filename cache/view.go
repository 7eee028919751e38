package cache

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xlacache/xlacache/internal/atomicfile"
)

// Lookups read the cache directory through a view: the directory's
// os.Root and an atomicfile.Dir on it, which opens an entry in one system
// call where the kernel allows (a verified hit on a small entry is
// dominated by opening the file otherwise).
//
// A reader that starts before any writer has created the directory has
// no root at Open. It is not blind for its life: lookups try again to open
// the directory (at most every lateRetry, and at once when a single-flight
// wait for another process's compile polls or ends), with the same trust
// checks as Open, so a reader that waited for a writer's compile hits the
// entry that writer stored.

// lateRetry bounds how often lookups try to open a directory that was
// missing at Open.
const lateRetry = 50 * time.Millisecond

// view is what lookups read the directory through.
type view struct {
	root *os.Root
	dir  *atomicfile.Dir
	// late: root was opened after Open (a reader whose directory did not
	// exist yet), and the view owns it.
	late bool
}

// viewState is the cache's view, made on first use.
type viewState struct {
	cur     atomic.Pointer[view]
	mu      sync.Mutex // serializes making the view
	lastTry atomic.Int64
	closed  bool // under mu
}

// readView returns the view lookups read through, or nil when the cache
// has no local directory (yet). force skips the rate limit on opening a
// directory that was missing at Open.
func (c *Cache) readView(force bool) *view {
	if v := c.views.cur.Load(); v != nil {
		return v
	}
	if c.dir == "" {
		return nil
	}
	if c.root == nil && !force {
		now := time.Now().UnixNano()
		last := c.views.lastTry.Load()
		if now-last < int64(lateRetry) || !c.views.lastTry.CompareAndSwap(last, now) {
			return nil
		}
	}
	c.views.mu.Lock()
	defer c.views.mu.Unlock()
	if v := c.views.cur.Load(); v != nil || c.views.closed {
		return v
	}
	v := &view{root: c.root}
	if v.root == nil {
		root, err := c.openLate()
		if err != nil {
			if !errors.Is(err, fs.ErrNotExist) {
				c.logOnce("late-dir", "cache directory cannot be used; compiling without it", "dir", c.dir, "err", err)
			}
			return nil
		}
		v.root, v.late = root, true
		c.logger.Debug("cache directory appeared; reading it", "dir", c.dir)
	}
	v.dir = atomicfile.NewDir(v.root)
	c.views.cur.Store(v)
	return v
}

// openLate opens the cache directory that was missing at Open, with the
// checks Open makes (openDir): symbolic links in its name resolved once,
// and a directory another user owns or others can write refused.
func (c *Cache) openLate() (*os.Root, error) {
	resolved, err := filepath.EvalSymlinks(c.dir)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(resolved)
	if err != nil {
		return nil, err
	}
	st, err := root.Stat(".")
	if err == nil {
		err = c.checkTrusted(resolved, st)
	}
	if err != nil {
		root.Close()
		return nil, err
	}
	return root, nil
}

// closeView releases the view (Close): its Dir, and its root when the
// view opened it.
func (c *Cache) closeView() {
	c.views.mu.Lock()
	defer c.views.mu.Unlock()
	c.views.closed = true
	if v := c.views.cur.Load(); v != nil {
		v.dir.Close()
		if v.late {
			v.root.Close()
		}
	}
}

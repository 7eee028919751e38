package cache

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
)

// sharedTooLarge counts and logs (once per process: one planted object or a
// thousand are one problem) a shared object refused for its size.
func (c *Cache) sharedTooLarge(name string, limit int64, err error) {
	c.countError("toolarge")
	c.logOnce("shared-toolarge", "skipping shared entries larger than the object size bound; compiling normally",
		"object", name, "err", err, "bound", limit, "option", config.EnvSharedMaxObjectSize)
}

// errReader keeps the first error of r other than io.EOF, so that a store
// failing mid-body is told apart from a damaged object.
type errReader struct {
	r   io.Reader
	err error
}

func (r *errReader) Read(p []byte) (int, error) {
	n, err := r.r.Read(p)
	if err != nil && err != io.EOF && r.err == nil {
		r.err = err
	}
	return n, err
}

// publishShared publishes data as key's shared object, first writer wins,
// except over an object this writer found damaged: that one is replaced,
// on condition that it is still the object that was found damaged
// (If-Match on its ETag), so a good object another writer put there
// meanwhile stays. A replacement is counted as the error kind "replaced".
func (t *Tier) publishShared(ctx context.Context, key Key, data []byte) error {
	c := t.c
	name := t.objectName(key)
	err := c.shared.PutIfAbsent(ctx, name, data)
	if errors.Is(err, blob.ErrExist) {
		etag, ok := c.badShared.LoadAndDelete(name)
		if !ok {
			return nil
		}
		_, err = c.shared.ReplaceIfMatch(ctx, name, etag.(string), data)
		if err == nil {
			c.countError("replaced")
			// A repair, not a failure: the refusal was the warning.
			c.logs.Info("shared-replaced", "replaced damaged shared entries with fresh compiles", "object", name)
		}
	}
	switch {
	case err == nil || errors.Is(err, blob.ErrExist) || errors.Is(err, blob.ErrPrecondition):
		// Published, or another writer's object is there: first writer
		// wins, and a repair someone else made first stays.
		return nil
	case errors.Is(err, blob.ErrUnavailable):
		c.countError("shared") // the store's guard logged it once already
		return nil
	default:
		c.countError("shared")
		return fmt.Errorf("tier %s: publishing %s to the shared tier: %w", t.name, key, err)
	}
}

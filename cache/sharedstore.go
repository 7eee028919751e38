package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
)

// sharedTooLarge counts and logs (once per process: one planted object or a
// thousand are one problem) a shared object refused for its size.
func (c *Cache) sharedTooLarge(tier, name string, limit int64, err error) {
	c.countError(tier, "toolarge")
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
	if err == nil {
		c.stats.uploadedTier(t, int64(len(data)))
	}
	if errors.Is(err, blob.ErrExist) {
		etag, ok := c.badShared.LoadAndDelete(name)
		if !ok {
			return nil
		}
		_, err = c.shared.ReplaceIfMatch(ctx, name, etag.(string), data)
		if err == nil {
			c.stats.uploadedTier(t, int64(len(data)))
			c.countError(t.name, "replaced")
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
		c.countError(t.name, "shared") // the store's guard logged it once already
		return nil
	default:
		c.countError(t.name, "shared")
		return fmt.Errorf("tier %s: publishing %s to the shared tier: %w", t.name, key, err)
	}
}

// Usage markers for bucket retention (package retention).
//
// A shared object's LastModified says when it was published, not when it
// was last used, and S3 has no access time. So a writer that uses an
// object (a hit on the shared tier, or a local hit on an entry it keeps
// locally, which is also what a cold host would fetch) records it in a
// marker object, layout.UsedMarker(name) ("used/<tier>/<key>", holding the
// UTC day), whose LastModified retention reads from a listing. Readers
// never write, and neither does a hit, mostly: like Go's build cache,
// which refreshes an mtime only when it is an hour stale, a marker is
// rewritten only when it is a day stale (usedInterval), and this process
// remembers each object it has seen fresh, so it asks the store at most
// once per object per day. The marker work runs in the background and
// never delays or fails a lookup.

// usedInterval coarsens usage markers: one is rewritten only when older.
// Retention ages are meant in weeks, so a day of error does not matter.
const usedInterval = 24 * time.Hour

// maxMarkerWork bounds the marker refreshes in flight: a burst of first
// hits costs a few background requests at a time, the rest wait in a
// queue.
const maxMarkerWork = 4

// maxMarkerQueue bounds the markers waiting for a refresh; a hit beyond it
// is marked on a later hit. It is large because dropping is not random: a
// job that fetches its programs in a burst, in the same order every run,
// would otherwise mark the same first few every time and let the rest age
// out of the bucket while in daily use.
const maxMarkerQueue = 4096

// markerTimeout bounds one marker refresh (a Stat and a write), and how
// long Close waits for the queue: what is left then is dropped.
const markerTimeout = 2 * time.Second

// usedMarks is what this process remembers of usage markers.
type usedMarks struct {
	mu      sync.Mutex
	fresh   map[string]time.Time // object name -> when its marker was known fresh
	queue   []string             // names waiting for a refresh
	workers int                  // goroutines draining queue
	// drain is what refreshes run under: not cancelled by Close, which
	// waits for them, but markerTimeout after Close has begun.
	drain context.Context
}

// markUsed records, in the background, that this writer used the shared
// object name (see above). It is a no-op for readers and without a shared
// tier.
func (c *Cache) markUsed(name string) {
	if c == nil || c.shared == nil || !c.writer || c.bgCtx == nil || c.bgCtx.Err() != nil {
		return
	}
	now := time.Now()
	m := &c.used
	m.mu.Lock()
	defer m.mu.Unlock()
	if t, ok := m.fresh[name]; (ok && now.Sub(t) < usedInterval) || len(m.queue) >= maxMarkerQueue {
		return
	}
	if m.fresh == nil {
		m.fresh = map[string]time.Time{}
	}
	// Claimed now, so concurrent hits on the same object do not each ask;
	// forgotten again if the refresh fails.
	m.fresh[name] = now
	m.queue = append(m.queue, name)
	if m.drain == nil {
		drain, stop := context.WithCancel(context.WithoutCancel(c.bgCtx))
		context.AfterFunc(c.bgCtx, func() { time.AfterFunc(markerTimeout, stop) })
		m.drain = drain
	}
	if m.workers >= maxMarkerWork {
		return
	}
	m.workers++
	c.bg.Add(1)
	go c.markWorker()
}

// markWorker refreshes queued markers until the queue is empty. Close
// does not cancel it but waits for it, so that a short run's hits are
// recorded too; once Close has begun, the queue gets markerTimeout more
// (drain), and what is left then is dropped.
func (c *Cache) markWorker() {
	defer c.bg.Done()
	m := &c.used
	for {
		m.mu.Lock()
		if len(m.queue) == 0 || m.drain.Err() != nil {
			for _, name := range m.queue {
				delete(m.fresh, name)
			}
			m.queue = nil
			m.workers--
			m.mu.Unlock()
			return
		}
		name := m.queue[0]
		m.queue = m.queue[1:]
		drain := m.drain
		m.mu.Unlock()
		ctx, cancel := context.WithTimeout(drain, markerTimeout)
		ok := c.refreshMarker(ctx, name, time.Now())
		cancel()
		if !ok {
			m.mu.Lock()
			delete(m.fresh, name)
			m.mu.Unlock()
		}
	}
}

// refreshMarker makes name's usage marker at most usedInterval old: one
// Stat when it is fresh, and one conditional write when it is stale or
// absent (of concurrent writers one wins; the others' ErrExist or
// ErrPrecondition means someone refreshed it, which is all that is
// wanted). It reports whether the marker is known fresh.
func (c *Cache) refreshMarker(ctx context.Context, name string, now time.Time) bool {
	marker := layout.UsedMarker(name)
	stamp := []byte(now.UTC().Format(time.DateOnly) + "\n")
	info, err := c.shared.Stat(ctx, marker)
	switch {
	case err == nil && now.Sub(info.ModTime) < usedInterval:
		return true
	case err == nil && info.ETag == "":
		// A store without ETags cannot replace conditionally; the marker
		// keeps its older time (retention errs toward removal, and the
		// object is published again by the next miss).
		return true
	case err == nil:
		_, err = c.shared.ReplaceIfMatch(ctx, marker, info.ETag, stamp)
	case errors.Is(err, blob.ErrNotExist):
		err = c.shared.PutIfAbsent(ctx, marker, stamp)
	}
	switch {
	case err == nil, errors.Is(err, blob.ErrExist), errors.Is(err, blob.ErrPrecondition):
		return true
	case ctx.Err() != nil:
		return false
	case errors.Is(err, blob.ErrUnavailable):
		c.countError("", "shared") // the store's guard logged it once already
		return false
	}
	c.countError("", "shared")
	c.logOnce("shared-used-marker", "could not record the use of a shared entry; bucket retention may take it for unused (no effect on results)", "object", marker, "err", err)
	return false
}

// warnUnsignedOnce makes the unsigned-shared-cache warning one line per
// process, however many caches are opened.
var warnUnsignedOnce sync.Once

// unsignedSharedWarning is the text of that warning (tests look for it).
const unsignedSharedWarning = "shared cache without signing: anyone who can write to it can make readers run their code; set XLACACHE_SIGNING_KEY (or XLACACHE_SIGNING_KEY_FILE) on every host"

// attachShared makes shared the cache's shared tier, warning (once per
// process) when entries are not signed.
func (c *Cache) attachShared(shared blob.Store) {
	if !c.opts.SigningKey.Enabled() {
		where := c.opts.SharedURL
		if where == "" {
			where = storeName(shared)
		}
		warnUnsignedOnce.Do(func() {
			c.logger.Warn(unsignedSharedWarning, "url", where)
		})
	}
	c.shared = shared
}

// storeName names a store for logs.
func storeName(s blob.Store) string {
	if sn, ok := s.(interface{ String() string }); ok {
		return sn.String()
	}
	return "shared store"
}

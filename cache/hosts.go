package cache

import (
	"context"
	"errors"
	"os"
	"sync"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/subcache"
)

// warnUnsignedOnce makes the unsigned-shared-cache warning one line per
// process, however many caches are opened.
var warnUnsignedOnce sync.Once

// unsignedSharedWarning is the text of that warning (tests look for it).
const unsignedSharedWarning = "shared cache without signing: anyone who can write to it can make readers run their code; set XLACACHE_SIGNING_KEY (or XLACACHE_SIGNING_KEY_FILE) on every host"

// attachShared makes shared the cache's shared tier, warning (once per
// process) when entries are not signed, and sets up the mirror of XLA's
// raw subcaches onto it.
func (c *Cache) attachShared(shared blob.Store) {
	if len(c.opts.SigningKey) == 0 {
		where := c.opts.SharedURL
		if where == "" {
			where = storeName(shared)
		}
		warnUnsignedOnce.Do(func() {
			c.logger.Warn(unsignedSharedWarning, "url", where)
		})
	}
	c.shared = shared
	if c.dir != "" {
		// One mirror per cache: it remembers which kernel cache parts it
		// merged already, so the pull before every compile stays cheap.
		c.mirror = subcache.NewMirror(shared, subcache.MirrorOptions{
			Dir:        c.dir,
			Root:       c.root,
			Autotune:   c.opts.HasSubcache(config.SubcacheAutotune),
			Kernels:    c.opts.HasSubcache(config.SubcacheKernels),
			SigningKey: c.opts.SigningKey,
			DirMode:    c.opts.EffectiveDirMode(),
			FileMode:   c.opts.EffectiveFileMode(),
			// The same bound as the tiers' shared lookups.
			MaxObjectSize: c.opts.SharedMaxObjectSize,
		})
	}
}

// storeName names a store for logs.
func storeName(s blob.Store) string {
	if sn, ok := s.(interface{ String() string }); ok {
		return sn.String()
	}
	return "shared store"
}

// pullSubcaches copies the XLA-style raw subcache files (the autotune
// directory and the kernel cache file under dir) from the shared store into
// the local directory before a compile, so that XLA, which needs a POSIX
// path, sees what other hosts produced. Failures are logged, never returned.
func (c *Cache) pullSubcaches(ctx context.Context) {
	if c.mirror == nil || !rawSubcachesOn(c.opts) {
		return
	}
	if !c.opts.Writer() {
		// XLA reads its subcaches only from a POSIX path, so a reader too
		// mirrors them into the node-local directory (it still never
		// writes to the shared tier). It does not create the directory:
		// with none, it compiles without them.
		if _, err := os.Stat(c.opts.Dir); err != nil {
			return
		}
	}
	st, err := c.mirror.Pull(ctx)
	c.logMirror("pulling XLA subcaches from the shared tier", st, err)
}

// pushSubcaches publishes new local XLA-style subcache files to the shared
// store after a compile. Only writers call it.
func (c *Cache) pushSubcaches(ctx context.Context) {
	if c.mirror == nil || !c.opts.Writer() || !rawSubcachesOn(c.opts) {
		return
	}
	st, err := c.mirror.Push(ctx)
	c.logMirror("pushing XLA subcaches to the shared tier", st, err)
}

func rawSubcachesOn(opts config.Options) bool {
	return opts.HasSubcache(config.SubcacheAutotune) || opts.HasSubcache(config.SubcacheKernels)
}

// logMirror logs what a pull or push of XLA's subcaches moved (Debug) and
// its failure, one Warn line per kind of failure; an unreachable store is
// Debug only, because the store's guard already logged the outage.
func (c *Cache) logMirror(what string, st subcache.MirrorStats, err error) {
	if st.Pulled+st.Pushed > 0 {
		c.logger.Debug(what, "pulled", st.Pulled, "pushed", st.Pushed, "refused", st.Refused, "bytes", st.Bytes)
	}
	if err == nil {
		return
	}
	kind := "io"
	switch {
	case errors.Is(err, blob.ErrUnavailable):
		c.logger.Debug(what, "err", err)
		return
	case errors.Is(err, subcache.ErrBadObject):
		kind = "refused"
	}
	c.logOnce("mirror:"+what+":"+kind, what+" failed; compiling with the local subcaches", "err", err)
}

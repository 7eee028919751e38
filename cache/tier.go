package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
)

// staleTemp is how old a temporary file must be before it is garbage.
const staleTemp = time.Hour

// Tier is one caching tier: a directory of verified entries (sharded by
// the first two hex digits of the key digest), backed by the shared store
// when one is configured. A nil *Tier always misses and ignores puts.
type Tier struct {
	c          *Cache
	name       string
	dir        string   // "" when there is no usable local directory
	thresholds bool     // apply MinCompileTime / MinEntrySize (executables only)
	session    *Session // when obtained from a Session: lookups are reported there
}

// Name returns the tier's name ("executables", "cpu/autotune", ...).
func (t *Tier) Name() string {
	if t == nil {
		return ""
	}
	return t.name
}

// Dir returns the tier's local directory, or "" when it has none.
func (t *Tier) Dir() string {
	if t == nil {
		return ""
	}
	return t.dir
}

func (t *Tier) withSession(e *Session) *Tier {
	if t == nil {
		return nil
	}
	cp := *t
	cp.session = e
	return &cp
}

// path returns where key's entry lives; keys are sanitized, so the path
// cannot leave the tier directory.
func (t *Tier) path(key Key) string { return layout.Dir(t.c.dir).Entry(t.name, key.String()) }

func (t *Tier) objectName(key Key) string { return layout.ObjectName(t.name, key.String()) }

// exists reports whether key has a local entry (unverified), for
// single-flight readiness checks.
func (t *Tier) exists(key Key) bool {
	if t == nil || t.dir == "" {
		return false
	}
	_, err := os.Lstat(t.path(key))
	return err == nil
}

// Has reports whether key has an entry in the local directory, without
// reading or verifying it and without counting a hit or a miss: for a
// backend choosing between equally good options by what is cached. A
// later Get still verifies the entry and may miss.
func (t *Tier) Has(key Key) bool { return t.exists(key) }

// stat returns the local entry file's info, or nil.
func (t *Tier) stat(key Key) os.FileInfo {
	if t == nil || t.dir == "" {
		return nil
	}
	st, err := os.Lstat(t.path(key))
	if err != nil {
		return nil
	}
	return st
}

// Get returns the payload stored under key, verified (checksum, and
// signature when a signing key is set), or false on a miss. Damaged entries
// are quarantined (writers) or skipped (readers) and count as misses. A
// local miss falls through to the shared tier; a writer copies a shared hit
// into its local directory.
func (t *Tier) Get(ctx context.Context, key Key) ([]byte, bool) {
	e, _, ok := t.lookup(ctx, key)
	if !ok {
		return nil, false
	}
	return e.Payload, true
}

// lookup is Get that also returns the entry header and where the hit came
// from ("local" or "shared").
func (t *Tier) lookup(ctx context.Context, key Key) (*entry.Entry, string, bool) {
	if t == nil || t.c == nil {
		return nil, "", false
	}
	c := t.c
	if t.dir != "" {
		if e, n, ok := t.getLocal(key); ok {
			c.stats.hit(t.name, n, e.CompileTime, false)
			t.reportHit(e)
			return e, "local", true
		}
	}
	if c.shared != nil && ctx.Err() == nil {
		if e, n, ok := t.getShared(ctx, key); ok {
			c.stats.hit(t.name, n, e.CompileTime, true)
			t.reportHit(e)
			return e, "shared", true
		}
	}
	c.stats.miss(t.name)
	t.report(false)
	return nil, "", false
}

func (t *Tier) reportHit(e *entry.Entry) {
	t.report(true)
	if t.session != nil {
		t.session.recordSaved(e.CompileTime)
	}
}

func (t *Tier) report(hit bool) {
	if t.session != nil {
		t.session.recordTier(t.name, hit)
	}
}

func (t *Tier) getLocal(key Key) (*entry.Entry, int, bool) {
	c := t.c
	p := t.path(key)
	f, err := os.Open(p)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.failure(t.name, "reading entry", p, err)
		}
		return nil, 0, false
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		c.failure(t.name, "reading entry", p, err)
		return nil, 0, false
	}
	if !st.Mode().IsRegular() || st.Size() > entry.MaxRawSize+entry.MaxHeaderSize {
		c.damaged(t, p, st, fmt.Errorf("%w: not a regular file of plausible size", entry.ErrForeign))
		return nil, 0, false
	}
	data, err := entry.Read(f, st.Size(), c.opts.MaxSize)
	if err != nil {
		c.damaged(t, p, st, err)
		return nil, 0, false
	}
	e, err := c.decode(data, key)
	if err != nil {
		c.damaged(t, p, st, err)
		return nil, 0, false
	}
	if c.writer && time.Since(st.ModTime()) > touchInterval {
		now := time.Now()
		if err := os.Chtimes(p, now, now); err != nil {
			c.logger.Debug("refreshing entry access time", "path", p, "err", err)
		}
	}
	return e, len(data), true
}

func (c *Cache) decode(data []byte, key Key) (*entry.Entry, error) {
	e, err := entry.Decode(data, c.signingKey)
	if err != nil {
		return nil, err
	}
	if e.Key != key.String() {
		return nil, fmt.Errorf("%w: entry is for key %q", entry.ErrCorrupt, e.Key)
	}
	return e, nil
}

func (t *Tier) getShared(ctx context.Context, key Key) (*entry.Entry, int, bool) {
	c := t.c
	name := t.objectName(key)
	data, err := c.shared.Get(ctx, name)
	if err != nil {
		switch {
		case errors.Is(err, blob.ErrNotExist) || ctx.Err() != nil:
		case errors.Is(err, blob.ErrUnavailable):
			c.countError("shared") // the store's guard logged it once already
		default:
			c.failure(t.name, "reading shared entry", name, err)
			c.countError("shared")
		}
		return nil, 0, false
	}
	e, err := c.decode(data, key)
	if err != nil {
		c.countError(decodeKind(err))
		c.logOnce("shared-bad:"+name, "skipping damaged shared entry", "object", name, "err", err)
		return nil, 0, false
	}
	if c.writer && t.dir != "" {
		if _, err := t.writeLocal(key, data); err != nil {
			c.failure(t.name, "copying shared entry to the local directory", name, err)
		}
	}
	return e, len(data), true
}

// Put stores payload under key. Readers never write; in the executables
// tier, compiles faster than MinCompileTime and payloads smaller than
// MinEntrySize are not stored; the first writer of a key wins. A writer
// also publishes to the shared tier. The returned error is informational:
// callers should log it and carry on.
func (t *Tier) Put(ctx context.Context, key Key, payload []byte, compileTime time.Duration) error {
	if t == nil || t.c == nil || !t.c.writer {
		return nil
	}
	c := t.c
	o := c.opts
	if t.thresholds {
		if compileTime < o.MinCompileTime {
			c.logger.Debug("not storing: compile faster than threshold", "key", key.String(), "compile", compileTime, "min", o.MinCompileTime)
			return nil
		}
		if int64(len(payload)) < o.MinEntrySize {
			c.logger.Debug("not storing: entry smaller than threshold", "key", key.String(), "size", len(payload), "min", o.MinEntrySize)
			return nil
		}
	}
	if o.MaxSize > 0 && int64(len(payload)) > o.MaxSize {
		c.logger.Debug("not storing: entry larger than the cache bound", "key", key.String(), "size", len(payload), "max", o.MaxSize)
		return nil
	}
	if t.exists(key) {
		return nil // first writer wins
	}
	data, err := entry.Encode(entry.Header{Key: key.String(), Parts: key.Parts, CompileTime: compileTime}, payload, c.signingKey)
	if err != nil {
		c.countError("encode")
		return fmt.Errorf("tier %s: %w", t.name, err)
	}
	var errs []error
	if t.dir != "" {
		if _, err := t.writeLocal(key, data); err != nil {
			kind := kindOf(err)
			c.countError(kind)
			err = fmt.Errorf("tier %s: storing %s: %w", t.name, key, err)
			// One line per kind of failure for the whole cache, whichever
			// tier hits it first: a full disk is one problem, not one per
			// kernel.
			c.logOnce("put:"+kind, "storing a cache entry failed; compiling normally", "tier", t.name, "key", key.String(), "err", err)
			errs = append(errs, err)
		}
	}
	if c.shared != nil {
		err := c.shared.PutIfAbsent(ctx, t.objectName(key), data)
		switch {
		case err == nil || errors.Is(err, blob.ErrExist):
		case errors.Is(err, blob.ErrUnavailable):
			c.countError("shared") // the store's guard logged it once already
		default:
			c.countError("shared")
			errs = append(errs, fmt.Errorf("tier %s: publishing %s to the shared tier: %w", t.name, key, err))
		}
	}
	return errors.Join(errs...)
}

// writeLocal writes data as key's entry, first writer wins
// (atomicfile.Publish). It returns whether this call created the entry.
func (t *Tier) writeLocal(key Key, data []byte) (bool, error) {
	c := t.c
	final := t.path(key)
	created, err := c.writeFileAtomic(final, data)
	if err != nil || !created {
		return created, err
	}
	c.stats.written(int64(len(data)))
	c.addSize(int64(len(data)))
	return true, nil
}

// writeFileAtomic publishes data at final unless final exists, creating
// the shard directory as needed.
func (c *Cache) writeFileAtomic(final string, data []byte) (bool, error) {
	return atomicfile.Publish(final, data, atomicfile.Options{
		Perm:       c.opts.EffectiveFileMode(),
		DirPerm:    c.opts.EffectiveDirMode(),
		CreateTemp: c.hooks.createTemp,
		Write:      c.hooks.write,
	})
}

// damaged handles a local entry that failed verification: counted, logged
// once per file, and (writers only) moved to the quarantine directory so a
// good entry can take its place.
func (c *Cache) damaged(t *Tier, p string, st os.FileInfo, cause error) {
	kind := decodeKind(cause)
	c.countError(kind)
	if !c.writer {
		c.logOnce("bad:"+p, "skipping damaged cache entry (read-only process)", "tier", t.name, "path", p, "err", cause)
		return
	}
	dst, err := c.quarantine(t.name, p, st)
	if err != nil {
		c.logOnce("bad:"+p, "damaged cache entry could not be quarantined", "tier", t.name, "path", p, "err", cause, "quarantine_err", err)
		return
	}
	if dst != "" {
		c.logOnce("bad:"+p, "quarantined damaged cache entry", "tier", t.name, "path", p, "to", dst, "err", cause)
	}
}

// quarantine moves p into <dir>/quarantine unless it was replaced since st
// was taken (another process already dealt with it).
func (c *Cache) quarantine(tier, p string, st os.FileInfo) (string, error) {
	cur, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	if st != nil && !os.SameFile(st, cur) {
		return "", nil
	}
	qdir := layout.Dir(c.dir).Quarantine()
	if err := os.MkdirAll(qdir, c.opts.EffectiveDirMode()); err != nil {
		return "", err
	}
	dst := filepath.Join(qdir, layout.QuarantineName(tier, filepath.Base(p), strconv.FormatInt(time.Now().UnixNano(), 36)))
	if err := os.Rename(p, dst); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	return dst, nil
}

// remove deletes key's local entry (a writer discarding an entry the
// backend could not load).
func (t *Tier) quarantineKey(key Key, cause error) {
	if t == nil || t.dir == "" {
		return
	}
	p := t.path(key)
	st, err := os.Lstat(p)
	if err != nil {
		return
	}
	t.c.damaged(t, p, st, cause)
}

func decodeKind(err error) string {
	switch {
	case errors.Is(err, entry.ErrSignature), errors.Is(err, entry.ErrUnsigned):
		return "signature"
	case errors.Is(err, entry.ErrForeign):
		return "foreign"
	case errors.Is(err, entry.ErrVersion):
		return "version"
	case errors.Is(err, entry.ErrCorrupt):
		return "corrupt"
	case errors.Is(err, errLoad):
		return "load"
	}
	return kindOf(err)
}

// errLoad marks an entry the backend refused to load.
var errLoad = errors.New("backend could not load the entry")

// failure counts and logs (once per tier and kind) an I/O failure. The
// caller degrades to a miss or a skipped write.
func (c *Cache) failure(tier, what, path string, err error) {
	kind := kindOf(err)
	c.countError(kind)
	c.logOnce("fail:"+tier+":"+what+":"+kind, "cache "+what+" failed; compiling normally", "tier", tier, "path", path, "err", err)
}

package cache

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"strconv"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/logonce"
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
	// localOnly keeps the tier out of the shared store (the aliases
	// tiers, alias.go: a round trip to a bucket would cost what the alias
	// saves).
	localOnly bool
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

// path returns where key's entry lives, for logs and tests; keys are
// sanitized, so the path cannot leave the tier directory.
func (t *Tier) path(key Key) string { return layout.Dir(t.c.dir).Entry(t.name, key.String()) }

// rel returns key's entry path relative to the cache directory: every file
// operation goes through t.c.root with it.
func (t *Tier) rel(key Key) string { return layout.EntryRel(t.name, key.String()) }

// local reports whether the tier has a local directory to use.
func (t *Tier) local() bool { return t.localView(false) != nil }

// localView returns the view to read the tier's local directory through,
// or nil when there is none (yet: force tries at once to open a directory
// that was missing at Open, view.go).
func (t *Tier) localView(force bool) *view {
	if t == nil || t.dir == "" {
		return nil
	}
	return t.c.readView(force)
}

func (t *Tier) objectName(key Key) string { return layout.ObjectName(t.name, key.String()) }

// exists reports whether key has a local entry (unverified), for
// single-flight readiness checks.
func (t *Tier) exists(key Key) bool {
	v := t.localView(false)
	if v == nil {
		return false
	}
	_, err := v.root.Lstat(t.rel(key))
	return err == nil
}

// Has reports whether key has an entry in the local directory, without
// reading or verifying it and without counting a hit or a miss: for a
// backend choosing between equally good options by what is cached. A
// later Get still verifies the entry and may miss.
func (t *Tier) Has(key Key) bool { return t.exists(key) }

// Reject treats key's local entry as damaged although it verified: the
// backend found its payload unusable (cause says how). A writer
// quarantines it, so that the backend's next Put stores a good one; a
// reader logs it once. The shared tier's copy, if any, is left alone.
func (t *Tier) Reject(key Key, cause error) {
	if t == nil || t.c == nil {
		return
	}
	st := t.stat(key)
	if st == nil {
		return
	}
	t.c.damaged(t, t.path(key), st, cause)
}

// stat returns the local entry file's info, or nil.
func (t *Tier) stat(key Key) os.FileInfo { return t.statView(t.localView(false), key) }

// statView is stat through v (nil: no local directory).
func (t *Tier) statView(v *view, key Key) os.FileInfo {
	if v == nil {
		return nil
	}
	st, err := v.root.Lstat(t.rel(key))
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
	e, src, n, ok := t.find(ctx, key)
	if ok {
		t.countHit(e, src, n)
	} else {
		t.countMiss()
	}
	return e, src, ok
}

// find is lookup without the accounting: the caller counts the result
// with countHit or countMiss once it knows whether the entry is usable
// (an executable that verifies but that the backend cannot load is a
// miss, and its compile time was not saved). n is the entry's stored size.
func (t *Tier) find(ctx context.Context, key Key) (e *entry.Entry, src string, n int, ok bool) {
	if t == nil || t.c == nil {
		return nil, "", 0, false
	}
	c := t.c
	if v := t.localView(false); v != nil {
		if e, n, ok := t.getLocal(v, key); ok {
			return e, "local", n, true
		}
	}
	if c.shared != nil && !t.localOnly && ctx.Err() == nil {
		if e, n, ok := t.getShared(ctx, key); ok {
			return e, "shared", n, true
		}
	}
	return nil, "", 0, false
}

// countHit records a usable hit from src ("local" or "shared") of n
// stored bytes: in the process's counters (persisted by writers), in the
// session's report, and as compile time saved.
func (t *Tier) countHit(e *entry.Entry, src string, n int) {
	if t == nil || t.c == nil {
		return
	}
	t.c.stats.hitTier(t, n, e.CompileTime, src == "shared")
	t.report(true)
	if t.session != nil {
		t.session.recordSaved(e.CompileTime)
	}
}

// countMiss records a miss in the process's counters and the session's
// report.
func (t *Tier) countMiss() {
	if t == nil || t.c == nil {
		return
	}
	t.c.stats.missTier(t)
	t.report(false)
}

func (t *Tier) report(hit bool) {
	if t.session != nil {
		t.session.recordTier(t.name, hit)
	}
}

func (t *Tier) getLocal(v *view, key Key) (*entry.Entry, int, bool) {
	c := t.c
	// The key's text and paths are built once, and the host path (for
	// log lines) only on a failure: a hit on a small entry is a few
	// microseconds of work.
	ks := key.String()
	rel := layout.EntryRel(t.name, ks)
	hostPath := func() string { return layout.Dir(c.dir).Entry(t.name, ks) }
	// OpenRegular: a FIFO, socket or device planted at the entry path is
	// damage, refused without blocking on it; so is a symbolic link.
	f, st, err := v.dir.OpenRegular(rel)
	if err != nil {
		switch {
		case errors.Is(err, fs.ErrNotExist):
		case errors.Is(err, atomicfile.ErrNotRegular):
			c.damaged(t, hostPath(), st, fmt.Errorf("%w: %v", entry.ErrForeign, err))
		default:
			c.failure(t.name, "reading entry", hostPath(), err)
			t.noteMiss(whyRead, err)
		}
		return nil, 0, false
	}
	defer f.Close()
	if st.Size() > entry.MaxRawSize+entry.MaxHeaderSize {
		c.damaged(t, hostPath(), st, fmt.Errorf("%w: not a regular file of plausible size", entry.ErrForeign))
		return nil, 0, false
	}
	data, err := entry.Read(f, st.Size(), c.opts.MaxSize)
	if err != nil {
		c.damaged(t, hostPath(), st, err)
		return nil, 0, false
	}
	e, err := c.decodeAs(data, ks)
	if err != nil {
		c.damaged(t, hostPath(), st, err)
		return nil, 0, false
	}
	if c.writer && time.Since(st.ModTime()) > touchInterval {
		now := time.Now()
		if err := c.root.Chtimes(rel, now, now); err != nil {
			c.logger.Debug("refreshing entry access time", "path", hostPath(), "err", err)
		}
		c.markUsed(t.objectName(key)) // bucket retention (sharedstore.go)
	}
	return e, len(data), true
}

func (c *Cache) decode(data []byte, key Key) (*entry.Entry, error) {
	return c.decodeAs(data, key.String())
}

// decodeAs is decode for the key's text ks.
func (c *Cache) decodeAs(data []byte, ks string) (*entry.Entry, error) {
	e, err := entry.Decode(data, c.signingKey)
	if err != nil {
		return nil, err
	}
	if e.Key != ks {
		return nil, fmt.Errorf("%w: entry is for key %q", entry.ErrCorrupt, e.Key)
	}
	return e, nil
}

// getShared looks key up in the shared store. The object's size, from the
// response headers, is checked against the bound
// (config.Options.EffectiveSharedMaxObjectSize) and its header against
// the size before the body is read, so a huge or foreign object planted in
// the bucket costs a small read and one log line, never its size in
// memory. A writer remembers the ETag of an object that fails
// verification, so that its put after the compile replaces that object.
func (t *Tier) getShared(ctx context.Context, key Key) (*entry.Entry, int, bool) {
	c := t.c
	name := t.objectName(key)
	limit := c.opts.EffectiveSharedMaxObjectSize()
	rc, info, err := c.shared.Open(ctx, name)
	if err != nil {
		switch {
		case errors.Is(err, blob.ErrNotExist) || ctx.Err() != nil:
		case errors.Is(err, blob.ErrTooLarge):
			c.sharedTooLarge(t.name, name, limit, err)
			t.noteMiss(whySharedBig, nil)
		case errors.Is(err, blob.ErrUnavailable):
			c.countError(t.name, "shared") // the store's guard logged it once already
			t.noteMiss(whySharedDown, err)
		default:
			t.noteMiss(whySharedDown, err)
			// Counted once, as a shared-tier failure (not also as "io").
			c.logFailure(t.name, "reading shared entry", name, err)
			c.countError(t.name, "shared")
		}
		return nil, 0, false
	}
	defer rc.Close()
	if info.Size > limit {
		c.sharedTooLarge(t.name, name, limit, fmt.Errorf("%w: %d bytes, more than %d", blob.ErrTooLarge, info.Size, limit))
		t.noteMiss(whySharedBig, nil)
		return nil, 0, false
	}
	body := &errReader{r: rc}
	data, err := entry.Read(body, info.Size, limit)
	if body.err != nil {
		// The store failed mid-body: not damage, and nothing to replace.
		if ctx.Err() == nil {
			t.noteMiss(whySharedDown, body.err)
			if !errors.Is(body.err, blob.ErrUnavailable) {
				c.logFailure(t.name, "reading shared entry", name, body.err)
			}
			c.countError(t.name, "shared")
		}
		return nil, 0, false
	}
	var e *entry.Entry
	if err == nil {
		e, err = c.decode(data, key)
	}
	if err != nil {
		c.countError(t.name, decodeKind(err))
		t.noteMiss(sharedDecodeWhy(err), err)
		if keyMismatch(err) {
			// Never replaced: the object is most likely good for the
			// hosts that hold the key it was signed with, and replacing it
			// would only start a war of replacements between the hosts.
			c.warnKeyMismatch("tier", t.name, "object", name, "err", err)
			return nil, 0, false
		}
		if c.writer && info.ETag != "" {
			c.badShared.Store(name, info.ETag)
		}
		c.logOnce("shared-bad:"+name, "skipping damaged shared entry", "object", name, "err", err)
		return nil, 0, false
	}
	if c.writer && t.local() {
		if _, err := t.writeLocal(key, data); err != nil {
			c.failure(t.name, "copying shared entry to the local directory", name, err)
		}
	}
	c.markUsed(name) // bucket retention (sharedstore.go)
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
		c.countError(t.name, "encode")
		return fmt.Errorf("tier %s: %w", t.name, err)
	}
	var errs []error
	if t.local() {
		if _, err := t.writeLocal(key, data); err != nil {
			kind := kindOf(err)
			c.countError(t.name, kind)
			err = fmt.Errorf("tier %s: storing %s: %w", t.name, key, err)
			// One line per kind of failure for the whole process,
			// whichever tier (or the stats, or the leases) hits it first:
			// a full disk is one problem, not one per kernel.
			c.logOnce(logonce.FailureKey(err), "storing a cache entry failed; compiling normally", "tier", t.name, "key", key.String(), "err", err)
			errs = append(errs, err)
		}
	}
	if c.shared != nil && !t.localOnly {
		if err := t.publishShared(ctx, key, data); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// writeLocal writes data as key's entry, first writer wins
// (atomicfile.Publish). It returns whether this call created the entry.
func (t *Tier) writeLocal(key Key, data []byte) (bool, error) {
	c := t.c
	created, err := c.writeFileAtomic(t.rel(key), data)
	if err != nil || !created {
		return created, err
	}
	c.stats.writtenTier(t, int64(len(data)))
	c.addSizeAt(t.rel(key), int64(len(data)))
	return true, nil
}

// writeFileAtomic publishes data at rel (inside c.root) unless a file is
// there, creating the shard directory as needed.
func (c *Cache) writeFileAtomic(rel string, data []byte) (bool, error) {
	return atomicfile.Publish(rel, data, atomicfile.Options{
		Root:       c.root,
		Perm:       c.opts.EffectiveFileMode(),
		DirPerm:    c.opts.EffectiveDirMode(),
		CreateTemp: c.hooks.createTemp,
		Write:      c.hooks.write,
	})
}

// damaged handles a local entry that failed verification: counted, logged
// once per file, and (writers only) moved to the quarantine directory so a
// good entry can take its place. p is the entry's path under c.dir.
//
// An entry whose checksum holds but whose signature does not verify with
// this process's key is not damage (keyMismatch): it is left in place.
func (c *Cache) damaged(t *Tier, p string, st os.FileInfo, cause error) {
	kind := decodeKind(cause)
	c.countError(t.name, kind)
	t.noteMiss(damagedWhy(cause), cause)
	if keyMismatch(cause) {
		c.warnKeyMismatch("tier", t.name, "path", p, "err", cause)
		return
	}
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

// quarantine moves p (a path under c.dir) into <dir>/quarantine unless it
// was replaced since st was taken (another process already dealt with it).
// The move is a rename inside c.root: a quarantine directory that is a
// symbolic link is refused, never followed.
func (c *Cache) quarantine(tier, p string, st os.FileInfo) (string, error) {
	rel, ok := layout.Dir(c.dir).Rel(p)
	if !ok || c.root == nil {
		return "", fmt.Errorf("%s is not inside the cache directory %s", p, c.dir)
	}
	cur, err := c.root.Lstat(rel)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	if st != nil && !os.SameFile(st, cur) {
		return "", nil
	}
	if err := atomicfile.MkdirAllIn(c.root, layout.QuarantineDir, c.opts.EffectiveDirMode()); err != nil {
		return "", err
	}
	dstRel := layout.QuarantineRel(layout.QuarantineName(tier, path.Base(rel), strconv.FormatInt(time.Now().UnixNano(), 36)))
	if err := c.root.Rename(rel, dstRel); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "", nil
		}
		return "", err
	}
	return layout.Dir(c.dir).Join(dstRel), nil
}

// keyMismatch reports whether err says that an entry's signature does not
// verify with this process's key while its checksum holds (entry.Decode
// checks the checksum first): the entry was written whole by a process
// with another signing key (a mistyped or rotated XLACACHE_SIGNING_KEY, a
// host set up with another key), which is a configuration problem, not
// damage. Such an entry is never quarantined, repaired or replaced, in the
// local directory or the shared tier: with the right key it is good, and
// hosts that disagree about the key would otherwise replace each other's
// entries for ever. (An unsigned entry read with a key set is another
// matter: a signed replacement serves every host, keyed or not.)
// An Ed25519 signature by an accepted key that does not verify is damage
// (entry.OtherKey): a writer replaces it.
func keyMismatch(err error) bool { return entry.OtherKey(err) }

// KeyMismatchWarning is the one line a process logs when it meets entries
// signed with another key (tests and tools look for it).
const KeyMismatchWarning = "cache entries signed with another key: check " + config.EnvSigningKey + " (or " + config.EnvSigningKeyFile + "; for Ed25519, " + config.EnvVerifyKeys + ") on this host; such entries are left in place and missed, never repaired"

// warnKeyMismatch logs KeyMismatchWarning once per process, however many
// entries and tiers fail the same way.
func (c *Cache) warnKeyMismatch(args ...any) {
	c.logOnce("key-mismatch", KeyMismatchWarning, args...)
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

// failure counts and logs an I/O failure, once per kind of failure for
// the whole process (logonce.FailureKey: an unreadable tier is one
// problem, whatever reads or writes meet it). The caller degrades to a
// miss or a skipped write. tier is "" for work that serves no one tier
// (the size ledger, trims).
func (c *Cache) failure(tier, what, path string, err error) {
	c.countError(tier, kindOf(err))
	c.logFailure(tier, what, path, err)
}

// logFailure logs failure's line without counting it, for callers that
// count the failure under another kind.
func (c *Cache) logFailure(tier, what, path string, err error) {
	if tier == "" {
		c.logOnce(logonce.FailureKey(err), "cache "+what+" failed; compiling normally", "path", path, "err", err)
		return
	}
	c.logOnce(logonce.FailureKey(err), "cache "+what+" failed; compiling normally", "tier", tier, "path", path, "err", err)
}

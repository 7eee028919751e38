// Package dirsync copies a whole cache directory from or to a shared
// blob.Store: every xlacache entry (executables and the backends' subcache
// tiers) and XLA's raw subcache files. It is what `xlacache sync` does, for
// programs that warm a host or publish a finished cache themselves.
//
// Copies are checked on the way: an entry is verified (checksum, key, and
// the signature when the cache has a signing key) before it is written
// locally or published, so a damaged or forged object never reaches the
// directory and a damaged local file never reaches the store. Objects are
// size-checked (config.Options.EffectiveSharedMaxObjectSize) before they
// are read. Both directions are first writer wins: nothing sound already
// present is replaced; a push replaces a remote object that no host can
// use (damaged, or over the size bound), conditionally on its ETag.
package dirsync

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/xla/rawfiles"
)

// Result counts what a Pull or Push moved.
type Result struct {
	// Entries counts entries copied; Skipped those already at the
	// destination; Refused those that failed verification.
	Entries, Skipped, Refused int
	// Replaced counts remote objects a push found damaged (failing
	// verification, or over the size bound so that no host reads them)
	// and replaced with the local entry.
	Replaced int
	// Raw counts XLA's raw subcache files moved by the mirror.
	Raw rawfiles.MirrorStats
	// Filled and Published are what moved in exec's packs (packs.go): JAX's
	// executable entries, and the other complete files of the directory.
	Filled    hostfill.FillStats
	Published hostfill.PublishStats
}

// Pull copies into c's directory every entry store has and the directory
// lacks, for the tiers c knows, and XLA's raw subcaches c has enabled
// (autotune files copied, kernel cache parts merged). c must be a writer
// with a usable directory. Entries are not read through the tiers: a copy
// is not a lookup, and must not count hits or compile time saved. The
// error joins every failure; what could be copied is copied.
func Pull(ctx context.Context, c *cache.Cache, store blob.Store) (Result, error) {
	var res Result
	opts := c.Options()
	dir := c.Dir()
	if dir == "" || !c.Writer() {
		return res, fmt.Errorf("sync pull: cache directory %s is not writable (see the log line above)", opts.Dir)
	}
	// Entries are installed through a root on the directory, so a
	// symbolic link planted in it cannot redirect a write outside.
	root, err := os.OpenRoot(dir)
	if err != nil {
		return res, fmt.Errorf("sync pull: %w", err)
	}
	defer root.Close()
	objs, err := store.List(ctx, "")
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.SharedURL, err)
	}
	var errs []error
	for _, obj := range objs {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		tier, key, ok := layout.ParseEntryObject(obj.Name)
		if !ok || c.Tier(tier) == nil {
			continue
		}
		created, refused, err := pullEntry(ctx, store, obj.Name, root, tier, key, opts)
		switch {
		case refused:
			res.Refused++
		case created:
			res.Entries++
		case err == nil:
			res.Skipped++
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if res.Entries > 0 {
		// Entries written beside the cache's own writes are not in its
		// size ledger: recount, and enforce the bound as a put would.
		if _, err := c.Prune(ctx, opts.MaxSize, false); err != nil {
			slog.Warn("xlacache: sync pull: recounting the cache directory failed; the next trim will", "dir", dir, "err", err)
		}
	}
	m := rawfiles.NewMirror(store, mirrorOptions(opts, opts.HasSubcache(config.SubcacheAutotune), opts.HasSubcache(config.SubcacheKernels)))
	raw, err := m.Pull(ctx)
	res.Raw = raw
	if err != nil {
		errs = append(errs, err)
	}
	res.Filled, err = pullPacks(ctx, store, root, opts)
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// pullEntry copies one entry object into the directory root unless it is
// there already (then, or when another process stores it meanwhile,
// created is false). refused reports an object that could not be read or
// failed verification.
func pullEntry(ctx context.Context, store blob.Store, name string, root *os.Root, tier, key string, opts config.Options) (created, refused bool, err error) {
	dst := layout.EntryRel(tier, key)
	if _, err := root.Lstat(dst); err == nil {
		return false, false, nil
	}
	data, _, err := readEntry(ctx, store, name, key, opts)
	if err != nil {
		return false, true, fmt.Errorf("%s: not copied: %w", name, err)
	}
	// Through root: a symbolic link on the way is refused, not followed.
	created, err = atomicfile.Publish(dst, data, atomicfile.Options{Perm: opts.EffectiveFileMode(), DirPerm: opts.EffectiveDirMode(), Root: root})
	if err != nil {
		return false, false, fmt.Errorf("%s: writing %s: %w", name, dst, err)
	}
	return created, false, nil
}

// Push publishes every entry of c's directory the store lacks, and XLA's
// raw subcache files (autotune files, the kernel cache file as a new part
// when its content is new). A remote entry that fails verification is
// replaced by the local one (Result.Replaced). Damaged or wrongly signed
// local entries are refused. A failure to publish stops the push: the store is then likely
// unreachable.
//
// A process whose keys verify but cannot sign (config.Options.VerifyOnly)
// pushes nothing: a reader never publishes or repairs shared objects.
func Push(ctx context.Context, c *cache.Cache, store blob.Store) (Result, error) {
	var res Result
	opts := c.Options()
	if opts.VerifyOnly() {
		return res, fmt.Errorf("sync push: this process holds Ed25519 public keys only (%s without %s): readers publish nothing", config.EnvVerifyKeys, config.EnvSigningPrivateKeyFile)
	}
	entries, err := cache.List(ctx, opts.Dir)
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.Dir, err)
	}
	remote, err := store.List(ctx, "")
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.SharedURL, err)
	}
	have := make(map[string]blob.Info, len(remote))
	for _, r := range remote {
		have[r.Name] = r
	}
	var errs []error
	warnedKey := false // one line per push for objects signed with another key
	for _, e := range entries {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		name := layout.ObjectName(e.Tier, e.Key)
		data, err := cache.ReadEntryFile(e.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if _, err := entry.DecodeAs(data, e.Key, opts.SigningKey); err != nil {
			res.Refused++
			errs = append(errs, fmt.Errorf("%s: not published: %w", e.Path, err))
			continue
		}
		if r, ok := have[name]; ok {
			replaced, err := repairRemote(ctx, store, r, e.Key, data, opts)
			if errors.Is(err, errOtherKey) {
				if !warnedKey {
					warnedKey = true
					slog.Warn("xlacache: sync push: shared objects signed with another key are left in place; check "+config.EnvSigningKey, "object", r.Name)
				}
				res.Skipped++
				continue
			}
			if err != nil {
				return res, errors.Join(append(errs, err)...)
			}
			if replaced {
				res.Replaced++
			} else {
				res.Skipped++
			}
			continue
		}
		if err := store.PutIfAbsent(ctx, name, data); err != nil {
			if errors.Is(err, blob.ErrExist) {
				res.Skipped++
				continue
			}
			return res, errors.Join(append(errs, fmt.Errorf("publishing %s: %w", name, err))...)
		}
		res.Entries++
	}
	m := rawfiles.NewMirror(store, mirrorOptions(opts, true, true))
	raw, err := m.Push(ctx)
	res.Raw = raw
	if err != nil {
		errs = append(errs, err)
	}
	res.Published, err = pushPacks(ctx, store, opts.Dir, opts)
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// readEntry reads and verifies the entry object name holds for key. Its
// size, from the response headers, is checked against the bound before any
// of it is read, and its header against that size before its body is;
// info is the object's, for a conditional replace of a damaged object. A
// failure of the store wraps blob.ErrUnavailable (as Open gives it);
// anything else is an object that must not be used.
func readEntry(ctx context.Context, store blob.Store, name, key string, opts config.Options) ([]byte, blob.Info, error) {
	limit := opts.EffectiveSharedMaxObjectSize()
	rc, info, err := store.Open(ctx, name)
	if err != nil {
		return nil, blob.Info{}, err
	}
	defer rc.Close()
	if info.Size > limit {
		return nil, info, fmt.Errorf("%w: %d bytes, more than %d (%s)", blob.ErrTooLarge, info.Size, limit, config.EnvSharedMaxObjectSize)
	}
	data, err := entry.Read(rc, info.Size, limit)
	if err == nil {
		_, err = entry.DecodeAs(data, key, opts.SigningKey)
	}
	if err != nil {
		return nil, info, err
	}
	return data, info, nil
}

// errOtherKey is repairRemote's answer for an object signed with another
// key: left in place.
var errOtherKey = errors.New("shared object signed with another key")

// repairRemote checks the object r that a push found under the name of a
// local entry (data, already verified) and replaces it if no host can use
// it: it fails verification or is over the size bound. The replace is
// conditional on r's ETag, so an object another writer repaired or
// replaced meanwhile stays. An object whose ETag is the local entry's MD5
// is the same bytes and is not downloaded. It returns whether it replaced
// the object; an error is a failure of the store, which ends the push.
func repairRemote(ctx context.Context, store blob.Store, r blob.Info, key string, data []byte, opts config.Options) (bool, error) {
	sum := md5.Sum(data)
	if strings.Trim(r.ETag, `"`) == hex.EncodeToString(sum[:]) {
		return false, nil
	}
	etag := r.ETag
	var bad error
	if limit := opts.EffectiveSharedMaxObjectSize(); r.Size > limit {
		bad = fmt.Errorf("%w: %d bytes, more than %d", blob.ErrTooLarge, r.Size, limit)
	} else {
		_, info, err := readEntry(ctx, store, r.Name, key, opts)
		switch {
		case err == nil:
			return false, nil
		case errors.Is(err, blob.ErrNotExist):
			// Deleted since the listing: a prune's decision to respect.
			return false, nil
		case errors.Is(err, blob.ErrUnavailable) || ctx.Err() != nil:
			return false, fmt.Errorf("checking %s: %w", r.Name, err)
		case entry.OtherKey(err):
			// Whole (its checksum holds) but signed with another key:
			// good for the hosts that hold that key. A host with a
			// mistyped key must not replace the bucket's objects (and
			// hosts with different keys would replace each other's).
			return false, errOtherKey
		}
		bad = err
		if info.ETag != "" {
			etag = info.ETag
		}
	}
	if etag == "" {
		return false, nil // nothing to make the replace conditional on
	}
	_, err := store.ReplaceIfMatch(ctx, r.Name, etag, data)
	switch {
	case err == nil:
		slog.Info("xlacache: sync push: replaced a damaged shared object", "object", r.Name, "was", bad)
		return true, nil
	case errors.Is(err, blob.ErrPrecondition):
		return false, nil // another writer replaced or removed it first
	default:
		return false, fmt.Errorf("replacing damaged %s: %w", r.Name, err)
	}
}

func mirrorOptions(opts config.Options, autotune, kernels bool) rawfiles.MirrorOptions {
	return rawfiles.MirrorOptions{
		Dir: opts.Dir, Autotune: autotune, Kernels: kernels,
		SigningKey: opts.SigningKey, DirMode: opts.EffectiveDirMode(), FileMode: opts.EffectiveFileMode(),
		MaxObjectSize: opts.SharedMaxObjectSize,
	}
}

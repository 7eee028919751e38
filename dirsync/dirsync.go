// Package dirsync copies a whole cache directory from or to a shared
// blob.Store: every xlacache entry (executables and the backends' subcache
// tiers) and XLA's raw subcache files. It is what `xlacache sync` does, for
// programs that warm a host or publish a finished cache themselves.
//
// Copies are checked on the way: an entry is verified (checksum, key, and
// the signature when the cache has a signing key) before it is written
// locally or published, so a damaged or forged object never reaches the
// directory and a damaged local file never reaches the store. Both
// directions are first writer wins: nothing already present is replaced.
package dirsync

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/subcache"
)

// Result counts what a Pull or Push moved.
type Result struct {
	// Entries counts entries copied; Skipped those already at the
	// destination; Refused those that failed verification.
	Entries, Skipped, Refused int
	// Raw counts XLA's raw subcache files moved by the mirror.
	Raw subcache.MirrorStats
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
	objs, err := store.List(ctx, "")
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.SharedURL, err)
	}
	var errs []error
	for _, obj := range objs {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		tier, key, ok := parseObjectName(obj.Name)
		if !ok || c.Tier(tier) == nil {
			continue
		}
		created, refused, err := pullEntry(ctx, store, obj.Name, dir, tier, key, opts)
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
	m := subcache.NewMirror(store, mirrorOptions(opts, opts.HasSubcache(config.SubcacheAutotune), opts.HasSubcache(config.SubcacheKernels)))
	raw, err := m.Pull(ctx)
	res.Raw = raw
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// pullEntry copies one entry object into dir unless it is there already
// (then, or when another process stores it meanwhile, created is false).
// refused reports an object that could not be read or failed verification.
func pullEntry(ctx context.Context, store blob.Store, name, dir, tier, key string, opts config.Options) (created, refused bool, err error) {
	dst := layout.Dir(dir).Entry(tier, key)
	if _, err := os.Lstat(dst); err == nil {
		return false, false, nil
	}
	data, err := store.Get(ctx, name)
	if err == nil {
		_, err = entry.DecodeAs(data, key, opts.SigningKey)
	}
	if err != nil {
		return false, true, fmt.Errorf("%s: not copied: %w", name, err)
	}
	// MkdirInside also refuses a path outside dir or through a symlink.
	if err := atomicfile.MkdirInside(dir, filepath.Dir(dst), opts.EffectiveDirMode()); err != nil {
		return false, false, fmt.Errorf("%s: writing %s: %w", name, dst, err)
	}
	created, err = atomicfile.Publish(dst, data, atomicfile.Options{Perm: opts.EffectiveFileMode()})
	if err != nil {
		return false, false, fmt.Errorf("%s: writing %s: %w", name, dst, err)
	}
	return created, false, nil
}

// Push publishes every entry of c's directory the store lacks, and XLA's
// raw subcache files (autotune files, the kernel cache file as a new part
// when its content is new). Damaged or wrongly signed local entries are
// refused. A failure to publish stops the push: the store is then likely
// unreachable.
func Push(ctx context.Context, c *cache.Cache, store blob.Store) (Result, error) {
	var res Result
	opts := c.Options()
	entries, err := cache.List(ctx, opts.Dir)
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.Dir, err)
	}
	remote, err := store.List(ctx, "")
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.SharedURL, err)
	}
	have := make(map[string]bool, len(remote))
	for _, r := range remote {
		have[r.Name] = true
	}
	var errs []error
	for _, e := range entries {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		name := layout.ObjectName(e.Tier, e.Key)
		if have[name] {
			res.Skipped++
			continue
		}
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
		if err := store.PutIfAbsent(ctx, name, data); err != nil {
			if errors.Is(err, blob.ErrExist) {
				res.Skipped++
				continue
			}
			return res, errors.Join(append(errs, fmt.Errorf("publishing %s: %w", name, err))...)
		}
		res.Entries++
	}
	m := subcache.NewMirror(store, mirrorOptions(opts, true, true))
	raw, err := m.Push(ctx)
	res.Raw = raw
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

func mirrorOptions(opts config.Options, autotune, kernels bool) subcache.MirrorOptions {
	return subcache.MirrorOptions{
		Dir: opts.Dir, Autotune: autotune, Kernels: kernels,
		SigningKey: opts.SigningKey, DirMode: opts.EffectiveDirMode(), FileMode: opts.EffectiveFileMode(),
	}
}

// parseObjectName splits a store object name into its tier and key when
// it names an xlacache entry (layout.ObjectName: "executables/<key>",
// "<backend>/<sub>/<key>").
func parseObjectName(name string) (tier, key string, ok bool) {
	i := strings.LastIndexByte(name, '/')
	if i <= 0 {
		return "", "", false
	}
	tier, key = name[:i], name[i+1:]
	if layout.ValidTierName(tier) != nil {
		return "", "", false
	}
	if _, _, err := cache.ParseKey(key); err != nil {
		return "", "", false
	}
	return tier, key, true
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/entry"
	"github.com/xlacache/xlacache/s3store"
)

var syncCmd = &cobra.Command{
	Use:   "sync pull|push",
	Short: "Copy a cache directory from or to the shared object-store tier",
	Long: `Synchronize the cache directory with the shared tier (XLACACHE_SHARED_URL or
--url, s3://bucket/prefix; endpoint and credentials as for the library, see
docs/multihost.md).

  pull  copies every entry the shared tier has and the directory lacks
        (executables and backend subcache tiers, verified and, with
        XLACACHE_SIGNING_KEY, signature-checked before they are written),
        and XLA's autotune files and kernel cache parts (merged into
        xla_gpu_kernel_cache_file);
  push  publishes every local entry the shared tier lacks (first writer
        wins; damaged or wrongly signed local entries are skipped), and
        XLA's autotune files and kernel cache file.

Exit code 1 if anything could not be copied.`,
	Args:      usageArgs(cobra.ExactArgs(1)),
	ValidArgs: []string{"pull", "push"},
	RunE: func(cmd *cobra.Command, args []string) error {
		dirn := args[0]
		if dirn != "pull" && dirn != "push" {
			return usagef("sync %q: want pull or push", dirn)
		}
		opts, err := loadOptions(cmd)
		if err != nil {
			return err
		}
		if u, _ := cmd.Flags().GetString("url"); u != "" {
			opts.SharedURL = u
		}
		if opts.SharedURL == "" {
			return usagef("sync: no shared tier: set XLACACHE_SHARED_URL or --url s3://bucket/prefix")
		}
		if _, err := s3store.ParseURL(opts.SharedURL, os.Getenv); err != nil {
			return usageError{err}
		}
		// The CLI acts for the user on both sides: it writes the local
		// directory (pull) or the shared tier (push).
		opts.Role = config.RoleWriter
		c, err := cache.Open(cmd.Context(), opts, slog.Default())
		if err != nil {
			return usageError{err}
		}
		defer c.Close()
		if c.Shared() == nil {
			return fmt.Errorf("sync: the shared tier %s could not be opened (see the log line above)", opts.SharedURL)
		}
		var res syncResult
		if dirn == "pull" {
			res, err = syncPull(cmd.Context(), c, c.Options())
		} else {
			res, err = syncPush(cmd.Context(), c, c.Options())
		}
		res.print(cmd.OutOrStdout(), dirn, c.Options().Dir, opts.SharedURL)
		return err
	},
}

func init() {
	syncCmd.Flags().String("url", "", "shared tier URL (default: $XLACACHE_SHARED_URL)")
	rootCmd.AddCommand(syncCmd)
}

// syncResult counts what a sync moved.
type syncResult struct {
	Entries, Skipped, Refused int
	Raw                       s3store.MirrorStats
}

func (r syncResult) print(w io.Writer, dirn, dir, url string) {
	from, to := url, dir
	if dirn == "push" {
		from, to = dir, url
	}
	fmt.Fprintf(w, "%s %s -> %s: %d entries copied, %d already there, %d refused; XLA subcache files: %d copied, %d refused\n",
		dirn, from, to, r.Entries, r.Skipped, r.Refused, r.Raw.Pulled+r.Raw.Pushed, r.Raw.Refused)
}

// tierOfObject splits a shared object name into its tier and key when it
// is an xlacache entry ("executables/<key>", "<backend>/<sub>/<key>").
func tierOfObject(name string) (tier, key string, ok bool) {
	i := strings.LastIndexByte(name, '/')
	if i <= 0 {
		return "", "", false
	}
	tier, key = name[:i], name[i+1:]
	if cache.ValidTierName(tier) != nil {
		return "", "", false
	}
	if _, _, err := cache.ParseKey(key); err != nil {
		return "", "", false
	}
	return tier, key, true
}

func syncPull(ctx context.Context, c *cache.Cache, opts config.Options) (syncResult, error) {
	var res syncResult
	if c.Dir() == "" || !c.Writer() {
		return res, fmt.Errorf("sync pull: cache directory %s is not writable (see the log line above)", opts.Dir)
	}
	shared := c.Shared()
	names, err := shared.List(ctx, "")
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.SharedURL, err)
	}
	var errs []error
	var pulled int64
	for _, name := range names {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		tier, keyText, ok := tierOfObject(name)
		if !ok {
			continue
		}
		module, digest, _ := cache.ParseKey(keyText)
		key := cache.Key{Module: module, Digest: digest}
		t := c.Tier(tier)
		if t == nil {
			continue
		}
		if localEntryExists(t, keyText) {
			res.Skipped++
			continue
		}
		// Not through Tier.Get: a copy is not a lookup, and would count
		// a shared hit and compile time saved in the persisted stats.
		data, err := shared.Get(ctx, name)
		if err != nil {
			res.Refused++
			errs = append(errs, fmt.Errorf("%s: not copied: %w", name, err))
			continue
		}
		if err := verifyEntry(data, key.String(), opts.SigningKey); err != nil {
			res.Refused++
			errs = append(errs, fmt.Errorf("%s: not copied: %w", name, err))
			continue
		}
		dst, _ := entryPath(t.Dir(), keyText)
		created, err := installFile(opts.Dir, dst, data, kindEntry, opts.EffectiveDirMode(), opts.EffectiveFileMode())
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: writing %s: %w", name, dst, err))
			continue
		}
		if !created {
			res.Skipped++ // another process stored it meanwhile
			continue
		}
		pulled += int64(len(data))
		res.Entries++
	}
	if pulled > 0 {
		// Entries written beside the cache's own writes are not in its
		// size ledger: recount, and enforce the bound as a put would.
		if _, err := c.Prune(ctx, opts.MaxSize, false); err != nil {
			slog.Warn("xlacache: sync pull: recounting the cache directory failed; the next trim will", "dir", opts.Dir, "err", err)
		}
	}
	m := s3store.NewMirror(shared, s3store.MirrorOptions{
		Dir: opts.Dir, Autotune: opts.HasSubcache(config.SubcacheAutotune), Kernels: opts.HasSubcache(config.SubcacheKernels),
		SigningKey: opts.SigningKey, DirMode: opts.EffectiveDirMode(), FileMode: opts.EffectiveFileMode(),
	})
	raw, err := m.Pull(ctx)
	res.Raw = raw
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// localEntryExists reports whether the tier directory already has the
// entry (in its shard subdirectory).
func localEntryExists(t *cache.Tier, key string) bool {
	p, ok := entryPath(t.Dir(), key)
	if !ok {
		return false
	}
	_, err := os.Lstat(p)
	return err == nil
}

func syncPush(ctx context.Context, c *cache.Cache, opts config.Options) (syncResult, error) {
	var res syncResult
	shared := c.Shared()
	entries, err := cache.List(ctx, opts.Dir)
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.Dir, err)
	}
	remote, err := shared.List(ctx, "")
	if err != nil {
		return res, fmt.Errorf("listing %s: %w", opts.SharedURL, err)
	}
	have := make(map[string]bool, len(remote))
	for _, r := range remote {
		have[r] = true
	}
	var errs []error
	for _, e := range entries {
		if ctx.Err() != nil {
			return res, ctx.Err()
		}
		name := e.Tier + "/" + e.Key
		if have[name] {
			res.Skipped++
			continue
		}
		data, err := cache.ReadEntryFile(e.Path)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := verifyEntry(data, e.Key, opts.SigningKey); err != nil {
			res.Refused++
			errs = append(errs, fmt.Errorf("%s: not published: %w", e.Path, err))
			continue
		}
		if err := shared.PutIfAbsent(ctx, name, data); err != nil {
			if errors.Is(err, cache.ErrExist) {
				res.Skipped++
				continue
			}
			return res, errors.Join(append(errs, fmt.Errorf("publishing %s: %w", name, err))...)
		}
		res.Entries++
	}
	m := s3store.NewMirror(shared, s3store.MirrorOptions{
		Dir: opts.Dir, Autotune: true, Kernels: true,
		SigningKey: opts.SigningKey, DirMode: opts.EffectiveDirMode(), FileMode: opts.EffectiveFileMode(),
	})
	raw, err := m.Push(ctx)
	res.Raw = raw
	if err != nil {
		errs = append(errs, err)
	}
	return res, errors.Join(errs...)
}

// verifyEntry checks an entry file's bytes: checksum, signature when a key
// is set, and that it holds the key its name says.
func verifyEntry(data []byte, key string, signingKey []byte) error {
	e, err := entry.Decode(data, signingKey)
	if err != nil {
		return err
	}
	if e.Key != key {
		return fmt.Errorf("%w: holds key %q, named %q", entry.ErrCorrupt, e.Key, key)
	}
	return nil
}

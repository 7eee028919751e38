package dirsync

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// JAX's executable entries are not xlacache entries: they travel on the
// store only in `xlacache exec`'s packs (package hostfill), sealed in
// xlacache's entry format. Pull and Push move those packs too, so that
// `sync` carries a directory JAX wrote as exec does: pull fills the
// directory from every pack (what it lacks, verified), push publishes the
// directory's complete files the packs lack (a JAX entry only once its
// compressed stream decodes whole), when the directory has JAX entries.

// packOptions are exec's pack options for the directory root.
func packOptions(root *os.Root, opts config.Options) hostfill.Options {
	return hostfill.Options{Root: root, SigningKey: opts.SigningKey, DirMode: opts.EffectiveDirMode(), FileMode: opts.EffectiveFileMode(),
		MaxObjectSize: opts.EffectiveSharedMaxObjectSize(), Kernels: opts.HasSubcache(config.SubcacheKernels), Logger: slog.Default()}
}

// pullPacks fills the directory root from the store's packs.
func pullPacks(ctx context.Context, store blob.Store, root *os.Root, opts config.Options) (hostfill.FillStats, error) {
	// Started now: a fill another process of the host finished earlier
	// does not stand for this one.
	fr, err := hostfill.CoordinatedFill(ctx, store, packOptions(root, opts), time.Now(), opts.WaitTimeout)
	if err != nil {
		return fr.Stats, fmt.Errorf("filling from the packs: %w", err)
	}
	return fr.Stats, nil
}

// pushPacks publishes the directory's complete files the store's packs
// lack, when the directory holds JAX entries: they travel no other way,
// while xlacache's entries and XLA's files already went as objects of
// their own, which a directory without JAX entries need not repeat.
func pushPacks(ctx context.Context, store blob.Store, dir string, opts config.Options) (hostfill.PublishStats, error) {
	if ok, err := jaxcache.IsJAXDir(dir); err != nil || !ok {
		return hostfill.PublishStats{}, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return hostfill.PublishStats{}, fmt.Errorf("publishing packs: %w", err)
	}
	defer root.Close()
	p, err := hostfill.PublisherAfterFill(ctx, store, packOptions(root, opts), hostfill.FillResult{}, opts.WaitTimeout)
	if err != nil {
		return hostfill.PublishStats{}, fmt.Errorf("listing the packs: %w", err)
	}
	err = p.Publish(ctx, true)
	if err != nil {
		err = fmt.Errorf("publishing packs: %w", err)
	}
	return p.Stats(), err
}

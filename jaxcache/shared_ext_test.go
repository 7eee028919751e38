package jaxcache_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cachetest"
	"github.com/xlacache/xlacache/jaxcache"
)

// TestPruneShared: one bound over the whole directory, least recently used
// first across both parts, XLA's subcache file counted once.
func TestPruneShared(t *testing.T) {
	ctx := context.Background()
	dir, files := cachetest.MixedDir(t)
	o := config.Defaults()
	o.Dir, o.Role = dir, config.RoleWriter
	c, err := cache.Open(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	total := cachetest.DirTotal(t, dir)
	var sum, own int64
	for _, f := range files {
		sum += f.Size
		if f.Name[0] != 'J' {
			own += f.Size
		}
	}
	if total != sum {
		t.Fatalf("directory total %d, files sum to %d", total, sum)
	}
	// Make room by exactly the four oldest units: sub, X0, J0, X1.
	bound := total
	for _, f := range files[:4] {
		bound -= f.Size
	}
	dry, err := jaxcache.PruneShared(ctx, c, dir, bound, true, nil)
	if err != nil || cachetest.DirTotal(t, dir) != total {
		t.Fatalf("dry run changed the directory: %v", err)
	}
	if dry.Before() != total || dry.After() != bound || dry.OwnBefore != own || dry.Own.Removed != 3 {
		t.Errorf("dry run %+v: before %d after %d, want %d and %d", dry, dry.Before(), dry.After(), total, bound)
	}
	res, err := jaxcache.PruneShared(ctx, c, dir, bound, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := cachetest.DirTotal(t, dir); got != bound || res.After() != bound || res.OwnLeft != own-files[0].Size-files[1].Size-files[3].Size {
		t.Errorf("after prune %d bytes (result %+v), want %d", got, res, bound)
	}
	var gone []string
	for _, f := range files {
		if _, err := os.Lstat(f.Paths[0]); err != nil {
			gone = append(gone, f.Name)
		}
	}
	if !slices.Equal(gone, []string{"sub", "X0", "J0", "X1"}) {
		t.Errorf("removed %v; want the four least recently used", gone)
	}
	// A bound below everything empties both parts.
	if res, err = jaxcache.PruneShared(ctx, c, dir, 1, false, nil); err != nil || cachetest.DirTotal(t, dir) != 0 || res.After() != 0 {
		t.Errorf("prune to 1 byte left %d bytes: %+v %v", cachetest.DirTotal(t, dir), res, err)
	}
}

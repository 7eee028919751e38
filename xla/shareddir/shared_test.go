package shareddir_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/shareddir"
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
	dry, err := shareddir.Prune(ctx, c, dir, bound, true, nil)
	if err != nil || cachetest.DirTotal(t, dir) != total {
		t.Fatalf("dry run changed the directory: %v", err)
	}
	if dry.Before() != total || dry.After() != bound || dry.OwnBefore != own || dry.Own.Removed != 3 {
		t.Errorf("dry run %+v: before %d after %d, want %d and %d", dry, dry.Before(), dry.After(), total, bound)
	}
	res, err := shareddir.Prune(ctx, c, dir, bound, false, nil)
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
	if res, err = shareddir.Prune(ctx, c, dir, 1, false, nil); err != nil || cachetest.DirTotal(t, dir) != 0 || res.After() != 0 {
		t.Errorf("prune to 1 byte left %d bytes: %+v %v", cachetest.DirTotal(t, dir), res, err)
	}
}

// TestPruneSharedKeepsXLATempFiles: a prune of a shared directory down to
// one byte never removes XLA's young temp files, here held open for
// writing as XLA holds them while it writes: an autotune result in
// xla_gpu_per_fusion_autotune_cache_dir/tmp (deleting it before XLA renames
// it fails that compile) and a kernel cache temp file
// (xla_gpu_kernel_cache_file.tmp.*). A kernel cache temp file left by a
// crashed writer, older than the stale-temp age, is removed and counted.
func TestPruneSharedKeepsXLATempFiles(t *testing.T) {
	ctx := context.Background()
	dir, _ := cachetest.MixedDir(t)
	tmpDir := filepath.Join(dir, jaxcache.AutotuneDirName, "tmp")
	if err := os.MkdirAll(tmpDir, 0o700); err != nil {
		t.Fatal(err)
	}
	young := []string{
		filepath.Join(tmpDir, "tmp_per_fusion_cache_1234.textproto"),
		filepath.Join(dir, jaxcache.KernelFileName+".tmp.5678"),
	}
	for _, p := range young {
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		if _, err := f.Write(bytes.Repeat([]byte("x"), 4096)); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(dir, jaxcache.KernelFileName+".tmp.999")
	if err := os.WriteFile(stale, []byte("partial"), 0o600); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-3 * time.Hour)
	if err := os.Chtimes(stale, old, old); err != nil {
		t.Fatal(err)
	}
	o := config.Defaults()
	o.Dir, o.Role = dir, config.RoleWriter
	c, err := cache.Open(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	res, err := shareddir.Prune(ctx, c, dir, 1, false, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range young {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("young temp file removed: %v", err)
		}
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("stale kernel cache temp file kept: %v", err)
	}
	if res.Own.StaleTemps < 1 {
		t.Errorf("stale temp not counted: %+v", res)
	}
}

package layout_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// walkTree is a cache directory holding a file of every kind, and files
// the walk must not reach.
func walkTree(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	key := "main-" + bucketDigest
	for _, rel := range []string{
		"executables/94/" + key,
		"executables/94/.tmp-1",
		"executables/95/" + key, // wrong shard: foreign
		"cpu/autotune/94/" + key,
		"cpu/kernels/94/" + key,
		"quarantine/executables_" + key + ".1",
		"xla_gpu_per_fusion_autotune_cache_dir/QUJD.textproto",
		"xla_gpu_per_fusion_autotune_cache_dir/tmp/tmp_per_fusion_cache_1.textproto",
		"xla_gpu_kernel_cache_file",
		"xla_gpu_kernel_cache_file.tmp.1",
		"jit_f-" + bucketDigest + "-cache",
		"jit_f-" + bucketDigest + "-atime",
		".lockfile",
		".tmp-2",
		// Never reached: state, leases, a user's directory, a backend
		// directory holding something besides its tiers.
		".xlacache/ledger",
		"locks/ab.lease",
		"notes/executables/94/" + key,
		"mixed/autotune/94/" + key,
		"mixed/other/x",
	} {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "executables/94/link-"+bucketDigest)); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestWalk: the one walk reaches exactly the files of owned directories
// and the top level, in lexical order, each with Classify's class, and
// reports a symbolic link without following it.
func TestWalk(t *testing.T) {
	dir := walkTree(t)
	key := "main-" + bucketDigest
	want := []struct {
		rel  string
		kind layout.Kind
	}{
		{".lockfile", layout.Foreign},
		{".tmp-2", layout.Temp},
		{"cpu/autotune/94/" + key, layout.Entry},
		{"cpu/kernels/94/" + key, layout.Entry},
		{"executables/94/.tmp-1", layout.Temp},
		{"executables/94/link-" + bucketDigest, layout.Entry},
		{"executables/94/" + key, layout.Entry},
		{"executables/95/" + key, layout.Foreign},
		{"jit_f-" + bucketDigest + "-atime", layout.Foreign},
		{"jit_f-" + bucketDigest + "-cache", layout.JAXEntry},
		{"quarantine/executables_" + key + ".1", layout.Quarantined},
		{"xla_gpu_kernel_cache_file", layout.XLAKernel},
		{"xla_gpu_kernel_cache_file.tmp.1", layout.Temp},
		{"xla_gpu_per_fusion_autotune_cache_dir/QUJD.textproto", layout.XLAAutotune},
		{"xla_gpu_per_fusion_autotune_cache_dir/tmp/tmp_per_fusion_cache_1.textproto", layout.Temp},
	}
	for _, fsys := range []fs.FS{os.DirFS(dir), openRoot(t, dir).FS()} {
		var got []layout.File
		err := layout.Walk(context.Background(), fsys, func(f layout.File, err error) error {
			if err != nil {
				return err
			}
			got = append(got, f)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != len(want) {
			t.Errorf("walked %d files, want %d: %v", len(got), len(want), rels(got))
			continue
		}
		for i, f := range got {
			if f.Rel != want[i].rel || f.Class.Kind != want[i].kind {
				t.Errorf("file %d: %q %v; want %q %v", i, f.Rel, f.Class.Kind, want[i].rel, want[i].kind)
			}
			if f.Class != layout.Classify(f.Rel) {
				t.Errorf("%q: class %+v, Classify says %+v", f.Rel, f.Class, layout.Classify(f.Rel))
			}
			if isLink := f.Entry.Type()&fs.ModeSymlink != 0; isLink != strings.Contains(f.Rel, "link-") {
				t.Errorf("%q: type %v", f.Rel, f.Entry.Type())
			}
		}
	}
}

// TestWalkUnder: a walk confined to one top-level directory sees only its
// files; a missing one reaches fn as fs.ErrNotExist, an unowned one is not
// walked.
func TestWalkUnder(t *testing.T) {
	dir := walkTree(t)
	fsys := os.DirFS(dir)
	var got []layout.File
	collect := func(f layout.File, err error) error {
		if err != nil {
			return err
		}
		got = append(got, f)
		return nil
	}
	if err := layout.WalkUnder(context.Background(), fsys, layout.XLAAutotuneDir, collect); err != nil {
		t.Fatal(err)
	}
	if want := []string{"xla_gpu_per_fusion_autotune_cache_dir/QUJD.textproto", "xla_gpu_per_fusion_autotune_cache_dir/tmp/tmp_per_fusion_cache_1.textproto"}; !slices.Equal(rels(got), want) {
		t.Errorf("walked %v, want %v", rels(got), want)
	}
	got = nil
	for _, top := range []string{"mixed", "notes", ".xlacache", "locks"} {
		if err := layout.WalkUnder(context.Background(), fsys, top, collect); err != nil || len(got) != 0 {
			t.Errorf("WalkUnder(%q) = %v, walked %v", top, err, rels(got))
		}
	}
	err := layout.WalkUnder(context.Background(), os.DirFS(t.TempDir()), layout.XLAAutotuneDir, collect)
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("missing directory: %v", err)
	}
}

// TestWalkUnderPath: a walk of any path under the directory reaches
// exactly the files Walk reaches under it: a file alone, a directory's
// files, nothing under an unowned directory or through a link, and a
// missing path as fs.ErrNotExist.
func TestWalkUnderPath(t *testing.T) {
	dir := walkTree(t)
	if err := os.Symlink("executables", filepath.Join(dir, "linked")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../executables/94", filepath.Join(dir, "cpu", "autotune", "94", "sub")); err != nil {
		t.Fatal(err)
	}
	key := "main-" + bucketDigest
	for _, fsys := range []fs.FS{os.DirFS(dir), openRoot(t, dir).FS()} {
		var whole []string
		if err := layout.Walk(context.Background(), fsys, func(f layout.File, err error) error {
			whole = append(whole, f.Rel)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		for _, tc := range []struct {
			top  string
			want []string
		}{
			{"executables/94/" + key, []string{"executables/94/" + key}},
			{"executables/94", []string{"executables/94/.tmp-1", "executables/94/link-" + bucketDigest, "executables/94/" + key}},
			{"cpu/autotune", []string{"cpu/autotune/94/" + key, "cpu/autotune/94/sub"}},
			{"jit_f-" + bucketDigest + "-cache", []string{"jit_f-" + bucketDigest + "-cache"}},
			{"linked", []string{"linked"}}, // a link, reported as Walk reports it
			{"linked/94", nil},
			{"cpu/autotune/94/sub/" + key, nil},
			{"mixed/autotune/94/" + key, nil},
			{"notes/executables/94", nil},
			{".xlacache/ledger", nil},
			{"locks", nil},
		} {
			var got []string
			err := layout.WalkUnder(context.Background(), fsys, tc.top, func(f layout.File, err error) error {
				if err != nil {
					return err
				}
				if f.Class != layout.Classify(f.Rel) {
					t.Errorf("%q: class %+v", f.Rel, f.Class)
				}
				got = append(got, f.Rel)
				return nil
			})
			if err != nil || !slices.Equal(got, tc.want) {
				t.Errorf("WalkUnder(%q) = %v, walked %q; want %q", tc.top, err, got, tc.want)
			}
			for _, rel := range got {
				if rel != "linked" && !slices.Contains(whole, rel) {
					t.Errorf("WalkUnder(%q) reached %q, which Walk does not", tc.top, rel)
				}
			}
		}
		for _, top := range []string{"executables/96", "executables/94/gone", "cpu/gone/x"} {
			err := layout.WalkUnder(context.Background(), fsys, top, func(f layout.File, err error) error { return err })
			if !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("WalkUnder(%q): %v, want fs.ErrNotExist", top, err)
			}
		}
	}
}

// TestWalkDirs: the directories reported are those the walk descends
// into, and fs.SkipDir keeps it out of one.
func TestWalkDirs(t *testing.T) {
	dir := walkTree(t)
	var got []string
	err := layout.WalkDirs(context.Background(), os.DirFS(dir), ".", func(rel string, err error) error {
		if err != nil {
			return err
		}
		got = append(got, rel)
		if rel == layout.QuarantineDir {
			return fs.SkipDir
		}
		return nil
	})
	want := []string{".", "cpu", "cpu/autotune", "cpu/autotune/94", "cpu/kernels", "cpu/kernels/94",
		"executables", "executables/94", "executables/95", "quarantine",
		"xla_gpu_per_fusion_autotune_cache_dir", "xla_gpu_per_fusion_autotune_cache_dir/tmp"}
	if err != nil || !slices.Equal(got, want) {
		t.Errorf("WalkDirs = %v, %q; want %q", err, got, want)
	}
	got = nil
	for _, top := range []string{"cpu/autotune", "mixed", "notes/executables", "executables/94/.tmp-1"} {
		if err := layout.WalkDirs(context.Background(), os.DirFS(dir), top, func(rel string, err error) error {
			got = append(got, rel)
			return err
		}); err != nil {
			t.Errorf("WalkDirs(%q): %v", top, err)
		}
	}
	if want := []string{"cpu/autotune", "cpu/autotune/94"}; !slices.Equal(got, want) {
		t.Errorf("WalkDirs of paths: %q; want %q", got, want)
	}
}

// TestWalkStops: a cancelled context ends the walk with its error, and
// fn's error ends it with that error.
func TestWalkStops(t *testing.T) {
	dir := walkTree(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	calls := 0
	count := func(layout.File, error) error { calls++; return nil }
	if err := layout.Walk(ctx, os.DirFS(dir), count); !errors.Is(err, context.Canceled) || calls != 0 {
		t.Errorf("cancelled walk: %v after %d files", err, calls)
	}
	stop := errors.New("stop")
	calls = 0
	err := layout.Walk(context.Background(), os.DirFS(dir), func(layout.File, error) error { calls++; return stop })
	if !errors.Is(err, stop) || calls != 1 {
		t.Errorf("stopped walk: %v after %d files", err, calls)
	}
}

// TestKindsNamed: every kind of the classification has a name.
func TestKindsNamed(t *testing.T) {
	seen := map[string]bool{}
	for k := layout.Foreign; k <= layout.JAXEntry; k++ {
		name := k.String()
		if strings.HasPrefix(name, "kind(") || seen[name] {
			t.Errorf("kind %d named %q", int(k), name)
		}
		seen[name] = true
	}
}

// FuzzJAXEntry holds the classification of a JAX entry to
// xla/jaxcache.SplitKey, the rule JAX's directory format gives it.
func FuzzJAXEntry(f *testing.F) {
	for _, s := range []string{"jit_f-" + bucketDigest, "-" + bucketDigest, "a-" + bucketDigest[1:], "a\n-" + bucketDigest, "a\xff-" + bucketDigest, "m-" + strings.ToUpper(bucketDigest), ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if strings.ContainsAny(key, "/") || strings.HasPrefix(key, layout.TempPrefix) || strings.HasPrefix(key, layout.XLAKernelFile) {
			return // not a top-level file name, or a temporary's first
		}
		_, _, want := jaxcache.SplitKey(key)
		if got := layout.Classify(key+layout.JAXCacheSuffix).Kind == layout.JAXEntry; got != want {
			t.Fatalf("%q: classified a JAX entry %v, SplitKey says %v", key, got, want)
		}
	})
}

func openRoot(t *testing.T, dir string) *os.Root {
	t.Helper()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

func rels(files []layout.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Rel)
	}
	return out
}

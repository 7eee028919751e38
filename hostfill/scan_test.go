package hostfill

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
)

// scanDigest ends the keys of the scan tests' entries; its first two
// digits are their shard.
const scanDigest = "94" + "00000000000000000000000000000000000000000000000000000000000001"

// trickyTree writes a cache directory whose contents the scans could
// disagree about, and returns the files hostfill's scan must pack, by
// kind.
func trickyTree(t *testing.T, h hostDir) (entries, autotune, jax []string) {
	t.Helper()
	key := "main-" + scanDigest
	entries = []string{
		"executables/94/" + key,
		"gpu/kernels/94/" + key,
		// A backend named like XLA's tmp directory is a backend.
		"tmp/autotune/94/" + key,
	}
	autotune = []string{autotuneName(1)}
	jax = []string{jaxKey("jit_f", 1) + "-cache"}
	others := []string{
		// Not entries: a temporary, a wrong shard, a nested path.
		"executables/94/.tmp-1",
		"executables/95/" + key,
		"executables/94/sub/" + key,
		// A backend directory with a stray file is not the cache's: no
		// scan looks inside it.
		"cpu/autotune/94/" + key,
		"cpu/stray",
		// A user's directory, the state and the leases.
		"notes/executables/94/" + key,
		".xlacache/ledger",
		"locks/ab.lease",
		// XLA's temporaries and kernel cache file, JAX's other files,
		// the quarantine.
		"xla_gpu_per_fusion_autotune_cache_dir/tmp/tmp_per_fusion_cache_1.textproto",
		"xla_gpu_per_fusion_autotune_cache_dir/tmp/" + filepath.Base(autotuneName(2)),
		"xla_gpu_per_fusion_autotune_cache_dir/" + layout.TempPrefix + "3",
		"xla_gpu_kernel_cache_file",
		"xla_gpu_kernel_cache_file.tmp.1",
		jaxKey("jit_f", 1) + "-atime",
		".lockfile",
		".tmp-2",
		"quarantine/executables_" + key + ".1",
	}
	for _, rel := range slices.Concat(entries, autotune, jax, others) {
		h.write(t, rel, []byte("x"))
	}
	// A link where an entry would be: reported by the walk, packed by
	// neither scan.
	if err := os.Symlink("/etc/passwd", filepath.Join(h.path, "executables/94/link-"+scanDigest)); err != nil {
		t.Fatal(err)
	}
	return entries, autotune, jax
}

// TestScanAgreesWithTrim: on one directory with tricky contents,
// hostfill's scan packs exactly the xlacache entries and XLA autotune
// results that the trim scan (cache.Files) counts, the JAX entries the
// one walk classifies as such (which the trim never counts), and nothing
// else; a scan of the paths events name finds each of those files and no
// other.
func TestScanAgreesWithTrim(t *testing.T) {
	ctx := context.Background()
	h := newHost(t, nil)
	wantEntries, wantAutotune, wantJAX := trickyTree(t, h)

	local, err := scanLocal(ctx, h.o.Root)
	if err != nil {
		t.Fatal(err)
	}
	packed := map[fileKind][]string{}
	for _, f := range local {
		packed[f.kind] = append(packed[f.kind], f.rel)
	}
	counted := map[layout.Kind][]string{}
	files, err := cache.Files(ctx, h.path)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		k := layout.Classify(f.Rel).Kind
		counted[k] = append(counted[k], f.Rel)
	}
	var walkedJAX []string
	if err := layout.Walk(ctx, h.o.Root.FS(), func(f layout.File, err error) error {
		if err == nil && f.Class.Kind == layout.JAXEntry {
			walkedJAX = append(walkedJAX, f.Rel)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		what             string
		hostfill, others []string
		want             []string
	}{
		{"entries (trim)", packed[fileEntry], counted[layout.Entry], wantEntries},
		{"autotune results (trim)", packed[fileAutotune], counted[layout.XLAAutotune], wantAutotune},
		{"JAX entries (walk)", packed[fileJAX], walkedJAX, wantJAX},
	} {
		for _, s := range [][]string{c.hostfill, c.others, c.want} {
			slices.Sort(s)
		}
		if !slices.Equal(c.hostfill, c.want) || !slices.Equal(c.others, c.want) {
			t.Errorf("%s: hostfill packs %q, the other scan sees %q; want %q", c.what, c.hostfill, c.others, c.want)
		}
	}
	if len(counted[layout.JAXEntry]) != 0 {
		t.Errorf("trim counts JAX entries %q", counted[layout.JAXEntry])
	}
	if len(packed[fileNone]) != 0 {
		t.Errorf("hostfill lists unpacked files %q", packed[fileNone])
	}

	// The paths file events name: every file and directory of the tree.
	var named []string
	if err := filepath.WalkDir(h.path, func(p string, _ os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(h.path, p)
		named = append(named, filepath.ToSlash(rel))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(wantEntries, wantAutotune, wantJAX)
	var found []string
	for _, rel := range named {
		got, err := scanPaths(ctx, h.o.Root, []string{rel})
		if err != nil {
			t.Fatalf("scanPaths(%q): %v", rel, err)
		}
		for _, f := range got {
			if !slices.Contains(all, f.rel) {
				t.Errorf("scanPaths(%q) lists %q, which the whole scan does not", rel, f.rel)
			}
			if f.rel == rel {
				found = append(found, rel)
			}
		}
	}
	slices.Sort(found)
	slices.Sort(all)
	if !slices.Equal(found, all) {
		t.Errorf("files found when an event names them: %q; want %q", found, all)
	}
}

// TestWatchBackendNamedTmp: a backend's tier directory is watched
// whatever the backend is called, "tmp" (the name of XLA's autotune
// temporaries' directory) included, and one made after the watcher
// started is watched as its tiers appear: an entry written there is
// published by file events alone (scans an hour apart).
func TestWatchBackendNamedTmp(t *testing.T) {
	store := memblob.New(memblob.Options{})
	h := newHost(t, nil)
	h.write(t, autotuneName(0), []byte("results { first: 1 }\n"))
	defer startWatch(newPublisher(store, h.o, nil), WatchOptions{Dir: h.path, Poll: time.Hour, Settle: 10 * time.Millisecond, BatchDelay: 10 * time.Millisecond})()
	waitPublished(t, store, autotuneName(0)) // the watches are set

	key := "main-" + scanDigest
	data, err := entry.Encode(entry.Header{Key: key, Created: time.Now()}, []byte("tuned"), nil)
	if err != nil {
		t.Fatal(err)
	}
	// The backend's directory first, empty, then its tier: each step
	// is an event of its own.
	for _, dir := range []string{"tmp", "tmp/autotune", "tmp/autotune/94"} {
		if err := os.Mkdir(filepath.Join(h.path, dir), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	rel := "tmp/autotune/94/" + key
	h.write(t, rel, data)
	waitPublished(t, store, rel)
}

// A pack member is installed only where the scans look: a member named
// for a backend subcache other than autotune and kernels (or for a
// directory the walk does not own) is refused when unsealed, instead of
// being written where no scan, trim or lookup ever finds it.
func TestUnsealRefusesUnscannedNames(t *testing.T) {
	const key = "m-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for _, tc := range []struct {
		rel  string
		want bool
	}{
		{"executables/01/" + key, true},
		{"cpu/autotune/01/" + key, true},
		{"cpu/kernels/01/" + key, true},
		{"notes/executables/01/" + key, false},
		{"cpu/other/01/" + key, false},
	} {
		if got := classify(tc.rel) == fileEntry; got != tc.want {
			t.Errorf("classify(%q) is an entry: %v, want %v", tc.rel, got, tc.want)
		}
	}
}

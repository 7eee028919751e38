package layout

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const digest = "94ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"

func TestShard(t *testing.T) {
	tests := []struct {
		key   string
		shard string
		ok    bool
	}{
		{"main-" + digest, "94", true},
		{"jit_f-" + digest, "94", true},
		{"-" + digest, "94", true},
		{digest, "", false},                         // no separator
		{"m-" + strings.ToUpper(digest), "", false}, // upper-case hex
		{"m-" + digest[:63], "", false},             // short digest
		{"m-" + digest[:63] + "g", "", false},       // not hex
		{"m-" + digest + "0", "", false},            // separator misplaced
		{"", "", false},
	}
	for _, tc := range tests {
		got, ok := Shard(tc.key)
		if got != tc.shard || ok != tc.ok {
			t.Errorf("Shard(%q) = %q, %v; want %q, %v", tc.key, got, ok, tc.shard, tc.ok)
		}
	}
}

func TestPaths(t *testing.T) {
	d := Dir("/c")
	key := "main-" + digest
	checks := map[string]string{
		d.Entry("executables", key):  "/c/executables/94/" + key,
		d.Entry("cpu/kernels", key):  "/c/cpu/kernels/94/" + key,
		d.Ledger():                   "/c/.xlacache/ledger",
		d.Stats():                    "/c/.xlacache/stats.json",
		d.TrimLock():                 "/c/.xlacache/trim.lock",
		d.Quarantine():               "/c/quarantine",
		d.XLAAutotune():              "/c/xla_gpu_per_fusion_autotune_cache_dir",
		d.XLAAutotuneTmp():           "/c/xla_gpu_per_fusion_autotune_cache_dir/tmp",
		d.XLAKernel():                "/c/xla_gpu_kernel_cache_file",
		filepath.Dir(d.Lease("any")): "/c/locks",
	}
	for got, want := range checks {
		if got != filepath.FromSlash(want) {
			t.Errorf("got %q, want %q", got, want)
		}
	}
	if ObjectName("cpu/autotune", key) != "cpu/autotune/"+key {
		t.Errorf("ObjectName = %q", ObjectName("cpu/autotune", key))
	}
	// Hostile names cannot leave the locks directory: they are hashed.
	if p := d.Lease("../../etc/passwd"); filepath.Dir(p) != filepath.FromSlash("/c/locks") || !strings.HasSuffix(p, LeaseSuffix) {
		t.Errorf("Lease of a hostile name = %q", p)
	}
	if rel, ok := d.Rel("/c/executables/94/x"); !ok || rel != "executables/94/x" {
		t.Errorf("Rel inside = %q, %v", rel, ok)
	}
	if _, ok := d.Rel("/other/x"); ok {
		t.Error("Rel outside reported inside")
	}
	if _, ok := d.Rel("/c/../c2/x"); ok {
		t.Error("Rel of a sibling reported inside")
	}
}

func TestClassify(t *testing.T) {
	key := "main-" + digest
	tests := []struct {
		rel  string
		kind Kind
		area string
	}{
		{"executables/94/" + key, Entry, "executables"},
		{"cpu/autotune/94/" + key, Entry, "cpu/autotune"},
		{"cpu/kernels/94/" + key, Entry, "cpu/kernels"},
		{"executables/95/" + key, Foreign, ""},           // wrong shard
		{"executables/" + key, Foreign, ""},              // no shard
		{"executables/94/.tmp-123", Temp, "executables"}, // writer's temp
		{"cpu/kernels/94/.tmp-1", Temp, "cpu/kernels"},
		{".tmp-export-1", Temp, ""},
		{"quarantine/executables_" + key + ".x1", Quarantined, "quarantine"},
		{".xlacache/ledger", State, ""},
		{"locks/abc.lease", Lease, ""},
		{"xla_gpu_per_fusion_autotune_cache_dir/AbC=.textproto", XLAAutotune, XLAAutotuneDir},
		{"xla_gpu_per_fusion_autotune_cache_dir/tmp/tmp_per_fusion_cache_1.textproto", Temp, XLAAutotuneDir},
		{"xla_gpu_kernel_cache_file", XLAKernel, XLAKernelFile},
		{"xla_gpu_kernel_cache_file.tmp.12345", Temp, XLAKernelFile},
		{"Main/autotune/94/" + key, Foreign, ""}, // upper case is not a tier
		{"quarantine/autotune/94/" + key, Quarantined, "quarantine"},
		{"jit_f-" + digest + "-cache", JAXEntry, ""}, // JAX's entries: classified, never counted
		{"a-b\x01-" + digest + "-cache", JAXEntry, ""},
		{"-" + digest + "-cache", Foreign, ""},      // JAX's key has a module
		{"a\nb-" + digest + "-cache", Foreign, ""},  // nor a newline in it
		{"jit_f-" + digest + "-atime", Foreign, ""}, // JAX's own bookkeeping
		{".lockfile", Foreign, ""},
		{"executables/94/jit_f-" + digest + "-cache", Foreign, ""}, // only at the top
		{".tmp-1-" + digest + "-cache", Temp, ""},                  // a temporary first
		{"notes.txt", Foreign, ""},
	}
	for _, tc := range tests {
		c := Classify(tc.rel)
		if c.Kind != tc.kind || c.Area != tc.area {
			t.Errorf("Classify(%q) = %v %q; want %v %q", tc.rel, c.Kind, c.Area, tc.kind, tc.area)
		}
		if c.Kind == Entry && (c.Key != key || c.Tier != c.Area) {
			t.Errorf("Classify(%q) = tier %q key %q", tc.rel, c.Tier, c.Key)
		}
	}
}

// TestXLAOwned: the files XLA writes itself (which deletions must guard
// with internal/inuse) and nothing of xlacache's.
func TestXLAOwned(t *testing.T) {
	for rel, want := range map[string]bool{
		"xla_gpu_kernel_cache_file":                                                  true,
		"xla_gpu_kernel_cache_file.tmp.77":                                           true,
		"xla_gpu_per_fusion_autotune_cache_dir/AbC=.textproto":                       true,
		"xla_gpu_per_fusion_autotune_cache_dir/tmp/tmp_per_fusion_cache_1.textproto": true,
		"xla_gpu_per_fusion_autotune_cache_dir/.tmp-5":                               false, // xlacache's own atomic write (sync pull)
		"executables/94/main-" + digest:                                              false,
		"executables/94/.tmp-1":                                                      false,
		".tmp-export-1":                                                              false,
		"quarantine/x":                                                               false,
	} {
		if got := XLAOwned(rel, Classify(rel)); got != want {
			t.Errorf("XLAOwned(%q) = %v, want %v", rel, got, want)
		}
	}
	if UsedMarker("executables/k") != "used/executables/k" {
		t.Errorf("UsedMarker = %q", UsedMarker("executables/k"))
	}
}

func TestValidTierName(t *testing.T) {
	for _, ok := range []string{"executables", "cpu/autotune", "xla/kernels", "my_backend2/x"} {
		if err := ValidTierName(ok); err != nil {
			t.Errorf("ValidTierName(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "cpu", "CPU/autotune", "a/b/c", "../x", "quarantine/x", "locks/autotune", "executables/x", "xla_gpu_kernel_cache_file/x", "a//b", ".x/y", "used/kernels", "leases/executables", "hostfill/v1"} {
		if err := ValidTierName(bad); err == nil {
			t.Errorf("ValidTierName(%q) accepted", bad)
		}
	}
}

func TestValidRel(t *testing.T) {
	for _, ok := range []string{"a", "executables/94/k", "xla_gpu_kernel_cache_file.parts/abc"} {
		if err := ValidRel(ok); err != nil {
			t.Errorf("ValidRel(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", "/abs", "a/", "a//b", "./a", "a/..", "..", "a\\b", "a\x00b", "a\nb", strings.Repeat("a", 901)} {
		if err := ValidRel(bad); err == nil {
			t.Errorf("ValidRel(%q) accepted", bad)
		}
	}
}

func TestOwnedTopDir(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string) {
		if err := os.MkdirAll(filepath.Join(root, rel), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	mk("cpu/autotune")
	mk("cpu/kernels")
	mk("cpu/aliases")
	mk("onlyaliases/aliases")
	mk("mixed/autotune")
	mk("mixed/other")
	mk("empty")
	for name, want := range map[string]bool{
		"executables": true, "quarantine": true, XLAAutotuneDir: true,
		".xlacache": false, "locks": false,
		"cpu": true, "onlyaliases": true, "mixed": false, "empty": false, "missing": false, "Bad Name": false,
	} {
		if got := OwnedTopDir(name, filepath.Join(root, name)); got != want {
			t.Errorf("OwnedTopDir(%q) = %v, want %v", name, got, want)
		}
	}
}

// FuzzClassify checks that classification never panics and that whatever
// it calls an entry maps back to the same path.
func FuzzClassify(f *testing.F) {
	for _, s := range []string{"executables/94/main-" + digest, "cpu/kernels/94/x-" + digest, "quarantine/x", ".xlacache/ledger", "a/b/c/d/e", "", "/", "xla_gpu_per_fusion_autotune_cache_dir/tmp/x"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rel string) {
		c := Classify(rel)
		if c.Kind == Entry && EntryRel(c.Tier, c.Key) != rel {
			t.Fatalf("Classify(%q) = entry %q/%q, which lives at %q", rel, c.Tier, c.Key, EntryRel(c.Tier, c.Key))
		}
		_ = c.Kind.String()
	})
}

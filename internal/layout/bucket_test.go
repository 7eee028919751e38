package layout_test

import (
	"crypto/sha256"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/layout"
)

const bucketDigest = "94ab0123456789abcdef0123456789abcdef0123456789abcdef0123456789ab"

// TestBucketNames pins every object name format with literal strings:
// buckets written by earlier versions must keep working, so a change here
// is a format change, never a refactoring.
func TestBucketNames(t *testing.T) {
	key := "main-" + bucketDigest
	pack, index := layout.PackObjects("0123456789abcdef0123456789abcdef")
	probe, missing := layout.ProbeObject("tok")
	sum := sha256.Sum256([]byte("kernels"))
	tests := []struct{ got, want string }{
		{layout.ObjectName("executables", key), "executables/main-" + bucketDigest},
		{layout.ObjectName("cpu/autotune", key), "cpu/autotune/main-" + bucketDigest},
		{layout.LeaseObject("cpu/autotune/" + key), "lease.cpu.autotune.main-" + bucketDigest},
		{probe, "lease-probe.tok"},
		{missing, "lease-probe.tok-missing"},
		{layout.UsedMarker("executables/" + key), "used/executables/main-" + bucketDigest},
		{pack, "hostfill/v1/0123456789abcdef0123456789abcdef.pack"},
		{index, "hostfill/v1/0123456789abcdef0123456789abcdef.index"},
		{layout.XLAAutotuneObject("QUJD.textproto"), "xla_gpu_per_fusion_autotune_cache_dir/QUJD.textproto"},
		{layout.XLAKernelPartObject(sum), "xla_gpu_kernel_cache_file.parts/e98f56f907c45b8a6621bdf148bdb5afdd9cba932fd4d9898890733e094d9f45"},
		{layout.XLAKernelParts, "xla_gpu_kernel_cache_file.parts"},
		{layout.UsedPrefix, "used/"},
		{layout.LeasePrefix, "lease."},
		{layout.ProbePrefix, "lease-probe."},
		{layout.OldLeasePrefix, "leases/"},
		{layout.PackPrefix, "hostfill/v1/"},
		{layout.XLAAutotunePrefix, "xla_gpu_per_fusion_autotune_cache_dir/"},
		{layout.XLAKernelPartsPrefix, "xla_gpu_kernel_cache_file.parts/"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("got %q, want %q", tc.got, tc.want)
		}
	}
}

// TestBucketClassifiers: each name-classifying function takes its own
// namespace's names and no other's.
func TestBucketClassifiers(t *testing.T) {
	key := "main-" + bucketDigest
	id := "0123456789abcdef0123456789abcdef"
	names := []string{
		"executables/" + key,
		"cpu/kernels/" + key,
		"used/executables/" + key,
		"used/cpu/kernels/" + key,
		"lease.executables." + key,
		"lease-probe.tok",
		"hostfill/v1/" + id + ".pack",
		"hostfill/v1/" + id + ".index",
		"xla_gpu_per_fusion_autotune_cache_dir/QUJD.textproto",
		"xla_gpu_kernel_cache_file.parts/" + bucketDigest,
		"leases/executables/" + key,
		// Near misses.
		"executables/main-" + strings.ToUpper(bucketDigest),
		"executables/.main-" + bucketDigest,
		"used/used/executables/" + key,
		"hostfill/v1/" + id[1:] + ".pack",
		"hostfill/v2/" + id + ".pack",
		"hostfill/v1/" + id + ".pack.tmp",
		"hostfill/v1/" + strings.ToUpper(id) + ".index",
		"cpu/" + key,
		"",
	}
	type verdict struct {
		entry, marker, lease, pack, index, autotune bool
		tier, key, id                               string
	}
	want := map[string]verdict{
		"executables/" + key:                                   {entry: true, tier: "executables", key: key},
		"cpu/kernels/" + key:                                   {entry: true, tier: "cpu/kernels", key: key},
		"used/executables/" + key:                              {marker: true},
		"used/cpu/kernels/" + key:                              {marker: true},
		"lease.executables." + key:                             {lease: true},
		"lease-probe.tok":                                      {lease: true},
		"leases/executables/" + key:                            {lease: true},
		"hostfill/v1/" + id + ".pack":                          {pack: true, id: id},
		"hostfill/v1/" + id + ".index":                         {pack: true, index: true, id: id},
		"xla_gpu_per_fusion_autotune_cache_dir/QUJD.textproto": {autotune: true},
	}
	for _, name := range names {
		var got verdict
		got.tier, got.key, got.entry = layout.ParseEntryObject(name)
		if got.entry != layout.IsEntryObject(name) {
			t.Errorf("IsEntryObject(%q) disagrees with ParseEntryObject", name)
		}
		_, got.marker = layout.MarkedObject(name)
		got.lease = layout.IsLeaseObject(name)
		got.id, got.index, got.pack = layout.ParsePackObject(name)
		_, got.autotune = layout.XLAAutotuneBase(name)
		if got != want[name] {
			t.Errorf("%q: got %+v, want %+v", name, got, want[name])
		}
	}
	if obj, ok := layout.MarkedObject("used/cpu/kernels/" + key); !ok || obj != "cpu/kernels/"+key {
		t.Errorf("MarkedObject = %q, %v", obj, ok)
	}
}

// TestNoNameIsADirectory: on a filesystem-backed S3 server an object "a/b"
// cannot sit beside "a/b/c"; no name of one namespace is a directory of
// another's.
func TestNoNameIsADirectory(t *testing.T) {
	key := "main-" + bucketDigest
	probe, missing := layout.ProbeObject("tok")
	pack, index := layout.PackObjects("0123456789abcdef0123456789abcdef")
	names := []string{
		layout.ObjectName("executables", key),
		layout.ObjectName("cpu/autotune", key),
		layout.LeaseObject(layout.ObjectName("cpu/autotune", key)),
		probe, missing,
		layout.UsedMarker(layout.ObjectName("executables", key)),
		layout.UsedMarker(layout.ObjectName("cpu/autotune", key)),
		pack, index,
		layout.XLAAutotuneObject("QUJD.textproto"),
		layout.XLAKernelPartObject(sha256.Sum256(nil)),
	}
	for _, a := range names {
		for _, b := range names {
			if strings.HasPrefix(b, a+"/") {
				t.Errorf("%q is a directory of %q", a, b)
			}
		}
	}
	// The namespaces' first segments cannot be a tier's backend.
	for _, top := range []string{"used", "leases", "hostfill", "xla_gpu_per_fusion_autotune_cache_dir"} {
		if layout.ValidTierName(top+"/autotune") == nil {
			t.Errorf("%q may be taken as a backend name", top)
		}
	}
}

// FuzzValidKey holds layout.ValidKey to cache.ParseKey's rule.
func FuzzValidKey(f *testing.F) {
	for _, s := range []string{"main-" + bucketDigest, "-" + bucketDigest, ".m-" + bucketDigest, "m.-" + bucketDigest,
		"a-b-" + bucketDigest, "m/x-" + bucketDigest, strings.Repeat("x", 120) + "-" + bucketDigest,
		strings.Repeat("x", 121) + "-" + bucketDigest, "m-" + strings.ToUpper(bucketDigest), "m-" + bucketDigest[1:], ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		_, _, err := cache.ParseKey(key)
		if got := layout.ValidKey(key); got != (err == nil) {
			t.Fatalf("ValidKey(%q) = %v; cache.ParseKey: %v", key, got, err)
		}
	})
}

// FuzzIsEntryObject: a name taken for an entry is a valid object name,
// never a usage marker, lease or pack, and its marker is never taken for
// an entry.
func FuzzIsEntryObject(f *testing.F) {
	key := "f-" + bucketDigest
	for _, s := range []string{"executables/" + key, "cpu/kernels/" + key, layout.UsedMarker("executables/" + key),
		"leases/executables/" + key, "hostfill/v1/x.pack", "xla_gpu_kernel_cache_file.parts/ab", "executables/../x", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if !layout.IsEntryObject(name) {
			return
		}
		if err := layout.ValidRel(name); err != nil {
			t.Fatalf("%q taken for an entry: %v", name, err)
		}
		for _, p := range []string{layout.UsedPrefix, layout.OldLeasePrefix, layout.LeasePrefix, layout.PackPrefix, "hostfill/"} {
			if strings.HasPrefix(name, p) {
				t.Fatalf("%q taken for an entry", name)
			}
		}
		if layout.IsEntryObject(layout.UsedMarker(name)) {
			t.Fatalf("the marker of %q taken for an entry", name)
		}
	})
}

package xla

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
)

func TestParseVersion(t *testing.T) {
	tests := []struct {
		in   string
		want Version
		bad  bool
	}{
		{"0.4.36", Version{0, 4, 36}, false},
		{"v0.5.1", Version{0, 5, 1}, false},
		{"jaxlib-0.4.35", Version{0, 4, 35}, false},
		{"jaxlib==0.7.2", Version{0, 7, 2}, false},
		{"0.5", Version{0, 5, 0}, false},
		{"0.4.36.dev20241201", Version{0, 4, 36}, false},
		{"0.6.0+cuda12", Version{0, 6, 0}, false},
		{"0.4.36rc1", Version{0, 4, 0}, false},
		{"latest", Version{}, true},
		{"1", Version{}, true},
		{"a.b", Version{}, true},
	}
	for _, tc := range tests {
		got, err := ParseVersion(tc.in)
		if (err != nil) != tc.bad || (!tc.bad && got != tc.want) {
			t.Errorf("ParseVersion(%q) = %v, %v; want %v, bad=%v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestGatingAgainstTable checks the gating logic against the committed
// table: every flag is off one release before its first release and on
// from it.
func TestGatingAgainstTable(t *testing.T) {
	for _, f := range Flags {
		before := f.FirstRelease
		switch {
		case before.Patch > 0:
			before.Patch--
		case before.Minor > 0:
			before.Minor, before.Patch = before.Minor-1, 999
		default:
			before.Major, before.Minor, before.Patch = before.Major-1, 999, 999
		}
		if SupportForVersion(before, SourceVersion).Knows(f.Name) {
			t.Errorf("%s known at %v, before its first release %v", f.Name, before, f.FirstRelease)
		}
		if !SupportForVersion(f.FirstRelease, SourceVersion).Knows(f.Name) {
			t.Errorf("%s not known at its first release %v", f.Name, f.FirstRelease)
		}
		later := Version{f.FirstRelease.Major, f.FirstRelease.Minor + 3, 0}
		if !SupportForVersion(later, SourceVersion).Knows(f.Name) {
			t.Errorf("%s not known at %v", f.Name, later)
		}
	}
	// The JAX gate from compiler.py: 0.4.35 sets nothing, 0.4.36 everything.
	if n := len(SupportForVersion(Version{0, 4, 35}, SourceVersion).Known()); n != 0 {
		t.Errorf("jaxlib 0.4.35 knows %d flags, want 0", n)
	}
	if n := len(SupportForVersion(Version{0, 4, 36}, SourceVersion).Known()); n != len(Flags) {
		t.Errorf("jaxlib 0.4.36 knows %d flags, want %d", n, len(Flags))
	}
}

// fakePlugin writes a file shaped like a plugin: a header, filler, string
// literals, and protobuf-descriptor-style occurrences of other names
// (length-prefixed, followed by a field tag, no NUL).
func fakePlugin(t *testing.T, fillerBefore int, literals, descriptorOnly []string) string {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("\x7fELF\x02\x01\x01")
	b.Write(bytes.Repeat([]byte{0xAB}, fillerBefore))
	for _, s := range literals {
		b.WriteByte(0)
		b.WriteString(s)
		b.WriteByte(0)
	}
	for _, s := range descriptorOnly {
		b.WriteByte(0x0a)
		b.WriteByte(byte(len(s)))
		b.WriteString(s)
		b.WriteByte(0x18)
	}
	// A longer identifier that merely contains a name, or a qualified
	// protobuf field name, must not count.
	b.WriteString("\x00my_xla_gpu_kernel_cache_file_extra\x00")
	b.WriteString("\x00xla.DebugOptions.xla_gpu_experimental_autotune_cache_mode\x00")
	b.WriteString("\x00xla.DebugOptions.xla_gpu_kernel_cache_file\x00")
	p := filepath.Join(t.TempDir(), "pjrt_c_api_fake_plugin.so")
	if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestProbePlugin(t *testing.T) {
	ctx := context.Background()
	all := []string{probeAnchor, FlagAutotuneCacheDir, FlagAutotuneCacheMode, FlagKernelCacheFile, FlagLLVMModuleParallelism}
	t.Run("all flags", func(t *testing.T) {
		s, err := ProbePlugin(ctx, fakePlugin(t, 100, all, nil))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range Flags {
			if !s.Knows(f.Name) {
				t.Errorf("%s not found", f.Name)
			}
		}
	})
	t.Run("descriptor names are not flags", func(t *testing.T) {
		s, err := ProbePlugin(ctx, fakePlugin(t, 100, []string{probeAnchor, FlagAutotuneCacheDir, FlagLLVMModuleParallelism}, []string{FlagAutotuneCacheMode, FlagKernelCacheFile}))
		if err != nil {
			t.Fatal(err)
		}
		if !s.Knows(FlagAutotuneCacheDir) || s.Knows(FlagAutotuneCacheMode) || s.Knows(FlagKernelCacheFile) {
			t.Errorf("got %v", s.Known())
		}
	})
	t.Run("literal across a read block boundary", func(t *testing.T) {
		// The first block is 4 MiB; put a literal across its end.
		filler := 4<<20 - 7 - 10
		s, err := ProbePlugin(ctx, fakePlugin(t, filler, all, nil))
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Known()) != len(Flags) {
			t.Errorf("got %v", s.Known())
		}
	})
	t.Run("not XLA", func(t *testing.T) {
		_, err := ProbePlugin(ctx, fakePlugin(t, 10, []string{FlagAutotuneCacheDir}, nil))
		if !errors.Is(err, ErrNotXLA) {
			t.Errorf("err = %v, want ErrNotXLA", err)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		if _, err := ProbePlugin(ctx, filepath.Join(t.TempDir(), "nope.so")); err == nil {
			t.Error("want an error")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		c, cancel := context.WithCancel(ctx)
		cancel()
		if _, err := ProbePlugin(c, fakePlugin(t, 10, all, nil)); !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v", err)
		}
	})
}

func FuzzParseVersion(f *testing.F) {
	for _, s := range []string{"0.4.36", "jaxlib-0.5.1", "v1.2", "0.4.36.dev2024", "0.6.0+cuda12", "x", "1..2", "-1.2.3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseVersion(s)
		if err != nil {
			return
		}
		if v.Major < 0 || v.Minor < 0 || v.Patch < 0 {
			t.Fatalf("%q parsed as negative %v", s, v)
		}
		// What String prints parses back to the same version.
		if back, err := ParseVersion(v.String()); err != nil || back != v {
			t.Fatalf("%v printed as %q parsed back as %v, %v", v, v.String(), back, err)
		}
	})
}

// BenchmarkProbePlugin reads a 64 MiB plugin-like file (machine code with
// an XLA string every 2 KiB, the flag names at the end); the reported
// MB/s says how long a real plugin (a few hundred MB) takes to probe.
func BenchmarkProbePlugin(b *testing.B) {
	p := filepath.Join(b.TempDir(), "pjrt_c_api_big_plugin.so")
	data := make([]byte, 0, 64<<20)
	rng := uint32(1)
	for len(data) < 64<<20 {
		for range 2048 {
			rng = rng*1664525 + 1013904223
			data = append(data, byte(rng>>24))
		}
		data = append(data, "\x00xla_gpu_some_other_flag_name\x00"...)
	}
	data = append(data, "\x00xla_dump_to\x00xla_gpu_per_fusion_autotune_cache_dir\x00"...)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, err := ProbePlugin(context.Background(), p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestGateBoundaries checks each flag's gate at the boundary releases, both
// ends: the kernel-cache, autotune-dir and autotune-mode flags from jaxlib
// 0.4.36 (JAX's own gate in compiler.py) with no upper bound, and
// xla_gpu_enable_llvm_module_compilation_parallelism from 0.4.36 up to, not
// including, 0.11.0 (JAX 0.11.0 stopped setting it).
func TestGateBoundaries(t *testing.T) {
	cacheFlags := []string{FlagKernelCacheFile, FlagAutotuneCacheDir, FlagAutotuneCacheMode}
	tests := []struct {
		version string
		cache   bool // the three cache flags
		llvm    bool // FlagLLVMModuleParallelism
	}{
		{"0.4.30", false, false},
		{"0.4.35", false, false},
		{"0.4.36", true, true},
		{"0.4.36.dev20241201", true, true},
		{"0.5.0", true, true},
		{"0.10.0", true, true},
		{"0.10.9", true, true},
		{"0.10.99", true, true},
		{"0.11.0", true, false},
		{"0.11.0+cuda12", true, false},
		{"0.11.1", true, false},
		{"0.12.0", true, false},
		{"1.0.0", true, false},
	}
	for _, tc := range tests {
		v, err := ParseVersion(tc.version)
		if err != nil {
			t.Fatal(err)
		}
		s := SupportForVersion(v, SourceVersion)
		for _, name := range cacheFlags {
			if s.Knows(name) != tc.cache {
				t.Errorf("jaxlib %s: Knows(%s) = %v, want %v", tc.version, name, s.Knows(name), tc.cache)
			}
		}
		if s.Knows(FlagLLVMModuleParallelism) != tc.llvm {
			t.Errorf("jaxlib %s: Knows(%s) = %v, want %v", tc.version, FlagLLVMModuleParallelism, s.Knows(FlagLLVMModuleParallelism), tc.llvm)
		}
	}
	// Every upper bound is exclusive and above its lower bound.
	for _, f := range Flags {
		if f.EndRelease.IsZero() {
			continue
		}
		if !f.FirstRelease.Less(f.EndRelease) {
			t.Errorf("%s: EndRelease %v not after FirstRelease %v", f.Name, f.EndRelease, f.FirstRelease)
		}
		if f.In(f.EndRelease) {
			t.Errorf("%s: in its gate at EndRelease %v", f.Name, f.EndRelease)
		}
	}
}

// TestCacheFlagsAcrossLLVMParallelismEnd checks the flags a writer gets for
// the kernel cache on each side of 0.11.0: the kernel cache file on both,
// the parallelism flag only before.
func TestCacheFlagsAcrossLLVMParallelismEnd(t *testing.T) {
	dir := t.TempDir()
	o := opts(dir, 0, config.RoleAuto, config.SubcacheKernels)
	for _, tc := range []struct {
		v    Version
		want []string
	}{
		{Version{0, 4, 35}, nil},
		{Version{0, 4, 36}, []string{FlagKernelCacheFile, FlagLLVMModuleParallelism}},
		{Version{0, 10, 2}, []string{FlagKernelCacheFile, FlagLLVMModuleParallelism}},
		{Version{0, 11, 0}, []string{FlagKernelCacheFile}},
		{Version{0, 12, 3}, []string{FlagKernelCacheFile}},
	} {
		flags, skips := CacheFlags(o, SupportForVersion(tc.v, SourceVersion))
		var got []string
		for _, f := range flags {
			got = append(got, f.Name)
		}
		if strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("jaxlib %v: flags %v, want %v (skipped %v)", tc.v, got, tc.want, skips)
		}
	}
	// A probed plugin that still registers the flag gets it; one that does
	// not still gets the kernel cache.
	for _, known := range []bool{true, false} {
		sup := Support{Source: SourcePlugin, Detail: "fake", known: map[string]bool{FlagKernelCacheFile: true, FlagLLVMModuleParallelism: known}}
		flags, _ := CacheFlags(o, sup)
		if len(flags) == 0 || flags[0].Name != FlagKernelCacheFile {
			t.Fatalf("plugin (parallelism known=%v): flags %v", known, flags)
		}
		if has := len(flags) == 2 && flags[1].Name == FlagLLVMModuleParallelism; has != known {
			t.Errorf("plugin (parallelism known=%v): flags %v", known, flags)
		}
	}
}

// TestDefaultAssumptionLeavesRemovedFlags: with nothing known about the
// XLA a program loads (no plugin, no stated version), no flag that a
// later release removed is set, because a current plugin aborts on it
// (jaxlib 0.12.0.1 does on the LLVM parallelism flag: xla/jaxtest
// TestFlagsNeverAbort). Stated as a fact, the same release still gets it,
// and the removal is recorded at 0.11.0.
func TestDefaultAssumptionLeavesRemovedFlags(t *testing.T) {
	if got := removedRelease(FlagLLVMModuleParallelism); got != (Version{0, 11, 0}) {
		t.Fatalf("%s removed in %v, want 0.11.0", FlagLLVMModuleParallelism, got)
	}
	def := SupportForVersion(DefaultVersion, SourceDefault)
	for _, f := range Flags {
		if !f.RemovedRelease.IsZero() && def.Knows(f.Name) {
			t.Errorf("default assumption knows %s, removed in %v", f.Name, f.RemovedRelease)
		}
		if f.RemovedRelease.IsZero() && f.In(DefaultVersion) && !def.Knows(f.Name) {
			t.Errorf("default assumption does not know %s, never removed", f.Name)
		}
		if !f.RemovedRelease.IsZero() && f.In(f.RemovedRelease) {
			t.Errorf("%s: in its gate at its removal %v", f.Name, f.RemovedRelease)
		}
	}
	if !SupportForVersion(DefaultVersion, SourceVersion).Knows(FlagLLVMModuleParallelism) {
		t.Errorf("stated jaxlib %v does not get %s", DefaultVersion, FlagLLVMModuleParallelism)
	}
	for _, role := range []config.Role{config.RoleAuto, config.RoleReader} {
		o := opts(t.TempDir(), 0, role, config.SubcacheKernels, config.SubcacheAutotune)
		flags, skips := CacheFlags(o, def)
		for _, f := range flags {
			if f.Name == FlagLLVMModuleParallelism {
				t.Errorf("role %v: default assumption sets %s", role, f)
			}
		}
		found := false
		for _, s := range skips {
			found = found || (s.Flag == FlagLLVMModuleParallelism && strings.Contains(s.Reason, "removed it in jaxlib 0.11.0"))
		}
		if role == config.RoleAuto && !found {
			t.Errorf("role %v: no skip saying why %s is left out: %v", role, FlagLLVMModuleParallelism, skips)
		}
	}
}

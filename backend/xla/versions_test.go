package xla

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
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

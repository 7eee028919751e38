package cc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unsafe"
)

func findOrSkip(t *testing.T) *Compiler {
	t.Helper()
	c, err := Find(context.Background())
	if err != nil {
		t.Fatalf("no C compiler: %v", err)
	}
	return c
}

// loadBuilt opens the library a build returned (failing on the build's
// error) until the test ends.
func loadBuilt(t *testing.T, so []byte, err error) *Library {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	lib, err := OpenBytes(so)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lib.Close() })
	return lib
}

// kernelBuffers allocates a kernel's input and output (four floats each)
// and the buffer table pointing at them, freed when the test ends.
func kernelBuffers(t *testing.T) (in, out *[4]float32, bufs unsafe.Pointer) {
	in = (*[4]float32)(Alloc(16))
	out = (*[4]float32)(Alloc(16))
	table := (*[2]unsafe.Pointer)(Alloc(16))
	t.Cleanup(func() {
		Free(unsafe.Pointer(in))
		Free(unsafe.Pointer(out))
		Free(unsafe.Pointer(table))
	})
	table[0], table[1] = unsafe.Pointer(in), unsafe.Pointer(out)
	return in, out, unsafe.Pointer(table)
}

func TestCompileLinkLoadCall(t *testing.T) {
	c := findOrSkip(t)
	if c.Version == "" || c.Target == "" || !strings.Contains(c.Identity(), c.Target) {
		t.Fatalf("incomplete identity: %q", c.Identity())
	}
	src := []Source{
		{Name: "k_add", Code: []byte("void k_add(void** b){ float* x=b[0]; float* y=b[1]; for(int i=0;i<4;i++) y[i]=x[i]+1.0f; }\n")},
		{Name: "k_mul", Code: []byte("void k_mul(void** b){ float* x=b[0]; float* y=b[1]; for(int i=0;i<4;i++) y[i]=x[i]*3.0f; }\n")},
	}
	so, err := c.BuildLibrary(context.Background(), src, 2)
	lib := loadBuilt(t, so, err)
	in, out, bufs := kernelBuffers(t)
	*in = [4]float32{1, 2, 3, 4}
	for _, tc := range []struct {
		name string
		want [4]float32
	}{{"k_add", [4]float32{2, 3, 4, 5}}, {"k_mul", [4]float32{3, 6, 9, 12}}} {
		fn, err := lib.Sym(tc.name)
		if err != nil {
			t.Fatal(err)
		}
		Call(fn, bufs)
		if *out != tc.want {
			t.Errorf("%s: got %v want %v", tc.name, *out, tc.want)
		}
	}
	if _, err := lib.Sym("k_missing"); err == nil || !strings.Contains(err.Error(), "k_missing") {
		t.Errorf("missing symbol error = %v", err)
	}
}

func TestCompileErrorNamesKernelAndStderr(t *testing.T) {
	c := findOrSkip(t)
	_, err := c.Compile(context.Background(), []Source{{Name: "k_bad", Code: []byte("void k_bad(void** b){ this is not C; }\n")}}, 1)
	var ce *CompileError
	if !errors.As(err, &ce) {
		t.Fatalf("want CompileError, got %v", err)
	}
	if !strings.Contains(err.Error(), "k_bad") || !strings.Contains(err.Error(), "error") {
		t.Errorf("error lacks kernel name or compiler output: %v", err)
	}
}

func TestInvalidKernelName(t *testing.T) {
	c := findOrSkip(t)
	for _, name := range []string{"", "../x", "a b", "1abc"} {
		if _, err := c.Compile(context.Background(), []Source{{Name: name, Code: []byte("int x;")}}, 1); err == nil {
			t.Errorf("name %q accepted", name)
		}
	}
}

func TestMissingCompiler(t *testing.T) {
	t.Setenv(EnvCC, "/nonexistent/xlacache-cc")
	_, err := Find(context.Background())
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/xlacache-cc") {
		t.Fatalf("want error naming the compiler, got %v", err)
	}
}

func TestFailingCompiler(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "badcc")
	if err := os.WriteFile(script, []byte("#!/bin/sh\necho 'badcc: refusing to work' >&2\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvCC, script)
	_, err := Find(context.Background())
	if err == nil || !strings.Contains(err.Error(), "refusing to work") {
		t.Fatalf("want error with compiler output, got %v", err)
	}
}

func TestUnloadableLibrary(t *testing.T) {
	_, err := OpenBytes([]byte("this is not an ELF file"))
	if err == nil || !strings.Contains(err.Error(), "loading shared object") {
		t.Fatalf("want load error, got %v", err)
	}
}

func TestParseCPUInfo(t *testing.T) {
	tests := []struct {
		name, in, model string
		features        []string
	}{
		{"x86", "processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: sse avx2 fma\n\nprocessor\t: 1\nmodel name\t: other\n", "AMD EPYC", []string{"avx2", "fma", "sse"}},
		{"arm", "processor\t: 0\nFeatures\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n", "implementer 0x41 part 0xd0c", []string{"asimd", "fp"}},
		{"empty", "", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, f := parseCPUInfo([]byte(tc.in))
			if m != tc.model || strings.Join(f, ",") != strings.Join(tc.features, ",") {
				t.Errorf("got %q %v, want %q %v", m, f, tc.model, tc.features)
			}
		})
	}
}

func FuzzParseCPUInfo(f *testing.F) {
	f.Add([]byte("processor\t: 0\nmodel name\t: AMD EPYC\nflags\t\t: sse avx2 fma\n\n"))
	f.Add([]byte("Features\t: fp asimd\nCPU implementer\t: 0x41\nCPU part\t: 0xd0c\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		model, features := parseCPUInfo(data)
		if strings.Contains(model, "\n") {
			t.Fatalf("model spans lines: %q", model)
		}
		for i := 1; i < len(features); i++ {
			if features[i-1] > features[i] {
				t.Fatalf("features not sorted: %v", features)
			}
		}
	})
}

func TestBuildShared(t *testing.T) {
	c := findOrSkip(t)
	so, err := c.BuildShared(context.Background(), Source{Name: "u_neg", Code: []byte("void u_neg(void** b){ float* x=b[0]; float* y=b[1]; for(int i=0;i<4;i++) y[i]=-x[i]; }\n")})
	lib := loadBuilt(t, so, err)
	fn, err := lib.Sym("u_neg")
	if err != nil {
		t.Fatal(err)
	}
	in, out, bufs := kernelBuffers(t)
	*in = [4]float32{1, -2, 3, 0}
	Call(fn, bufs)
	if want := [4]float32{-1, 2, -3, 0}; *out != want {
		t.Errorf("got %v want %v", *out, want)
	}

	for _, tc := range []struct {
		name string
		src  Source
		want string
	}{
		{"bad code", Source{Name: "u_bad", Code: []byte("void u_bad(void** b){ not C at all }\n")}, "u_bad"},
		{"bad name", Source{Name: "../u", Code: []byte("int x;\n")}, "invalid kernel name"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := c.BuildShared(context.Background(), tc.src)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func TestCompileGroups(t *testing.T) {
	src := func(size int, opt string) Source {
		return Source{Name: "k", Code: make([]byte, size), Opt: opt}
	}
	tests := []struct {
		name string
		srcs []Source
		jobs int
		want []group
	}{
		{"few: one each, largest first", []Source{src(10, ""), src(30, ""), src(20, "-O2")}, 2, []group{{1, 2}, {2, 3}, {0, 1}}},
		{"many: contiguous per level", append(slices.Repeat([]Source{src(1, "")}, 6), slices.Repeat([]Source{src(1, "-O2")}, 4)...), 2, []group{{0, 6}, {6, 10}}},
		{"many, one level", slices.Repeat([]Source{src(1, "")}, 9), 2, []group{{0, 4}, {4, 9}}},
		{"one job: one run per level", []Source{src(10, ""), src(30, ""), src(20, "-O2")}, 1, []group{{0, 2}, {2, 3}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := compileGroups(tc.srcs, tc.jobs); !slices.Equal(got, tc.want) {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCompileOptLevels(t *testing.T) {
	c := findOrSkip(t)
	if got := c.flagsFor("-O2"); slices.Contains(got, "-O3") || !slices.Contains(got, "-O2") {
		t.Errorf("flags for -O2: %q", got)
	}
	if got := c.flagsFor(""); !slices.Equal(got, c.Flags) {
		t.Errorf("flags for the default level: %q, want %q", got, c.Flags)
	}
	// A multi-flag level is its flags, each its own argument, where -O3
	// was; the other flags stay as they are.
	for _, level := range []string{LevelVectorize, LevelVectorCode} {
		got := c.flagsFor(level)
		fields := strings.Fields(level)
		i := slices.Index(c.Flags, "-O3")
		if i < 0 || slices.Contains(got, "-O3") || !slices.Equal(got[i:i+len(fields)], fields) ||
			!slices.Equal(got[:i], c.Flags[:i]) || !slices.Equal(got[i+len(fields):], c.Flags[i+1:]) {
			t.Errorf("flags for %q: %q (Flags %q)", level, got, c.Flags)
		}
	}
	// Levels mixed in one call; each source's object is its own.
	var srcs []Source
	for i, opt := range []string{"", "-O2", "", "-O1", LevelVectorize, LevelVectorCode} {
		name := fmt.Sprintf("u_add%d", i)
		srcs = append(srcs, Source{Name: name, Opt: opt, Code: []byte(fmt.Sprintf("void %s(void** b){ float* x=b[0]; float* y=b[1]; for(int i=0;i<4;i++) y[i]=x[i]+%d; }\n", name, i))})
	}
	objs, err := c.Compile(context.Background(), srcs, 2)
	if err != nil {
		t.Fatal(err)
	}
	so, err := c.Link(context.Background(), objs)
	lib := loadBuilt(t, so, err)
	for i, s := range srcs {
		fn, err := lib.Sym(s.Name)
		if err != nil {
			t.Fatal(err)
		}
		in, out, bufs := kernelBuffers(t)
		*in = [4]float32{1, 2, 3, 4}
		Call(fn, bufs)
		if want := [4]float32{1 + float32(i), 2 + float32(i), 3 + float32(i), 4 + float32(i)}; *out != want {
			t.Errorf("%s (level %q): got %v, want %v", s.Name, s.Opt, *out, want)
		}
	}
	for _, opt := range []string{"-O0", "-fplugin=x.so", "-O3 -o /tmp/x", LevelVectorize + " -fplugin=x.so", " " + LevelVectorCode, "-O2  -fvect-cost-model=cheap"} {
		bad := Source{Name: "u_bad", Opt: opt, Code: []byte("int x;\n")}
		if _, err := c.Compile(context.Background(), []Source{bad}, 1); err == nil || !strings.Contains(err.Error(), "optimization level") {
			t.Errorf("Compile at level %q: %v, want an invalid level error", opt, err)
		}
		if _, err := c.BuildShared(context.Background(), bad); err == nil || !strings.Contains(err.Error(), "optimization level") {
			t.Errorf("BuildShared at level %q: %v, want an invalid level error", opt, err)
		}
	}
}

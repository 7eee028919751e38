package cc

import (
	"bytes"
	"context"
	"debug/elf"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestParseSearchDirs checks how the direct linker and its libraries are
// found from `cc -print-search-dirs`: program directories before PATH,
// gold before ld, only absolute directories, only regular files (and
// executable ones for the linker), and nothing unless everything is found.
func TestParseSearchDirs(t *testing.T) {
	root := t.TempDir()
	mk := func(rel string, perm os.FileMode) string {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	gold := mk("bin1/ld.gold", 0o755)
	bfd := mk("bin2/ld", 0o755)
	mk("bin3/ld.gold", 0o644) // not executable
	libgcc := mk("gcc/libgcc.a", 0o644)
	libm := mk("lib/libm.so.6", 0o644)
	libc := mk("lib/libc.so.6", 0o644)
	mk("lib2/libc.so.6", 0o644)
	if err := os.MkdirAll(filepath.Join(root, "dir/libm.so.6"), 0o700); err != nil { // a directory, not a library
		t.Fatal(err)
	}
	pathLD := filepath.Join(root, "path/ld")
	noPath := func(string) (string, error) { return "", errors.New("not in PATH") }
	inPath := func(name string) (string, error) {
		if name == "ld" {
			return pathLD, nil
		}
		return "", errors.New("not in PATH")
	}
	out := func(install string, programs, libraries []string) string {
		return "install: " + install + "\nprograms: =" + strings.Join(programs, ":") + "\nlibraries: =" + strings.Join(libraries, ":") + "\n"
	}
	d := func(rel string) string { return filepath.Join(root, rel) + "/" }
	libs := []string{"lib", "dir", "lib2"}
	for i := range libs {
		libs[i] = d(libs[i])
	}
	for _, tc := range []struct {
		name   string
		out    string
		path   func(string) (string, error)
		wantLD string // "" for no direct linker
	}{
		{"gold first", out(d("gcc"), []string{d("bin3"), d("bin2"), d("bin1")}, libs), noPath, gold},
		{"ld where no gold", out(d("gcc"), []string{d("bin3"), d("bin2")}, libs), noPath, bfd},
		{"PATH after the program directories", out(d("gcc"), []string{d("bin3")}, libs), inPath, pathLD},
		{"no linker", out(d("gcc"), []string{d("bin3")}, libs), noPath, ""},
		{"relative directories ignored", out(d("gcc"), []string{"bin1"}, libs), noPath, ""},
		{"no libgcc", out(d("lib"), []string{d("bin1")}, libs), noPath, ""},
		{"no libc", out(d("gcc"), []string{d("bin1")}, []string{d("dir")}), noPath, ""},
		{"not search-dirs output", "gcc: error: unrecognized option\n", noPath, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := parseSearchDirs(tc.out, tc.path)
			if tc.wantLD == "" {
				if l != nil {
					t.Fatalf("got %+v, want no direct linker", l)
				}
				return
			}
			if l == nil {
				t.Fatalf("no direct linker, want %s", tc.wantLD)
			}
			if want := []string{libm, libc, libgcc}; l.ld != tc.wantLD || !slices.Equal(l.libs, want) {
				t.Fatalf("got %s %q, want %s %q", l.ld, l.libs, tc.wantLD, want)
			}
		})
	}
}

// libsSrc calls into each library a kernel can need: libc (a memcpy of a
// size known only at run time), libm (expf), and libgcc (a 128-bit
// division, __divti3 on x86-64).
const libsSrc = `typedef __SIZE_TYPE__ size_t;
void* memcpy(void*, const void*, size_t);
float expf(float);
void k_libs(void** b) {
	float* x = b[0]; float* y = b[1]; float t[4] = {0};
	memcpy(t, x, (size_t)x[3] * sizeof(float));
	__int128 n = (__int128)(long long)x[1] << 70, d = (__int128)(long long)x[2] << 68;
	y[0] = expf(t[0]); y[1] = (float)(long long)(n / d); y[2] = t[2]; y[3] = t[3];
}
`

// TestDirectLink checks a library linked without the driver: it names the
// C and math libraries it needs, its references to them carry symbol
// versions (an unversioned memcpy binds to glibc's oldest one), the
// libgcc helper is inside it, and it loads and computes.
func TestDirectLink(t *testing.T) {
	c := findOrSkip(t)
	if runtime.GOOS != "linux" {
		t.Skip("direct linking is Linux-only")
	}
	objs, err := c.Compile(context.Background(), []Source{{Name: "k_libs", Code: []byte(libsSrc)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	l := c.directLinker(context.Background())
	if l == nil {
		t.Skipf("no direct linker: %s -print-search-dirs names no ld.gold or ld, or no libm.so.6, libc.so.6 and libgcc.a", c.Path)
	}
	so, err := c.Link(context.Background(), objs)
	if err != nil {
		t.Fatal(err)
	}
	if c.linking.broken.Load() {
		t.Fatalf("the direct link with %s failed; the driver linked", l.ld)
	}
	f, err := elf.NewFile(bytes.NewReader(so))
	if err != nil {
		t.Fatal(err)
	}
	needed, err := f.DynString(elf.DT_NEEDED)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(needed, "libm.so.6") || !slices.Contains(needed, "libc.so.6") {
		t.Errorf("DT_NEEDED %q, want libm.so.6 and libc.so.6", needed)
	}
	imps, err := f.ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, s := range imps {
		versions[s.Name] = s.Version
	}
	for _, name := range []string{"memcpy", "expf"} {
		if v, ok := versions[name]; !ok || !strings.HasPrefix(v, "GLIBC_") {
			t.Errorf("%s imported with version %q (imported: %v), want a GLIBC_ version", name, v, ok)
		}
	}
	if _, ok := versions["__divti3"]; ok {
		t.Errorf("__divti3 is imported, want it linked in from libgcc.a")
	}
	f.Close()
	lib := loadBuilt(t, so, nil)
	fn, err := lib.Sym("k_libs")
	if err != nil {
		t.Fatal(err)
	}
	in, out, bufs := kernelBuffers(t)
	*in = [4]float32{0, 3, 2, 4}
	Call(fn, bufs)
	if want := [4]float32{1, 6, 2, 4}; *out != want {
		t.Errorf("k_libs: got %v, want %v", *out, want)
	}
}

// TestDirectLinkFallsBack checks that a direct link that fails leaves the
// link to the driver: the library is still built, and later links skip
// the broken linker.
func TestDirectLinkFallsBack(t *testing.T) {
	found := findOrSkip(t)
	c := &Compiler{Path: found.Path, Version: found.Version, Target: found.Target, Flags: found.Flags, CPU: found.CPU}
	c.linking.once.Do(func() {
		c.linking.link = &directLink{ld: "/bin/false", libs: []string{"/nonexistent/libc.so.6"}}
	})
	objs, err := c.Compile(context.Background(), []Source{{Name: "k_libs", Code: []byte(libsSrc)}}, 1)
	if err != nil {
		t.Fatal(err)
	}
	so, err := c.Link(context.Background(), objs)
	lib := loadBuilt(t, so, err)
	if _, err := lib.Sym("k_libs"); err != nil {
		t.Fatal(err)
	}
	if !c.linking.broken.Load() || c.directLinker(context.Background()) != nil {
		t.Errorf("a failed direct link left the direct linker in use")
	}
}

// Two kernels in two units, one calling the other: between them they
// define everything they reference.
const (
	ownSrcA = `__attribute__((weak)) unsigned long long xk_alloc_failures;
float k_own_half(float x) { return x * 0.5f; }
void k_own_a(void** b) { float* x = b[0]; float* y = b[1]; for (int i = 0; i < 4; i++) y[i] = k_own_half(x[i]) + 1; }`
	ownSrcB = `__attribute__((weak)) unsigned long long xk_alloc_failures;
float k_own_half(float x);
void k_own_b(void** b) { float* x = b[0]; float* y = b[1]; for (int i = 0; i < 4; i++) y[i] = k_own_half(x[i]) * x[i]; }`
)

// TestSelfContained checks which objects Link links without the
// libraries: those whose references the objects themselves define, and
// nothing it cannot read.
func TestSelfContained(t *testing.T) {
	c := findOrSkip(t)
	compile := func(srcs ...Source) []Object {
		t.Helper()
		objs, err := c.Compile(context.Background(), srcs, 1)
		if err != nil {
			t.Fatal(err)
		}
		return objs
	}
	a, b := Source{Name: "k_own_a", Code: []byte(ownSrcA)}, Source{Name: "k_own_b", Code: []byte(ownSrcB)}
	libs := compile(Source{Name: "k_libs", Code: []byte(libsSrc)})
	both := compile(a, b)
	for _, tc := range []struct {
		name string
		objs []Object
		want bool
	}{
		{"own references only", both[:1], true},
		{"a reference the other object defines", both, true},
		{"a reference left to the other object", both[1:], false},
		{"libc, libm and libgcc references", libs, false},
		{"with an object calling the libraries", append(both, libs...), false},
		{"not an object", []Object{{Name: "k_x", Data: []byte("\x7fELF not really")}}, false},
		{"no objects", nil, true},
	} {
		if got := selfContained(tc.objs); got != tc.want {
			t.Errorf("%s: selfContained = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestDirectLinkSelfContained checks the library of objects that need no
// other library: it names none, and it loads and computes.
func TestDirectLinkSelfContained(t *testing.T) {
	c := findOrSkip(t)
	if runtime.GOOS != "linux" {
		t.Skip("direct linking is Linux-only")
	}
	objs, err := c.Compile(context.Background(), []Source{{Name: "k_own_a", Code: []byte(ownSrcA)}, {Name: "k_own_b", Code: []byte(ownSrcB)}}, 2)
	if err != nil {
		t.Fatal(err)
	}
	if c.directLinker(context.Background()) == nil {
		t.Skipf("no direct linker: %s -print-search-dirs names no ld.gold or ld, or no libm.so.6, libc.so.6 and libgcc.a", c.Path)
	}
	so, err := c.Link(context.Background(), objs)
	if err != nil {
		t.Fatal(err)
	}
	if c.linking.broken.Load() {
		t.Fatal("the direct link failed; the driver linked")
	}
	f, err := elf.NewFile(bytes.NewReader(so))
	if err != nil {
		t.Fatal(err)
	}
	needed, err := f.DynString(elf.DT_NEEDED)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(needed) != 0 {
		t.Errorf("DT_NEEDED %q, want none", needed)
	}
	lib := loadBuilt(t, so, nil)
	in, out, bufs := kernelBuffers(t)
	*in = [4]float32{0, 2, 4, -6}
	for name, want := range map[string][4]float32{"k_own_a": {1, 2, 3, -2}, "k_own_b": {0, 2, 8, 18}} {
		fn, err := lib.Sym(name)
		if err != nil {
			t.Fatal(err)
		}
		Call(fn, bufs)
		if *out != want {
			t.Errorf("%s: got %v, want %v", name, *out, want)
		}
	}
}

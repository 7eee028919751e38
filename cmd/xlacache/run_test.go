package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/npy"
)

const runTestProgram = `func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.tanh %0 : tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}
`

func TestCLIRun(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "p.mlir")
	if err := os.WriteFile(prog, []byte(runTestProgram), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvDir: filepath.Join(dir, "cache"), config.EnvMinCompileTime: "0"}

	out, code := runAdminCLI(t, env, "run", prog, "--output", filepath.Join(dir, "cpu.npz"), "--verbose")
	if code != 0 || !strings.Contains(out, "executable miss") || !strings.Contains(out, "stored") || !strings.Contains(out, "kernel ") {
		t.Fatalf("cold run: exit %d\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, "run", prog)
	if code != 0 || !strings.Contains(out, "executable hit") {
		t.Fatalf("warm run: exit %d\n%s", code, out)
	}
	// The same inputs through the interpreter agree with the cpu backend.
	out, code = runAdminCLI(t, env, "run", prog, "--backend", "interp", "--output", filepath.Join(dir, "interp.npz"))
	if code != 0 {
		t.Fatalf("interp run: exit %d\n%s", code, out)
	}
	a, err := npy.ReadNPZFile(filepath.Join(dir, "cpu.npz"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := npy.ReadNPZFile(filepath.Join(dir, "interp.npz"))
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || len(b) != 1 || a[0].Name != "out0" || len(a[0].Array.Data) != 48 {
		t.Fatalf("unexpected outputs %+v %+v", a, b)
	}

	// --inputs from a directory of .npy files named after the arguments.
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o700)
	npy.WriteFile(filepath.Join(in, "x.npy"), &npy.Array{DType: npy.Float32, Shape: []int64{4, 8}, Data: make([]byte, 128)})
	npy.WriteFile(filepath.Join(in, "w.npy"), &npy.Array{DType: npy.Float32, Shape: []int64{8, 3}, Data: make([]byte, 96)})
	out, code = runAdminCLI(t, env, "run", prog, "--inputs", in)
	if code != 0 || !strings.Contains(out, "sum=0") {
		t.Fatalf("zero inputs: exit %d\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, "run", prog, "--inputs", filepath.Join(in, "x.npy")+","+filepath.Join(in, "w.npy"))
	if code != 0 || !strings.Contains(out, "sum=0") {
		t.Fatalf("npy list inputs: exit %d\n%s", code, out)
	}
	// A wrongly shaped input is an error naming the argument.
	npy.WriteFile(filepath.Join(in, "w.npy"), &npy.Array{DType: npy.Float32, Shape: []int64{3, 8}, Data: make([]byte, 96)})
	if _, code = runAdminCLI(t, env, "run", prog, "--inputs", in); code == 0 {
		t.Fatal("wrong input shape accepted")
	}
	if _, code = runAdminCLI(t, env, "run", prog, "--backend", "gpu"); code == 0 {
		t.Fatal("unknown backend accepted")
	}
}

// TestExplainUsesModuleName: explain names a program file's module the way
// run does (its @name, not the file name), so it finds what run stored
// under a copy with another file name.
func TestExplainUsesModuleName(t *testing.T) {
	dir := t.TempDir()
	src := "module @prog_mod {\n" + runTestProgram + "}\n"
	prog := filepath.Join(dir, "p.mlir")
	renamed := filepath.Join(dir, "renamed copy.mlir")
	for _, p := range []string{prog, renamed} {
		if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	env := map[string]string{config.EnvDir: filepath.Join(dir, "cache"), config.EnvMinCompileTime: "0"}
	out, code := runAdminCLI(t, env, "run", prog)
	if code != 0 || !strings.Contains(out, "module prog_mod") || !strings.Contains(out, "stored") {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, "explain", renamed)
	if code != 0 || !strings.Contains(out, "is stored") || !strings.Contains(out, "prog_mod-") {
		t.Errorf("explain of a renamed copy (%d):\n%s", code, out)
	}
}

// TestRunUnusableCacheDir: a set but unusable XLACACHE_DIR is reported as
// such (with the reason), not as an unset one.
func TestRunUnusableCacheDir(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "p.mlir")
	if err := os.WriteFile(prog, []byte(runTestProgram), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, []byte("not a directory"), 0o600)
	for _, cacheDir := range []string{file, filepath.Join(file, "sub")} {
		out, code := runAdminCLI(t, map[string]string{config.EnvDir: cacheDir}, "run", prog)
		if code != 0 || !strings.Contains(out, "cache directory unusable: ") || !strings.Contains(out, "not a directory") || strings.Contains(out, "set XLACACHE_DIR") {
			t.Errorf("run with XLACACHE_DIR=%s (%d):\n%s", cacheDir, code, out)
		}
	}
}

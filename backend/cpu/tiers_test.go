package cpu

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

const tierProgram = `func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>) -> tensor<64xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
  %1 = stablehlo.tanh %0 : tensor<64x80xf32>
  %2 = stablehlo.constant dense<0.0> : tensor<f32>
  %3 = stablehlo.reduce(%1 init: %2) applies stablehlo.add across dimensions = [1] : (tensor<64x80xf32>, tensor<f32>) -> tensor<64xf32>
  return %3 : tensor<64xf32>
}
`

// TestTiersSaveWork checks what each tier skips: after a cold compile, a
// compile with the executable removed takes its autotuning result and
// kernel objects from the subcaches, and a second compile hits the
// executable outright. A reader never writes.
func TestTiersSaveWork(t *testing.T) {
	dir := t.TempDir()
	compile := func(role config.Role) (*cache.Report, *Executable) {
		opts := config.Defaults()
		opts.Dir, opts.MinCompileTime, opts.Role = dir, 0, role
		c, err := cache.Open(context.Background(), opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		b := New()
		b.TuneBudget = 100e6
		exe, rep, err := cache.Compile(context.Background(), c, b, cache.Program{Name: "tiers", Text: []byte(tierProgram)})
		if err != nil {
			t.Fatal(err)
		}
		return rep, exe.(*Executable)
	}
	rep, exe := compile(config.RoleWriter)
	exe.Close()
	if rep.Hit || rep.Tiers["cpu/autotune"].Misses == 0 || rep.Tiers["cpu/kernels"].Misses == 0 || !rep.Stored {
		t.Fatalf("cold compile: %+v", rep)
	}
	m := parseText(t, tierProgram)
	args := randomArgs(m, 5)

	rep, exe = compile(config.RoleWriter)
	if !rep.Hit {
		t.Fatalf("second compile missed the executable: %+v", rep)
	}
	want, err := exe.Run(context.Background(), args)
	exe.Close()
	if err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(filepath.Join(dir, "executables")); err != nil {
		t.Fatal(err)
	}
	rep, exe = compile(config.RoleWriter)
	if rep.Hit || rep.Tiers["cpu/autotune"].Misses != 0 || rep.Tiers["cpu/autotune"].Hits == 0 ||
		rep.Tiers["cpu/kernels"].Misses != 0 || rep.Tiers["cpu/kernels"].Hits == 0 {
		t.Fatalf("subcaches did not serve the recompile: %+v", rep.Tiers)
	}
	for _, k := range exe.Kernels() {
		if !k.ObjectHit {
			t.Errorf("kernel %s was compiled again", k.Name)
		}
	}
	got, err := exe.Run(context.Background(), args)
	exe.Close()
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, got, want, 0)

	// A reader on an empty directory compiles and writes nothing.
	dir = t.TempDir()
	rep, exe = compile(config.RoleReader)
	exe.Close()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() == "executables" || e.Name() == "cpu" {
			t.Errorf("reader wrote %s", e.Name())
		}
	}
}

// TestSubcacheSelection checks that XLACACHE_ENABLE_XLA_CACHES (here: the
// autotune subcache only) turns the kernel tier off for this backend.
func TestSubcacheSelection(t *testing.T) {
	dir := t.TempDir()
	opts := config.Defaults()
	opts.Dir, opts.MinCompileTime = dir, 0
	opts.Subcaches, opts.SubcachesExplicit = []config.Subcache{config.SubcacheAutotune}, true
	c, err := cache.Open(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	b := New()
	b.TuneBudget = 100e6
	exe, rep, err := cache.Compile(context.Background(), c, b, cache.Program{Name: "tiers", Text: []byte(tierProgram)})
	if err != nil {
		t.Fatal(err)
	}
	exe.(*Executable).Close()
	if r, ok := rep.Tiers["cpu/kernels"]; ok {
		t.Errorf("kernel tier used although not selected: %+v", r)
	}
	if rep.Tiers["cpu/autotune"].Misses == 0 {
		t.Errorf("autotune tier not used: %+v", rep.Tiers)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu", "kernels")); err == nil {
		t.Error("cpu/kernels directory created")
	}
}

package cpu

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

// parallelPrograms have kernels big enough for parallel variants, with
// sizes that do not divide evenly among the parts: dots split by columns,
// by rows and by batch, a fused elementwise loop, and reductions.
var parallelPrograms = map[string]string{
	"dot_cols": `func.func @main(%a: tensor<37x150xf32>, %b: tensor<150x300xf32>) -> tensor<37x300xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<37x150xf32>, tensor<150x300xf32>) -> tensor<37x300xf32>
  return %0 : tensor<37x300xf32>
}`,
	"dot_rows_transposed": `func.func @main(%a: tensor<256x257xf64>, %b: tensor<16x256xf64>) -> tensor<257x16xf64> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [1] : (tensor<256x257xf64>, tensor<16x256xf64>) -> tensor<257x16xf64>
  return %0 : tensor<257x16xf64>
}`,
	"conv": `func.func @main(%x: tensor<2x20x20x8xf32>, %w: tensor<3x3x8x20xf32>, %h: tensor<3x5x9x7xf64>, %hk: tensor<6x5x2x3xf64>) -> (tensor<2x20x20x20xf32>, tensor<3x6x5x5xf64>) {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x20x20x8xf32>, tensor<3x3x8x20xf32>) -> tensor<2x20x20x20xf32>
  %1 = stablehlo.convolution(%h, %hk) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], pad = [[1, 0], [0, 2]], rhs_dilate = [1, 2], reverse = [false, true]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<3x5x9x7xf64>, tensor<6x5x2x3xf64>) -> tensor<3x6x5x5xf64>
  return %0, %1 : tensor<2x20x20x20xf32>, tensor<3x6x5x5xf64>
}`,
	"dot_batch": `func.func @main(%a: tensor<7x12x100x64xi32>, %b: tensor<7x12x64x30xi32>) -> tensor<7x12x100x30xi32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0, 1] x [0, 1], contracting_dims = [3] x [2] : (tensor<7x12x100x64xi32>, tensor<7x12x64x30xi32>) -> tensor<7x12x100x30xi32>
  return %0 : tensor<7x12x100x30xi32>
}`,
	"loop_and_reduce": `func.func @main(%a: tensor<3x301x160xf32>, %b: tensor<3x301x160xf32>) -> (tensor<3x301x160xf32>, tensor<3x301xf32>, tensor<160xf32>) {
  %0 = stablehlo.multiply %a, %b : tensor<3x301x160xf32>
  %1 = stablehlo.tanh %0 : tensor<3x301x160xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%1 init: %z) applies stablehlo.add across dimensions = [2] : (tensor<3x301x160xf32>, tensor<f32>) -> tensor<3x301xf32>
  %3 = stablehlo.reduce(%a init: %z) applies stablehlo.maximum across dimensions = [0, 1] : (tensor<3x301x160xf32>, tensor<f32>) -> tensor<160xf32>
  return %1, %2, %3 : tensor<3x301x160xf32>, tensor<3x301xf32>, tensor<160xf32>
}`,
	// Complex helpers (Go's product and quotient, math/cmplx's exp and
	// sqrt) in a loop split among parts, and a complex reduction.
	"complex_loop": `func.func @main(%a: tensor<3x301x160xcomplex<f32>>, %b: tensor<3x301x160xcomplex<f32>>, %c: tensor<301x440xcomplex<f64>>) -> (tensor<3x301x160xcomplex<f32>>, tensor<301x440xcomplex<f64>>, tensor<301xcomplex<f64>>) {
  %0 = stablehlo.multiply %a, %b : tensor<3x301x160xcomplex<f32>>
  %1 = stablehlo.divide %0, %a : tensor<3x301x160xcomplex<f32>>
  %2 = stablehlo.exponential %1 : tensor<3x301x160xcomplex<f32>>
  %3 = stablehlo.sqrt %c : tensor<301x440xcomplex<f64>>
  %4 = stablehlo.multiply %3, %c : tensor<301x440xcomplex<f64>>
  %z = stablehlo.constant dense<(0.0, 0.0)> : tensor<complex<f64>>
  %5 = stablehlo.reduce(%4 init: %z) applies stablehlo.add across dimensions = [1] : (tensor<301x440xcomplex<f64>>, tensor<complex<f64>>) -> tensor<301xcomplex<f64>>
  return %2, %4, %5 : tensor<3x301x160xcomplex<f32>>, tensor<301x440xcomplex<f64>>, tensor<301xcomplex<f64>>
}`,
}

// TestParallelCandidatesMatchSerial runs every candidate of every kernel
// of parallelPrograms as one part and as three (an odd count, so splits
// are uneven): a split must give each output element to one part, summed
// in the serial order, so the outputs must be bit-identical; and every
// candidate must agree with the default as the autotuner requires.
func TestParallelCandidatesMatchSerial(t *testing.T) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	const threads = 3
	pl := &pipeline{b: New(), cc: comp, log: slog.Default()}
	for name, src := range parallelPrograms {
		t.Run(name, func(t *testing.T) {
			l := lowerText(t, src, name+".mlir")
			sawParallel := false
			for _, op := range l.roots {
				k, err := newKernel(l, op, threads)
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range k.cands {
					sawParallel = sawParallel || k.parallel(c)
				}
				k.cands = distinctCandidates(k.cands)
				checkCandidates(t, pl, k, threads)
			}
			if !sawParallel {
				t.Fatalf("no kernel of %s has a parallel candidate", name)
			}
		})
	}
}

// distinctCandidates keeps the default and the first candidate of each
// kind of code (variant name, split, packing, in-place input): the others
// differ only in block sizes, and compiling them all would make the test
// openCandidates builds the candidates set of kernel k as one unit,
// loads it and allocates a harness with random inputs for k; done closes
// the library and frees the harness.
func openCandidates(tb testing.TB, pl *pipeline, k *kernel, set []int) (u tuneUnit, lib *cc.Library, h *harness, done func()) {
	tb.Helper()
	u, err := pl.candidateUnitOf(k, set)
	if err != nil {
		tb.Fatal(err)
	}
	so, err := pl.cc.BuildShared(context.Background(), u.src)
	if err != nil {
		tb.Fatal(err)
	}
	if lib, err = cc.OpenBytes(so); err != nil {
		tb.Fatal(err)
	}
	if h, err = newHarness(k); err != nil {
		lib.Close()
		tb.Fatal(err)
	}
	return u, lib, h, func() { h.free(); lib.Close() }
}

// slow.
func distinctCandidates(cands []Config) []Config {
	out := cands[:1:1]
	seen := map[string]bool{}
	for _, c := range cands[1:] {
		kind := fmt.Sprintf("%s par=%d pa=%d da=%d", c.Name, c.p("par"), c.p("pa"), c.p("da"))
		if !seen[kind] {
			seen[kind] = true
			out = append(out, c)
		}
	}
	return out
}

// codeCands lists k's candidates that have generated code: all but the
// runtime routine (routineConfig).
func codeCands(k *kernel) []int {
	var out []int
	for c, cfg := range k.cands {
		if cfg.Name != routineConfig {
			out = append(out, c)
		}
	}
	return out
}

func checkCandidates(t *testing.T, pl *pipeline, k *kernel, threads int) {
	t.Helper()
	u, lib, h, done := openCandidates(t, pl, k, codeCands(k))
	defer done()
	var ref [][]byte
	for c, sym := range u.syms {
		fn, err := resolveKernel(lib, sym)
		if err != nil {
			t.Fatal(err)
		}
		if (fn.part != nil) != k.parallel(k.cands[u.cands[c]]) {
			t.Fatalf("%s %s: parallel entry point %v, want %v", k.desc, k.cands[u.cands[c]], fn.part != nil, k.parallel(k.cands[u.cands[c]]))
		}
		if fn.part != nil && fn.parts != k.partsPerThread(k.cands[u.cands[c]]) {
			t.Fatalf("%s %s: %d parts per thread, want %d", k.desc, k.cands[u.cands[c]], fn.parts, k.partsPerThread(k.cands[u.cands[c]]))
		}
		h.clearOutputs()
		fn.run(h.ptrs, 1)
		one := h.outputs()
		h.clearOutputs()
		fn.run(h.ptrs, threads)
		many := h.outputs()
		for i := range one {
			if !bytes.Equal(one[i], many[i]) {
				t.Errorf("%s %s: output %d differs between 1 and %d threads", k.desc, k.cands[u.cands[c]], i, threads)
			}
		}
		if c == 0 {
			ref = one
		} else if !closeEnough(k, ref, one) {
			t.Errorf("%s %s: disagrees with the default %s", k.desc, k.cands[u.cands[c]], k.cands[0])
		}
	}
}

// TestThreadsEndToEnd compiles the parallel programs for three threads
// (every other test runs on one or two) and checks every run against the
// interpreter, with concurrent Runs sharing the worker pool. The default configurations are used (the
// candidates are checked above): those of the loops, reductions and
// convolutions are parallel.
func TestThreadsEndToEnd(t *testing.T) {
	const threads = 3
	for name := range parallelPrograms {
		t.Run(fmt.Sprintf("%s/threads=%d", name, threads), func(t *testing.T) {
			exe, args, want := poolProgram(t, name, threads)
			if exe.Threads() != threads {
				t.Errorf("Threads() = %d, want %d", exe.Threads(), threads)
			}
			errs := make(chan error, 3)
			for range 3 {
				go func() { errs <- checkRun(exe, args, want) }()
			}
			for range 3 {
				if err := <-errs; err != nil {
					t.Error(err)
				}
			}
		})
	}
}

// closeTensor compares a result with the interpreter's within a tolerance
// for summation order; integers must match exactly.
func closeTensor(got, want *stablehlo.Tensor) bool {
	if !got.Type.Equal(want.Type) {
		return false
	}
	if got.Type.DType.IsComplex() {
		// libm's exp, sin, ... may differ from Go's in the last ulp.
		_, ok := closeComplex(got, want, 1e-4, 1e-6)
		return ok
	}
	if !got.Type.DType.IsFloat() {
		return bytes.Equal(got.Data, want.Data)
	}
	for j := int64(0); j < got.Type.NumElements(); j++ {
		if !floatClose(got.Float64At(j), want.Float64At(j), 1e-4) {
			return false
		}
	}
	return true
}

// TestThreadsInKeys checks that the thread bound is part of the
// executable key and the autotune key, and that a bad XLACACHE_CPU_THREADS
// fails compiles with an error naming it.
func TestThreadsInKeys(t *testing.T) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	b1, b2 := New(), New()
	b1.Threads, b2.Threads = 1, 2
	if b1.optionsKey(cache.Program{Name: "x"}) == b2.optionsKey(cache.Program{Name: "x"}) {
		t.Error("executable options key ignores the thread count")
	}
	m, err := stablehlo.Parse([]byte(parallelPrograms["dot_cols"]), "dot.mlir")
	if err != nil {
		t.Fatal(err)
	}
	l, err := analyze(m.Main(), "dot.mlir")
	if err != nil {
		t.Fatal(err)
	}
	k, err := newKernel(l, l.roots[0], 2)
	if err != nil {
		t.Fatal(err)
	}
	def, err := k.source(k.cands[0], "KERNEL_SYMBOL")
	if err != nil {
		t.Fatal(err)
	}
	if tuneKey(comp, k, def, 1).String() == tuneKey(comp, k, def, 2).String() {
		t.Error("autotune key ignores the thread count")
	}
	t.Setenv("XLACACHE_CPU_THREADS", "lots")
	bad := New()
	if _, err := bad.CompileModule(context.Background(), m, nil); err == nil || !bytes.Contains([]byte(err.Error()), []byte("XLACACHE_CPU_THREADS")) {
		t.Errorf("compile with a bad XLACACHE_CPU_THREADS: %v, want an error naming it", err)
	}
}

// TestCodegenInKey checks that the executable key names the C preludes'
// fingerprint, so that a change to the C the kernels are built from can
// never leave an old executable in use.
func TestCodegenInKey(t *testing.T) {
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	parts, err := New().KeyParts(context.Background(), cache.Program{Name: "p", Text: []byte(parallelPrograms["dot_cols"])})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if p.Name == "backend" && strings.Contains(string(p.Data), "codegen="+codegenFingerprint()) && len(codegenFingerprint()) == 16 {
			return
		}
	}
	t.Errorf("key parts %q do not name the codegen fingerprint %q", parts, codegenFingerprint())
}

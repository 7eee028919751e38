package cpu

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/backend/cpu/internal/rt"
	"github.com/xlacache/xlacache/stablehlo"
)

// runtimePrograms are products and convolutions an untuned build runs
// with a runtime routine (runtime.go), in the layouts the routines'
// strides cover, and one it must not; runtimeSteps says how many steps of
// each call one.
var runtimePrograms = map[string]string{
	"dot": `func.func @main(%a: tensor<37x53xf32>, %b: tensor<53x41xf32>) -> tensor<37x41xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<37x53xf32>, tensor<53x41xf32>) -> tensor<37x41xf32>
  return %0 : tensor<37x41xf32>
}`,
	"dot_transposed": `func.func @main(%a: tensor<53x37xf32>, %b: tensor<41x53xf32>) -> tensor<37x41xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [1] : (tensor<53x37xf32>, tensor<41x53xf32>) -> tensor<37x41xf32>
  return %0 : tensor<37x41xf32>
}`,
	"dot_batch_middle": `func.func @main(%a: tensor<17x3x9xf32>, %b: tensor<3x9x22xf32>) -> tensor<3x17x22xf32> {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [1] x [0], contracting_dims = [2] x [1] : (tensor<17x3x9xf32>, tensor<3x9x22xf32>) -> tensor<3x17x22xf32>
  return %0 : tensor<3x17x22xf32>
}`,
	"dot_f64_big": `func.func @main(%a: tensor<130x260xf64>, %b: tensor<260x70xf64>) -> tensor<130x70xf64> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<130x260xf64>, tensor<260x70xf64>) -> tensor<130x70xf64>
  return %0 : tensor<130x70xf64>
}`,
	"dot_big": `func.func @main(%a: tensor<128x256xf32>, %b: tensor<256x300xf32>) -> tensor<128x300xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<128x256xf32>, tensor<256x300xf32>) -> tensor<128x300xf32>
  return %0 : tensor<128x300xf32>
}`,
	// Below routineMinWork: a tuned build times candidates for it.
	"dot_mid": `func.func @main(%a: tensor<64x128xf32>, %b: tensor<128x300xf32>) -> tensor<64x300xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x128xf32>, tensor<128x300xf32>) -> tensor<64x300xf32>
  return %0 : tensor<64x300xf32>
}`,
	// Free dimensions on both sides of the contracting one: no single
	// stride walks them, so the product stays generated code.
	"dot_split_free": `func.func @main(%a: tensor<4x5x6xf32>, %b: tensor<5x3xf32>) -> tensor<4x6x3xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<4x5x6xf32>, tensor<5x3xf32>) -> tensor<4x6x3xf32>
  return %0 : tensor<4x6x3xf32>
}`,
	// A computed operand: the lowering materializes it (its own kernel),
	// so the product still reads buffers.
	"dot_computed_operand": `func.func @main(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %e = stablehlo.exponential %a : tensor<8x16xf32>
  %0 = stablehlo.dot_general %e, %b, contracting_dims = [1] x [0] : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}`,
	"conv_nhwc": `func.func @main(%x: tensor<2x9x9x3xf32>, %w: tensor<3x3x3x8xf32>) -> tensor<2x9x9x8xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x9x9x3xf32>, tensor<3x3x3x8xf32>) -> tensor<2x9x9x8xf32>
  return %0 : tensor<2x9x9x8xf32>
}`,
	"conv_nchw_strided": `func.func @main(%x: tensor<2x3x11x9xf32>, %w: tensor<5x3x3x2xf32>) -> tensor<2x5x4x11xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1], window = {stride = [2, 1], pad = [[1, 0], [2, 1]], rhs_dilate = [2, 1], reverse = [true, false]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x3x11x9xf32>, tensor<5x3x3x2xf32>) -> tensor<2x5x4x11xf32>
  return %0 : tensor<2x5x4x11xf32>
}`,
	"conv_1d_f64": `func.func @main(%x: tensor<2x20x3xf64>, %w: tensor<5x3x4xf64>) -> tensor<2x7x4xf64> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [3], pad = [[2, 2]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x20x3xf64>, tensor<5x3x4xf64>) -> tensor<2x7x4xf64>
  return %0 : tensor<2x7x4xf64>
}`,
	// Fewer input features than winoRoutineMinIn: a tuned build times
	// the generated candidates for it.
	"conv_few_in": `func.func @main(%x: tensor<4x20x20x4xf32>, %w: tensor<3x3x4x24xf32>) -> tensor<4x20x20x24xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x20x20x4xf32>, tensor<3x3x4x24xf32>) -> tensor<4x20x20x24xf32>
  return %0 : tensor<4x20x20x24xf32>
}`,
	"conv_big": `func.func @main(%x: tensor<4x20x20x16xf32>, %w: tensor<3x3x16x24xf32>) -> tensor<4x20x20x24xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<4x20x20x16xf32>, tensor<3x3x16x24xf32>) -> tensor<4x20x20x24xf32>
  return %0 : tensor<4x20x20x24xf32>
}`,
}

var runtimeSteps = map[string]int{
	"dot": 1, "dot_transposed": 1, "dot_batch_middle": 1, "dot_f64_big": 1, "dot_big": 1, "dot_mid": 1,
	"dot_split_free": 0, "dot_computed_operand": 1,
	"conv_nhwc": 1, "conv_nchw_strided": 1, "conv_1d_f64": 1, "conv_big": 1, "conv_few_in": 1,
}

// TestUntunedRuntimeRoutines compiles runtimePrograms untuned on 1, 2 and
// 3 threads (the big ones run in parts) and checks which steps call a
// routine and that every output matches the interpreter's.
func TestUntunedRuntimeRoutines(t *testing.T) {
	untunedOnThreads(t, runtimePrograms, 13, func(t *testing.T, exe *Executable, args, want []*stablehlo.Tensor) {
		name, _, _ := strings.Cut(t.Name()[len("TestUntunedRuntimeRoutines/"):], "/")
		n := 0
		for _, s := range exe.Plan().Steps {
			if isRuntime(s.Kernel) {
				n++
			}
		}
		if n != runtimeSteps[name] {
			t.Errorf("%d steps call a runtime routine, want %d", n, runtimeSteps[name])
		}
		if err := checkRun(exe, args, want); err != nil {
			t.Fatal(err)
		}
	})
}

// untuned is a backend that does not tune: every product and convolution
// the routines cover runs one.
func untuned() *Backend {
	b := New()
	b.NoTune = true
	return b
}

// TestRuntimeOnlyPlanRoundTrip: a program whose only kernel is a routine
// has no kernel library; it still serializes, decodes and runs.
func TestRuntimeOnlyPlanRoundTrip(t *testing.T) {
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	m, exe := compileTextWith(t, runtimePrograms["dot"], untuned())
	if len(exe.so) != 0 {
		t.Fatalf("a plan of runtime routines alone has a %d-byte library", len(exe.so))
	}
	again := roundTrip(t, exe)
	args := randomArgs(m, 3)
	want, err := stablehlo.Eval(m, "", args)
	if err != nil {
		t.Fatal(err)
	}
	if err := checkRun(again, args, want); err != nil {
		t.Fatal(err)
	}
}

// roundTrip is exe after its plan's trip through the executables tier's
// encoding, on 2 threads; the test closes it.
func roundTrip(t *testing.T, exe *Executable) *Executable {
	t.Helper()
	data, err := exe.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	plan, so, err := decodeExecutable(data)
	if err != nil {
		t.Fatal(err)
	}
	again, err := newExecutable(plan, so, 2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { again.Close() })
	return again
}

// routineCase parses runtimePrograms[name] and returns its text, module,
// random arguments and the interpreter's outputs on them. It skips the
// test where there is no C compiler.
func routineCase(t *testing.T, name string) (src string, m *stablehlo.Module, args, want []*stablehlo.Tensor) {
	t.Helper()
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	src = runtimePrograms[name]
	m = parseText(t, src)
	args = randomArgs(m, 5)
	want, err := stablehlo.Eval(m, "", args)
	if err != nil {
		t.Fatal(err)
	}
	return src, m, args, want
}

// decodedPlan serializes exe and returns the plan decoded back, with the
// serialized bytes.
func decodedPlan(t *testing.T, exe *Executable) (*Plan, []byte) {
	t.Helper()
	data, err := exe.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := decodeExecutable(data)
	if err != nil {
		t.Fatal(err)
	}
	return p, data
}

// TestRuntimeStepValidation: a plan from the cache whose runtime step is
// damaged (parameters that read or write past a buffer, a parameter
// block that is not an int64 constant, the wrong buffers, an unknown
// routine) is rejected before anything runs.
func TestRuntimeStepValidation(t *testing.T) {
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	for _, prog := range []string{"dot", "conv_nhwc"} {
		_, exe := compileTextWith(t, runtimePrograms[prog], untuned())
		base, data := decodedPlan(t, exe)
		step := -1
		for i, s := range base.Steps {
			if isRuntime(s.Kernel) {
				step = i
			}
		}
		if step < 0 {
			t.Fatalf("%s: no runtime step", prog)
		}
		pbuf := base.Buffers[base.Steps[step].Bufs[2]]
		params, err := rt.DecodeParams(pbuf.Const)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range []struct {
			name   string
			damage func(p *Plan)
		}{
			{"stride past the input", func(p *Plan) {
				q := append([]int64(nil), params...)
				if prog == "dot" {
					q[5] *= 1000 // A's row stride
				} else {
					q[rt.ConvSpatialAt(0)+rt.SpInStride] *= 1000
				}
				p.Buffers[p.Steps[step].Bufs[2]].Const = rt.EncodeParams(q)
			}},
			{"output size", func(p *Plan) {
				q := append([]int64(nil), params...)
				q[1]++ // gemm: M; conv: the batch
				p.Buffers[p.Steps[step].Bufs[2]].Const = rt.EncodeParams(q)
			}},
			{"short block", func(p *Plan) {
				b := &p.Buffers[p.Steps[step].Bufs[2]]
				b.Const, b.Shape = b.Const[:len(b.Const)-8], []int64{int64(len(params) - 1)}
			}},
			{"block not constant", func(p *Plan) {
				p.Buffers[p.Steps[step].Bufs[2]].Const = nil
			}},
			{"block of floats", func(p *Plan) {
				b := &p.Buffers[p.Steps[step].Bufs[2]]
				b.DType = "f64"
			}},
			{"three buffers", func(p *Plan) { p.Steps[step].Bufs = p.Steps[step].Bufs[:3] }},
			{"output is an input", func(p *Plan) { p.Steps[step].Bufs[3] = p.Steps[step].Bufs[0] }},
			{"unknown routine", func(p *Plan) { p.Steps[step].Kernel = "xk_rt_nope" }},
		} {
			p, _, err := decodeExecutable(data)
			if err != nil {
				t.Fatal(err)
			}
			c.damage(p)
			if err := p.validate(nil); err == nil {
				t.Errorf("%s: %s: plan validates", prog, c.name)
			}
		}
	}
}

// TestTunedRoutineChoice: a tuned build whose autotuner picks the
// runtime routine for a product or a convolution (routineConfig) runs it
// from the binary, with
// outputs matching the interpreter's, and so does a later compile that
// takes that choice from the autotune tier (the executable gone).
func TestTunedRoutineChoice(t *testing.T) {
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	for _, name := range []string{"dot_mid", "dot_transposed", "conv_few_in"} {
		t.Run(name, func(t *testing.T) {
			src, _, args, want := routineCase(t, name)
			for round, what := range []string{"tuned now", "autotune tier"} {
				c := openCacheDir(t, dir)
				b := New()
				b.Threads, b.pickRoutine = 2, round == 0
				rep, exe := compileIn(t, c, b, name, src)
				if rep.Hit {
					t.Fatalf("%s: the executable was a hit", what)
				}
				tuned := 0
				for _, k := range exe.Kernels() {
					if k.Tuned {
						tuned++
						if !k.Runtime() || !strings.Contains(k.Config, "runtime") || k.TuneHit != (round == 1) {
							t.Errorf("%s: kernel %s: %s (%s), tune hit %v", what, k.Desc, k.Name, k.Config, k.TuneHit)
						}
					}
				}
				if tuned != 1 {
					t.Errorf("%s: %d tuned kernels, want one", what, tuned)
				}
				if err := checkRun(exe, args, want); err != nil {
					t.Errorf("%s: %v", what, err)
				}
				exe.Close()
				c.Close()
				if err := os.RemoveAll(filepath.Join(dir, "executables")); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// TestTunedBigProductOnRoutine: a tuned build runs a product of
// routineMinWork multiply-adds or more on the gemm routine without
// building or timing candidates for it (nothing tuned, no autotune
// entry), with outputs matching the interpreter's.
func TestTunedBigProductOnRoutine(t *testing.T) {
	const name = "dot_big"
	src, _, args, want := routineCase(t, name)
	if w := int64(128 * 256 * 300); w < routineMinWork {
		t.Fatalf("%s has %d multiply-adds, under routineMinWork (%d)", name, w, routineMinWork)
	}
	dir := t.TempDir()
	c := openCacheDir(t, dir)
	defer c.Close()
	b := New()
	b.Threads = 2
	_, exe := compileIn(t, c, b, name, src)
	defer exe.Close()
	for _, k := range exe.Kernels() {
		if k.Tuned || !k.Runtime() {
			t.Errorf("kernel %s: %s (%s), tuned %v: want the routine, untuned", k.Desc, k.Name, k.Config, k.Tuned)
		}
	}
	var entries []string
	filepath.WalkDir(filepath.Join(dir, "cpu", "autotune"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			entries = append(entries, path)
		}
		return nil
	})
	if len(entries) != 0 {
		t.Errorf("autotune entries %v, want none", entries)
	}
	if err := checkRun(exe, args, want); err != nil {
		t.Error(err)
	}
}

// TestTunedConvOnWinoRoutine: a tuned build runs a 3x3, unit-stride
// convolution of winoRoutineMinIn input features or more on the Winograd
// routine, neither building nor timing candidates for it, with outputs
// close to the interpreter's; on 1 and 2 threads. A damaged plan that
// gives the routine a window it does not take is refused.
func TestTunedConvOnWinoRoutine(t *testing.T) {
	const name = "conv_big"
	src, _, args, want := routineCase(t, name)
	for _, threads := range []int{1, 2} {
		c := openCacheDir(t, t.TempDir())
		b := New()
		b.Threads = threads
		_, exe := compileIn(t, c, b, name, src)
		for _, k := range exe.Kernels() {
			if k.Tuned || k.Name != rt.WinoF32 {
				t.Errorf("%d threads: kernel %s: %s (%s), tuned %v: want %s, untuned", threads, k.Desc, k.Name, k.Config, k.Tuned, rt.WinoF32)
			}
		}
		if err := checkRun(exe, args, want); err != nil {
			t.Errorf("%d threads: %v", threads, err)
		}
		if threads == 1 {
			p, _ := decodedPlan(t, exe)
			if err := p.validate(nil); err != nil {
				t.Fatalf("the plan does not validate: %v", err)
			}
			for _, s := range p.Steps {
				if s.Kernel != rt.WinoF32 {
					continue
				}
				pb := &p.Buffers[s.Bufs[2]]
				q, err := rt.DecodeParams(pb.Const)
				if err != nil {
					t.Fatal(err)
				}
				q[rt.ConvSpatialAt(0)+rt.SpConvStride] = 2
				pb.Const = rt.EncodeParams(q)
			}
			if err := p.validate(nil); err == nil {
				t.Error("a Winograd step with stride 2 validates")
			}
		}
		exe.Close()
		c.Close()
	}
}

// TestLoadResolvesKernels: loading a plan resolves each kernel once, for
// every step that names it, and a plan naming a kernel its library does
// not define (a damaged or foreign entry) fails to load, naming it.
func TestLoadResolvesKernels(t *testing.T) {
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	_, exe := compileText(t, `func.func @main(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %t = stablehlo.tanh %x : tensor<4x8xf32>
  %y = stablehlo.multiply %t, %x : tensor<4x8xf32>
  return %y : tensor<4x8xf32>
}`)
	defer exe.Close()
	p, data := decodedPlan(t, exe)
	_, so, err := decodeExecutable(data)
	if err != nil {
		t.Fatal(err)
	}
	k := -1
	for i, s := range p.Steps {
		if s.Op == "" && !isRuntime(s.Kernel) {
			k = i
		}
	}
	if k < 0 {
		t.Fatalf("no kernel step in %+v", p.Steps)
	}
	// The same kernel in a second step: one lookup, the same entry points.
	twice := *p
	twice.Steps = append(append([]Step(nil), p.Steps...), p.Steps[k])
	again, err := newExecutable(&twice, so, 2)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := again.fns[k], again.fns[len(twice.Steps)-1]; a != b || a.serial == nil {
		t.Errorf("steps naming one kernel resolved to %+v and %+v", a, b)
	}
	again.Close()
	missing := *p
	missing.Steps = append([]Step(nil), p.Steps...)
	missing.Steps[k].Kernel = "k_not_in_library"
	if x, err := newExecutable(&missing, so, 2); err == nil {
		x.Close()
		t.Fatal("a plan naming a kernel its library lacks loaded")
	} else if !strings.Contains(err.Error(), "k_not_in_library") {
		t.Errorf("error %q does not name the kernel", err)
	}
}

package cpu

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"unsafe"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// winoCase is one convolution for TestDifferentialConvWino: its operand
// and result types and window, and whether genConvWino applies.
type winoCase struct {
	name            string
	dims, window    string
	x, w, out       string
	wino            bool
	tol             float64 // bound on |wino - interpreter| over Σ|x·w|
	parallelAtThree bool
	// poke puts infinities and a NaN into the input (1), and also an
	// infinity into the weights (2).
	poke int
}

var winoCases = []winoCase{
	// Odd output sizes (the last tile row and column half outside), an
	// odd input feature count and output features that fill no panel.
	{"odd", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [1, 1], pad = [[1, 1], [1, 1]]", "2x7x9x5xf32", "3x3x5x11xf32", "2x7x9x11xf32", true, 1e-6, false, 0},
	// Uneven and negative padding, a reversed window dimension.
	{"pad_reverse", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [1, 1], pad = [[2, 0], [-1, 1]], reverse = [true, false]", "1x8x10x4xf32", "3x3x4x16xf32", "1x8x8x16xf32", true, 1e-6, false, 0},
	// Output features not innermost, f64.
	{"nchw_out_f64", "[b, 0, 1, f]x[o, i, 0, 1]->[b, f, 0, 1]", "stride = [1, 1], pad = [[0, 1], [1, 1]]", "3x6x5x3xf64", "7x3x3x3xf64", "3x7x5x5xf64", true, 1e-14, false, 0},
	// No padding, and big enough to split over threads.
	{"valid_parallel", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [1, 1], pad = [[0, 0], [0, 0]]", "4x18x18x32xf32", "3x3x32x32xf32", "4x16x16x32xf32", true, 1e-6, true, 0},
	// Infinities and NaN: the tiles they reach are recomputed directly
	// (with them in the weights, every tile).
	{"nonfinite_input", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [1, 1], pad = [[1, 1], [1, 1]]", "2x9x8x5xf32", "3x3x5x11xf32", "2x9x8x11xf32", true, 1e-6, false, 1},
	{"nonfinite_weight", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [1, 1], pad = [[1, 1], [1, 1]]", "2x9x8x5xf64", "3x3x5x11xf64", "2x9x8x11xf64", true, 1e-14, false, 2},
	// Where it does not apply: strides, other windows, input features
	// not innermost.
	{"stride2", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [2, 2], pad = [[1, 1], [1, 1]]", "1x8x8x4xf32", "3x3x4x8xf32", "1x4x4x8xf32", false, 0, false, 0},
	{"window5", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [1, 1], pad = [[2, 2], [2, 2]]", "1x8x8x4xf32", "5x5x4x8xf32", "1x8x8x8xf32", false, 0, false, 0},
	{"empty", "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [1, 1], pad = [[1, 1], [1, 1]]", "0x8x8x4xf32", "3x3x4x8xf32", "0x8x8x8xf32", false, 0, false, 0},
	{"nchw_in", "[b, f, 0, 1]x[0, 1, i, o]->[b, 0, 1, f]", "stride = [1, 1], pad = [[1, 1], [1, 1]]", "1x4x8x8xf32", "3x3x4x8xf32", "1x8x8x8xf32", false, 0, false, 0},
}

func (c winoCase) program() string {
	return fmt.Sprintf(`func.func @main(%%x: tensor<%s>, %%w: tensor<%s>) -> tensor<%s> {
  %%0 = stablehlo.convolution(%%x, %%w) dim_numbers = %s, window = {%s} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<%s>, tensor<%s>) -> tensor<%s>
  return %%0 : tensor<%s>
}`, c.x, c.w, c.out, c.dims, c.window, c.x, c.w, c.out, c.out)
}

// TestDifferentialConvWino runs the Winograd candidate of each case's
// convolution on 1, 2 and 3 threads against the interpreter: every output
// within tol of Σ|x·w| (the transforms round differently from the
// reference's sum, so not bit for bit), the same bits on any thread count
// (each tile is one part's), and no candidate where it does not apply.
func TestDifferentialConvWino(t *testing.T) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	pl := &pipeline{b: New(), cc: comp, log: slog.Default()}
	for _, tc := range winoCases {
		for _, threads := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/%d", tc.name, threads), func(t *testing.T) {
				src := tc.program()
				m := parseText(t, src)
				l := lowerText(t, src, tc.name+".mlir")
				k, err := newKernel(l, l.roots[0], threads)
				if err != nil {
					t.Fatal(err)
				}
				wi := -1
				for c, cfg := range k.cands {
					if cfg.Name == "wino" {
						wi = c
					}
				}
				if (wi >= 0) != tc.wino {
					t.Fatalf("candidates %v: Winograd %v, want %v", k.cands, wi >= 0, tc.wino)
				}
				if wi < 0 {
					return
				}
				if par := k.parallel(k.cands[wi]); par != (tc.parallelAtThree && threads > 1) {
					t.Fatalf("%s: parallel %v at %d threads", k.cands[wi], par, threads)
				}
				checkWino(t, pl, m, k, wi, threads, tc.tol, tc.poke)
			})
		}
	}
}

// checkWino builds k's default and candidate wi, runs wi on 1 and
// threads threads on the harness's random inputs and compares it with
// the interpreter on those inputs.
func checkWino(t *testing.T, pl *pipeline, m *stablehlo.Module, k *kernel, wi, threads int, tol float64, poke int) {
	t.Helper()
	u, lib, h, done := openCandidates(t, pl, k, []int{0, wi})
	defer done()
	for i, v := range k.inputs {
		if v.Index == 0 && poke >= 1 {
			setFloat(h.bufs[i], v.Type.DType, map[int]float64{5: math.Inf(1), 100: math.Inf(-1), 333: math.NaN(), 334: math.Inf(1)})
		}
		if v.Index == 1 && poke >= 2 {
			setFloat(h.bufs[i], v.Type.DType, map[int]float64{7: math.Inf(1)})
		}
	}
	fn, err := resolveKernel(lib, u.syms[1])
	if err != nil {
		t.Fatal(err)
	}
	h.clearOutputs()
	fn.run(h.ptrs, 1)
	one := h.outputs()
	h.clearOutputs()
	fn.run(h.ptrs, threads)
	if many := h.outputs(); string(many[0]) != string(one[0]) {
		t.Errorf("output differs between 1 and %d threads", threads)
	}
	// The interpreter on the harness's inputs, and on their absolute
	// values for the error bound.
	args := make([]*stablehlo.Tensor, 2)
	abs := make([]*stablehlo.Tensor, 2)
	for i, v := range k.inputs {
		if v.Def != nil {
			t.Fatalf("kernel input %d is not a parameter", i)
		}
		data := unsafe.Slice((*byte)(h.bufs[i]), int(v.Type.ByteSize()))
		args[v.Index] = stablehlo.NewTensor(v.Type)
		copy(args[v.Index].Data, data)
		a := stablehlo.NewTensor(v.Type)
		copy(a.Data, data)
		if v.Type.DType == stablehlo.F32 {
			for j, x := range a.Float32s() {
				a.Float32s()[j] = float32(math.Abs(float64(x)))
			}
		} else {
			for j, x := range a.Float64s() {
				a.Float64s()[j] = math.Abs(x)
			}
		}
		abs[v.Index] = a
	}
	want, err := stablehlo.Eval(m, "", args)
	if err != nil {
		t.Fatal(err)
	}
	bound, err := stablehlo.Eval(m, "", abs)
	if err != nil {
		t.Fatal(err)
	}
	got := stablehlo.NewTensor(want[0].Type)
	copy(got.Data, one[0])
	worst := 0.0
	for j := int64(0); j < got.Type.NumElements(); j++ {
		g, w, b := got.Float64At(j), want[0].Float64At(j), bound[0].Float64At(j)
		if math.IsNaN(w) || math.IsInf(w, 0) {
			if !(g == w || math.IsNaN(g) && math.IsNaN(w)) {
				t.Fatalf("%s: element %d is %v, interpreter %v", k.cands[wi], j, g, w)
			}
			continue
		}
		e := math.Abs(g-w) / math.Max(b, 1e-30)
		if !(e <= tol) {
			t.Fatalf("%s: element %d is %v, interpreter %v (error %.3g of Σ|x·w| %v, want ≤ %g)", k.cands[wi], j, g, w, e, b, tol)
		}
		worst = max(worst, e)
	}
	t.Logf("%s: worst error %.3g of Σ|x·w|", k.cands[wi], worst)
}

// setFloat sets elements of the f32 or f64 buffer p.
func setFloat(p unsafe.Pointer, dt stablehlo.DType, vals map[int]float64) {
	for i, v := range vals {
		if dt == stablehlo.F32 {
			*(*float32)(unsafe.Add(p, 4*i)) = float32(v)
		} else {
			*(*float64)(unsafe.Add(p, 8*i)) = v
		}
	}
}

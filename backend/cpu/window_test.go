package cpu

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestReduceWindowRows checks reduce_window windows that keep the
// innermost dimension as the inner loop (genReduceWindowRows) against the
// interpreter, bit for bit, and that the others keep the general form:
// valid and padded (SAME) pools, strides, window and base dilations,
// negative padding, a sum from 1 (every padded position adds the init
// value), f64 and i32, a NaN and signed zeros among the
// inputs; and windows that are not row windows (a window or padding on
// the innermost dimension, two results, a row shorter than a vector).
// The f32 and f64 maximum and minimum row windows run the pooling
// routine (poolRoutine): each is checked as the routine and as the
// generated kernel (noRoutines), with the region's operands in either
// order (swap: maximum(element, accumulator)), which decides whose NaN
// a window keeps.
func TestReduceWindowRows(t *testing.T) {
	for _, c := range []struct {
		name, in, out, init, body, attrs string
		rows                             bool
		swap                             bool
	}{
		{"valid max pool", "4x8x8x16xf32", "4x4x4x16xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>", true, false},
		{"same max pool 3x3/2", "2x7x7x8xf32", "2x4x4x8xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = dense<[[0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>", true, false},
		{"min with dilations", "2x9x9x5xf32", "2x3x15x5xf32", "0x7F800000", "minimum", "window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 1, 1>, window_dilations = array<i64: 1, 2, 3, 1>, base_dilations = array<i64: 1, 1, 2, 1>, padding = dense<[[0, 0], [0, -1], [1, 0], [0, 0]]> : tensor<4x2xi64>", true, false},
		{"sum from 1, padded", "3x6x7xf32", "3x6x7xf32", "0x3F800000", "add", "window_dimensions = array<i64: 1, 3, 1>, padding = dense<[[0, 0], [1, 1], [0, 0]]> : tensor<3x2xi64>", true, false},
		{"f64 sum", "5x6x4xf64", "5x3x4xf64", "0x0000000000000000", "add", "window_dimensions = array<i64: 2, 2, 1>, window_strides = array<i64: 1, 2, 1>, padding = dense<[[1, 0], [0, 0], [0, 0]]> : tensor<3x2xi64>", true, false},
		{"i32 max", "6x10x8xi32", "3x9x8xi32", "-2147483648", "maximum", "window_dimensions = array<i64: 2, 2, 1>, window_strides = array<i64: 2, 1, 1>", true, false},
		{"window on the innermost", "4x8x8xf32", "4x4x4xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 2>, window_strides = array<i64: 1, 2, 2>", false, false},
		{"padded innermost", "4x8x8xf32", "4x4x10xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 1>, window_strides = array<i64: 1, 2, 1>, padding = dense<[[0, 0], [0, 0], [1, 1]]> : tensor<3x2xi64>", false, false},
		{"short rows", "4x8x3xf32", "4x4x3xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 1>, window_strides = array<i64: 1, 2, 1>", false, false},
		{"swapped max pool", "4x8x8x16xf32", "4x4x4x16xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>", true, true},
		{"swapped min, padded", "2x7x7x8xf32", "2x4x4x8xf32", "0x7F800000", "minimum", "window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = dense<[[0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>", true, true},
		{"f64 max pool", "3x6x6x4xf64", "3x3x3x4xf64", "0xFFF0000000000000", "maximum", "window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>", true, false},
		{"f64 min, overlapping", "3x6x6x4xf64", "3x5x5x4xf64", "0x7FF0000000000000", "minimum", "window_dimensions = array<i64: 1, 2, 2, 1>", true, false},
		{"rank 2, wide window", "9x12xf32", "2x12xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 5, 1>, window_strides = array<i64: 4, 1>", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			dt := c.in[strings.LastIndex(c.in, "x")+1:]
			src := fmt.Sprintf(`func.func @main(%%x: tensor<%[1]s>) -> tensor<%[2]s> {
  %%init = stablehlo.constant dense<%[3]s> : tensor<%[6]s>
  %%r = "stablehlo.reduce_window"(%%x, %%init) <{%[5]s}> ({
  ^bb0(%%a: tensor<%[6]s>, %%b: tensor<%[6]s>):
    %%m = stablehlo.%[4]s %%a, %%b : tensor<%[6]s>
    stablehlo.return %%m : tensor<%[6]s>
  }) : (tensor<%[1]s>, tensor<%[6]s>) -> tensor<%[2]s>
  return %%r : tensor<%[2]s>
}`, c.in, c.out, c.init, c.body, c.attrs, dt)
			if c.swap {
				src = strings.Replace(src, "%a, %b : tensor", "%b, %a : tensor", 1)
			}
			pooled := c.rows && (dt == "f32" || dt == "f64") && (c.body == "maximum" || c.body == "minimum")
			generated := New()
			generated.noRoutines = true
			// outs[backend][seed]: the routine must give the generated
			// kernel's bits, NaN payloads included (sameValues takes any
			// NaN for any other).
			var outs [2][3][]byte
			for bi, b := range []*Backend{New(), generated} {
				m, exe := compileTextWith(t, src, b)
				for _, op := range m.Main().Body.Ops {
					if op.Name == "reduce_window" && rowWindow(op) != c.rows {
						t.Errorf("rowWindow = %v, want %v", !c.rows, c.rows)
					}
				}
				routine := false
				for _, k := range exe.Kernels() {
					routine = routine || strings.HasPrefix(k.Name, "xk_rt_pool_")
				}
				if want := pooled && !b.noRoutines; routine != want {
					t.Errorf("noRoutines=%v: pooling routine %v, want %v: %+v", b.noRoutines, routine, want, exe.Kernels())
				}
				// The second NaN is the next element along the
				// dimension before the innermost: the same channel,
				// in the first window with the first NaN.
				shape := m.Main().Args[0].Type.Shape
				next := shape[len(shape)-1]
				for seed := uint64(1); seed <= 3; seed++ {
					args := randomArgs(m, seed)
					switch dt {
					case "f32":
						f := args[0].Float32s()
						// Two NaNs of different payloads: which one a
						// window keeps depends on the operand order.
						f[0], f[1], f[2] = float32(math.NaN()), float32(math.Copysign(0, -1)), 0
						f[next] = math.Float32frombits(0x7fc00123)
						f[len(f)-1] = float32(math.Copysign(0, -1))
					case "f64":
						f := args[0].Float64s()
						f[0], f[1], f[2] = math.NaN(), math.Copysign(0, -1), 0
						f[next] = math.Float64frombits(0x7ff8000000000123)
						f[len(f)-1] = math.Copysign(0, -1)
					}
					got, want := runBoth(t, exe, m, []*stablehlo.Tensor{args[0]})
					assertSame(t, fmt.Sprintf("%s (noRoutines=%v)", c.name, b.noRoutines), got, want)
					outs[bi][seed-1] = got[0].Data
				}
			}
			for seed := range outs[0] {
				if !bytes.Equal(outs[0][seed], outs[1][seed]) {
					t.Errorf("seed %d: the routine's result differs from the generated kernel's in its bits", seed+1)
				}
			}
		})
	}
}

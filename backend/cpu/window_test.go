package cpu

import (
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
func TestReduceWindowRows(t *testing.T) {
	for _, c := range []struct {
		name, in, out, init, body, attrs string
		rows                             bool
	}{
		{"valid max pool", "4x8x8x16xf32", "4x4x4x16xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 2, 1>", true},
		{"same max pool 3x3/2", "2x7x7x8xf32", "2x4x4x8xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 3, 3, 1>, window_strides = array<i64: 1, 2, 2, 1>, padding = dense<[[0, 0], [1, 1], [1, 1], [0, 0]]> : tensor<4x2xi64>", true},
		{"min with dilations", "2x9x9x5xf32", "2x3x15x5xf32", "0x7F800000", "minimum", "window_dimensions = array<i64: 1, 2, 2, 1>, window_strides = array<i64: 1, 2, 1, 1>, window_dilations = array<i64: 1, 2, 3, 1>, base_dilations = array<i64: 1, 1, 2, 1>, padding = dense<[[0, 0], [0, -1], [1, 0], [0, 0]]> : tensor<4x2xi64>", true},
		{"sum from 1, padded", "3x6x7xf32", "3x6x7xf32", "0x3F800000", "add", "window_dimensions = array<i64: 1, 3, 1>, padding = dense<[[0, 0], [1, 1], [0, 0]]> : tensor<3x2xi64>", true},
		{"f64 sum", "5x6x4xf64", "5x3x4xf64", "0x0000000000000000", "add", "window_dimensions = array<i64: 2, 2, 1>, window_strides = array<i64: 1, 2, 1>, padding = dense<[[1, 0], [0, 0], [0, 0]]> : tensor<3x2xi64>", true},
		{"i32 max", "6x10x8xi32", "3x9x8xi32", "-2147483648", "maximum", "window_dimensions = array<i64: 2, 2, 1>, window_strides = array<i64: 2, 1, 1>", true},
		{"window on the innermost", "4x8x8xf32", "4x4x4xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 2>, window_strides = array<i64: 1, 2, 2>", false},
		{"padded innermost", "4x8x8xf32", "4x4x10xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 1>, window_strides = array<i64: 1, 2, 1>, padding = dense<[[0, 0], [0, 0], [1, 1]]> : tensor<3x2xi64>", false},
		{"short rows", "4x8x3xf32", "4x4x3xf32", "0xFF800000", "maximum", "window_dimensions = array<i64: 1, 2, 1>, window_strides = array<i64: 1, 2, 1>", false},
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
			m, exe := compileText(t, src)
			for _, op := range m.Main().Body.Ops {
				if op.Name == "reduce_window" && rowWindow(op) != c.rows {
					t.Errorf("rowWindow = %v, want %v", !c.rows, c.rows)
				}
			}
			for seed := uint64(1); seed <= 3; seed++ {
				args := randomArgs(m, seed)
				if dt == "f32" {
					f := args[0].Float32s()
					f[0], f[1], f[2] = float32(math.NaN()), float32(math.Copysign(0, -1)), 0
					f[len(f)-1] = float32(math.Copysign(0, -1))
				}
				got, want := runBoth(t, exe, m, []*stablehlo.Tensor{args[0]})
				assertSame(t, c.name, got, want)
			}
		})
	}
}

package cpu

import (
	"fmt"
	"math"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestDifferentialMaxMinSpecial checks maximum and minimum (elementwise
// and in reduce: the branching helpers; in reduce_window: the masks on the
// bits, xk_maxf_sel in prelude.go) against the interpreter on every pair
// of special values: NaNs, signed zeros, infinities, subnormals and equal
// operands. Results are compared bit for bit (any NaN matches any NaN).
func TestDifferentialMaxMinSpecial(t *testing.T) {
	negZero := math.Copysign(0, -1)
	specials := []float64{0, negZero, 1, -1, math.Inf(1), math.Inf(-1), math.NaN(), 1e-310, -1e-310, 3.5, 3.5, 1e-45, -2.5}
	n := len(specials)
	// Every ordered pair: a[i*n+j] = specials[i], b[i*n+j] = specials[j].
	var a, b []float64
	for _, x := range specials {
		for _, y := range specials {
			a = append(a, x)
			b = append(b, y)
		}
	}
	for _, dt := range []string{"f32", "f64"} {
		for _, op := range []string{"maximum", "minimum"} {
			t.Run(dt+"/"+op, func(t *testing.T) {
				init := "0xFF800000"
				if op == "minimum" {
					init = "0x7F800000"
				}
				if dt == "f64" {
					init = "0xFFF0000000000000"
					if op == "minimum" {
						init = "0x7FF0000000000000"
					}
				}
				src := fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[1]dx%[2]s>, %%b: tensor<%[1]dx%[1]dx%[2]s>) -> (tensor<%[1]dx%[1]dx%[2]s>, tensor<%[1]dx%[2]s>, tensor<%[1]dx%[4]dx%[2]s>) {
  %%e = stablehlo.%[3]s %%a, %%b : tensor<%[1]dx%[1]dx%[2]s>
  %%init = stablehlo.constant dense<%[5]s> : tensor<%[2]s>
  %%r = stablehlo.reduce(%%e init: %%init) applies stablehlo.%[3]s across dimensions = [1] : (tensor<%[1]dx%[1]dx%[2]s>, tensor<%[2]s>) -> tensor<%[1]dx%[2]s>
  %%w = "stablehlo.reduce_window"(%%a, %%init) ({
    ^bb0(%%x: tensor<%[2]s>, %%y: tensor<%[2]s>):
      %%m = stablehlo.%[3]s %%x, %%y : tensor<%[2]s>
      stablehlo.return %%m : tensor<%[2]s>
  }) {window_dimensions = array<i64: 1, 2>, window_strides = array<i64: 1, 2>} : (tensor<%[1]dx%[1]dx%[2]s>, tensor<%[2]s>) -> tensor<%[1]dx%[4]dx%[2]s>
  return %%e, %%r, %%w : tensor<%[1]dx%[1]dx%[2]s>, tensor<%[1]dx%[2]s>, tensor<%[1]dx%[4]dx%[2]s>
}`, n, dt, op, n/2, init)
				m, exe := compileText(t, src)
				shape := []int64{int64(n), int64(n)}
				var ta, tb *stablehlo.Tensor
				var err error
				if dt == "f32" {
					ta, err = stablehlo.FromFloat32s(shape, f32s(a))
					if err == nil {
						tb, err = stablehlo.FromFloat32s(shape, f32s(b))
					}
				} else {
					ta, err = stablehlo.FromFloat64s(shape, a)
					if err == nil {
						tb, err = stablehlo.FromFloat64s(shape, b)
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				got, want := runBoth(t, exe, m, []*stablehlo.Tensor{ta, tb})
				assertSame(t, op, got, want)
			})
		}
	}
}

func f32s(v []float64) []float32 {
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(x)
	}
	return out
}

// TestDifferentialMaxMinConstant checks maximum and minimum of a value and
// a splat constant (constMinMax: a compare and select rather than the
// prelude's helper), with the constant on either side and either through
// a broadcast or direct, against the interpreter bit for bit on every
// special value, for constants that are signed zeros, finite, infinite and
// NaN (which keeps the helper).
func TestDifferentialMaxMinConstant(t *testing.T) {
	negZero := math.Copysign(0, -1)
	xs := []float64{0, negZero, 1, -1, math.Inf(1), math.Inf(-1), math.NaN(), 1e-310, -1e-310, 3.5, -2.5, 1e-45}
	consts := []float64{0, negZero, 1, -2.5, math.Inf(1), math.Inf(-1), math.NaN()}
	n := len(xs)
	for _, dt := range []string{"f32", "f64"} {
		for _, op := range []string{"maximum", "minimum"} {
			for _, c := range consts {
				t.Run(fmt.Sprintf("%s/%s/%v", dt, op, c), func(t *testing.T) {
					bits := fmt.Sprintf("0x%08X", math.Float32bits(float32(c)))
					if dt == "f64" {
						bits = fmt.Sprintf("0x%016X", math.Float64bits(c))
					}
					src := fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dx%[2]s>) -> (tensor<%[1]dx%[2]s>, tensor<%[1]dx%[2]s>) {
  %%c = stablehlo.constant dense<%[4]s> : tensor<%[1]dx%[2]s>
  %%s = stablehlo.constant dense<%[4]s> : tensor<%[2]s>
  %%b = stablehlo.broadcast_in_dim %%s, dims = [] : (tensor<%[2]s>) -> tensor<%[1]dx%[2]s>
  %%0 = stablehlo.%[3]s %%x, %%c : tensor<%[1]dx%[2]s>
  %%1 = stablehlo.%[3]s %%b, %%x : tensor<%[1]dx%[2]s>
  return %%0, %%1 : tensor<%[1]dx%[2]s>, tensor<%[1]dx%[2]s>
}`, n, dt, op, bits)
					m, exe := compileText(t, src)
					var x *stablehlo.Tensor
					var err error
					if dt == "f32" {
						x, err = stablehlo.FromFloat32s([]int64{int64(n)}, f32s(xs))
					} else {
						x, err = stablehlo.FromFloat64s([]int64{int64(n)}, xs)
					}
					if err != nil {
						t.Fatal(err)
					}
					got, want := runBoth(t, exe, m, []*stablehlo.Tensor{x})
					assertSame(t, op, got, want)
				})
			}
		}
	}
}

// TestConstMinMaxSelect checks which float maxima and minima become a
// select (constMinMax) and with which comparison: strict only where the
// constant is the zero that loses a tie, none for a NaN constant or two
// variables.
func TestConstMinMaxSelect(t *testing.T) {
	for _, c := range []struct {
		op, cst string
		want    string // "" when the helper stays
	}{
		{"maximum", "0.0", "(x <= c ? c : x)"},
		{"maximum", "-0.0", "(x < c ? c : x)"},
		{"maximum", "2.5", "(x <= c ? c : x)"},
		{"minimum", "0.0", "(x > c ? c : x)"},
		{"minimum", "-0.0", "(x >= c ? c : x)"},
		{"minimum", "0x7FC00000", ""},
	} {
		src := fmt.Sprintf(`func.func @main(%%x: tensor<4xf32>) -> tensor<4xf32> {
  %%c = stablehlo.constant dense<%s> : tensor<4xf32>
  %%0 = stablehlo.%s %%x, %%c : tensor<4xf32>
  return %%0 : tensor<4xf32>
}`, c.cst, c.op)
		m, err := stablehlo.Parse([]byte(src), "t.mlir")
		if err != nil {
			t.Fatal(err)
		}
		var op *stablehlo.Op
		for _, o := range m.Main().Body.Ops {
			if o.Name == c.op {
				op = o
			}
		}
		got, ok := constMinMax(op, "x", "c", stablehlo.F32)
		if c.want == "" {
			if ok {
				t.Errorf("%s with %s: select %s, want the helper", c.op, c.cst, got)
			}
			continue
		}
		if !ok || got != c.want {
			t.Errorf("%s with %s: %q (%v), want %q", c.op, c.cst, got, ok, c.want)
		}
	}
}

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

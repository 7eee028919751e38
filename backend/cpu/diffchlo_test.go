package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// chloProgram applies every chlo function JAX emits (erf, erf_inv,
// lgamma, digamma, bessel_i0e, bessel_i1e, next_after, top_k), cbrt and
// cholesky (both triangles, batched) to inputs given in f64 and converted
// to dt, so the special values survive into every type.
func chloProgram(dt string) string {
	r := strings.NewReplacer("T", dt)
	return r.Replace(`func.func @main(%xd: tensor<40xf64>, %yd: tensor<40xf64>, %td: tensor<4x8xf64>, %cd: tensor<3x3x3xf64>) -> (tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<3x3x3xT>, tensor<3x3x3xT>, tensor<40xT>, tensor<4x3xT>, tensor<4x3xi32>) {
  %x = stablehlo.convert %xd : (tensor<40xf64>) -> tensor<40xT>
  %y = stablehlo.convert %yd : (tensor<40xf64>) -> tensor<40xT>
  %t = stablehlo.convert %td : (tensor<4x8xf64>) -> tensor<4x8xT>
  %0 = chlo.erf %x : tensor<40xT> -> tensor<40xT>
  %1 = chlo.erf_inv %y : tensor<40xT> -> tensor<40xT>
  %2 = chlo.lgamma %x : tensor<40xT> -> tensor<40xT>
  %3 = chlo.digamma %x : tensor<40xT> -> tensor<40xT>
  %4 = chlo.bessel_i0e %x : tensor<40xT> -> tensor<40xT>
  %5 = chlo.bessel_i1e %x : tensor<40xT> -> tensor<40xT>
  %6 = stablehlo.cbrt %x : tensor<40xT>
  %c = stablehlo.convert %cd : (tensor<3x3x3xf64>) -> tensor<3x3x3xT>
  %lo = stablehlo.cholesky %c, lower = true : tensor<3x3x3xT>
  %up = stablehlo.cholesky %c, lower = false : tensor<3x3x3xT>
  %7 = "chlo.next_after"(%x, %y) : (tensor<40xT>, tensor<40xT>) -> tensor<40xT>
  %v, %i = chlo.top_k(%t, k = 3) : tensor<4x8xT> -> (tensor<4x3xT>, tensor<4x3xi32>)
  return %0, %1, %2, %3, %4, %5, %6, %lo, %up, %7, %v, %i : tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<40xT>, tensor<3x3x3xT>, tensor<3x3x3xT>, tensor<40xT>, tensor<4x3xT>, tensor<4x3xi32>
}
`)
}

// TestDifferentialChlo compares the chlo special functions, cbrt and
// cholesky on f16, bf16, f32 and f64 with the interpreter: next_after and
// top_k bit for bit (next_after steps by one ULP of the element type, and
// next_after(+0, -0) is -0), the others within a tolerance of the type's
// precision (C's libm and Go's math may differ in the last bit of a
// double; the C compiler may fuse multiply-adds). Inputs include NaN,
// ±Inf, ±0, the poles of lgamma and digamma, the Bessel approximations'
// switch at |x| = 8, ±1 for erf_inv, and a matrix that is not positive
// definite.
func TestDifferentialChlo(t *testing.T) {
	tol := map[string]float64{"f16": 1e-2, "bf16": 1e-2, "f32": 1e-5, "f64": 1e-9}
	rng := rand.New(rand.NewPCG(23, 9))
	for _, dt := range []string{"f16", "bf16", "f32", "f64"} {
		t.Run(dt, func(t *testing.T) {
			m, exe := compileText(t, chloProgram(dt))
			for seed := uint64(0); seed < 3; seed++ {
				args := stablehlo.RandomArgs(m.Main(), seed)
				x, y, tk := args[0].Float64s(), args[1].Float64s(), args[2].Float64s()
				xs := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), 1, 2, -1, -2, -3.5,
					0.5, 8, math.Nextafter(8, 9), 9, 50, -50, 1e-30, 100, 1e5, -7.25, 0, 1}
				ys := []float64{math.NaN(), 1, -1, math.Copysign(0, -1), 0, 1, -1, 0.999, -0.999, 1.5,
					-1.5, 0.25, 8, -8, 50, 1, -1e-30, 100, 1e5, -7.25, -1, 1}
				copy(x, xs)
				copy(y, ys)
				for j := len(xs); j < len(x); j++ {
					x[j] = (rng.Float64()*2 - 1) * 20
					y[j] = rng.Float64()*2 - 1
				}
				tk[1], tk[2] = tk[5], tk[5] // a tie
				// cholesky: two symmetric positive definite matrices (each
				// triangle's other half is garbage, never read) and one
				// with a negative pivot (NaN from there on).
				c := args[3].Float64s()
				spd := []float64{4 + float64(seed), 1, 0.5, 1, 5, 1, 0.5, 1, 6}
				copy(c, spd)
				copy(c[9:], spd)
				c[9+1], c[9+5] = 99, -99 // upper half of batch 1 (lower = true ignores it)
				copy(c[18:], []float64{1, 2, 0, 2, 1, 0, 0, 0, 1})
				got, want := runBoth(t, exe, m, args)
				assertClose(t, got[:9], want[:9], tol[dt])
				assertSame(t, fmt.Sprint("seed ", seed), got, want, 9, 10, 11)
			}
		})
	}
}

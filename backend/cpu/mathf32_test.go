package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// f32MathEdges are inputs where the prelude's xk_expf and xk_tanhf
// (branch-free, computed in double) change regime: zeros, subnormals, the
// clamps (|x| = 10 for tanh, 100 and -200 for exp), where f32 exp
// overflows (88.72) and underflows to subnormals and to zero (-87.34,
// -103.97), infinities and NaNs of both signs.
var f32MathEdges = []float32{
	0, float32(math.Copysign(0, -1)), math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32,
	1e-30, -1e-30, 1e-8, -1e-8, 0.3465, -0.3466, 0.5, -0.5, 1, -1, 2, -2,
	9, 9.01, 9.02, 10, -10, 10.5, 100, -100, 200, -200, 1000, -1000,
	88.72, 88.7228, 88.723, 89, -87.33, -87.34, -103.97, -103.98, -104, -150,
	math.MaxFloat32, -math.MaxFloat32,
	float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), -float32(math.NaN()),
}

// TestDifferentialExpTanhF32 compares f32 exponential and tanh, alone and
// fused into an elementwise chain (without a multiply-add, which the C
// compiler may contract), with the interpreter bit for bit
// (NaN matching any NaN) on the edge values, on every kind of bit
// pattern (uniform over the 2^32 patterns) and on the ranges that
// matter, at sizes 0, 1, odd and beyond a vector's width, so that the
// vectorized loops and their scalar remainders both run.
func TestDifferentialExpTanhF32(t *testing.T) {
	for _, n := range []int{0, 1, 7, 64, 4099} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			src := fmt.Sprintf(`module @m {
  func.func @main(%%x: tensor<%[1]dxf32>, %%b: tensor<%[1]dxf32>) -> (tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>) {
    %%0 = stablehlo.exponential %%x : tensor<%[1]dxf32>
    %%1 = stablehlo.tanh %%x : tensor<%[1]dxf32>
    %%2 = stablehlo.subtract %%x, %%b : tensor<%[1]dxf32>
    %%3 = stablehlo.add %%2, %%b : tensor<%[1]dxf32>
    %%4 = stablehlo.tanh %%3 : tensor<%[1]dxf32>
    %%5 = stablehlo.exponential %%4 : tensor<%[1]dxf32>
    %%6 = stablehlo.add %%5, %%1 : tensor<%[1]dxf32>
    return %%0, %%1, %%6 : tensor<%[1]dxf32>, tensor<%[1]dxf32>, tensor<%[1]dxf32>
  }
}`, n)
			m, exe := compileText(t, src)
			typ := stablehlo.TensorType{DType: stablehlo.F32, Shape: []int64{int64(n)}}
			for seed := uint64(1); seed <= 3; seed++ {
				rng := rand.New(rand.NewPCG(seed, 23))
				x, b := stablehlo.NewTensor(typ), stablehlo.NewTensor(typ)
				xs, bs := x.Float32s(), b.Float32s()
				for i := range xs {
					switch {
					case i < len(f32MathEdges) && seed == 1:
						xs[i] = f32MathEdges[i]
					case i%3 == 0:
						xs[i] = math.Float32frombits(rng.Uint32())
					case i%3 == 1:
						xs[i] = float32(rng.Float64()*40 - 20)
					default:
						xs[i] = float32(rng.Float64()*240 - 130)
					}
					bs[i] = float32(rng.Float64()*4 - 2)
				}
				got, want := runBoth(t, exe, m, []*stablehlo.Tensor{x, b})
				for j := range want {
					if i, ok := sameValues(got[j], want[j]); !ok && i < 0 {
						t.Errorf("seed %d output %d: type %s, want %s", seed, j, got[j].Type, want[j].Type)
					} else if !ok {
						t.Errorf("seed %d output %d element %d (x = %v, b = %v): cpu %v, interpreter %v",
							seed, j, i, xs[i], bs[i], got[j].Float32s()[i], want[j].Float32s()[i])
					}
				}
			}
		})
	}
}

// TestDifferentialReshapeGroups checks reshapes fused into a kernel
// (reshapeIndex: dim groups of equal size, dims of size 1, one group
// spanning unequal dims, empty tensors, scalars) against the interpreter,
// bit for bit: a wrong index reads a different one of the distinct inputs.
func TestDifferentialReshapeGroups(t *testing.T) {
	shape := func(s []int64) string {
		var b []byte
		for _, n := range s {
			b = fmt.Appendf(b, "%dx", n)
		}
		return fmt.Sprintf("tensor<%sf32>", b)
	}
	for _, c := range []struct{ from, to []int64 }{
		{[]int64{2, 3, 5, 7}, []int64{6, 35}},
		{[]int64{6, 35}, []int64{2, 3, 5, 7}},
		{[]int64{8, 32, 128}, []int64{256, 128}},
		{[]int64{8, 32}, []int64{8, 32, 1}},
		{[]int64{1, 4, 1, 6}, []int64{24}},
		{[]int64{24}, []int64{2, 1, 12}},
		{[]int64{4, 6}, []int64{3, 8}},
		{[]int64{2, 4, 6}, []int64{2, 3, 8}},
		{[]int64{3, 1, 5}, []int64{15, 1}},
		{[]int64{5, 7}, []int64{35}},
		{[]int64{0, 3}, []int64{3, 0}},
		{[]int64{1}, []int64{}},
		{[]int64{}, []int64{1, 1}},
		{[]int64{1, 1, 1}, []int64{1}},
	} {
		from, to := shape(c.from), shape(c.to)
		t.Run(from+"->"+to, func(t *testing.T) {
			src := fmt.Sprintf(`module @m {
  func.func @main(%%x: %[1]s, %%y: %[2]s) -> %[2]s {
    %%0 = stablehlo.reshape %%x : (%[1]s) -> %[2]s
    %%1 = stablehlo.subtract %%0, %%y : %[2]s
    return %%1 : %[2]s
  }
}`, from, to)
			m, exe := compileText(t, src)
			args := randomArgs(m, 5)
			for i := range args[0].Float32s() {
				args[0].Float32s()[i] = float32(i + 1)
			}
			got, want := runBoth(t, exe, m, args)
			assertSame(t, "", got, want)
		})
	}
}

package cpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// triSolveXLAProgram solves with every side, triangle, transpose and
// diagonal option on f32 or f64 (T): 2 batches of 9×9 (XLA's inverted
// diagonal blocks, with a depth past Eigen's 8-step peel) and 9 batches
// of 3×3 (more than 8 batches of small matrices: XLA's direct
// substitution).
func triSolveXLAProgram(dt string) string {
	var b strings.Builder
	b.WriteString("func.func @main(%a: tensor<2x9x9xT>, %l: tensor<2x9x5xT>, %r: tensor<2x5x9xT>, %s: tensor<9x3x3xT>, %t: tensor<9x3x2xT>) -> (")
	var outs, types []string
	var body []string
	i := 0
	for _, left := range []bool{true, false} {
		for _, lower := range []bool{true, false} {
			for _, tr := range []string{"NO_TRANSPOSE", "TRANSPOSE"} {
				for _, unit := range []bool{false, true} {
					attrs := fmt.Sprintf(`<{left_side = %v, lower = %v, transpose_a = #stablehlo<transpose %s>, unit_diagonal = %v}>`, left, lower, tr, unit)
					bv, bt := "%r", "tensor<2x5x9xT>"
					if left {
						bv, bt = "%l", "tensor<2x9x5xT>"
					}
					body = append(body, fmt.Sprintf(`  %%o%d = "stablehlo.triangular_solve"(%%a, %s) %s : (tensor<2x9x9xT>, %s) -> %s`, i, bv, attrs, bt, bt))
					outs, types = append(outs, fmt.Sprintf("%%o%d", i)), append(types, bt)
					i++
					if left && !unit {
						body = append(body, fmt.Sprintf(`  %%o%d = "stablehlo.triangular_solve"(%%s, %%t) %s : (tensor<9x3x3xT>, tensor<9x3x2xT>) -> tensor<9x3x2xT>`, i, attrs))
						outs, types = append(outs, fmt.Sprintf("%%o%d", i)), append(types, "tensor<9x3x2xT>")
						i++
					}
				}
			}
		}
	}
	b.WriteString(strings.Join(types, ", ") + ") {\n" + strings.Join(body, "\n") + "\n  return " + strings.Join(outs, ", ") + " : " + strings.Join(types, ", ") + "\n}\n")
	return strings.NewReplacer("T>", dt+">").Replace(b.String())
}

// TestDifferentialTriSolveXLA checks that the cpu backend's f32 and f64
// triangular_solve is bit for bit the interpreter's (both follow XLA's
// expander and Eigen's dot orders, stablehlo/trisolvexla.go), on
// ill-conditioned matrices where another summation order would differ.
func TestDifferentialTriSolveXLA(t *testing.T) {
	for _, dt := range []string{"f32", "f64"} {
		t.Run(dt, func(t *testing.T) {
			m, exe := compileText(t, triSolveXLAProgram(dt))
			for seed := uint64(0); seed < 3; seed++ {
				args := stablehlo.RandomArgs(m.Main(), seed)
				for _, x := range args[:4:4] {
					if x.Type.Shape[1] != x.Type.Shape[2] {
						continue
					}
					n := x.Type.Shape[1]
					for bt := int64(0); bt < x.Type.Shape[0]; bt++ {
						for i := int64(0); i < n; i++ {
							// Small diagonals make the solves ill-conditioned.
							x.Data = setF(x, bt*n*n+i*n+i, 0.25+0.1*float64(i))
						}
					}
				}
				got, want := runBoth(t, exe, m, args)
				assertSame(t, fmt.Sprint("seed ", seed), got, want)
			}
		})
	}
}

// setF sets element i of the f32 or f64 tensor x to v and returns its data.
func setF(x *stablehlo.Tensor, i int64, v float64) []byte {
	if x.Type.DType == stablehlo.F32 {
		x.Float32s()[i] = float32(v)
	} else {
		x.Float64s()[i] = v
	}
	return x.Data
}

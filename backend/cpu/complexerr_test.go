package cpu

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// TestComplexUnsupported checks that every op the backend does not lower
// on complex values is rejected, naming the op and the type, before any
// C is compiled: as unsupported when the verifier accepts the op on
// complex operands, else by the verifier. The programs are written on
// f32 and retyped to complex<f32> after parsing, so the test covers ops
// whether or not the front end accepts them on complex operands.
func TestComplexUnsupported(t *testing.T) {
	progs := map[string]string{
		"maximum":          `%0 = stablehlo.maximum %x, %y : tensor<4x4xf32>`,
		"minimum":          `%0 = stablehlo.minimum %x, %y : tensor<4x4xf32>`,
		"remainder":        `%0 = stablehlo.remainder %x, %y : tensor<4x4xf32>`,
		"atan2":            `%0 = stablehlo.atan2 %x, %y : tensor<4x4xf32>`,
		"floor":            `%0 = stablehlo.floor %x : tensor<4x4xf32>`,
		"cbrt":             `%0 = stablehlo.cbrt %x : tensor<4x4xf32>`,
		"chlo.erf":         `%0 = chlo.erf %x : tensor<4x4xf32> -> tensor<4x4xf32>`,
		"clamp":            `%0 = stablehlo.clamp %x, %y, %x : tensor<4x4xf32>`,
		"cholesky":         `%0 = stablehlo.cholesky %x, lower = true : tensor<4x4xf32>`,
		"triangular_solve": `%0 = "stablehlo.triangular_solve"(%x, %y) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>`,
	}
	t.Setenv(cc.EnvCC, "/nonexistent/cc-must-not-run")
	for name, line := range progs {
		t.Run(name, func(t *testing.T) {
			src := "func.func @main(%x: tensor<4x4xf32>, %y: tensor<4x4xf32>) -> tensor<4x4xf32> {\n  " + line +
				"\n  return %0 : tensor<4x4xf32>\n}\n"
			m, err := stablehlo.Parse([]byte(src), "test.mlir")
			if err != nil {
				t.Skipf("front end: %v", err)
			}
			fn := m.Main()
			retype := func(v *stablehlo.Value) {
				if v.Type.DType == stablehlo.F32 {
					v.Type.DType = stablehlo.C64
				}
			}
			for _, a := range fn.Args {
				retype(a)
			}
			for _, op := range fn.Body.Ops {
				for _, v := range op.Results {
					retype(v)
				}
			}
			verr := stablehlo.Verify(m)
			_, err = New().CompileModule(context.Background(), m, nil)
			if err == nil || (verr == nil && !errors.Is(err, stablehlo.ErrUnsupported)) {
				t.Fatalf("want an unsupported error, got %v (verifier: %v)", err, verr)
			}
			if !strings.Contains(err.Error(), name) || !strings.Contains(err.Error(), "complex<f32>") {
				t.Fatalf("error does not name the op and the type: %v", err)
			}
		})
	}
}

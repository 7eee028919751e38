package stablehlo

import (
	"fmt"
	"testing"
)

// mlpProgram is one dense layer of the MLP example: relu(x·W + b).
func mlpProgram(batch, in, out int) string {
	return fmt.Sprintf(`func.func @main(%%x: tensor<%[1]dx%[2]dxf32>, %%w: tensor<%[2]dx%[3]dxf32>, %%b: tensor<%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32> {
  %%0 = stablehlo.dot_general %%x, %%w, contracting_dims = [1] x [0] : (tensor<%[1]dx%[2]dxf32>, tensor<%[2]dx%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32>
  %%1 = stablehlo.broadcast_in_dim %%b, dims = [1] : (tensor<%[3]dxf32>) -> tensor<%[1]dx%[3]dxf32>
  %%2 = stablehlo.add %%0, %%1 : tensor<%[1]dx%[3]dxf32>
  %%z = stablehlo.constant dense<0.0> : tensor<%[1]dx%[3]dxf32>
  %%3 = stablehlo.maximum %%2, %%z : tensor<%[1]dx%[3]dxf32>
  return %%3 : tensor<%[1]dx%[3]dxf32>
}`, batch, in, out)
}

// BenchmarkMLPLayer evaluates a 64x784 · 784x512 layer (the MLP example's
// first layer); b.ReportMetric gives GFLOP/s.
func BenchmarkMLPLayer(b *testing.B) {
	m, err := Parse([]byte(mlpProgram(64, 784, 512)), "mlp.mlir")
	if err != nil {
		b.Fatal(err)
	}
	x, w, bias := f32In(-1, 1, 64, 784), f32In(-0.1, 0.1, 784, 512), f32In(-1, 1, 512)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := Eval(m, "", []*Tensor{x, w, bias}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(2*64*784*512*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

func BenchmarkParseConformanceSized(b *testing.B) {
	src := []byte(mlpProgram(64, 784, 512))
	for i := 0; i < b.N; i++ {
		if _, err := Parse(src, "mlp.mlir"); err != nil {
			b.Fatal(err)
		}
	}
}

package stablehlo

import (
	"bytes"
	"testing"
)

func TestRandomArgs(t *testing.T) {
	src := `func.func @main(%w: tensor<16x4xf32>, %b: tensor<4xf64>, %n: tensor<8xi32>, %u: tensor<8xui8>, %p: tensor<8xi1>) -> tensor<4xf64> {
  return %b : tensor<4xf64>
}
`
	m, err := Parse([]byte(src), "r.mlir")
	if err != nil {
		t.Fatal(err)
	}
	fn := m.Main()
	a, b, c := RandomArgs(fn, 1), RandomArgs(fn, 1), RandomArgs(fn, 2)
	if len(a) != 5 {
		t.Fatalf("%d arguments", len(a))
	}
	for i := range a {
		if !a[i].Type.Equal(fn.Args[i].Type) || !bytes.Equal(a[i].Data, b[i].Data) {
			t.Errorf("argument %d: type %s or values differ for the same seed", i, a[i].Type)
		}
	}
	if bytes.Equal(a[0].Data, c[0].Data) {
		t.Error("seeds 1 and 2 gave the same matrix")
	}
	for j, v := range a[0].Float32s() {
		if v < -0.5 || v >= 0.5 { // 2/sqrt(16)
			t.Errorf("matrix element %d = %v, outside [-0.5, 0.5)", j, v)
		}
	}
	for j, v := range a[1].Float64s() {
		if v < -1 || v >= 1 {
			t.Errorf("vector element %d = %v, outside [-1, 1)", j, v)
		}
	}
	for j := int64(0); j < 8; j++ {
		if n := a[2].Float64At(j); n < -8 || n > 8 {
			t.Errorf("i32 element %d = %v", j, n)
		}
		if u := a[3].Float64At(j); u < 0 || u > 8 {
			t.Errorf("ui8 element %d = %v", j, u)
		}
		if p := a[4].Data[j]; p > 1 {
			t.Errorf("i1 element %d = %d", j, p)
		}
	}
}

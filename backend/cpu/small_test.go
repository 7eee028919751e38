package cpu

import (
	"strings"
	"testing"
)

// TestSmallKernels checks which kernels are built at -O1 (XK_SMALL):
// those touching at most smallElements elements, not a bigger elementwise
// loop, a reduction of a bigger operand or a product doing more
// multiply-adds than that. The small ones still match the interpreter.
func TestSmallKernels(t *testing.T) {
	src := `func.func @main(%a: tensor<16x10xf32>, %b: tensor<64x64xf32>, %c: tensor<4x300xf32>, %d: tensor<12x12xf32>) -> (tensor<16x10xf32>, tensor<64x64xf32>, tensor<4xf32>, tensor<12x12xf32>) {
  %0 = stablehlo.exponential %a : tensor<16x10xf32>
  %1 = stablehlo.exponential %b : tensor<64x64xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x300xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = stablehlo.dot_general %d, %d, contracting_dims = [1] x [0] : (tensor<12x12xf32>, tensor<12x12xf32>) -> tensor<12x12xf32>
  return %0, %1, %2, %3 : tensor<16x10xf32>, tensor<64x64xf32>, tensor<4xf32>, tensor<12x12xf32>
}`
	l, err := analyze(parseText(t, src).Main(), "small")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"exponential tensor<16x10xf32>": true, "exponential tensor<64x64xf32>": false, "reduce tensor<4xf32>": false, "dot_general tensor<12x12xf32>": false}
	for _, op := range l.roots {
		k, err := newKernel(l, op, 1)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[k.desc]
		if !ok {
			t.Fatalf("unexpected kernel %s", k.desc)
		}
		delete(want, k.desc)
		body, err := k.body(k.cands[0], "k")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(body, "XK_SMALL void k("); got != w {
			t.Errorf("%s: built at -O1 %v, want %v", k.desc, got, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("kernels not found: %v", want)
	}
	m, exe := compileText(t, src)
	got, want2 := runBoth(t, exe, m, randomArgs(m, 3))
	for i := range 3 { // the product may contract multiply-adds
		if j, ok := sameValues(got[i], want2[i]); !ok {
			t.Errorf("output %d differs from the interpreter at %d", i, j)
		}
	}
}

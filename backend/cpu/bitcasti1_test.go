package cpu

import (
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestBitcastI1ToI1 checks that bitcast_convert from i1 to i1 compiles
// and is the identity, alone and fused with a use, as in the
// interpreter (i1 to any other type stays unsupported there).
func TestBitcastI1ToI1(t *testing.T) {
	m, exe := compileText(t, `func.func @main(%p: tensor<2x3xi1>, %q: tensor<2x3xi1>) -> (tensor<2x3xi1>, tensor<2x3xi1>) {
  %b = stablehlo.bitcast_convert %p : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %c = stablehlo.bitcast_convert %q : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %n = stablehlo.not %c : tensor<2x3xi1>
  %a = stablehlo.and %n, %p : tensor<2x3xi1>
  return %b, %a : tensor<2x3xi1>, tensor<2x3xi1>
}`)
	p, _ := stablehlo.FromBools([]int64{2, 3}, []bool{true, false, false, true, true, false})
	q, _ := stablehlo.FromBools([]int64{2, 3}, []bool{false, false, true, true, false, true})
	got, want := runBoth(t, exe, m, []*stablehlo.Tensor{p, q})
	assertSame(t, "", got, want)
	for j, w := range []int64{1, 0, 0, 1, 1, 0} {
		if g := got[0].Int64At(int64(j)); g != w {
			t.Errorf("identity: element %d = %d, want %d", j, g, w)
		}
	}
	for j, w := range []int64{1, 0, 0, 0, 1, 0} {
		if g := got[1].Int64At(int64(j)); g != w {
			t.Errorf("not(q) and p: element %d = %d, want %d", j, g, w)
		}
	}
}

package cpu

import (
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestOpTableRowsAreConsistent checks each row of opTable against the
// rules its fields document, so that a new row cannot silently miss a
// field the lowering reads for its family.
func TestOpTableRowsAreConsistent(t *testing.T) {
	known := map[string]bool{}
	for _, n := range stablehlo.SupportedOps() {
		known[n] = true
	}
	for name, s := range opTable {
		if !known[name] {
			t.Errorf("%s: not an op the front end accepts (stablehlo.SupportedOps)", name)
		}
		inline := s.family == famElementwise || s.family == famIndex
		switch {
		case s.family < famElementwise || s.family > famPlumbing:
			t.Errorf("%s: no family", name)
		case (s.family == famRoot) != (s.kernel != nil):
			t.Errorf("%s: family %d with kernel constructor %v: roots, and only roots, build kernels", name, s.family, s.kernel != nil)
		case !inline && (s.cost != 0 || s.exact):
			t.Errorf("%s: cost or exact set on an op that is never computed inline", name)
		case inline && s.cost != 0 && s.cost != 1 && s.cost != 8:
			t.Errorf("%s: cost %d, want one of the documented 0, 1 or 8", name, s.cost)
		case s.readsMemory && s.family != famRoot:
			t.Errorf("%s: readsMemory on an op that is not a root", name)
		case s.family == famControl && s.check == nil:
			t.Errorf("%s: control op without checkControl", name)
		}
	}
}

// TestOpTableKernelKinds checks that every root's kernel constructor sets
// a kind (which names its autotune records) and a generator.
func TestOpTableKernelKinds(t *testing.T) {
	m, err := stablehlo.Parse([]byte(`func.func @main(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = stablehlo.concatenate %x, %x, dim = 0 : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<8x4xf32>
  %1 = stablehlo.slice %0 [0:4, 0:4] : (tensor<8x4xf32>) -> tensor<4x4xf32>
  return %1 : tensor<4x4xf32>
}`), "kinds")
	if err != nil {
		t.Fatal(err)
	}
	l, err := analyze(m.Main(), "kinds")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		op   *stablehlo.Op
		kind string
	}{{l.roots[0], "concat"}, {l.roots[1], "loop"}} {
		k, err := newKernel(l, c.op, 1)
		if err != nil {
			t.Fatal(err)
		}
		if k.kind != c.kind || k.gen == nil || len(k.cands) == 0 {
			t.Errorf("%s: kind %q (want %q), generator set %v, %d candidates", c.op.Name, k.kind, c.kind, k.gen != nil, len(k.cands))
		}
	}
}

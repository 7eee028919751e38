package cpu

import (
	"fmt"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers the data-movement roots concatenate and pad (the
// movement ops that are computed inline, such as broadcast_in_dim,
// transpose and slice, are in emit.go's computeRaw).

func genConcat(g *gen, op *stablehlo.Op) {
	r := op.Results[0]
	out := g.output(r)
	dim := int(op.Attrs.Dimension)
	base := int64(0)
	for _, o := range op.Operands {
		idx := g.loops(o.Type.Shape, "i")
		x := g.val(o, idx)
		oi := append([]string(nil), idx...)
		oi[dim] = fmt.Sprintf("(%s + %d)", idx[dim], base)
		g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, x))
		g.endLoops(len(idx))
		base += o.Type.Shape[dim]
	}
}

func genPad(g *gen, op *stablehlo.Op) {
	r := op.Results[0]
	out := g.output(r)
	pv := g.val(op.Operands[1], nil)
	g.line("for (int64_t i = 0; i < %d; i++) %s[i] = %s;", r.Type.NumElements(), out, storeExpr(r.Type.DType, pv))
	o := op.Operands[0]
	idx := g.loops(o.Type.Shape, "i")
	var conds []string
	oi := make([]string, len(idx))
	for d := range idx {
		lo, in := op.Attrs.EdgePaddingLow[d], op.Attrs.InteriorPadding[d]
		oi[d] = g.name("p")
		g.line("const int64_t %s = %s*%d + %d;", oi[d], idx[d], in+1, lo)
		conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", oi[d], oi[d], r.Type.Shape[d]))
	}
	g.openIf(conds)
	x := g.val(o, idx)
	g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, x))
	g.closeBlock()
	g.endLoops(len(idx))
}

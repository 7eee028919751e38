package cpu

import (
	"slices"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers sort and chlo.top_k, both kernel roots, as the
// interpreter does (stablehlo/sort.go).

// genSort sorts every 1-D slice along the dimension with a stable
// bottom-up merge sort of positions; the comparator region decides
// "less", and all operands are permuted alike (§sort).
func genSort(g *gen, op *stablehlo.Op) {
	t0 := op.Operands[0].Type
	dim := int(op.Attrs.Dimension)
	if dim < 0 {
		dim += t0.Rank()
	}
	n := t0.Shape[dim]
	outs := make([]string, len(op.Results))
	for i, r := range op.Results {
		outs[i] = g.output(r)
	}
	if t0.NumElements() == 0 {
		return
	}
	g.line("int64_t* perm = (int64_t*)malloc(sizeof(int64_t) * %d);", 2*n)
	g.line("if (!perm) { XK_ALLOC_FAILED(); return; }")
	g.line("int64_t* tmp = perm + %d;", n)
	outer := slices.Clone(t0.Shape)
	outer[dim] = 1
	oi := g.loops(outer, "o")
	g.line("for (int64_t i = 0; i < %d; i++) perm[i] = i;", n)
	g.line("for (int64_t width = 1; width < %d; width *= 2) {", n)
	g.ind++
	g.line("for (int64_t lo = 0; lo < %d; lo += 2 * width) {", n)
	g.ind++
	g.line("int64_t mid = lo + width < %d ? lo + width : %d, hi = lo + 2 * width < %d ? lo + 2 * width : %d;", n, n, n, n)
	g.line("int64_t a = lo, b = mid, k = lo;")
	g.openBlock("while (a < mid && b < hi) {")
	// Take from the right run only when it is strictly less (stability).
	at := func(pos string) []string {
		idx := slices.Clone(oi)
		idx[dim] = pos
		return idx
	}
	var args []string
	for _, x := range op.Operands {
		args = append(args, g.val(x, at("perm[b]")), g.val(x, at("perm[a]")))
	}
	less := regionBody(g, op.Regions[0], args)
	g.line("if (%s) tmp[k++] = perm[b++]; else tmp[k++] = perm[a++];", less[0])
	g.closeBlock()
	g.line("while (a < mid) tmp[k++] = perm[a++];")
	g.line("while (b < hi) tmp[k++] = perm[b++];")
	g.ind--
	g.line("}")
	g.line("for (int64_t i = 0; i < %d; i++) perm[i] = tmp[i];", n)
	g.ind--
	g.line("}")
	g.openBlock("for (int64_t i = 0; i < %d; i++) {", n)
	for i, x := range op.Operands {
		g.line("%s[%s] = %s;", outs[i], offset(t0.Shape, at("i")), storeExpr(x.Type.DType, g.val(x, at("perm[i]"))))
	}
	g.closeBlock()
	g.endLoops(len(oi))
	g.line("free(perm);")
}

// genTopK selects the k largest elements of each row (last dimension) in
// descending order; ties keep the lower index first, and for floats NaN
// counts as larger than every number, matching a stable descending sort.
func genTopK(g *gen, op *stablehlo.Op) {
	x := op.Operands[0]
	in := g.input(x)
	vals, inds := g.output(op.Results[0]), g.output(op.Results[1])
	shape := x.Type.Shape
	n := shape[len(shape)-1]
	k := op.Attrs.K
	rows := x.Type.NumElements()
	if n > 0 {
		rows /= n
	}
	ct := ctype(x.Type.DType)
	st := stype(x.Type.DType)
	// Floats order as XLA's top_k does, by IEEE 754 totalOrder: +NaN
	// above +Inf, -NaN below -Inf, +0 above -0 (the interpreter's
	// totalOrderKey). The 16-bit floats widen exactly, NaN signs kept.
	// A strict comparison keeps the lower index first among equal keys.
	gt := "(a > b)"
	switch ct {
	case "float":
		gt = "(xk_tokf(a) > xk_tokf(b))"
	case "double":
		gt = "(xk_tok(a) > xk_tok(b))"
	}
	g.line("unsigned char* used = (unsigned char*)malloc(%d > 0 ? %d : 1);", n, n)
	g.line("if (!used) { XK_ALLOC_FAILED(); return; }")
	g.line("for (int64_t row = 0; row < %d; row++) {", rows)
	g.line("\tconst %s* xr = %s + row*%d;", st, in, n)
	g.line("\tmemset(used, 0, %d > 0 ? %d : 1);", n, n)
	g.line("\tfor (int64_t j = 0; j < %d; j++) {", k)
	g.line("\t\tint64_t best = -1;")
	g.line("\t\tfor (int64_t i = 0; i < %d; i++) {", n)
	g.line("\t\t\tif (used[i]) continue;")
	g.line("\t\t\tif (best < 0) { best = i; continue; }")
	g.line("\t\t\tconst %s a = %s, b = %s;", ct, loadExpr(x.Type.DType, "xr[i]"), loadExpr(x.Type.DType, "xr[best]"))
	g.line("\t\t\tif %s best = i;", gt)
	g.line("\t\t}")
	g.line("\t\tif (best < 0) best = 0;")
	g.line("\t\tused[best] = 1;")
	g.line("\t\t%s[row*%d + j] = xr[best];", vals, k)
	g.line("\t\t%s[row*%d + j] = (int32_t)best;", inds, k)
	g.line("\t}")
	g.line("}")
	g.line("free(used);")
}

// checkSortBody checks that sort's comparator is a scalar body returning
// one value.
func checkSortBody(l *lowering, op *stablehlo.Op) error {
	return l.checkBody(op, 0, 1)
}

// checkTopK checks chlo.top_k's k against its operand's last dimension.
func checkTopK(l *lowering, op *stablehlo.Op) error {
	x := op.Operands[0].Type
	if x.Rank() == 0 || op.Attrs.K < 0 || op.Attrs.K > x.Shape[x.Rank()-1] || len(op.Results) != 2 {
		return l.errorf(op, "chlo.top_k with k=%d on %s", op.Attrs.K, x)
	}
	return nil
}

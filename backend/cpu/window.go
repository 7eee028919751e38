package cpu

import (
	"fmt"
	"slices"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers the windowed ops reduce_window and select_and_scatter,
// both kernel roots, as the interpreter does (stablehlo/window.go),
// element for element and in the same order.

// windowElement emits "T e = init; if (inside) e = x[pos];" for the padded
// and base-dilated input of a window op and returns e: padding and
// dilation holes hold the init value (§reduce_window).
func windowElement(g *gen, x *stablehlo.Value, init string, w stablehlo.Window, pos []string) string {
	e := g.name("e")
	g.line("%s %s = %s;", ctype(x.Type.DType), e, init)
	var conds []string
	xi := make([]string, len(pos))
	for d, p := range pos {
		bd := w.BaseDilations[d]
		q := g.name("q")
		g.line("const int64_t %s = %s - %d;", q, p, w.PadLow[d])
		if bd != 1 {
			conds = append(conds, fmt.Sprintf("%s >= 0 && %s %% %d == 0 && %s / %d < %d", q, q, bd, q, bd, x.Type.Shape[d]))
			xi[d] = fmt.Sprintf("(%s / %d)", q, bd)
		} else {
			conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", q, q, x.Type.Shape[d]))
			xi[d] = q
		}
	}
	g.openIf(conds)
	g.line("%s = %s;", e, g.val(x, xi))
	g.closeBlock()
	return e
}

// genReduceWindow reduces every window of the padded inputs from the init
// values in row-major window order (§reduce_window).
func genReduceWindow(g *gen, op *stablehlo.Op) {
	n := len(op.Results)
	w := op.Attrs.Window
	outs := make([]string, n)
	inits := make([]string, n)
	for i, r := range op.Results {
		outs[i] = g.output(r)
		inits[i] = g.name("init")
		g.line("const %s %s = %s;", ctype(r.Type.DType), inits[i], g.val(op.Operands[n+i], nil))
	}
	rt := op.Results[0].Type
	oi := g.loops(rt.Shape, "o")
	accs := make([]string, n)
	for i := range accs {
		accs[i] = g.name("acc")
		g.line("%s %s = %s;", ctype(rt.DType), accs[i], inits[i])
	}
	// Unrolled, a small window lets the innermost output loop vectorize
	// at the untuned level (untunedOpt), as -O3 does by itself: cnn's
	// 2x2 max-pools ran 968 and 489 µs a run at that level with the
	// window loops rolled, against 29 and 15 µs at -O3
	// (BenchmarkKernelProfile).
	wi := g.unrolledLoops(w.Dimensions, "w")
	pos := make([]string, len(wi))
	for d := range wi {
		pos[d] = fmt.Sprintf("(%s*%d + %s*%d)", oi[d], w.Strides[d], wi[d], w.WindowDilations[d])
	}
	elems := make([]string, n)
	for i := range elems {
		elems[i] = windowElement(g, op.Operands[i], inits[i], w, pos)
	}
	// A window combines a few unrelated elements per output: the
	// branch-free max/min (see prelude.go) pays there.
	g.selMinMax = true
	next := regionBody(g, op.Regions[0], append(slices.Clone(accs), elems...))
	g.selMinMax = false
	for i := range accs {
		g.line("%s = %s;", accs[i], next[i])
	}
	g.endLoops(len(wi))
	for i, r := range op.Results {
		g.line("%s[%s] = %s;", outs[i], offset(rt.Shape, oi), storeExpr(r.Type.DType, accs[i]))
	}
	g.endLoops(len(oi))
}

// genSelectAndScatter implements §select_and_scatter as the interpreter
// does: per source element (row-major), the first non-padding element of
// its window is selected, replaced by each later one the select region
// does not prefer it to; the scatter region then combines the source
// value into the result there.
func genSelectAndScatter(g *gen, op *stablehlo.Op) {
	x, src, init := op.Operands[0], op.Operands[1], op.Operands[2]
	w := op.Attrs.Window
	r := op.Results[0]
	dt := r.Type.DType
	out := g.output(r)
	iv := g.val(init, nil)
	g.line("for (int64_t i = 0; i < %d; i++) %s[i] = %s;", r.Type.NumElements(), out, storeExpr(dt, iv))
	si := g.loops(src.Type.Shape, "s")
	g.line("int64_t best = -1;")
	g.line("%s bestv = 0;", ctype(dt))
	wi := g.loops(w.Dimensions, "w")
	var conds []string
	xi := make([]string, len(wi))
	for d := range wi {
		xi[d] = g.name("q")
		g.line("const int64_t %s = %s*%d + %s - %d;", xi[d], si[d], w.Strides[d], wi[d], w.PadLow[d])
		conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", xi[d], xi[d], x.Type.Shape[d]))
	}
	g.openIf(conds)
	cand := g.name("c")
	g.line("const %s %s = %s;", ctype(dt), cand, g.val(x, xi))
	g.line("if (best < 0) { best = %s; bestv = %s; } else {", offset(x.Type.Shape, xi), cand)
	g.ind++
	g.push()
	keep := regionBody(g, op.Regions[0], []string{"bestv", cand})
	g.line("if (!%s) { best = %s; bestv = %s; }", keep[0], offset(x.Type.Shape, xi), cand)
	g.closeBlock()
	g.closeBlock()
	g.endLoops(len(wi))
	g.line("if (best >= 0) {")
	g.ind++
	g.push()
	next := regionBody(g, op.Regions[1], []string{loadExpr(dt, out+"[best]"), g.val(src, si)})
	g.line("%s[best] = %s;", out, storeExpr(dt, next[0]))
	g.closeBlock()
	g.endLoops(len(si))
}

// checkSelectScatter checks select_and_scatter's two scalar bodies: the
// select comparator and the scatter reducer, each returning one value.
func checkSelectScatter(l *lowering, op *stablehlo.Op) error {
	if err := l.checkBody(op, 0, 1); err != nil {
		return err
	}
	return l.checkBody(op, 1, 1)
}

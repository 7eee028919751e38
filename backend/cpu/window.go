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
	conds, xi := windowIndex(g, x, w, pos)
	g.openIf(conds)
	g.line("%s = %s;", e, g.val(x, xi))
	g.closeBlock()
	return e
}

// windowIndex emits the input positions of window positions pos (one per
// leading dimension of x) and returns the conditions under which they are
// inside the padded, base-dilated input and the input index there.
func windowIndex(g *gen, x *stablehlo.Value, w stablehlo.Window, pos []string) (conds, xi []string) {
	xi = make([]string, len(pos))
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
	return conds, xi
}

// genReduceWindow reduces every window of the padded inputs from the init
// values in row-major window order (§reduce_window).
func genReduceWindow(g *gen, op *stablehlo.Op) {
	if rowWindow(op) {
		genReduceWindowRows(g, op)
		return
	}
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

// rowWindow reports whether reduce_window op can keep its innermost
// dimension as the loop inside the window loops (genReduceWindowRows):
// one result of a type computed as stored (no rounding of a running
// value kept in the output), of rank 2 or more, whose innermost dimension
// the window passes through (size, stride and dilations 1, no padding)
// and is at least a vector's 4 elements long. Pooling over NHWC images is
// such a window.
func rowWindow(op *stablehlo.Op) bool {
	if len(op.Results) != 1 {
		return false
	}
	rt := op.Results[0].Type
	switch rt.DType {
	case stablehlo.F32, stablehlo.F64, stablehlo.I32, stablehlo.I64:
	default:
		return false
	}
	w := op.Attrs.Window
	d := len(rt.Shape) - 1
	return d >= 1 && rt.Shape[d] >= 4 && w.Dimensions[d] == 1 && w.Strides[d] == 1 &&
		w.WindowDilations[d] == 1 && w.BaseDilations[d] == 1 && w.PadLow[d] == 0 && w.PadHigh[d] == 0
}

// genReduceWindowRows is genReduceWindow for a rowWindow: per output row
// (all dimensions but the innermost) the row starts at the init value,
// and each window position in row-major order combines its input row into
// it, one vectorizable loop along the innermost dimension. Every element
// sees the same values in the same order as in genReduceWindow, so the
// results are the same bits. With the row loop innermost the window loops
// need no unrolling: cnn's two 2x2 max-pools cost about 45% less compiler
// time (its untuned build: 300-325 -> 210-220 ms with the small-kernel
// level). The price is the running value's trip through memory once per
// window position: the 16x14x14x16 pool runs in 42-52 µs against 30-37
// at -O3 (58-63 against 40-43 untuned), 3% of the tuned cnn's run.
// Unrolling the window loops here as well won no run time back (42 µs)
// and cost 50 ms of the compile.
func genReduceWindowRows(g *gen, op *stablehlo.Op) {
	w := op.Attrs.Window
	r := op.Results[0]
	rt, dt := r.Type, r.Type.DType
	d := len(rt.Shape) - 1
	x := op.Operands[0]
	out := g.output(r)
	init := g.name("init")
	g.line("const %s %s = %s;", ctype(dt), init, g.val(op.Operands[1], nil))
	oi := g.loops(rt.Shape[:d], "o")
	row := g.name("row")
	g.line("%s* restrict %s = %s + %s;", stype(dt), row, out, offset(rt.Shape, append(slices.Clone(oi), "0")))
	ci := g.loops(rt.Shape[d:], "c")
	g.line("%s[%s] = %s;", row, ci[0], storeExpr(dt, init))
	g.endLoops(1)
	wi := g.loops(w.Dimensions[:d], "w")
	pos := make([]string, d)
	for j := range pos {
		pos[j] = fmt.Sprintf("(%s*%d + %s*%d)", oi[j], w.Strides[j], wi[j], w.WindowDilations[j])
	}
	conds, xi := windowIndex(g, x, w, pos)
	// combine folds one input row (elem gives a row element) into row.
	combine := func(elem func(c string) string) {
		ci := g.loops(rt.Shape[d:], "c")
		acc := g.name("a")
		g.line("const %s %s = %s;", ctype(dt), acc, loadExpr(dt, fmt.Sprintf("%s[%s]", row, ci[0])))
		// Branch-free max/min, as in genReduceWindow.
		g.selMinMax = true
		next := regionBody(g, op.Regions[0], []string{acc, elem(ci[0])})
		g.selMinMax = false
		g.line("%s[%s] = %s;", row, ci[0], storeExpr(dt, next[0]))
		g.endLoops(1)
	}
	inside := func(c string) string { return g.val(x, append(slices.Clone(xi), c)) }
	if !padded(w) {
		// Every window position is inside the input.
		combine(inside)
	} else {
		g.openIf(conds)
		combine(inside)
		g.closeBlock()
		// Outside: padding or a dilation hole, which holds the init value.
		g.openBlock("else {")
		combine(func(string) string { return init })
		g.closeBlock()
	}
	g.endLoops(len(wi))
	g.endLoops(len(oi))
}

// padded reports whether some window position of w may fall outside its
// input: w pads or dilates the input.
func padded(w stablehlo.Window) bool {
	for d := range w.Dimensions {
		if w.PadLow[d] != 0 || w.PadHigh[d] != 0 || w.BaseDilations[d] != 1 {
			return true
		}
	}
	return false
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
	g.openBlock("if (best < 0) { best = %s; bestv = %s; } else {", offset(x.Type.Shape, xi), cand)
	keep := regionBody(g, op.Regions[0], []string{"bestv", cand})
	g.line("if (!%s) { best = %s; bestv = %s; }", keep[0], offset(x.Type.Shape, xi), cand)
	g.closeBlock()
	g.closeBlock()
	g.endLoops(len(wi))
	g.openBlock("if (best >= 0) {")
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

package cpu

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers the indexing and windowed ops: dynamic_slice and gather
// are computed inline (index ops); dynamic_update_slice, scatter,
// reduce_window, select_and_scatter and sort are kernel roots. Their
// semantics are the interpreter's (stablehlo/bits.go, gather.go,
// window.go, sort.go), element for element and in the same order.

// indexExpr converts an integer index expression of dtype d to int64,
// saturating ui64 values above INT64_MAX as the interpreter does.
func indexExpr(d stablehlo.DType, x string) string {
	if d == stablehlo.UI64 {
		return fmt.Sprintf("((uint64_t)%s > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)%s)", x, x)
	}
	return fmt.Sprintf("((int64_t)%s)", x)
}

// clampedStart emits "int64_t s = clamp(x, 0, hi)" and returns s.
func (g *gen) clampedStart(x string, hi int64) string {
	s := g.name("s")
	g.line("int64_t %s = %s;", s, x)
	g.line("if (%s < 0) %s = 0;", s, s)
	g.line("if (%s > %d) %s = %d;", s, hi, s, hi)
	return s
}

// dynamicSlice computes element idx of dynamic_slice: the operand at the
// clamped start plus idx (§dynamic_slice).
func (g *gen) dynamicSlice(op *stablehlo.Op, idx []string) string {
	x := op.Operands[0]
	oi := make([]string, len(idx))
	for d := range idx {
		s := op.Operands[1+d]
		st := g.clampedStart(indexExpr(s.Type.DType, g.val(s, nil)), x.Type.Shape[d]-op.Attrs.SliceSizes[d])
		oi[d] = fmt.Sprintf("(%s + %s)", idx[d], st)
	}
	return g.val(x, oi)
}

// gather computes element idx of gather (§gather): batch indices pick the
// index vector, whose entries are clamped start indices of the operand
// dimensions in start_index_map; batching and offset dimensions add on.
func (g *gen) gather(op *stablehlo.Op, idx []string) string {
	x, ind := op.Operands[0], op.Operands[1]
	d := op.Attrs.Gather
	ss := op.Attrs.SliceSizes
	var bidx []string
	for r := range idx {
		if !slices.Contains(d.OffsetDims, int64(r)) {
			bidx = append(bidx, idx[r])
		}
	}
	ivd := int(d.IndexVectorDim)
	oi := make([]string, x.Type.Rank())
	for i := range oi {
		oi[i] = "0"
	}
	for k, od := range d.StartIndexMap {
		v := g.val(ind, indexVectorIdx(ind.Type.Rank(), ivd, k, bidx))
		oi[od] = g.clampedStart(indexExpr(ind.Type.DType, v), x.Type.Shape[od]-ss[od])
	}
	for i, od := range d.OperandBatchingDims {
		sd := int(d.StartIndicesBatchingDims[i])
		if sd > ivd {
			sd--
		}
		oi[od] = fmt.Sprintf("(%s + %s)", oi[od], bidx[sd])
	}
	j := 0
	for od := range oi {
		if slices.Contains(d.CollapsedSliceDims, int64(od)) || slices.Contains(d.OperandBatchingDims, int64(od)) {
			continue
		}
		oi[od] = fmt.Sprintf("(%s + %s)", oi[od], idx[d.OffsetDims[j]])
		j++
	}
	return g.val(x, oi)
}

// indexVectorIdx is the index, in indices of the given rank, of entry k
// of the index vector at batch position bidx (index_vector_dim ivd; ivd
// == rank means a vector of one entry).
func indexVectorIdx(rank, ivd, k int, bidx []string) []string {
	out := make([]string, 0, rank)
	b := 0
	for dd := 0; dd < rank; dd++ {
		if dd == ivd {
			out = append(out, strconv.Itoa(k))
			continue
		}
		out = append(out, bidx[b])
		b++
	}
	return out
}

// regionBody emits region b with its arguments bound to C expressions and
// returns the expressions of its results; body values are computed inline.
func regionBody(g *gen, b *stablehlo.Block, args []string) []string {
	for i, a := range b.Args {
		g.bound[a] = args[i]
	}
	saved := g.l.mat
	g.l.mat = map[*stablehlo.Value]bool{}
	g.push()
	ret := b.Ops[len(b.Ops)-1].Operands
	res := make([]string, len(ret))
	for i := range ret {
		v := g.val(ret[i], nil)
		t := g.name("b")
		g.line("const %s %s = %s;", ctype(ret[i].Type.DType), t, v)
		res[i] = t
	}
	g.pop()
	g.l.mat = saved
	for _, a := range b.Args {
		delete(g.bound, a)
	}
	return res
}

// copyInto writes every element of v into out (the result buffer of the
// same shape).
func copyInto(g *gen, out string, v *stablehlo.Value) {
	idx := g.loops(v.Type.Shape, "c")
	g.line("%s[%s] = %s;", out, offset(v.Type.Shape, idx), storeExpr(v.Type.DType, g.val(v, idx)))
	g.endLoops(len(idx))
}

// genDynamicUpdateSlice copies the operand, then the update at the
// clamped start (§dynamic_update_slice).
func genDynamicUpdateSlice(g *gen, op *stablehlo.Op) {
	x, up := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	out := g.output(r)
	copyInto(g, out, x)
	starts := make([]string, x.Type.Rank())
	for d := range starts {
		s := op.Operands[2+d]
		starts[d] = g.clampedStart(indexExpr(s.Type.DType, g.val(s, nil)), x.Type.Shape[d]-up.Type.Shape[d])
	}
	idx := g.loops(up.Type.Shape, "u")
	oi := make([]string, len(idx))
	for d := range idx {
		oi[d] = fmt.Sprintf("(%s + %s)", idx[d], starts[d])
	}
	g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, g.val(up, idx)))
	g.endLoops(len(idx))
}

// genScatter copies the inputs, then applies every update in row-major
// order of the update index space; an update window that does not fit at
// its start index is skipped as a whole (§scatter, XLA's choice).
func genScatter(g *gen, op *stablehlo.Op) {
	n := len(op.Results)
	inputs, ind, updates := op.Operands[:n], op.Operands[n], op.Operands[n+1:]
	d := op.Attrs.Scatter
	inT, upT := inputs[0].Type, updates[0].Type
	outs := make([]string, n)
	for i, r := range op.Results {
		outs[i] = g.output(r)
		copyInto(g, outs[i], inputs[i])
	}
	windowInputDims, windowSize, scatterDims := d.UpdateLayout(inT.Rank(), upT)
	ui := g.loops(upT.Shape, "u")
	sidx := make([]string, len(scatterDims))
	for i, s := range scatterDims {
		sidx[i] = ui[s]
	}
	ivd := int(d.IndexVectorDim)
	res := make([]string, inT.Rank())
	for i := range res {
		res[i] = "0"
	}
	for k, od := range d.ScatterDimsToOperandDims {
		s := g.name("s")
		g.line("const int64_t %s = %s;", s, indexExpr(ind.Type.DType, g.val(ind, indexVectorIdx(ind.Type.Rank(), ivd, k, sidx))))
		res[od] = s
	}
	for i, id := range d.InputBatchingDims {
		sd := int(d.ScatterIndicesBatchingDims[i])
		if sd > ivd {
			sd--
		}
		res[id] = fmt.Sprintf("(%s + %s)", res[id], sidx[sd])
	}
	var conds []string
	for k := range res {
		conds = append(conds, fmt.Sprintf("%s >= 0 && %s <= %d", res[k], res[k], inT.Shape[k]-windowSize[k]))
	}
	g.openIf(conds)
	wi := 0
	for r := 0; r < upT.Rank(); r++ {
		if slices.Contains(d.UpdateWindowDims, int64(r)) {
			k := windowInputDims[wi]
			res[k] = fmt.Sprintf("(%s + %s)", res[k], ui[r])
			wi++
		}
	}
	dst := g.name("d")
	g.line("const int64_t %s = %s;", dst, offset(inT.Shape, res))
	args := make([]string, 2*n)
	for i := range outs {
		args[i] = loadExpr(op.Results[i].Type.DType, fmt.Sprintf("%s[%s]", outs[i], dst))
		args[n+i] = g.val(updates[i], ui)
	}
	next := regionBody(g, op.Regions[0], args)
	for i := range outs {
		g.line("%s[%s] = %s;", outs[i], dst, storeExpr(op.Results[i].Type.DType, next[i]))
	}
	g.closeBlock()
	g.endLoops(len(ui))
}

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
	wi := g.loops(w.Dimensions, "w")
	pos := make([]string, len(wi))
	for d := range wi {
		pos[d] = fmt.Sprintf("(%s*%d + %s*%d)", oi[d], w.Strides[d], wi[d], w.WindowDilations[d])
	}
	elems := make([]string, n)
	for i := range elems {
		elems[i] = windowElement(g, op.Operands[i], inits[i], w, pos)
	}
	next := regionBody(g, op.Regions[0], append(slices.Clone(accs), elems...))
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
	g.line("while (a < mid && b < hi) {")
	g.ind++
	g.push()
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
	g.line("for (int64_t i = 0; i < %d; i++) {", n)
	g.ind++
	g.push()
	for i, x := range op.Operands {
		g.line("%s[%s] = %s;", outs[i], offset(t0.Shape, at("i")), storeExpr(x.Type.DType, g.val(x, at("perm[i]"))))
	}
	g.closeBlock()
	g.endLoops(len(oi))
	g.line("free(perm);")
}

// genConv computes convolution (§convolution) as the interpreter does:
// per output element, the sum over the kernel window (row-major) and the
// group's input features of input × kernel, skipping padding and
// lhs-dilation holes; feature groups split features, batch groups split
// the input batch across output feature groups. Floats accumulate in the
// compute type (f32 for 16-bit floats, rounded once at the store),
// integers in 64 bits.
func genConv(g *gen, op *stablehlo.Op) {
	lhs, rhs := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	out := g.output(r)
	c := op.Attrs.Conv
	d := c.Dims
	ns := len(d.InputSpatial)
	lt, kt := lhs.Type, rhs.Type
	kI, kO := kt.Shape[d.KernelInputFeature], kt.Shape[d.KernelOutputFeature]
	fg, bg := c.FeatureGroupCount, c.BatchGroupCount
	oPerFG, oPerBG, nPerBG := kO/fg, kO/bg, lt.Shape[d.InputBatch]/bg
	acc := ctype(computeDT(r.Type.DType))
	if !r.Type.DType.IsFloat() {
		acc = "int64_t"
	}
	oi := g.loops(r.Type.Shape, "o")
	b, of := oi[d.OutputBatch], oi[d.OutputFeature]
	g.line("const int64_t grp = %s / %d;", of, oPerFG)
	if bg > 1 {
		g.line("const int64_t n = (%s / %d) * %d + %s;", of, oPerBG, nPerBG, b)
	} else {
		g.line("const int64_t n = %s;", b)
	}
	g.line("%s acc = 0;", acc)
	kShape := make([]int64, ns)
	for s := range kShape {
		kShape[s] = kt.Shape[d.KernelSpatial[s]]
	}
	ki := g.loops(kShape, "k")
	li := make([]string, lt.Rank())
	kk := make([]string, kt.Rank())
	var conds []string
	for s := 0; s < ns; s++ {
		p := g.name("p")
		g.line("const int64_t %s = %s*%d + %s*%d - %d;", p, oi[d.OutputSpatial[s]], c.Strides[s], ki[s], c.RhsDilation[s], c.PadLow[s])
		ld := c.LhsDilation[s]
		if ld != 1 {
			conds = append(conds, fmt.Sprintf("%s >= 0 && %s %% %d == 0 && %s / %d < %d", p, p, ld, p, ld, lt.Shape[d.InputSpatial[s]]))
			li[d.InputSpatial[s]] = fmt.Sprintf("(%s / %d)", p, ld)
		} else {
			conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", p, p, lt.Shape[d.InputSpatial[s]]))
			li[d.InputSpatial[s]] = p
		}
		kk[d.KernelSpatial[s]] = ki[s]
		if c.Reversal[s] {
			kk[d.KernelSpatial[s]] = fmt.Sprintf("(%d - %s)", kShape[s]-1, ki[s])
		}
	}
	g.line("if (%s) {", allOf(conds))
	g.ind++
	g.line("for (int64_t ci = 0; ci < %d; ci++) {", kI)
	g.ind++
	g.push()
	li[d.InputBatch] = "n"
	li[d.InputFeature] = fmt.Sprintf("(grp*%d + ci)", kI)
	kk[d.KernelInputFeature] = "ci"
	kk[d.KernelOutputFeature] = of
	x := g.val(lhs, li)
	w := g.val(rhs, kk)
	if acc == "int64_t" {
		g.line("acc += (int64_t)%s * (int64_t)%s;", x, w)
	} else {
		g.line("acc = acc + (%s)(%s * %s);", acc, x, w)
	}
	g.closeBlock()
	g.ind--
	g.line("}")
	g.endLoops(len(ki))
	res := "acc"
	if acc == "int64_t" {
		res = fmt.Sprintf("((%s)acc)", ctype(r.Type.DType))
	} else if isHalf(r.Type.DType) {
		res = roundExpr(r.Type.DType, "acc")
	}
	g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, res))
	g.endLoops(len(oi))
}

// genDotHalf computes a dot_general with 16-bit float operands or result
// as the interpreter does: operands converted to the accumulation type
// (f32 for a 16-bit result), each output element summed over the
// contracting dimensions in order, a 16-bit result rounded once. It also
// computes complex dot_general (acc starts at 0 and adds each product,
// Go's complex multiply, in the same order).
func genDotHalf(g *gen, op *stablehlo.Op) {
	l, rh := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	out := g.output(r)
	dd := op.Attrs.Dot
	adt := computeDT(r.Type.DType)
	acc := ctype(adt)
	free := func(t stablehlo.TensorType, used ...[]int64) []int {
		var f []int
		for i := 0; i < t.Rank(); i++ {
			inUse := false
			for _, u := range used {
				inUse = inUse || slices.Contains(u, int64(i))
			}
			if !inUse {
				f = append(f, i)
			}
		}
		return f
	}
	lf := free(l.Type, dd.LhsBatch, dd.LhsContracting)
	rf := free(rh.Type, dd.RhsBatch, dd.RhsContracting)
	oi := g.loops(r.Type.Shape, "o")
	g.line("%s acc = 0;", acc)
	kShape := make([]int64, len(dd.LhsContracting))
	for i, d := range dd.LhsContracting {
		kShape[i] = l.Type.Shape[d]
	}
	ki := g.loops(kShape, "k")
	li := make([]string, l.Type.Rank())
	ri := make([]string, rh.Type.Rank())
	nb := len(dd.LhsBatch)
	for i := range dd.LhsBatch {
		li[dd.LhsBatch[i]], ri[dd.RhsBatch[i]] = oi[i], oi[i]
	}
	for i, d := range lf {
		li[d] = oi[nb+i]
	}
	for i, d := range rf {
		ri[d] = oi[nb+len(lf)+i]
	}
	for i := range dd.LhsContracting {
		li[dd.LhsContracting[i]], ri[dd.RhsContracting[i]] = ki[i], ki[i]
	}
	x := convertExpr(g.val(l, li), l.Type.DType, adt)
	y := convertExpr(g.val(rh, ri), rh.Type.DType, adt)
	if adt.IsComplex() {
		g.needComplex = true
		g.line("acc = acc + %s;", complexMul(adt, x, y))
	} else {
		g.line("acc = acc + (%s)(%s * %s);", acc, x, y)
	}
	g.endLoops(len(ki))
	res := "acc"
	if isHalf(r.Type.DType) {
		res = roundExpr(r.Type.DType, "acc")
	}
	g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, res))
	g.endLoops(len(oi))
}

// genRng implements rng_bit_generator THREE_FRY with a tensor<2xui64>
// state (the only form the front end accepts) as the interpreter does:
// element e is threefry(counter + e) under the key; the counter advances
// by the element count.
func genRng(g *gen, op *stablehlo.Op) {
	st := g.input(op.Operands[0])
	ns, out := g.output(op.Results[0]), g.output(op.Results[1])
	n := op.Results[1].Type.NumElements()
	g.line("const uint64_t key = %s[0], ctr = %s[1];", st, st)
	g.line("for (int64_t e = 0; e < %d; e++) %s[e] = xk_threefry(ctr + (uint64_t)e, key);", n, out)
	g.line("%s[0] = key;", ns)
	g.line("%s[1] = ctr + %dull;", ns, n)
}

// genTriSolve implements triangular_solve by forward or back substitution
// in the interpreter's order (§triangular_solve): intermediate values are
// kept in the compute type (f32 for 16-bit floats) in a scratch buffer and
// rounded to the result type when stored.
func genTriSolve(g *gen, op *stablehlo.Op) {
	a, b := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	t := op.Attrs.TriSolve
	dt := r.Type.DType
	ct := ctype(computeDT(dt))
	A, B := g.input(a), g.input(b)
	out := g.output(r)
	rank := a.Type.Rank()
	m := a.Type.Shape[rank-1]
	rows, cols := b.Type.Shape[rank-2], b.Type.Shape[rank-1]
	batches := a.Type.NumElements() / max(m*m, 1)
	if m == 0 {
		batches = b.Type.NumElements() / max(rows*cols, 1)
	}
	trans := t.TransposeA != "NO_TRANSPOSE"
	lowerEff := t.Lower != trans
	g.line("%s* X = (%s*)malloc(sizeof(%s) * %d + 8);", ct, ct, ct, rows*cols)
	g.line("if (!X) { XK_ALLOC_FAILED(); return; }")
	g.line("for (int64_t bt = 0; bt < %d; bt++) {", batches)
	g.ind++
	g.push()
	elem := func(i, j string) string {
		if trans {
			i, j = j, i
		}
		v := loadExpr(a.Type.DType, fmt.Sprintf("%s[bt*%d + (%s)*%d + (%s)]", A, m*m, i, m, j))
		if t.UnitDiagonal {
			return fmt.Sprintf("((%s) == (%s) ? (%s)1 : %s)", i, j, ct, v)
		}
		return v
	}
	bval := func(i, j string) string {
		return loadExpr(b.Type.DType, fmt.Sprintf("%s[bt*%d + (%s)*%d + (%s)]", B, rows*cols, i, cols, j))
	}
	ord := func(lowerFirst bool, v string) string {
		if lowerFirst {
			return v
		}
		return fmt.Sprintf("(%d - 1 - %s)", m, v)
	}
	if t.LeftSide {
		g.line("for (int64_t c = 0; c < %d; c++)", cols)
		g.line("for (int64_t s = 0; s < %d; s++) {", m)
		g.ind++
		g.line("const int64_t i = %s;", ord(lowerEff, "s"))
		g.line("%s acc = %s;", ct, bval("i", "c"))
		g.line("for (int64_t q = 0; q < s; q++) {")
		g.line("\tconst int64_t j = %s;", ord(lowerEff, "q"))
		g.line("\tacc = acc - (%s)(%s * X[j*%d + c]);", ct, elem("i", "j"), cols)
		g.line("}")
		g.line("X[i*%d + c] = acc / %s;", cols, elem("i", "i"))
		g.ind--
		g.line("}")
	} else {
		g.line("for (int64_t rr = 0; rr < %d; rr++)", rows)
		g.line("for (int64_t s = 0; s < %d; s++) {", m)
		g.ind++
		g.line("const int64_t j = %s;", ord(!lowerEff, "s"))
		g.line("%s acc = %s;", ct, bval("rr", "j"))
		g.line("for (int64_t q = 0; q < s; q++) {")
		g.line("\tconst int64_t i = %s;", ord(!lowerEff, "q"))
		g.line("\tacc = acc - (%s)(X[rr*%d + i] * %s);", ct, cols, elem("i", "j"))
		g.line("}")
		g.line("X[rr*%d + j] = acc / %s;", cols, elem("j", "j"))
		g.ind--
		g.line("}")
	}
	res := "X[e]"
	if isHalf(dt) {
		res = roundExpr(dt, res)
	}
	g.line("for (int64_t e = 0; e < %d; e++) %s[bt*%d + e] = %s;", rows*cols, out, rows*cols, storeExpr(dt, res))
	g.closeBlock()
	g.line("free(X);")
}

// genCholesky implements cholesky (§cholesky) as the interpreter does: per
// matrix, the Cholesky–Banachiewicz recurrence over the triangle named by
// lower, in the compute type (f32 for the 16-bit floats, so every step is
// rounded to f32 like the interpreter's), with NaN where a square root of
// a value that is not >= 0 would be taken. The other triangle is zero.
func genCholesky(g *gen, op *stablehlo.Op) {
	a, r := op.Operands[0], op.Results[0]
	dt := r.Type.DType
	ct := ctype(computeDT(dt))
	A, out := g.input(a), g.output(r)
	rank := a.Type.Rank()
	n := a.Type.Shape[rank-1]
	batches := int64(0)
	if n > 0 {
		batches = a.Type.NumElements() / (n * n)
	}
	// at(i, j) is the offset of L(i, j) (i >= j) in a matrix: the lower
	// triangle itself, or the upper one transposed.
	at := func(i, j string) string {
		if op.Attrs.Lower {
			return fmt.Sprintf("(%s)*%d + (%s)", i, n, j)
		}
		return fmt.Sprintf("(%s)*%d + (%s)", j, n, i)
	}
	sqrt := "sqrt"
	if ct == "float" {
		sqrt = "sqrtf"
	}
	g.line("%s* L = (%s*)malloc(sizeof(%s) * %d + 8);", ct, ct, ct, n*n)
	g.line("if (!L) { XK_ALLOC_FAILED(); return; }")
	g.line("for (int64_t bt = 0; bt < %d; bt++) {", batches)
	g.ind++
	g.push()
	g.line("for (int64_t e = 0; e < %d; e++) L[e] = 0;", n*n)
	g.line("for (int64_t i = 0; i < %d; i++)", n)
	g.line("for (int64_t j = 0; j <= i; j++) {")
	g.ind++
	g.line("%s s = %s;", ct, loadExpr(a.Type.DType, fmt.Sprintf("%s[bt*%d + %s]", A, n*n, at("i", "j"))))
	g.line("for (int64_t k = 0; k < j; k++) {")
	g.line("\tconst %s p = L[i*%d + k] * L[j*%d + k];", ct, n, n)
	g.line("\ts = s - p;")
	g.line("}")
	g.line("if (i == j) L[i*%d + i] = %s(s >= 0 ? s : (%s)NAN);", n, sqrt, ct)
	g.line("else L[i*%d + j] = s / L[j*%d + j];", n, n)
	g.ind--
	g.line("}")
	res := "L[i*" + strconv.FormatInt(n, 10) + " + j]"
	if isHalf(dt) {
		res = roundExpr(dt, res)
	}
	g.line("for (int64_t i = 0; i < %d; i++)", n)
	g.line("for (int64_t j = 0; j < %d; j++) %s[bt*%d + %s] = %s;", n, out, n*n, at("i", "j"), storeExpr(dt, res))
	g.closeBlock()
	g.line("free(L);")
}

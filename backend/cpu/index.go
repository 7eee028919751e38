package cpu

import (
	"fmt"
	"slices"
	"strconv"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers the indexing ops: dynamic_slice and gather are
// computed inline (index ops); dynamic_update_slice and scatter are
// kernel roots. Their semantics are the interpreter's
// (stablehlo/bits.go, gather.go), element for element and in the same
// order.

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

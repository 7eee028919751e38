package stablehlo

import (
	"fmt"
	"slices"
	"strings"
)

// GatherDims are gather's dimension numbers (spec §gather).
type GatherDims struct {
	OffsetDims, CollapsedSliceDims                []int64
	OperandBatchingDims, StartIndicesBatchingDims []int64
	StartIndexMap                                 []int64
	IndexVectorDim                                int64
}

// ScatterDims are scatter's dimension numbers (spec §scatter).
type ScatterDims struct {
	UpdateWindowDims, InsertedWindowDims          []int64
	InputBatchingDims, ScatterIndicesBatchingDims []int64
	ScatterDimsToOperandDims                      []int64
	IndexVectorDim                                int64
}

// applyGatherDims fills d from a #stablehlo.gather<...> struct.
func (p *parser) applyGatherDims(v attrVal, d *GatherDims) error {
	return p.applyDimFields(v, "dimension_numbers", "gather", &d.IndexVectorDim, map[string]*[]int64{
		"offset_dims":                 &d.OffsetDims,
		"collapsed_slice_dims":        &d.CollapsedSliceDims,
		"operand_batching_dims":       &d.OperandBatchingDims,
		"start_indices_batching_dims": &d.StartIndicesBatchingDims,
		"start_index_map":             &d.StartIndexMap,
	})
}

// applyScatterDims fills d from a #stablehlo.scatter<...> struct.
func (p *parser) applyScatterDims(v attrVal, d *ScatterDims) error {
	return p.applyDimFields(v, "scatter_dimension_numbers", "scatter", &d.IndexVectorDim, map[string]*[]int64{
		"update_window_dims":            &d.UpdateWindowDims,
		"inserted_window_dims":          &d.InsertedWindowDims,
		"input_batching_dims":           &d.InputBatchingDims,
		"scatter_indices_batching_dims": &d.ScatterIndicesBatchingDims,
		"scatter_dims_to_operand_dims":  &d.ScatterDimsToOperandDims,
	})
}

// applyDimFields fills dot_general's, gather's or scatter's dimension
// numbers (kind names which) from the #stablehlo.<kind><...> struct given
// as attribute attr: index_vector_dim into ivd (gather and scatter), every
// other field into its list.
func (p *parser) applyDimFields(v attrVal, attr, kind string, ivd *int64, lists map[string]*[]int64) error {
	if v.kind != aStruct {
		return p.errorf(v.pos, "%s must be #stablehlo.%s<...>", attr, kind)
	}
	for _, f := range v.fields {
		if f.name == "index_vector_dim" && ivd != nil {
			if f.val.kind != aInt {
				return p.errorf(f.val.pos, "index_vector_dim must be an integer")
			}
			*ivd = f.val.i
			continue
		}
		ints, ok := f.val.asInts()
		if !ok {
			return p.errorf(f.val.pos, "%s dimension %s must be a list of integers", kind, f.name)
		}
		dst, ok := lists[f.name]
		if !ok {
			return p.errorf(f.val.pos, "unknown %s dimension field %s", kind, f.name)
		}
		*dst = slices.Clone(ints)
	}
	return nil
}

func gatherDimsText(d GatherDims) string {
	return fmt.Sprintf("#stablehlo.gather<offset_dims = %s, collapsed_slice_dims = %s, operand_batching_dims = %s, start_indices_batching_dims = %s, start_index_map = %s, index_vector_dim = %d>",
		intList(d.OffsetDims), intList(d.CollapsedSliceDims), intList(d.OperandBatchingDims), intList(d.StartIndicesBatchingDims), intList(d.StartIndexMap), d.IndexVectorDim)
}

func scatterDimsText(d ScatterDims) string {
	return fmt.Sprintf("#stablehlo.scatter<update_window_dims = %s, inserted_window_dims = %s, input_batching_dims = %s, scatter_indices_batching_dims = %s, scatter_dims_to_operand_dims = %s, index_vector_dim = %d>",
		intList(d.UpdateWindowDims), intList(d.InsertedWindowDims), intList(d.InputBatchingDims), intList(d.ScatterIndicesBatchingDims), intList(d.ScatterDimsToOperandDims), d.IndexVectorDim)
}

// dimList is a list of dimension numbers to check with checkDimList.
type dimList struct {
	name   string
	dims   []int64
	rank   int
	sorted bool
}

// checkDimLists checks each list with checkDimList, in order.
func checkDimLists(lists ...dimList) error {
	for _, l := range lists {
		if err := checkDimList(l.name, l.dims, l.rank, l.sorted); err != nil {
			return err
		}
	}
	return nil
}

// checkDimList checks that dims are unique, sorted when sorted is set, and
// in [0, rank).
func checkDimList(what string, dims []int64, rank int, sorted bool) error {
	seen := map[int64]bool{}
	for i, d := range dims {
		if d < 0 || d >= int64(rank) || seen[d] {
			return fmt.Errorf("%s %v: bad or repeated dimension %d (rank %d)", what, dims, d, rank)
		}
		if sorted && i > 0 && dims[i-1] > d {
			return fmt.Errorf("%s %v must be sorted", what, dims)
		}
		seen[d] = true
	}
	return nil
}

// checkIndexVector checks index_vector_dim against the indices' type idx
// and that the map from index vector entries to operand dimensions (named
// what) has one entry per entry; it returns the indices' batch shape.
func checkIndexVector(idx TensorType, ivd int64, what string, dimMap []int64) ([]int64, error) {
	if ivd < 0 || ivd > int64(idx.Rank()) {
		return nil, fmt.Errorf("index_vector_dim %d out of range for %s", ivd, idx)
	}
	batch, ivLen := batchShape(idx, ivd)
	if int64(len(dimMap)) != ivLen {
		return nil, fmt.Errorf("%s %v has %d entries, the index vector %d", what, dimMap, len(dimMap), ivLen)
	}
	return batch, nil
}

// checkBatching checks gather's or scatter's batching dimensions: those
// of the operand (in) and of the indices (idx) pair up, have equal sizes,
// and leave out the index vector dimension.
func checkBatching(in, idx TensorType, ivd int64, inDims, idxDims dimList) error {
	if len(inDims.dims) != len(idxDims.dims) {
		return fmt.Errorf("%s and %s differ in length", inDims.name, idxDims.name)
	}
	for i, od := range inDims.dims {
		sd := idxDims.dims[i]
		if sd == ivd || in.Shape[od] != idx.Shape[sd] {
			return fmt.Errorf("batching dimension %d of the %s does not match dimension %d of the indices", od, strings.TrimSuffix(inDims.name, "_batching_dims"), sd)
		}
	}
	return nil
}

// batchShape is start_indices' (or scatter_indices') shape without the
// index vector dimension, and the index vector's length.
func batchShape(idx TensorType, ivd int64) ([]int64, int64) {
	if ivd == int64(idx.Rank()) {
		return slices.Clone(idx.Shape), 1
	}
	s := slices.Clone(idx.Shape[:ivd])
	return append(s, idx.Shape[ivd+1:]...), idx.Shape[ivd]
}

// inferGather is gather's type rule (§gather constraints C1-C22, the ones
// that matter for evaluation).
func inferGather(op *Op) ([]TensorType, error) {
	if len(op.Operands) != 2 {
		return nil, fmt.Errorf("expects 2 operands, got %d", len(op.Operands))
	}
	in, idx := op.Operands[0].Type, op.Operands[1].Type
	d := op.Attrs.Gather
	ss := op.Attrs.SliceSizes
	if !idx.DType.IsInt() {
		return nil, fmt.Errorf("start_indices must be integers, got %s", idx)
	}
	batch, err := checkIndexVector(idx, d.IndexVectorDim, "start_index_map", d.StartIndexMap)
	if err != nil {
		return nil, err
	}
	if len(ss) != in.Rank() {
		return nil, fmt.Errorf("slice_sizes %v has %d entries for %s", ss, len(ss), in)
	}
	for i, s := range ss {
		if s < 0 || s > in.Shape[i] {
			return nil, fmt.Errorf("slice size %d out of [0, %d] in dimension %d", s, in.Shape[i], i)
		}
	}
	err = checkDimLists(
		dimList{"collapsed_slice_dims", d.CollapsedSliceDims, in.Rank(), true},
		dimList{"operand_batching_dims", d.OperandBatchingDims, in.Rank(), true},
		dimList{"start_index_map", d.StartIndexMap, in.Rank(), false},
		dimList{"start_indices_batching_dims", d.StartIndicesBatchingDims, idx.Rank(), false})
	if err != nil {
		return nil, err
	}
	err = checkBatching(in, idx, d.IndexVectorDim,
		dimList{name: "operand_batching_dims", dims: d.OperandBatchingDims},
		dimList{name: "start_indices_batching_dims", dims: d.StartIndicesBatchingDims})
	if err != nil {
		return nil, err
	}
	for _, c := range append(slices.Clone(d.CollapsedSliceDims), d.OperandBatchingDims...) {
		if ss[c] > 1 {
			return nil, fmt.Errorf("slice size of collapsed or batching dimension %d must be 0 or 1, got %d", c, ss[c])
		}
		if ss[c] == 0 {
			// Valid (§gather C), but the result would read elements of
			// an empty slice: no defined value to give.
			return nil, fmt.Errorf("slice size 0 in collapsed or batching dimension %d: %w", c, ErrUnsupported)
		}
		if slices.Contains(d.CollapsedSliceDims, c) && slices.Contains(d.OperandBatchingDims, c) {
			return nil, fmt.Errorf("dimension %d is both collapsed and batching", c)
		}
	}
	var offsetSizes []int64
	for i, s := range ss {
		if !slices.Contains(d.CollapsedSliceDims, int64(i)) && !slices.Contains(d.OperandBatchingDims, int64(i)) {
			offsetSizes = append(offsetSizes, s)
		}
	}
	rank := len(batch) + len(offsetSizes)
	if len(d.OffsetDims) != len(offsetSizes) {
		return nil, fmt.Errorf("offset_dims %v has %d entries, needs %d", d.OffsetDims, len(d.OffsetDims), len(offsetSizes))
	}
	if err := checkDimList("offset_dims", d.OffsetDims, rank, true); err != nil {
		return nil, err
	}
	shape := make([]int64, rank)
	bi, oi := 0, 0
	for r := range shape {
		if slices.Contains(d.OffsetDims, int64(r)) {
			shape[r] = offsetSizes[oi]
			oi++
		} else {
			shape[r] = batch[bi]
			bi++
		}
	}
	return []TensorType{{DType: in.DType, Shape: shape}}, nil
}

// indexVector reads the index vector for batch position bidx (a multi-index
// over batchShape) from indices: the elements along index_vector_dim.
func indexVector(idx *Tensor, ivd int64, bidx []int64, out []int64) {
	st := idx.Type.Strides()
	rank := idx.Type.Rank()
	off := int64(0)
	b := 0
	for d := 0; d < rank; d++ {
		if int64(d) == ivd {
			continue
		}
		off += bidx[b] * st[d]
		b++
	}
	if ivd == int64(rank) {
		out[0] = indexValue(idx, off)
		return
	}
	for k := range out {
		out[k] = indexValue(idx, off+int64(k)*st[ivd])
	}
}

// forEachIndex calls fn with every multi-index of shape in row-major order
// (fn must not keep the slice).
func forEachIndex(shape []int64, fn func(idx []int64) error) error {
	for _, s := range shape {
		if s == 0 {
			return nil
		}
	}
	idx := make([]int64, len(shape))
	for {
		if err := fn(idx); err != nil {
			return err
		}
		d := len(shape) - 1
		for ; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return nil
		}
	}
}

func linear(idx, strides []int64) int64 {
	off := int64(0)
	for d, i := range idx {
		off += i * strides[d]
	}
	return off
}

// evalGather implements §gather: each result element reads the operand at
// the clamped start index plus the batching and offset indices.
func evalGather(x, idx *Tensor, rt TensorType, d GatherDims, ss []int64) *Tensor {
	out := NewTensor(rt)
	in := x.Type
	es := int64(in.DType.Size())
	xs, os := in.Strides(), rt.Strides()
	batchDims := []int64{}
	for r := 0; r < rt.Rank(); r++ {
		if !slices.Contains(d.OffsetDims, int64(r)) {
			batchDims = append(batchDims, int64(r))
		}
	}
	// Operand dimensions that offset dimensions index, in order.
	var offsetOperandDims []int64
	for i := range ss {
		if !slices.Contains(d.CollapsedSliceDims, int64(i)) && !slices.Contains(d.OperandBatchingDims, int64(i)) {
			offsetOperandDims = append(offsetOperandDims, int64(i))
		}
	}
	_, ivLen := batchShape(idx.Type, d.IndexVectorDim)
	start := make([]int64, ivLen)
	bidx := make([]int64, len(batchDims))
	opIdx := make([]int64, in.Rank())
	_ = forEachIndex(rt.Shape, func(ri []int64) error {
		for i, b := range batchDims {
			bidx[i] = ri[b]
		}
		indexVector(idx, d.IndexVectorDim, bidx, start)
		clear(opIdx)
		for k, od := range d.StartIndexMap {
			opIdx[od] = min(max(start[k], 0), in.Shape[od]-ss[od])
		}
		for i, od := range d.OperandBatchingDims {
			sd := d.StartIndicesBatchingDims[i]
			if sd > d.IndexVectorDim {
				sd--
			}
			opIdx[od] += bidx[sd]
		}
		for i, od := range offsetOperandDims {
			opIdx[od] += ri[d.OffsetDims[i]]
		}
		src, dst := linear(opIdx, xs), linear(ri, os)
		copy(out.Data[dst*es:(dst+1)*es], x.Data[src*es:(src+1)*es])
		return nil
	})
	return out
}

// inferScatter is scatter's type rule (§scatter).
func (v *verifier) inferScatter(op *Op) ([]TensorType, error) {
	n := (len(op.Operands) - 1) / 2
	if len(op.Operands) < 3 || len(op.Operands)%2 != 1 {
		return nil, fmt.Errorf("needs N inputs, the indices and N updates")
	}
	ins, idx, ups := op.Operands[:n], op.Operands[n].Type, op.Operands[n+1:]
	in0, up0 := ins[0].Type, ups[0].Type
	d := op.Attrs.Scatter
	for i := range ins {
		if !ins[i].Type.SameShape(in0) || !ups[i].Type.SameShape(up0) || ups[i].Type.DType != ins[i].Type.DType {
			return nil, fmt.Errorf("inputs and updates must have matching shapes and element types")
		}
	}
	if !idx.DType.IsInt() {
		return nil, fmt.Errorf("scatter_indices must be integers, got %s", idx)
	}
	batch, err := checkIndexVector(idx, d.IndexVectorDim, "scatter_dims_to_operand_dims", d.ScatterDimsToOperandDims)
	if err != nil {
		return nil, err
	}
	err = checkDimLists(
		dimList{"update_window_dims", d.UpdateWindowDims, up0.Rank(), true},
		dimList{"inserted_window_dims", d.InsertedWindowDims, in0.Rank(), true},
		dimList{"input_batching_dims", d.InputBatchingDims, in0.Rank(), true},
		dimList{"scatter_dims_to_operand_dims", d.ScatterDimsToOperandDims, in0.Rank(), false},
		dimList{"scatter_indices_batching_dims", d.ScatterIndicesBatchingDims, idx.Rank(), false})
	if err != nil {
		return nil, err
	}
	err = checkBatching(in0, idx, d.IndexVectorDim,
		dimList{name: "input_batching_dims", dims: d.InputBatchingDims},
		dimList{name: "scatter_indices_batching_dims", dims: d.ScatterIndicesBatchingDims})
	if err != nil {
		return nil, err
	}
	if len(d.UpdateWindowDims)+len(d.InsertedWindowDims)+len(d.InputBatchingDims) != in0.Rank() {
		return nil, fmt.Errorf("update_window_dims, inserted_window_dims and input_batching_dims must cover the input's %d dimensions", in0.Rank())
	}
	// The update scatter dimensions have the indices' batch shape; the
	// window dimensions fit in the input's window dimensions.
	var scatterSizes []int64
	wi := 0
	windowInputDims := scatterWindowInputDims(d, in0.Rank())
	for r := 0; r < up0.Rank(); r++ {
		if slices.Contains(d.UpdateWindowDims, int64(r)) {
			if up0.Shape[r] > in0.Shape[windowInputDims[wi]] {
				return nil, fmt.Errorf("update window dimension %d (size %d) larger than input dimension %d", r, up0.Shape[r], windowInputDims[wi])
			}
			wi++
		} else {
			scatterSizes = append(scatterSizes, up0.Shape[r])
		}
	}
	if !slices.Equal(scatterSizes, batch) {
		return nil, fmt.Errorf("update scatter dimensions %v do not match the indices' batch dimensions %v", scatterSizes, batch)
	}
	out := make([]TensorType, n)
	scalars := make([]TensorType, n)
	for i := range ins {
		out[i] = ins[i].Type
		scalars[i] = TensorType{DType: ins[i].Type.DType, Shape: []int64{}}
	}
	if err := v.verifyScalarBody(op, 0, append(slices.Clone(scalars), scalars...), scalars, "scatter update computation"); err != nil {
		return nil, err
	}
	return out, nil
}

// scatterWindowInputDims lists the input dimensions that update window
// dimensions index, in order.
func scatterWindowInputDims(d ScatterDims, rank int) []int64 {
	var out []int64
	for i := 0; i < rank; i++ {
		if !slices.Contains(d.InsertedWindowDims, int64(i)) && !slices.Contains(d.InputBatchingDims, int64(i)) {
			out = append(out, int64(i))
		}
	}
	return out
}

// UpdateLayout splits scatter's update dimensions for an input of rank
// inRank and updates of type up: the input dimensions that the update
// window dimensions index (in order), the window's size in every input
// dimension (1 where no window dimension indexes it), and the update
// scatter dimensions.
func (d ScatterDims) UpdateLayout(inRank int, up TensorType) (windowInputDims, windowSize, scatterDims []int64) {
	windowInputDims = scatterWindowInputDims(d, inRank)
	windowSize = slices.Repeat([]int64{1}, inRank)
	wi := 0
	for r := 0; r < up.Rank(); r++ {
		if slices.Contains(d.UpdateWindowDims, int64(r)) {
			windowSize[windowInputDims[wi]] = up.Shape[r]
			wi++
		} else {
			scatterDims = append(scatterDims, int64(r))
		}
	}
	return windowInputDims, windowSize, scatterDims
}

// verifyScalarBody checks that region r of op takes the given scalar
// arguments and returns the given scalar results.
func (v *verifier) verifyScalarBody(op *Op, r int, args, results []TensorType, what string) error {
	if r >= len(op.Regions) {
		return fmt.Errorf("needs a %s region", what)
	}
	b := op.Regions[r]
	if len(b.Args) != len(args) {
		return fmt.Errorf("%s takes %d arguments, needs %d", what, len(b.Args), len(args))
	}
	for i, a := range b.Args {
		if !a.Type.Equal(args[i]) {
			return fmt.Errorf("%s argument %s has type %s, expected %s", what, a, a.Type, args[i])
		}
	}
	return v.verifyBlock(b, results, what, op.Pos)
}

// evalScatter implements §scatter. Updates apply in row-major order of the
// update index space. An update whose window does not fit in the input at
// its start index is skipped as a whole, as XLA does (the spec leaves
// out-of-bounds behaviour to the implementation); no index clamping.
func (in *interp) evalScatter(op *Op, x []*Tensor, depth int) ([]*Tensor, error) {
	n := (len(x) - 1) / 2
	inputs, idx, updates := x[:n], x[n], x[n+1:]
	d := op.Attrs.Scatter
	outs := make([]*Tensor, n)
	for i := range outs {
		outs[i] = inputs[i].Clone()
	}
	inT, upT := inputs[0].Type, updates[0].Type
	os, us := inT.Strides(), upT.Strides()
	windowInputDims, windowSize, scatterDims := d.UpdateLayout(inT.Rank(), upT)
	_, ivLen := batchShape(idx.Type, d.IndexVectorDim)
	start := make([]int64, ivLen)
	sidx := make([]int64, len(scatterDims))
	res := make([]int64, inT.Rank())
	body := newScalarBody(in, op.Regions[0], depth)
	err := forEachIndex(upT.Shape, func(ui []int64) error {
		for i, s := range scatterDims {
			sidx[i] = ui[s]
		}
		indexVector(idx, d.IndexVectorDim, sidx, start)
		clear(res)
		for k, od := range d.ScatterDimsToOperandDims {
			res[od] = start[k]
		}
		for i, id := range d.InputBatchingDims {
			sd := d.ScatterIndicesBatchingDims[i]
			if sd > d.IndexVectorDim {
				sd--
			}
			res[id] += sidx[sd]
		}
		for k := range res {
			if res[k] < 0 || res[k]+windowSize[k] > inT.Shape[k] {
				return nil // the whole window is out of bounds: skipped
			}
		}
		wi := 0
		for r := 0; r < upT.Rank(); r++ {
			if slices.Contains(d.UpdateWindowDims, int64(r)) {
				res[windowInputDims[wi]] += ui[r]
				wi++
			}
		}
		dst, src := linear(res, os), linear(ui, us)
		return body.combine(outs, dst, updates, src)
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

package stablehlo

import (
	"fmt"
	"slices"
	"sort"
)

// inferSort is sort's type rule (§sort): operands of one shape, a
// dimension in range, a comparator from 2N scalars (lhs, rhs of each
// operand in turn) to tensor<i1>.
func (v *verifier) inferSort(op *Op) ([]TensorType, error) {
	if len(op.Operands) == 0 {
		return nil, fmt.Errorf("needs at least one operand")
	}
	t0 := op.Operands[0].Type
	d := op.Attrs.Dimension
	if d < 0 {
		d += int64(t0.Rank()) // the spec allows a negative dimension
	}
	if d < 0 || d >= int64(max(t0.Rank(), 1)) || t0.Rank() == 0 {
		return nil, fmt.Errorf("dimension %d out of range for %s", op.Attrs.Dimension, t0)
	}
	out := make([]TensorType, len(op.Operands))
	var args []TensorType
	for i, o := range op.Operands {
		if !o.Type.SameShape(t0) {
			return nil, fmt.Errorf("operand %s (%s) shape differs from %s", o, o.Type, t0)
		}
		out[i] = o.Type
		s := TensorType{DType: o.Type.DType, Shape: []int64{}}
		args = append(args, s, s)
	}
	if err := v.verifyScalarBody(op, 0, args, []TensorType{{DType: I1, Shape: []int64{}}}, "sort comparator"); err != nil {
		return nil, err
	}
	return out, nil
}

// evalSort implements §sort: every 1-D slice along the dimension is
// sorted by the comparator, all operands permuted alike. The sort is
// always stable (a valid choice when is_stable is false too).
func (in *interp) evalSort(op *Op, x []*Tensor, depth int) ([]*Tensor, error) {
	t0 := x[0].Type
	d := op.Attrs.Dimension
	if d < 0 {
		d += int64(t0.Rank())
	}
	outs := make([]*Tensor, len(x))
	for i := range outs {
		outs[i] = NewTensor(x[i].Type)
	}
	if t0.NumElements() == 0 {
		return outs, nil
	}
	cmp := newScalarBody(in, op.Regions[0], depth)
	st := t0.Strides()
	n := t0.Shape[d]
	outer := slices.Clone(t0.Shape)
	outer[d] = 1
	order := make([]int64, n)
	var ferr error
	err := forEachIndex(outer, func(idx []int64) error {
		base := linear(idx, st)
		for i := range order {
			order[i] = int64(i)
		}
		less := func(a, b int64) bool {
			if ferr != nil {
				return false
			}
			args := make([]*Tensor, 0, 2*len(x))
			for _, t := range x {
				args = append(args, scalarAt(t, base+a*st[d]), scalarAt(t, base+b*st[d]))
			}
			r, err := cmp.call(args)
			if err != nil {
				ferr = err
				return false
			}
			return r[0].Data[0] != 0
		}
		sort.SliceStable(order, func(i, j int) bool { return less(order[i], order[j]) })
		if ferr != nil {
			return ferr
		}
		for i, t := range x {
			es := int64(t.Type.DType.Size())
			for k, src := range order {
				s, dst := base+src*st[d], base+int64(k)*st[d]
				copy(outs[i].Data[dst*es:(dst+1)*es], t.Data[s*es:(s+1)*es])
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

package gomlx

import (
	"slices"

	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	xshapes "github.com/gomlx/go-xla/pkg/types/shapes"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// GoMLX's gradient of a dot product (dotGeneralVJP) is not a dot product:
// it multiplies the incoming gradient and the other operand, both
// broadcast to every axis of both, and sums the contracted axes away,
// ReduceSum(Mul(BroadcastInDim(v), BroadcastInDim(w))). The cpu backend
// fused that into one scalar reduce loop over the whole broadcast
// product, which made the weight gradients some 70% of trainmodel's
// transformer step. ReduceSum recognizes the pattern and builds a
// dot_general instead (reduceDot), whose kernels are the tuned matrix
// products. Only the summation order changes.

// reduceDotPlan is a ReduceSum of a product rewritten as a dot_general of
// the product's operands: lhs and rhs with their size-1 axes dropped,
// then the dot's result transposed to the kept axes' order and reshaped
// to the ReduceSum's shape.
type reduceDotPlan struct {
	b                        *Builder
	lhs, rhs                 *Node
	lhsDims, rhsDims         []int // lhs and rhs without their size-1 axes
	lhsContract, rhsContract []int
	lhsBatch, rhsBatch       []int
	perm                     []int // nil: the dot's axes are in order
	out                      []int // the ReduceSum's dimensions
}

// factor is one operand of a product: src broadcast to the product's
// shape, src's axis j becoming the product's axis axes[j].
type factor struct {
	src  *Node
	axes []int
}

func factorOf(n *Node, rank int) (factor, bool) {
	if n.bsrc != nil {
		return factor{n.bsrc, n.baxes}, len(n.baxes) == n.bsrc.shape.Rank()
	}
	// Mul broadcasts operands of the product's rank along size-1 axes
	// (bcast2); scalars are broadcast to every axis.
	switch n.shape.Rank() {
	case rank:
		return factor{n, iota(rank)}, true
	case 0:
		return factor{n, nil}, true
	}
	return factor{}, false
}

// present maps each axis of the product (of dimensions dims) that f's
// source spans, with a size above 1, to the source's axis among its
// axes of size above 1.
func (f factor) present(dims []int) (map[int]int, []int, bool) {
	at := map[int]int{}
	var kept []int
	for j, a := range f.axes {
		d := f.src.shape.Dimensions[j]
		if a < 0 || a >= len(dims) || (d != dims[a] && d != 1) {
			return nil, nil, false
		}
		if d == 1 {
			continue
		}
		at[a] = len(kept)
		kept = append(kept, d)
	}
	return at, kept, true
}

// reduceDot returns the plan for ReduceSum(x, axes) as a dot product, or
// nil when x is not a product of two broadcasts whose axes each are a
// batch axis (kept, in both), a contracted axis (summed, in both) or a
// free axis (kept, in one), with at least one contracted and one free
// axis. Anything
// else, including any doubt about x, takes the ordinary reduce.
func (b *Builder) reduceDot(x any, axes []int) *reduceDotPlan {
	n, ok := x.(*Node)
	if !ok || n == nil || n.b != b || n.mul[0] == nil || n.mul[1] == nil {
		return nil
	}
	if dt := n.shape.DType; dt != dtypes.Float32 && dt != dtypes.Float64 {
		return nil
	}
	dims := n.shape.Dimensions
	rank := len(dims)
	summed := make([]bool, rank)
	if len(axes) == 0 {
		for i := range summed {
			summed[i] = true
		}
	}
	for _, a := range axes {
		if a < 0 || a >= rank || summed[a] {
			return nil
		}
		summed[a] = true
	}
	l, okl := factorOf(n.mul[0], rank)
	r, okr := factorOf(n.mul[1], rank)
	if !okl || !okr || l.src.shape.DType != n.shape.DType || r.src.shape.DType != n.shape.DType {
		return nil
	}
	la, ld, okl := l.present(dims)
	ra, rd, okr := r.present(dims)
	if !okl || !okr {
		return nil
	}
	p := &reduceDotPlan{b: b, lhs: l.src, rhs: r.src, lhsDims: ld, rhsDims: rd}
	// The dot's result axes, as axes of the product: batch axes, then the
	// lhs's free axes, then the rhs's, each in its operand's order.
	var batch []int
	lfree := make([]int, len(ld))
	rfree := make([]int, len(rd))
	for i := range lfree {
		lfree[i] = -1
	}
	for i := range rfree {
		rfree[i] = -1
	}
	for i, d := range dims {
		li, inL := la[i]
		ri, inR := ra[i]
		switch {
		case d == 1:
			// Summed or kept, a size-1 axis changes nothing.
		case inL && inR && summed[i]:
			p.lhsContract = append(p.lhsContract, li)
			p.rhsContract = append(p.rhsContract, ri)
		case inL && inR:
			p.lhsBatch = append(p.lhsBatch, li)
			p.rhsBatch = append(p.rhsBatch, ri)
			batch = append(batch, i)
		case inL && !summed[i]:
			lfree[li] = i
		case inR && !summed[i]:
			rfree[ri] = i
		default:
			return nil // summed in one operand only, or broadcast in both
		}
	}
	order := batch
	for _, a := range append(lfree, rfree...) {
		if a >= 0 {
			order = append(order, a)
		}
	}
	if len(p.lhsContract) == 0 || len(order) == len(batch) {
		// Without a free axis the product is elementwise (a layer norm's
		// sums, a bias's gradient): the fused reduce reads each element
		// once, where a dot would be a batch of 1×1 products.
		return nil
	}
	// The ReduceSum's axes are the kept ones in order: sort the dot's.
	want := slices.Clone(order)
	slices.Sort(want)
	p.perm = make([]int, len(want))
	identity := true
	for t, a := range want {
		p.perm[t] = slices.Index(order, a)
		identity = identity && p.perm[t] == t
	}
	if identity {
		p.perm = nil
	}
	for i, d := range dims {
		if !summed[i] {
			p.out = append(p.out, d)
		}
	}
	return p
}

// build builds the plan in the replica being built (op1's function).
func (p *reduceDotPlan) build() *shlo.Value {
	b := p.b
	shape := func(v *shlo.Value, dims []int) *shlo.Value {
		if slices.Equal(v.Shape().Dimensions, dims) {
			return v
		}
		return must(shlo.Reshape(v, xshapes.Make(v.Shape().DType, dims...)))
	}
	l := shape(b.val(p.lhs), p.lhsDims)
	r := shape(b.val(p.rhs), p.rhsDims)
	v := must(shlo.DotGeneral(l, p.lhsContract, p.lhsBatch, r, p.rhsContract, p.rhsBatch).Done())
	if p.perm != nil {
		v = must(shlo.Transpose(v, p.perm...))
	}
	return shape(v, p.out)
}

package stablehlo

import "math"

// This file reproduces XLA:CPU's triangular_solve for f32 and f64. XLA
// has no triangular-solve kernel of its own: its TriangularSolveExpander
// (xla/service/triangular_solve_expander.cc, block size 128 on CPU)
// rewrites the op into
//
//   - for more than 8 batches of matrices smaller than 32 (SolveDirectly):
//     substitution, each step b_j - dot(solved, a_chunk), then a division
//     by the diagonal;
//   - otherwise (SolveByInvertingDiagonalBlocks): the diagonal blocks of
//     a are inverted (each scaled to a unit diagonal by dividing its
//     columns by the diagonal, inverted row by row with matrix-vector
//     products, the rows then divided by the diagonal), and x is built
//     block by block as inv(block)·(b_block - a_row·x_solved) with
//     matrix products.
//
// The order of each dot's sum decides the last bits, and on the
// ill-conditioned matrices of the conformance programs it moves results
// by 10 ULP and more. XLA:CPU's dots are Eigen's: a matrix-vector product
// accumulates sequentially with fused multiply-adds (fmaVec); a matrix
// product (Eigen's gebp kernel, one packet of rows) accumulates the
// depth in blocks of 8 into two interleaved fused accumulators, even
// steps into one and odd into the other, adds them, then runs the
// remaining depth into the sum (fmaGemm). With these orders this file is
// bit for bit the expected values of openxla/stablehlo's
// triangular_solve_float32_2_8_8_float32_2_10_8 (which the substitution
// missed by 7 ULP); XLA:CPU of jax 0.12, whose dots go through YNNPACK,
// differs from those by up to 10 ULP itself. An f32 fused
// multiply-add is fmaf32, rounded once (as the C backend's fmaf, so that
// the two agree bit for bit).

// xlaTriBlock is TriangularSolveExpander's block size on XLA:CPU.
const xlaTriBlock = 128

// triArith is the rounding of one element type: round rounds to it, fma
// is its fused multiply-add.
type triArith struct {
	round func(float64) float64
	fma   func(x, y, z float64) float64
}

func newTriArith(dt DType) triArith {
	if dt == F32 {
		return triArith{
			round: func(x float64) float64 { return float64(float32(x)) },
			fma:   func(x, y, z float64) float64 { return float64(fmaf32(float32(x), float32(y), float32(z))) },
		}
	}
	return triArith{round: func(x float64) float64 { return x }, fma: math.FMA}
}

// fmaVec is a matrix-vector product's sum of u(p)·v(p) for p < k:
// sequential fused multiply-adds from zero.
func (ar triArith) fmaVec(k int64, u, v func(p int64) float64) float64 {
	acc := 0.0
	for p := int64(0); p < k; p++ {
		acc = ar.fma(u(p), v(p), acc)
	}
	return acc
}

// fmaGemm is a matrix product's sum of u(p)·v(p) for p < k in the order
// of Eigen's gebp kernel: the first k&^7 steps alternate between two
// fused accumulators, which are then added; the rest follow sequentially.
func (ar triArith) fmaGemm(k int64, u, v func(p int64) float64) float64 {
	peeled := k &^ 7
	c, d := 0.0, 0.0
	for p := int64(0); p < peeled; p += 2 {
		c = ar.fma(u(p), v(p), c)
		d = ar.fma(u(p+1), v(p+1), d)
	}
	acc := ar.round(c + d)
	for p := peeled; p < k; p++ {
		acc = ar.fma(u(p), v(p), acc)
	}
	return acc
}

// evalTriSolveXLA is evalTriSolve for f32 and f64, as XLA:CPU computes it
// (see the top of this file).
func evalTriSolveXLA(a, b *Tensor, t TriSolve) *Tensor {
	dt := b.Type.DType
	ar := newTriArith(dt)
	r := a.Type.Rank()
	n := a.Type.Shape[r-1]
	rows, cols := b.Type.Shape[r-2], b.Type.Shape[r-1]
	batches := int64(1)
	for _, d := range a.Type.Shape[:r-2] {
		batches *= d
	}
	out := NewTensor(TensorType{DType: F64, Shape: b.Type.Shape})
	xs := out.Float64s()
	trans := t.TransposeA != "NO_TRANSPOSE"
	direct := batches > xlaTriBlock/16 && n < xlaTriBlock/4
	am := make([]float64, n*n)
	for bt := int64(0); bt < batches; bt++ {
		// am is a with the ignored triangle zeroed and, for a unit
		// diagonal, ones on the diagonal.
		for i := int64(0); i < n; i++ {
			for j := int64(0); j < n; j++ {
				v := a.Float64At(bt*n*n + i*n + j)
				switch {
				case i == j && t.UnitDiagonal:
					v = 1
				case i != j && (i > j) != t.Lower:
					v = 0
				}
				am[i*n+j] = v
			}
		}
		x := xs[bt*rows*cols : (bt+1)*rows*cols]
		for e := range x {
			x[e] = b.Float64At(bt*rows*cols + int64(e))
		}
		// opA(i, j) is op(a)[i][j].
		opA := func(i, j int64) float64 {
			if trans {
				return am[j*n+i]
			}
			return am[i*n+j]
		}
		switch {
		case n == 0 || rows*cols == 0:
		case n == 1:
			if !t.UnitDiagonal {
				for e := range x {
					x[e] = ar.round(x[e] / am[0])
				}
			}
		case direct:
			triSolveDirect(ar, x, n, rows, cols, t.LeftSide, t.Lower != trans, opA)
		default:
			triSolveBlocks(ar, x, am, n, rows, cols, t.LeftSide, t.Lower, trans)
		}
	}
	return evalConvert(out, dt)
}

// triSolveDirect is the expander's SolveDirectly on one matrix: x holds
// b and is overwritten with the solution; lowerEff says op(a) is lower
// triangular.
func triSolveDirect(ar triArith, x []float64, n, rows, cols int64, left, lowerEff bool, opA func(i, j int64) float64) {
	for s := int64(0); s < n; s++ {
		// Solve in the order that only needs solved entries: op(a)
		// lower on the left, or upper on the right, goes forward.
		j := s
		if left != lowerEff {
			j = n - 1 - s
		}
		lo, hi := int64(0), j // the solved indices, ascending
		if j != s {
			lo, hi = j+1, n
		}
		if left {
			for c := int64(0); c < cols; c++ {
				dot := ar.fmaVec(hi-lo, func(p int64) float64 { return opA(j, lo+p) }, func(p int64) float64 { return x[(lo+p)*cols+c] })
				x[j*cols+c] = ar.round(ar.round(x[j*cols+c]-dot) / opA(j, j))
			}
			continue
		}
		for rr := int64(0); rr < rows; rr++ {
			dot := ar.fmaVec(hi-lo, func(p int64) float64 { return x[rr*cols+lo+p] }, func(p int64) float64 { return opA(lo+p, j) })
			x[rr*cols+j] = ar.round(ar.round(x[rr*cols+j]-dot) / opA(j, j))
		}
	}
}

// triSolveBlocks is the expander's SolveByInvertingDiagonalBlocks on one
// matrix: am is a masked (see evalTriSolveXLA), x holds b and is
// overwritten with the solution.
func triSolveBlocks(ar triArith, x, am []float64, n, rows, cols int64, left, lower, trans bool) {
	bs := min(int64(xlaTriBlock), n)
	nb := (n + bs - 1) / bs
	invs := make([][]float64, nb)
	for k := range nb {
		invs[k] = invertDiagBlock(ar, am, n, k*bs, bs, lower)
	}
	// op(a)'s entry (i, j), and op(inv block)'s.
	opA := func(i, j int64) float64 {
		if trans {
			i, j = j, i
		}
		return am[i*n+j]
	}
	backward := left != lower != trans
	b := append([]float64(nil), x...)
	for i := range nb {
		j := i
		if backward {
			j = nb - 1 - i
		}
		lo, hi := j*bs, min((j+1)*bs, n) // this block's indices
		inv := invs[j]
		opInv := func(p, q int64) float64 {
			if trans {
				p, q = q, p
			}
			return inv[p*bs+q]
		}
		// The solved indices: the blocks before this one in the order.
		slo, shi := int64(0), min(i*bs, n)
		if backward {
			slo, shi = max(0, (nb-i)*bs), n
		}
		if i == 0 {
			slo, shi = 0, 0
		}
		// rem = b_block - (op(a) row block · x solved), then x_block =
		// op(inv)·rem (left), or the same with x on the left (right).
		if left {
			rem := make([]float64, (hi-lo)*cols)
			for p := lo; p < hi; p++ {
				for c := int64(0); c < cols; c++ {
					v := b[p*cols+c]
					if shi > slo {
						v = ar.round(v - ar.fmaGemm(shi-slo, func(q int64) float64 { return opA(p, slo+q) }, func(q int64) float64 { return x[(slo+q)*cols+c] }))
					}
					rem[(p-lo)*cols+c] = v
				}
			}
			for p := lo; p < hi; p++ {
				for c := int64(0); c < cols; c++ {
					x[p*cols+c] = ar.fmaGemm(hi-lo, func(q int64) float64 { return opInv(p-lo, q) }, func(q int64) float64 { return rem[q*cols+c] })
				}
			}
			continue
		}
		w := hi - lo
		rem := make([]float64, rows*w)
		for rr := int64(0); rr < rows; rr++ {
			for p := lo; p < hi; p++ {
				v := b[rr*cols+p]
				if shi > slo {
					v = ar.round(v - ar.fmaGemm(shi-slo, func(q int64) float64 { return x[rr*cols+slo+q] }, func(q int64) float64 { return opA(slo+q, p) }))
				}
				rem[rr*w+p-lo] = v
			}
		}
		for rr := int64(0); rr < rows; rr++ {
			for p := lo; p < hi; p++ {
				x[rr*cols+p] = ar.fmaGemm(w, func(q int64) float64 { return rem[rr*w+q] }, func(q int64) float64 { return opInv(q, p-lo) })
			}
		}
	}
}

// invertDiagBlock is the expander's InvertDiagonalBlocks for the bs×bs
// block of am at (off, off), padded with the identity past n: the block
// scaled to a unit diagonal (columns divided by the diagonal, a zero
// diagonal entry taken as 1), inverted one row at a time from the
// triangle's far end (row j = -(row j of the scaled block)·(the inverse
// so far, -1 on the unsolved diagonal)), the rows then divided by the
// diagonal.
func invertDiagBlock(ar triArith, am []float64, n, off, bs int64, lower bool) []float64 {
	blk := func(i, j int64) float64 {
		if off+i >= n || off+j >= n {
			if i == j {
				return 1
			}
			return 0
		}
		return am[(off+i)*n+off+j]
	}
	diag := make([]float64, bs)
	for i := range bs {
		diag[i] = blk(i, i)
		if diag[i] == 0 {
			diag[i] = 1
		}
	}
	scaled := make([]float64, bs*bs)
	for i := range bs {
		for j := range bs {
			scaled[i*bs+j] = ar.round(blk(i, j) / diag[j])
		}
	}
	out := make([]float64, bs*bs)
	for i := range bs {
		out[i*bs+i] = -1
	}
	start := bs - 1
	if lower {
		start = 0
	}
	out[start*bs+start] = 1
	row := make([]float64, bs)
	for i := int64(1); i < bs; i++ {
		j := i
		if !lower {
			j = bs - 1 - i
		}
		for k := range bs {
			row[k] = -ar.fmaVec(bs, func(m int64) float64 { return scaled[j*bs+m] }, func(m int64) float64 { return out[m*bs+k] })
		}
		copy(out[j*bs:(j+1)*bs], row)
	}
	for i := range bs {
		for k := range bs {
			out[i*bs+k] = ar.round(out[i*bs+k] / diag[i])
		}
	}
	return out
}

// fmaf32 is x·y+z rounded once to float32. The product of two float32s is
// exact in float64, but rounding their sum first to float64 and then to
// float32 can land on a float32 tie that the exact sum is not on; the
// error of the float64 sum (TwoSum, exact) breaks such a tie the way the
// exact value lies.
func fmaf32(x, y, z float32) float32 {
	p := float64(float64(x) * float64(y)) // exact; the conversion forbids fusing
	zz := float64(z)
	r := float64(p + zz)
	bv := float64(r - p)
	err := float64(float64(p-float64(r-bv)) + float64(zz-bv))
	if err == 0 || math.IsInf(r, 0) || math.IsNaN(r) {
		return float32(r)
	}
	f := float32(r)
	if float64(f) == r {
		return f
	}
	// r lies strictly between two float32s: lo and hi. It is a tie only
	// at their exact midpoint (representable in float64).
	lo, hi := f, f
	if float64(f) < r {
		hi = math.Nextafter32(f, float32(math.Inf(1)))
	} else {
		lo = math.Nextafter32(f, float32(math.Inf(-1)))
	}
	if mid := float64(lo)/2 + float64(hi)/2; r == mid {
		if err > 0 {
			return hi
		}
		return lo
	}
	return f
}

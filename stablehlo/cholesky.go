package stablehlo

import (
	"fmt"
	"math"
	"slices"
)

// inferCholesky is cholesky's type rule (§cholesky): a batch of square
// floating-point matrices.
func inferCholesky(op *Op) ([]TensorType, error) {
	if len(op.Operands) != 1 {
		return nil, fmt.Errorf("expects 1 operand, got %d", len(op.Operands))
	}
	a := op.Operands[0].Type
	r := a.Rank()
	if a.DType.IsComplex() {
		// The spec defines the Hermitian case; not implemented here.
		return nil, fmt.Errorf("cholesky of %s: complex numbers: %w", a, ErrUnsupported)
	}
	if !a.DType.IsFloat() || r < 2 || a.Shape[r-1] != a.Shape[r-2] {
		return nil, fmt.Errorf("operand must be a batch of square float matrices, got %s", a)
	}
	return []TensorType{{DType: a.DType, Shape: slices.Clone(a.Shape)}}, nil
}

// evalCholesky computes, per matrix, L with a = L·Lᵀ (lower) or U with
// a = Uᵀ·U (upper) by the Cholesky–Banachiewicz recurrence, reading only
// the triangle named by lower (§cholesky). The other triangle, which the
// spec leaves to the implementation, is zero. A matrix that is not
// positive definite (behaviour undefined by the spec) yields NaN where a
// square root of a non-positive value is taken, and after. Sums run in
// increasing index order, rounded to f32 per step for f32 and 16-bit
// types (16-bit results rounded once more at the end).
func evalCholesky(a *Tensor, lower bool) *Tensor {
	dt := a.Type.DType
	r := a.Type.Rank()
	n := a.Type.Shape[r-1]
	out := NewTensor(TensorType{DType: F64, Shape: a.Type.Shape})
	o := out.Float64s()
	round := stepRounder(dt)
	batches := int64(0)
	if n > 0 {
		batches = a.Type.NumElements() / (n * n)
	}
	for bt := int64(0); bt < batches; bt++ {
		base := bt * n * n
		// A(i, j) with i >= j, read from the named triangle.
		A := func(i, j int64) float64 {
			if !lower {
				i, j = j, i
			}
			return a.Float64At(base + i*n + j)
		}
		L := func(i, j int64) *float64 { // L(i, j), i >= j, stored in place
			if !lower {
				i, j = j, i
			}
			return &o[base+i*n+j]
		}
		for i := int64(0); i < n; i++ {
			for j := int64(0); j <= i; j++ {
				s := A(i, j)
				for k := int64(0); k < j; k++ {
					s = round(s - round(*L(i, k)**L(j, k)))
				}
				if i == j {
					if !(s >= 0) {
						s = math.NaN() // a positive quiet NaN on every platform
					}
					*L(i, i) = round(math.Sqrt(s))
				} else {
					*L(i, j) = round(s / *L(j, j))
				}
			}
		}
	}
	return evalConvert(out, dt)
}

// stepRounder is how the linear-algebra kernels, computing in f64, round
// each step for element type dt: not at all for f64, to f32 otherwise.
func stepRounder(dt DType) func(float64) float64 {
	if dt == F64 {
		return func(v float64) float64 { return v }
	}
	return func(v float64) float64 { return float64(float32(v)) }
}

package stablehlo

import (
	"fmt"
	"slices"
)

// TriSolve holds triangular_solve's attributes (spec §triangular_solve).
type TriSolve struct {
	LeftSide, Lower, UnitDiagonal bool
	// TransposeA is NO_TRANSPOSE, TRANSPOSE or ADJOINT (the same as
	// TRANSPOSE for real element types).
	TransposeA string
}

// inferTriSolve is triangular_solve's type rule: a is [..., m, m], b is
// [..., m, k] (left side) or [..., k, m], with equal batch dimensions.
func inferTriSolve(op *Op) ([]TensorType, error) {
	if len(op.Operands) != 2 {
		return nil, fmt.Errorf("expects 2 operands, got %d", len(op.Operands))
	}
	a, b := op.Operands[0].Type, op.Operands[1].Type
	t := op.Attrs.TriSolve
	switch t.TransposeA {
	case "NO_TRANSPOSE", "TRANSPOSE", "ADJOINT":
	case "":
		return nil, fmt.Errorf("missing transpose_a")
	default:
		return nil, fmt.Errorf("bad transpose_a %q", t.TransposeA)
	}
	if a.DType == b.DType && a.DType.IsComplex() {
		// The spec allows complex operands (ADJOINT conjugates); not
		// implemented here.
		return nil, fmt.Errorf("triangular_solve of %s and %s: complex numbers: %w", a, b, ErrUnsupported)
	}
	if a.DType != b.DType || !a.DType.IsFloat() {
		return nil, fmt.Errorf("operands %s and %s must have one floating-point element type", a, b)
	}
	r := a.Rank()
	if r < 2 || b.Rank() != r || a.Shape[r-1] != a.Shape[r-2] || !slices.Equal(a.Shape[:r-2], b.Shape[:r-2]) {
		return nil, fmt.Errorf("a %s must be [..., m, m] and b %s share its batch dimensions", a, b)
	}
	m := a.Shape[r-1]
	if (t.LeftSide && b.Shape[r-2] != m) || (!t.LeftSide && b.Shape[r-1] != m) {
		return nil, fmt.Errorf("b %s does not match a %s on the solved side", b, a)
	}
	return []TensorType{b}, nil
}

// evalTriSolve solves op(a)·x = b (left side) or x·op(a) = b for every
// batch (§triangular_solve): f32 and f64 as XLA:CPU does
// (evalTriSolveXLA), the 16-bit floats by forward or back substitution. Only the
// triangle of a that lower names is read; unit_diagonal takes its
// diagonal as 1. Sums run in increasing index order, in f64 for f64 and
// f32 otherwise (16-bit results are rounded once).
func evalTriSolve(a, b *Tensor, t TriSolve) *Tensor {
	dt := b.Type.DType
	if dt == F32 || dt == F64 {
		return evalTriSolveXLA(a, b, t)
	}
	r := a.Type.Rank()
	m := a.Type.Shape[r-1]
	rows, cols := b.Type.Shape[r-2], b.Type.Shape[r-1]
	batches := int64(1)
	for _, d := range a.Type.Shape[:r-2] {
		batches *= d
	}
	out := NewTensor(TensorType{DType: F64, Shape: b.Type.Shape})
	xs := out.Float64s()
	round := stepRounder(dt)
	trans := t.TransposeA != "NO_TRANSPOSE"
	lowerEff := t.Lower != trans // op(a) is lower triangular
	for bt := int64(0); bt < batches; bt++ {
		ab, bb := bt*m*m, bt*rows*cols
		// T(i, j) is op(a)[i][j] read from the stored triangle.
		T := func(i, j int64) float64 {
			if i == j && t.UnitDiagonal {
				return 1
			}
			if trans {
				i, j = j, i
			}
			return a.Float64At(ab + i*m + j)
		}
		B := func(i, j int64) float64 { return b.Float64At(bb + i*cols + j) }
		X := func(i, j int64) *float64 { return &xs[bb+i*cols+j] }
		if t.LeftSide {
			// op(a) x = b, column by column.
			for c := int64(0); c < cols; c++ {
				for s := int64(0); s < m; s++ {
					i := s
					if !lowerEff {
						i = m - 1 - s
					}
					acc := B(i, c)
					for q := int64(0); q < s; q++ {
						j := q
						if !lowerEff {
							j = m - 1 - q
						}
						acc = round(acc - round(T(i, j)**X(j, c)))
					}
					*X(i, c) = round(acc / T(i, i))
				}
			}
			continue
		}
		// x op(a) = b, row by row: x_j T(j, j) = b_j - sum of x_i T(i, j)
		// over the other solved i.
		for rr := int64(0); rr < rows; rr++ {
			for s := int64(0); s < m; s++ {
				j := s
				if lowerEff {
					j = m - 1 - s
				}
				acc := B(rr, j)
				for q := int64(0); q < s; q++ {
					i := q
					if lowerEff {
						i = m - 1 - q
					}
					acc = round(acc - round(*X(rr, i)*T(i, j)))
				}
				*X(rr, j) = round(acc / T(j, j))
			}
		}
	}
	return evalConvert(out, dt)
}

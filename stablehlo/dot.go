package stablehlo

import (
	"fmt"
	"math"
	"strconv"
)

// evalDot evaluates dot_general by relaying the operands to
// lhs[batch, m, k] and rhs[batch, k, n] and running a typed i-k-j matrix
// multiply (unit-stride inner loop over the output row).
func evalDot(l, r *Tensor, rt TensorType, d DotDims) (*Tensor, error) {
	if isHalf(rt.DType) {
		// Accumulate in f32 and round once, as XLA's CPU backend does
		// (the spec leaves the accumulation precision to the
		// implementation, §dot_general precision_config).
		out, err := evalDot(evalConvert(l, F32), evalConvert(r, F32), TensorType{DType: F32, Shape: rt.Shape}, d)
		if err != nil {
			return nil, err
		}
		return narrowHalf(out, rt.DType), nil
	}
	if l.Type.DType != rt.DType {
		l = evalConvert(l, rt.DType)
	}
	if r.Type.DType != rt.DType {
		r = evalConvert(r, rt.DType)
	}
	free := func(t TensorType, used ...[]int64) []int64 {
		u := make([]bool, t.Rank())
		for _, ls := range used {
			for _, x := range ls {
				u[x] = true
			}
		}
		var out []int64
		for i, x := range u {
			if !x {
				out = append(out, int64(i))
			}
		}
		return out
	}
	prod := func(t TensorType, dims []int64) int64 {
		p := int64(1)
		for _, x := range dims {
			p *= t.Shape[x]
		}
		return p
	}
	lf := free(l.Type, d.LhsBatch, d.LhsContracting)
	rf := free(r.Type, d.RhsBatch, d.RhsContracting)
	lp := append(append(append([]int64{}, d.LhsBatch...), lf...), d.LhsContracting...)
	rp := append(append(append([]int64{}, d.RhsBatch...), d.RhsContracting...), rf...)
	lt := transposeTensor(l, lp)
	rtt := transposeTensor(r, rp)
	B := prod(l.Type, d.LhsBatch)
	M := prod(l.Type, lf)
	K := prod(l.Type, d.LhsContracting)
	N := prod(r.Type, rf)
	k, ok := kernels[rt.DType]
	if !ok {
		return nil, fmt.Errorf("dot_general does not support %s", rt.DType)
	}
	out := NewTensor(rt)
	if err := k.matmul(lt, rtt, out, B, M, K, N); err != nil {
		return nil, err
	}
	return out, nil
}

// matmul computes o[b] = a[b] (M x K) · b[b] (K x N) for each batch. Each
// output element accumulates over k in order (so results do not depend on
// the blocking); four output rows share each loaded rhs row.
func matmul[T arithT](a, b, o []T, B, M, K, N int64) {
	for bi := int64(0); bi < B; bi++ {
		ab := a[bi*M*K : (bi+1)*M*K]
		bb := b[bi*K*N : (bi+1)*K*N]
		ob := o[bi*M*N : (bi+1)*M*N]
		m := int64(0)
		for ; m+4 <= M; m += 4 {
			o0 := ob[m*N : (m+1)*N]
			o1 := ob[(m+1)*N : (m+2)*N][:len(o0)]
			o2 := ob[(m+2)*N : (m+3)*N][:len(o0)]
			o3 := ob[(m+3)*N : (m+4)*N][:len(o0)]
			for k := int64(0); k < K; k++ {
				a0, a1, a2, a3 := ab[m*K+k], ab[(m+1)*K+k], ab[(m+2)*K+k], ab[(m+3)*K+k]
				brow := bb[k*N : (k+1)*N][:len(o0)]
				for j, bv := range brow {
					o0[j] += a0 * bv
					o1[j] += a1 * bv
					o2[j] += a2 * bv
					o3[j] += a3 * bv
				}
			}
		}
		for ; m < M; m++ {
			orow := ob[m*N : (m+1)*N]
			arow := ab[m*K : (m+1)*K]
			for k, av := range arow {
				brow := bb[int64(k)*N : (int64(k)+1)*N][:len(orow)]
				for j, bv := range brow {
					orow[j] += av * bv
				}
			}
		}
	}
}

// Check semantics follow the StableHLO reference interpreter
// (openxla/stablehlo, stablehlo/reference/Api.cpp and
// stablehlo/tests/CheckOps.cpp):
//   - check.expect_eq: elementwise ==, so +0 == -0, except that a NaN
//     result matches a NaN expectation (the rule of expect_almost_eq and
//     of NumPy's assert_array_equal, which JAX's tests use).
//   - check.expect_close: ULP difference within [min_ulp_difference,
//     max_ulp_difference], defaults 0 and 3 (Api.cpp calls
//     evalExpectCloseOp(lhs, rhs, 0, 3)). The ULP difference is 0 for
//     bitwise-equal values and for two NaNs, |bits(|f|) - bits(|g|)| for
//     finite values of the same sign, bits(|f|) + bits(|g|) for opposite
//     signs, and "infinite" otherwise.
//   - check.expect_almost_eq: areApproximatelyEqual with tolerance 0.001
//     (Api.cpp passes APFloat(0.001)): equal values match, two NaNs match,
//     a non-finite or zero value only matches when the other is zero too,
//     signs must agree, then |f-g| <= tolerance.
const (
	defaultMinULP    = 0
	defaultMaxULP    = 3
	defaultTolerance = 0.001
)

// ULPDifference32 is the reference interpreter's ULP distance between two
// float32 values (see the comment above); exported for backends' tests.
func ULPDifference32(f, g float32) uint64 {
	return ulpDifference(float64(f), float64(g), uint64(math.Float32bits(f)), uint64(math.Float32bits(g)), 1<<31)
}

// ULPDifference64 is ULPDifference32 for float64 values.
func ULPDifference64(f, g float64) uint64 {
	return ulpDifference(f, g, math.Float64bits(f), math.Float64bits(g), 1<<63)
}

// ulpDifference is the ULP distance of two floats of any width, given as
// their values (widened exactly) and bit patterns, signBit being the
// width's sign bit.
func ulpDifference(f, g float64, fb, gb, signBit uint64) uint64 {
	if fb == gb {
		return 0
	}
	fi, gi := !math.IsInf(f, 0) && f == f, !math.IsInf(g, 0) && g == g
	if fi && gi {
		a, b := fb&^signBit, gb&^signBit
		if math.Signbit(f) != math.Signbit(g) {
			if a > math.MaxUint64-b {
				return math.MaxUint64
			}
			return a + b
		}
		if a > b {
			return a - b
		}
		return b - a
	}
	if f != f && g != g {
		return 0
	}
	return math.MaxUint64
}

// AlmostEqual is the reference interpreter's areApproximatelyEqual.
func AlmostEqual(f, g, tol float64) bool {
	if f == g {
		return true
	}
	if f != f || g != g {
		return f != f && g != g
	}
	finiteNonZero := func(x float64) bool { return x != 0 && !math.IsInf(x, 0) }
	if !finiteNonZero(f) || !finiteNonZero(g) {
		if f != 0 && g != 0 {
			return false
		}
	}
	if math.Signbit(f) != math.Signbit(g) {
		return false
	}
	return math.Abs(f-g) <= tol
}

// evalCheck evaluates a check.expect_* custom call on (actual, expected).
func evalCheck(op *Op, got, want *Tensor) *CheckError {
	a := &op.Attrs
	err := Check(CheckSpec{Target: a.Callee, MinULP: a.MinULP, MaxULP: a.MaxULP, Tolerance: a.Tolerance}, got, want)
	if err != nil {
		err.Pos = op.Pos
	}
	return err
}

// CheckSpec is what one check.expect_* custom call asserts.
type CheckSpec struct {
	// Target is the callee: check.expect_eq, check.expect_close or
	// check.expect_almost_eq.
	Target string
	// MinULP and MaxULP bound expect_close's ULP difference (default
	// [0, 3]); Tolerance is expect_almost_eq's (default 0.001).
	MinULP, MaxULP *int64
	Tolerance      *float64
}

// Check evaluates a check.expect_* assertion on (got, want) with the
// StableHLO reference interpreter's semantics. A failure is a *CheckError
// for the first mismatching element; its Pos and File are for the caller
// to fill. Backends use it so that every backend checks alike.
func Check(spec CheckSpec, got, want *Tensor) *CheckError {
	if !got.Type.Equal(want.Type) {
		return &CheckError{Target: spec.Target, Detail: fmt.Sprintf("compares %s with %s", got.Type, want.Type)}
	}
	if got.Type.DType.IsComplex() {
		return checkComplex(spec, got, want)
	}
	a := spec
	n := got.Type.NumElements()
	fail := func(i int64, detail string) *CheckError {
		return &CheckError{Target: a.Target, Index: unravel(i, got.Type.Shape),
			Got: formatScalar(got, i), Want: formatScalar(want, i), Detail: detail}
	}
	target := a.Target
	if !got.Type.DType.IsFloat() && (target == "check.expect_close" || target == "check.expect_almost_eq") {
		// Tolerances mean nothing for integers and booleans: exact.
		target = "check.expect_eq"
	}
	switch target {
	case "check.expect_eq":
		eq, err := evalCompare("EQ", "", got, want)
		if err != nil {
			return &CheckError{Target: a.Target, Detail: err.Error()}
		}
		isFloat := got.Type.DType.IsFloat()
		for i := int64(0); i < n; i++ {
			if eq.Data[i] != 0 {
				continue
			}
			// A NaN result matches a NaN expectation, as in the reference
			// interpreter's expect_almost_eq and NumPy's assert_array_equal;
			// only the values differ, not "NaN != NaN".
			if isFloat {
				if g, w := got.Float64At(i), want.Float64At(i); g != g && w != w {
					continue
				}
			}
			return fail(i, "values differ")
		}
	case "check.expect_close":
		lo, hi := uint64(defaultMinULP), uint64(defaultMaxULP)
		if a.MinULP != nil {
			lo = uint64(*a.MinULP)
		}
		if a.MaxULP != nil {
			hi = uint64(*a.MaxULP)
		}
		for i := int64(0); i < n; i++ {
			var d uint64
			switch dt := got.Type.DType; {
			case isHalf(dt):
				d = ULPDifference16(got.halfBits()[i], want.halfBits()[i], dt)
			case dt == F32:
				d = ULPDifference32(got.Float32s()[i], want.Float32s()[i])
			default:
				d = ULPDifference64(got.Float64s()[i], want.Float64s()[i])
			}
			if d < lo || d > hi {
				ds := strconv.FormatUint(d, 10)
				if d == math.MaxUint64 {
					ds = "inf"
				}
				return fail(i, fmt.Sprintf("ULP difference %s outside [%d, %d]", ds, lo, hi))
			}
		}
	case "check.expect_almost_eq":
		tol := defaultTolerance
		if a.Tolerance != nil {
			tol = *a.Tolerance
		}
		for i := int64(0); i < n; i++ {
			f, g := got.Float64At(i), want.Float64At(i)
			if !AlmostEqual(f, g, tol) {
				return fail(i, fmt.Sprintf("|difference| %g > tolerance %g or signs differ", math.Abs(f-g), tol))
			}
		}
	default:
		return &CheckError{Target: a.Target, Detail: "unsupported check"}
	}
	return nil
}

func unravel(i int64, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

// checkComplex checks complex tensors part by part (the reference
// interpreter compares real and imaginary parts with the float rule) and
// reports a mismatch at the element, with both complex values.
func checkComplex(spec CheckSpec, got, want *Tensor) *CheckError {
	err := Check(spec, got.parts(), want.parts())
	if err == nil || len(err.Index) != got.Type.Rank()+1 {
		return err
	}
	part := [2]string{"real", "imaginary"}[err.Index[len(err.Index)-1]]
	idx := err.Index[:got.Type.Rank()]
	flat := int64(0)
	for d, x := range idx {
		flat = flat*got.Type.Shape[d] + x
	}
	err.Index = idx
	err.Got, err.Want = formatScalar(got, flat), formatScalar(want, flat)
	err.Detail = part + " part: " + err.Detail
	return err
}

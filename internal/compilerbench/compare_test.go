package compilerbench

import (
	"encoding/binary"
	"fmt"
	"maps"
	"math"
	"slices"
	"testing"

	"github.com/xlacache/xlacache/npy"
)

// tolerance is how far an output element may be from the reference:
// |got-ref| <= Abs*max|ref| + Rel*|ref|. Abs scales with the output's
// largest magnitude, so that a softmax's tiny probabilities and a
// gradient's large entries are judged by the same rule. Integers and
// booleans must be exact.
type tolerance struct{ Abs, Rel float64 }

// tolerances per NumPy dtype. f32: engines differ in summation order
// (blocking, threads, FMA contraction) and in their exp/tanh
// approximations; 1e-4 of the largest magnitude and 2e-3 relative admit
// that and nothing like a wrong index, a missed term or a wrong layout.
var tolerances = map[string]tolerance{
	npy.Float32: {Abs: 1e-4, Rel: 2e-3},
	npy.Float64: {Abs: 1e-10, Rel: 1e-9},
	npy.Float16: {Abs: 1e-2, Rel: 1e-2},
}

// gradientTolerance is f32's for programs that return gradients through
// softmax and layer norm (transformer4l's backward pass): the query and
// key weights' gradients come from sums that cancel (softmax's gradient
// subtracts each row's mean, attention's values share a large common
// part), so summation order alone moves their elements by up to ~2e-3 of
// the tensor's largest magnitude: measured between XLA:CPU, the cpu
// backend, IREE and the interpreter, each of which disagreed with some
// other by that much while agreeing elsewhere to 1e-5. 1e-2 of the largest
// magnitude still fails a missing term, a wrong index or a wrong layout,
// which err by the order of the magnitude itself.
var gradientTolerance = tolerance{Abs: 1e-2, Rel: 2e-3}

// gradientPrograms are the programs judged by gradientTolerance.
var gradientPrograms = map[string]bool{"transformer4l": true}

// tolerancesFor is the tolerance table for prog.
func tolerancesFor(prog string) map[string]tolerance {
	if !gradientPrograms[prog] {
		return tolerances
	}
	t := maps.Clone(tolerances)
	t[npy.Float32] = gradientTolerance
	return t
}

// decode returns the elements of a as float64 (integers exactly up to 2^53).
func decode(a *npy.Array) ([]float64, error) {
	size := npy.ItemSize(a.DType)
	if size == 0 || len(a.Data)%size != 0 {
		return nil, fmt.Errorf("dtype %s: cannot compare", a.DType)
	}
	n := len(a.Data) / size
	out := make([]float64, n)
	for i := range n {
		b := a.Data[i*size:]
		switch a.DType {
		case npy.Float32:
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		case npy.Float64:
			out[i] = math.Float64frombits(binary.LittleEndian.Uint64(b))
		case npy.Int32:
			out[i] = float64(int32(binary.LittleEndian.Uint32(b)))
		case npy.Int64:
			out[i] = float64(int64(binary.LittleEndian.Uint64(b)))
		case npy.Bool, npy.Uint8:
			out[i] = float64(b[0])
		case npy.Int8:
			out[i] = float64(int8(b[0]))
		default:
			return nil, fmt.Errorf("dtype %s: cannot compare", a.DType)
		}
	}
	return out, nil
}

// compare checks got against ref elementwise. It returns the largest
// error as a fraction of the allowed error (<= 1 passes) and an error
// naming the first element out of tolerance, a NaN where the reference
// has none, or a type mismatch.
func compare(got, ref *npy.Array, tols map[string]tolerance) (worst float64, err error) {
	if got.DType != ref.DType || !slices.Equal(got.Shape, ref.Shape) {
		return math.Inf(1), fmt.Errorf("type %s%v, reference %s%v", got.DType, got.Shape, ref.DType, ref.Shape)
	}
	g, err := decode(got)
	if err != nil {
		return math.Inf(1), err
	}
	r, err := decode(ref)
	if err != nil {
		return math.Inf(1), err
	}
	tol, isFloat := tols[ref.DType]
	maxAbs := 0.0
	for _, v := range r {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			maxAbs = max(maxAbs, math.Abs(v))
		}
	}
	var first error
	for i := range r {
		if math.IsNaN(r[i]) || math.IsNaN(g[i]) || math.IsInf(r[i], 0) || math.IsInf(g[i], 0) {
			if !(math.IsNaN(r[i]) && math.IsNaN(g[i])) && r[i] != g[i] {
				worst = math.Inf(1)
				if first == nil {
					first = fmt.Errorf("element %d: %g, reference %g", i, g[i], r[i])
				}
			}
			continue
		}
		d := math.Abs(g[i] - r[i])
		if !isFloat {
			if d != 0 {
				worst = math.Inf(1)
				if first == nil {
					first = fmt.Errorf("element %d: %g, reference %g (exact)", i, g[i], r[i])
				}
			}
			continue
		}
		allowed := tol.Abs*maxAbs + tol.Rel*math.Abs(r[i])
		if allowed == 0 {
			allowed = math.SmallestNonzeroFloat64
		}
		q := d / allowed
		if q > worst {
			worst = q
		}
		if q > 1 && first == nil {
			first = fmt.Errorf("element %d: %g, reference %g (allowed ±%.3g)", i, g[i], r[i], allowed)
		}
	}
	return worst, first
}

func f32Array(shape []int64, v ...float32) *npy.Array {
	a := &npy.Array{DType: npy.Float32, Shape: shape, Data: make([]byte, 4*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint32(a.Data[4*i:], math.Float32bits(x))
	}
	return a
}

func i32Array(v ...int32) *npy.Array {
	a := &npy.Array{DType: npy.Int32, Shape: []int64{int64(len(v))}, Data: make([]byte, 4*len(v))}
	for i, x := range v {
		binary.LittleEndian.PutUint32(a.Data[4*i:], uint32(x))
	}
	return a
}

// TestCompare: a fast wrong answer must not pass, a right one computed in
// another order must.
func TestCompare(t *testing.T) {
	nan := float32(math.NaN())
	ref := f32Array([]int64{4}, 1, -2, 1e-6, 100)
	for _, tc := range []struct {
		name string
		got  *npy.Array
		ref  *npy.Array
		ok   bool
	}{
		{"identical", f32Array([]int64{4}, 1, -2, 1e-6, 100), ref, true},
		{"rounding", f32Array([]int64{4}, 1.0001, -2.0002, 2e-6, 100.05), ref, true},
		{"tiny value judged against the largest", f32Array([]int64{4}, 1, -2, 0.009, 100), ref, true},
		{"largest off by 1%", f32Array([]int64{4}, 1, -2, 1e-6, 101), ref, false},
		{"small off by 5%", f32Array([]int64{4}, 1, -2.1, 1e-6, 100), ref, false},
		{"zeros", f32Array([]int64{4}, 0, 0, 0, 0), ref, false},
		{"NaN where the reference has a number", f32Array([]int64{4}, nan, -2, 1e-6, 100), ref, false},
		{"NaN on both sides", f32Array([]int64{2}, nan, 1), f32Array([]int64{2}, nan, 1), true},
		{"transposed shape", f32Array([]int64{2, 2}, 1, -2, 1e-6, 100), f32Array([]int64{4}, 1, -2, 1e-6, 100), false},
		{"int exact", i32Array(3, 4), i32Array(3, 4), true},
		{"int off by one", i32Array(3, 5), i32Array(3, 4), false},
		{"dtype differs", i32Array(1, -2, 0, 100), ref, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			worst, err := compare(tc.got, tc.ref, tolerances)
			if (err == nil) != tc.ok {
				t.Errorf("compare: worst %g, err %v; want ok=%v", worst, err, tc.ok)
			}
		})
	}
}

func TestPolicyForWarmup(t *testing.T) {
	base := policy{MinRuns: 5, MaxRuns: 50, MinTotal: 1, SlowS: 1, SlowRuns: 3}
	for _, tc := range []struct {
		name string
		p    policy
		warm float64
		want policy
	}{
		{"fast program keeps the policy", base, 0.2, base},
		{"slow program gets exactly SlowRuns", base, 2.5, policy{MinRuns: 3, MaxRuns: 3, SlowS: 1, SlowRuns: 3}},
		{"at the threshold counts as slow", base, 1, policy{MinRuns: 3, MaxRuns: 3, SlowS: 1, SlowRuns: 3}},
		{"SlowRuns 0 disables the exception", policy{MinRuns: 5, MaxRuns: 50, MinTotal: 1, SlowS: 1}, 9, policy{MinRuns: 5, MaxRuns: 50, MinTotal: 1, SlowS: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.forWarmup(tc.warm); got != tc.want {
				t.Errorf("forWarmup(%v) = %+v, want %+v", tc.warm, got, tc.want)
			}
		})
	}
}

// TestTolerancesFor: only the gradient programs get the looser f32 rule,
// and the shared table is never modified by it.
func TestTolerancesFor(t *testing.T) {
	if got := tolerancesFor("transformer4l")[npy.Float32]; got != gradientTolerance {
		t.Errorf("transformer4l f32 tolerance %+v, want %+v", got, gradientTolerance)
	}
	if got := tolerancesFor("transformer4l")[npy.Float64]; got != tolerances[npy.Float64] {
		t.Errorf("transformer4l f64 tolerance %+v changed", got)
	}
	if got := tolerancesFor("mlp")[npy.Float32]; got != (tolerance{Abs: 1e-4, Rel: 2e-3}) || tolerances[npy.Float32] != got {
		t.Errorf("mlp f32 tolerance %+v, shared table %+v; want the default", got, tolerances[npy.Float32])
	}
}

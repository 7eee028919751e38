package stablehlo

import (
	"math"
	"strings"
	"testing"

	gx "github.com/gomlx/go-xla/pkg/stablehlo"
	"github.com/gomlx/go-xla/pkg/types"
	"github.com/gomlx/go-xla/pkg/types/dtypes"
	"github.com/gomlx/go-xla/pkg/types/shapes"
)

// These tests build programs with GoMLX's StableHLO builder (which writes
// the generic form), parse and verify them, evaluate them, and compare the
// results with values computed here directly from each op's definition.

// f32In is an f32 input of the given shape with deterministic values in
// [lo, hi).
func f32In(lo, hi float32, shape ...int64) *Tensor {
	t := NewTensor(TensorType{DType: F32, Shape: shape})
	v := t.Float32s()
	for i := range v {
		// A fixed irrational stride spreads values over the range.
		frac := float32(math.Mod(float64(i)*0.6180339887+0.137, 1))
		v[i] = lo + (hi-lo)*frac
	}
	return t
}

func i32In(lo, hi int32, shape ...int64) *Tensor {
	t := NewTensor(TensorType{DType: I32, Shape: shape})
	v := t.Int32s()
	for i := range v {
		v[i] = lo + int32((i*7+3)%int(hi-lo))
	}
	return t
}

func boolIn(shape ...int64) *Tensor {
	t := NewTensor(TensorType{DType: I1, Shape: shape})
	for i := range t.Data {
		t.Data[i] = uint8((i*5 + 1) % 3 % 2)
	}
	return t
}

func gxShape(t TensorType) shapes.Shape {
	dims := make([]int, len(t.Shape))
	for i, d := range t.Shape {
		dims[i] = int(d)
	}
	var dt dtypes.DType
	switch t.DType {
	case F32:
		dt = dtypes.Float32
	case F64:
		dt = dtypes.Float64
	case I32:
		dt = dtypes.Int32
	case I64:
		dt = dtypes.Int64
	case I1:
		dt = dtypes.Bool
	}
	return shapes.Make(dt, dims...)
}

// buildAndRun builds a one-result program with the GoMLX builder, parses
// it with this package and evaluates it on inputs.
func buildAndRun(t *testing.T, inputs []*Tensor, body func(fn *gx.Function, in []*gx.Value) (*gx.Value, error)) (*Tensor, string) {
	t.Helper()
	b := gx.New(strings.ReplaceAll(t.Name(), "/", "_"))
	fn := b.Main()
	var ins []*gx.Value
	for i, x := range inputs {
		v, err := fn.NamedInput("x"+string(rune('a'+i)), gxShape(x.Type))
		if err != nil {
			t.Fatalf("input: %v", err)
		}
		ins = append(ins, v)
	}
	out, err := body(fn, ins)
	if err != nil {
		t.Fatalf("builder: %v", err)
	}
	if err := fn.Return(out); err != nil {
		t.Fatalf("return: %v", err)
	}
	src, err := b.Build()
	if err != nil {
		t.Fatalf("build: %v", err)
	}
	m, err := Parse(src, t.Name()+".mlir")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	res, err := Eval(m, "", inputs)
	if err != nil {
		t.Fatalf("eval: %v\n%s", err, src)
	}
	// The canonical printer's output must parse back to the same module.
	m2, err := Parse([]byte(Print(m)), "printed.mlir")
	if err != nil {
		t.Fatalf("reparse of Print output: %v\n%s", err, Print(m))
	}
	if string(Canonical(m)) != string(Canonical(m2)) {
		t.Fatalf("Print round trip changed the canonical form:\n%s\nvs\n%s", Canonical(m), Canonical(m2))
	}
	return res[0], string(src)
}

// wantF32 checks got against want within maxULP.
func wantF32(t *testing.T, src string, got *Tensor, want []float32, maxULP uint64) {
	t.Helper()
	g := got.Float32s()
	if len(g) != len(want) {
		t.Fatalf("got %d elements, want %d", len(g), len(want))
	}
	for i := range want {
		if d := ULPDifference32(g[i], want[i]); d > maxULP {
			t.Fatalf("element %d: got %v, want %v (%d ULP)\n%s", i, g[i], want[i], d, src)
		}
	}
}

func wantI32(t *testing.T, src string, got *Tensor, want []int32) {
	t.Helper()
	g := got.Int32s()
	for i := range want {
		if g[i] != want[i] {
			t.Fatalf("element %d: got %v, want %v\n%s", i, g[i], want[i], src)
		}
	}
}

func wantBool(t *testing.T, src string, got *Tensor, want []bool) {
	t.Helper()
	for i := range want {
		if (got.Data[i] != 0) != want[i] {
			t.Fatalf("element %d: got %v, want %v\n%s", i, got.Data[i], want[i], src)
		}
	}
}

func TestGoMLXUnaryFloat(t *testing.T) {
	cases := []struct {
		name string
		op   func(*gx.Value) (*gx.Value, error)
		ref  func(float64) float64
		lo   float32
		hi   float32
	}{
		{"negate", gx.Negate, func(x float64) float64 { return -x }, -5, 5},
		{"abs", gx.Abs, math.Abs, -5, 5},
		{"sign", gx.Sign, func(x float64) float64 {
			if x > 0 {
				return 1
			} else if x < 0 {
				return -1
			}
			return 0
		}, -5, 5},
		{"floor", gx.Floor, math.Floor, -5, 5},
		{"ceil", gx.Ceil, math.Ceil, -5, 5},
		{"exponential", gx.Exponential, math.Exp, -5, 5},
		{"exponential_minus_one", gx.ExponentialMinusOne, math.Expm1, -1, 1},
		{"log", gx.Log, math.Log, 0.01, 100},
		{"log_plus_one", gx.LogPlusOne, math.Log1p, -0.5, 3},
		{"logistic", gx.Logistic, func(x float64) float64 { return 1 / (1 + math.Exp(-x)) }, -8, 8},
		{"tanh", gx.Tanh, math.Tanh, -4, 4},
		{"sqrt", gx.Sqrt, math.Sqrt, 0, 50},
		{"rsqrt", gx.Rsqrt, func(x float64) float64 { return 1 / math.Sqrt(x) }, 0.1, 50},
		{"cosine", gx.Cosine, math.Cos, -3, 3},
		{"sine", gx.Sine, math.Sin, -3, 3},
		{"tan", gx.Tan, math.Tan, -1.5, 1.5},
		{"cbrt", gx.Cbrt, math.Cbrt, -8, 8},
		{"round_nearest_even", gx.RoundNearestEven, math.RoundToEven, -5, 5},
		{"round_nearest_afz", gx.RoundNearestAfz, math.Round, -5, 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := f32In(c.lo, c.hi, 3, 7)
			got, src := buildAndRun(t, []*Tensor{in}, func(fn *gx.Function, x []*gx.Value) (*gx.Value, error) { return c.op(x[0]) })
			if !strings.Contains(src, `"stablehlo.`+c.name+`"`) {
				t.Fatalf("builder did not emit stablehlo.%s:\n%s", c.name, src)
			}
			want := make([]float32, 21)
			for i, v := range in.Float32s() {
				want[i] = float32(c.ref(float64(v)))
			}
			wantF32(t, src, got, want, 1)
		})
	}
}

func TestGoMLXBinary(t *testing.T) {
	cases := []struct {
		name string
		op   func(a, b *gx.Value) (*gx.Value, error)
		f    func(a, b float64) float64
		i    func(a, b int32) int32
	}{
		{"add", gx.Add, func(a, b float64) float64 { return a + b }, func(a, b int32) int32 { return a + b }},
		{"subtract", gx.Subtract, func(a, b float64) float64 { return a - b }, func(a, b int32) int32 { return a - b }},
		{"multiply", gx.Multiply, func(a, b float64) float64 { return a * b }, func(a, b int32) int32 { return a * b }},
		{"divide", gx.Divide, func(a, b float64) float64 { return a / b }, func(a, b int32) int32 {
			if b == 0 {
				return -1
			}
			return a / b
		}},
		{"remainder", gx.Remainder, math.Mod, func(a, b int32) int32 {
			if b == 0 {
				return a
			}
			return a % b
		}},
		{"power", gx.Power, math.Pow, func(a, b int32) int32 {
			r := int32(1)
			if b < 0 {
				return 0
			}
			for k := int32(0); k < b; k++ {
				r *= a
			}
			return r
		}},
		{"maximum", gx.Maximum, math.Max, func(a, b int32) int32 { return max(a, b) }},
		{"minimum", gx.Minimum, math.Min, func(a, b int32) int32 { return min(a, b) }},
		{"and", gx.And, nil, func(a, b int32) int32 { return a & b }},
		{"or", gx.Or, nil, func(a, b int32) int32 { return a | b }},
		{"xor", gx.Xor, nil, func(a, b int32) int32 { return a ^ b }},
	}
	for _, c := range cases {
		if c.f != nil {
			t.Run(c.name+"_f32", func(t *testing.T) {
				a, b := f32In(0.5, 4, 4, 5), f32In(-3, 3, 4, 5)
				got, src := buildAndRun(t, []*Tensor{a, b}, func(fn *gx.Function, x []*gx.Value) (*gx.Value, error) { return c.op(x[0], x[1]) })
				want := make([]float32, 20)
				for i := range want {
					want[i] = float32(c.f(float64(a.Float32s()[i]), float64(b.Float32s()[i])))
				}
				wantF32(t, src, got, want, 1)
			})
		}
		t.Run(c.name+"_i32", func(t *testing.T) {
			a, b := i32In(-9, 9, 4, 5), i32In(-3, 4, 4, 5)
			got, src := buildAndRun(t, []*Tensor{a, b}, func(fn *gx.Function, x []*gx.Value) (*gx.Value, error) { return c.op(x[0], x[1]) })
			want := make([]int32, 20)
			for i := range want {
				want[i] = c.i(a.Int32s()[i], b.Int32s()[i])
			}
			wantI32(t, src, got, want)
		})
	}
}

func TestGoMLXNotAndBool(t *testing.T) {
	a, b := boolIn(6), boolIn(6)
	for i := range b.Data {
		b.Data[i] = uint8(i % 2)
	}
	got, src := buildAndRun(t, []*Tensor{a, b}, func(fn *gx.Function, x []*gx.Value) (*gx.Value, error) {
		n, err := gx.Not(x[0])
		if err != nil {
			return nil, err
		}
		return gx.Xor(n, x[1])
	})
	want := make([]bool, 6)
	for i := range want {
		want[i] = (a.Data[i] == 0) != (b.Data[i] != 0)
	}
	wantBool(t, src, got, want)
}

func TestGoMLXCompare(t *testing.T) {
	dirs := []struct {
		d types.ComparisonDirection
		f func(a, b float64) bool
	}{
		{types.CompareEQ, func(a, b float64) bool { return a == b }},
		{types.CompareNE, func(a, b float64) bool { return a != b }},
		{types.CompareLT, func(a, b float64) bool { return a < b }},
		{types.CompareLE, func(a, b float64) bool { return a <= b }},
		{types.CompareGT, func(a, b float64) bool { return a > b }},
		{types.CompareGE, func(a, b float64) bool { return a >= b }},
	}
	for _, d := range dirs {
		// check compares a with b (10 elements each) and the Go operator.
		check := func(t *testing.T, a, b *Tensor, ct types.ComparisonType) {
			got, src := buildAndRun(t, []*Tensor{a, b}, func(fn *gx.Function, x []*gx.Value) (*gx.Value, error) {
				return gx.Compare(x[0], x[1], d.d, ct)
			})
			want := make([]bool, 10)
			for i := range want {
				want[i] = d.f(a.Float64At(int64(i)), b.Float64At(int64(i)))
			}
			wantBool(t, src, got, want)
		}
		t.Run(d.d.String()+"_float", func(t *testing.T) {
			a := f32In(-2, 2, 10)
			b := a.Clone()
			b.Float32s()[3] = 0.5
			b.Float32s()[4] = float32(math.NaN())
			check(t, a, b, types.CompareFloat)
		})
		t.Run(d.d.String()+"_signed", func(t *testing.T) {
			check(t, i32In(-5, 5, 10), i32In(-3, 3, 10), types.CompareSigned)
		})
	}
	t.Run("totalorder", func(t *testing.T) {
		a, _ := FromFloat32s([]int64{4}, []float32{float32(math.Copysign(0, -1)), float32(math.NaN()), 1, float32(math.Inf(-1))})
		b, _ := FromFloat32s([]int64{4}, []float32{0, float32(math.Inf(1)), 1, float32(math.NaN())})
		got, src := buildAndRun(t, []*Tensor{a, b}, func(fn *gx.Function, x []*gx.Value) (*gx.Value, error) {
			return gx.Compare(x[0], x[1], types.CompareLT, types.CompareTotalOrder)
		})
		// -0 < +0, +NaN > +Inf, 1 == 1, -Inf < +NaN.
		wantBool(t, src, got, []bool{true, false, false, true})
	})
}

func TestGoMLXStructural(t *testing.T) {
	x := f32In(-1, 1, 2, 3)
	xs := x.Float32s()
	t.Run("iota", func(t *testing.T) {
		got, src := buildAndRun(t, nil, func(fn *gx.Function, _ []*gx.Value) (*gx.Value, error) {
			return fn.Iota(shapes.Make(dtypes.Int32, 2, 3), 1)
		})
		wantI32(t, src, got, []int32{0, 1, 2, 0, 1, 2})
	})
	t.Run("constant", func(t *testing.T) {
		got, src := buildAndRun(t, nil, func(fn *gx.Function, _ []*gx.Value) (*gx.Value, error) {
			return fn.ConstantFromFlatAndDimensions([]float32{1.5, -2, float32(math.Inf(1)), 3e-8}, 2, 2)
		})
		wantF32(t, src, got, []float32{1.5, -2, float32(math.Inf(1)), 3e-8}, 0)
	})
	t.Run("select", func(t *testing.T) {
		p := boolIn(2, 3)
		y := f32In(5, 6, 2, 3)
		got, src := buildAndRun(t, []*Tensor{p, x, y}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.Select(in[0], in[1], in[2])
		})
		want := make([]float32, 6)
		for i := range want {
			if p.Data[i] != 0 {
				want[i] = xs[i]
			} else {
				want[i] = y.Float32s()[i]
			}
		}
		wantF32(t, src, got, want, 0)
	})
	t.Run("clamp", func(t *testing.T) {
		lo, _ := FromFloat32s(nil, []float32{-0.25})
		hi, _ := FromFloat32s(nil, []float32{0.5})
		got, src := buildAndRun(t, []*Tensor{lo, x, hi}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.Clamp(in[0], in[1], in[2])
		})
		want := make([]float32, 6)
		for i, v := range xs {
			want[i] = min(max(v, -0.25), 0.5)
		}
		wantF32(t, src, got, want, 0)
	})
	t.Run("convert", func(t *testing.T) {
		y := f32In(-300, 300, 2, 3)
		got, src := buildAndRun(t, []*Tensor{y}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.Convert(in[0], dtypes.Int32)
		})
		want := make([]int32, 6)
		for i, v := range y.Float32s() {
			want[i] = int32(v)
		}
		wantI32(t, src, got, want)
	})
	t.Run("broadcast_in_dim", func(t *testing.T) {
		got, src := buildAndRun(t, []*Tensor{x}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.BroadcastInDim(in[0], shapes.Make(dtypes.Float32, 3, 4, 2), []int{2, 0})
		})
		want := make([]float32, 24)
		for i := 0; i < 3; i++ {
			for j := 0; j < 4; j++ {
				for k := 0; k < 2; k++ {
					want[(i*4+j)*2+k] = xs[k*3+i]
				}
			}
		}
		wantF32(t, src, got, want, 0)
	})
	t.Run("reshape", func(t *testing.T) {
		got, src := buildAndRun(t, []*Tensor{x}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.Reshape(in[0], shapes.Make(dtypes.Float32, 3, 1, 2))
		})
		wantF32(t, src, got, xs, 0)
	})
	t.Run("transpose", func(t *testing.T) {
		got, src := buildAndRun(t, []*Tensor{x}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.Transpose(in[0], 1, 0)
		})
		wantF32(t, src, got, []float32{xs[0], xs[3], xs[1], xs[4], xs[2], xs[5]}, 0)
	})
	t.Run("slice", func(t *testing.T) {
		y := f32In(0, 1, 5, 4)
		got, src := buildAndRun(t, []*Tensor{y}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.Slice(in[0], []int{1, 0}, []int{5, 3}, []int{2, 2})
		})
		v := y.Float32s()
		wantF32(t, src, got, []float32{v[4], v[6], v[12], v[14]}, 0)
	})
	t.Run("concatenate", func(t *testing.T) {
		y := f32In(7, 8, 2, 1)
		got, src := buildAndRun(t, []*Tensor{x, y}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.Concatenate(1, in[0], in[1])
		})
		v := y.Float32s()
		wantF32(t, src, got, []float32{xs[0], xs[1], xs[2], v[0], xs[3], xs[4], xs[5], v[1]}, 0)
	})
	t.Run("pad", func(t *testing.T) {
		fill, _ := FromFloat32s(nil, []float32{9})
		got, src := buildAndRun(t, []*Tensor{x, fill}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			return gx.Pad(in[0], in[1], []int{1, -1}, []int{0, 1}, []int{0, 1})
		})
		// Rows: one pad row then x's 2 rows. Columns of a row r:
		// interior-padded [r0 9 r1 9 r2], drop 1 at the start, add 1 at the end.
		want := []float32{
			9, 9, 9, 9, 9,
			9, xs[1], 9, xs[2], 9,
			9, xs[4], 9, xs[5], 9,
		}
		wantF32(t, src, got, want, 0)
	})
}

func TestGoMLXDotGeneral(t *testing.T) {
	// Batched matmul: lhs [b=2, m=3, k=4], rhs [b=2, n=5, k=4] contracting k.
	l, r := f32In(-1, 1, 2, 3, 4), f32In(-2, 2, 2, 5, 4)
	got, src := buildAndRun(t, []*Tensor{l, r}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
		return gx.DotGeneral(in[0], []int{2}, []int{0}, in[1], []int{2}, []int{0}).Done()
	})
	lv, rv := l.Float32s(), r.Float32s()
	want := make([]float32, 2*3*5)
	for b := 0; b < 2; b++ {
		for m := 0; m < 3; m++ {
			for n := 0; n < 5; n++ {
				var s float64
				for k := 0; k < 4; k++ {
					s += float64(lv[(b*3+m)*4+k]) * float64(rv[(b*5+n)*4+k])
				}
				want[(b*3+m)*5+n] = float32(s)
			}
		}
	}
	// Sums of mixed-sign products cancel, so compare absolutely: each
	// term is below 2 in magnitude and float32 accumulation over 4 terms
	// errs by well under 1e-5.
	g := got.Float32s()
	for i := range want {
		if math.Abs(float64(g[i]-want[i])) > 1e-5 {
			t.Fatalf("element %d: got %v, want %v\n%s", i, g[i], want[i], src)
		}
	}
}

func TestGoMLXReduce(t *testing.T) {
	x := f32In(-3, 3, 2, 3, 4)
	xs := x.Float32s()
	reducer := func(fn *gx.Function, op func(a, b *gx.Value) (*gx.Value, error)) (*gx.Function, error) {
		c := fn.Closure()
		a, err := c.NamedInput("lhs", shapes.Make(dtypes.Float32))
		if err != nil {
			return nil, err
		}
		b, err := c.NamedInput("rhs", shapes.Make(dtypes.Float32))
		if err != nil {
			return nil, err
		}
		r, err := op(a, b)
		if err != nil {
			return nil, err
		}
		return c, c.Return(r)
	}
	t.Run("sum_over_0_2", func(t *testing.T) {
		got, src := buildAndRun(t, []*Tensor{x}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			init, err := fn.ConstantFromScalar(float32(0))
			if err != nil {
				return nil, err
			}
			red, err := reducer(fn, gx.Add)
			if err != nil {
				return nil, err
			}
			return gx.Reduce(in[0], init, red, 0, 2)
		})
		want := make([]float32, 3)
		for j := 0; j < 3; j++ {
			var s float64
			for i := 0; i < 2; i++ {
				for k := 0; k < 4; k++ {
					s += float64(xs[(i*3+j)*4+k])
				}
			}
			want[j] = float32(s)
		}
		wantF32(t, src, got, want, 4)
	})
	t.Run("generic_body_max_of_squares", func(t *testing.T) {
		// Body max(lhs, rhs*rhs) is not a single-op body, so it runs
		// through the interpreted region path.
		got, src := buildAndRun(t, []*Tensor{x}, func(fn *gx.Function, in []*gx.Value) (*gx.Value, error) {
			init, err := fn.ConstantFromScalar(float32(math.Inf(-1)))
			if err != nil {
				return nil, err
			}
			red, err := reducer(fn, func(a, b *gx.Value) (*gx.Value, error) {
				sq, err := gx.Multiply(b, b)
				if err != nil {
					return nil, err
				}
				return gx.Maximum(a, sq)
			})
			if err != nil {
				return nil, err
			}
			return gx.Reduce(in[0], init, red, 1)
		})
		want := make([]float32, 8)
		for i := 0; i < 2; i++ {
			for k := 0; k < 4; k++ {
				m := float32(math.Inf(-1))
				for j := 0; j < 3; j++ {
					v := xs[(i*3+j)*4+k]
					m = max(m, v*v)
				}
				want[i*4+k] = m
			}
		}
		wantF32(t, src, got, want, 0)
	})
}

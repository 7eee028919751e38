package stablehlo

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
)

// evalText parses a one-function program and evaluates it on args.
func evalText(t *testing.T, src string, args ...*Tensor) []*Tensor {
	t.Helper()
	m, err := Parse([]byte(src), "t.mlir")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	out, err := Eval(m, "", args)
	if err != nil {
		t.Fatalf("eval: %v", err)
	}
	return out
}

func TestIntegerEdgeSemantics(t *testing.T) {
	src := `func.func @main(%a: tensor<4xi32>, %b: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>, tensor<4xi32>) {
  %0 = stablehlo.divide %a, %b : tensor<4xi32>
  %1 = stablehlo.remainder %a, %b : tensor<4xi32>
  %2 = stablehlo.power %a, %b : tensor<4xi32>
  return %0, %1, %2 : tensor<4xi32>, tensor<4xi32>, tensor<4xi32>
}`
	a, _ := FromInt32s([]int64{4}, []int32{7, math.MinInt32, -1, 2})
	b, _ := FromInt32s([]int64{4}, []int32{0, -1, -3, 10})
	out := evalText(t, src, a, b)
	want := [][]int32{
		{-1, math.MinInt32, 0, 0}, // x/0 = -1, MIN/-1 = MIN
		{7, 0, -1, 2},             // x%0 = x, MIN%-1 = 0
		{1, 0, -1, 1024},          // 7^0, MIN^-1 = 0, (-1)^-3 = -1, 2^10
	}
	for k, w := range want {
		for i, v := range out[k].Int32s() {
			if v != w[i] {
				t.Fatalf("result %d element %d: got %d want %d", k, i, v, w[i])
			}
		}
	}
}

func TestFloatEdgeSemantics(t *testing.T) {
	src := `func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi32>) {
  %0 = stablehlo.maximum %a, %b : tensor<4xf32>
  %1 = stablehlo.minimum %a, %b : tensor<4xf32>
  %2 = stablehlo.convert %a : (tensor<4xf32>) -> tensor<4xi32>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xi32>
}`
	nan := float32(math.NaN())
	negz := float32(math.Copysign(0, -1))
	a, _ := FromFloat32s([]int64{4}, []float32{nan, negz, 1e10, -1e10})
	b, _ := FromFloat32s([]int64{4}, []float32{1, 0, 2, -2.5})
	out := evalText(t, src, a, b)
	mx, mn, cv := out[0].Float32s(), out[1].Float32s(), out[2].Int32s()
	if mx[0] == mx[0] || mn[0] == mn[0] {
		t.Fatalf("NaN must propagate through maximum/minimum: %v %v", mx, mn)
	}
	if math.Signbit(float64(mx[1])) || !math.Signbit(float64(mn[1])) {
		t.Fatalf("max(-0,+0) must be +0 and min -0: %v %v", mx[1], mn[1])
	}
	if cv[0] != 0 || cv[2] != math.MaxInt32 || cv[3] != math.MinInt32 {
		t.Fatalf("convert NaN/saturation: %v", cv)
	}
}

func TestPadDotReduceShapes(t *testing.T) {
	// pad with negative low and interior padding, dot_general with batch
	// and two contracting dims, variadic reduce with a generic body.
	src := `func.func @main(%x: tensor<2x3xi32>, %l: tensor<2x2x3xf32>, %r: tensor<2x3x2xf32>) -> (tensor<3x4xi32>, tensor<2xf32>, tensor<3xi32>, tensor<3xi32>) {
  %z = stablehlo.constant dense<-1> : tensor<i32>
  %0 = stablehlo.pad %x, %z, low = [1, -1], high = [0, 0], interior = [0, 1] : (tensor<2x3xi32>, tensor<i32>) -> tensor<3x4xi32>
  %1 = stablehlo.dot_general %l, %r, batching_dims = [0] x [0], contracting_dims = [1, 2] x [2, 1] : (tensor<2x2x3xf32>, tensor<2x3x2xf32>) -> tensor<2xf32>
  %i = stablehlo.iota dim = 0 : tensor<2x3xi32>
  %m = stablehlo.constant dense<-2147483648> : tensor<i32>
  %c = stablehlo.constant dense<0> : tensor<i32>
  %2:2 = stablehlo.reduce(%x init: %m), (%i init: %c) across dimensions = [0] : (tensor<2x3xi32>, tensor<2x3xi32>, tensor<i32>, tensor<i32>) -> (tensor<3xi32>, tensor<3xi32>)
   reducer(%a: tensor<i32>, %b: tensor<i32>) (%ai: tensor<i32>, %bi: tensor<i32>)  {
    %g = stablehlo.compare  GT, %a, %b,  SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %v = stablehlo.select %g, %a, %b : tensor<i1>, tensor<i32>
    %w = stablehlo.select %g, %ai, %bi : tensor<i1>, tensor<i32>
    stablehlo.return %v, %w : tensor<i32>, tensor<i32>
  }
  return %0, %1, %2#0, %2#1 : tensor<3x4xi32>, tensor<2xf32>, tensor<3xi32>, tensor<3xi32>
}`
	x, _ := FromInt32s([]int64{2, 3}, []int32{1, 9, 3, 4, 5, 6})
	lv := make([]float32, 12)
	rv := make([]float32, 12)
	for i := range lv {
		lv[i] = float32(i + 1)
		rv[i] = float32(12 - i)
	}
	l, _ := FromFloat32s([]int64{2, 2, 3}, lv)
	r, _ := FromFloat32s([]int64{2, 3, 2}, rv)
	out := evalText(t, src, x, l, r)
	// Row r of x interior-padded: [x0 -1 x1 -1 x2], drop 1 at the start.
	wantPad := []int32{-1, -1, -1, -1, -1, 9, -1, 3, -1, 5, -1, 6}
	for i, v := range out[0].Int32s() {
		if v != wantPad[i] {
			t.Fatalf("pad: got %v want %v", out[0].Int32s(), wantPad)
		}
	}
	for b := 0; b < 2; b++ {
		var s float32
		for i := 0; i < 2; i++ {
			for j := 0; j < 3; j++ {
				s += lv[b*6+i*3+j] * rv[b*6+j*2+i]
			}
		}
		if got := out[1].Float32s()[b]; got != s {
			t.Fatalf("dot batch %d: got %v want %v", b, got, s)
		}
	}
	if got := out[2].Int32s(); got[0] != 4 || got[1] != 9 || got[2] != 6 {
		t.Fatalf("reduce max: %v", got)
	}
	if got := out[3].Int32s(); got[0] != 1 || got[1] != 0 || got[2] != 1 {
		t.Fatalf("reduce argmax: %v", got)
	}
}

func TestChecksFail(t *testing.T) {
	tmpl := `func.func @main() -> () {
  %a = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %b = stablehlo.constant dense<[1.0, 2.0, WANT]> : tensor<3xf32>
  stablehlo.custom_call @check.TARGET(%a, %b) {has_side_effect = true} : (tensor<3xf32>, tensor<3xf32>) -> ()
  return
}`
	cases := []struct {
		target, want string
		ok           bool
	}{
		{"expect_eq", "3.0", true},
		{"expect_eq", "3.0000002", false},
		{"expect_close", "3.0000005", true},  // 2 ULP
		{"expect_close", "3.0000010", false}, // 4 ULP
		{"expect_almost_eq", "3.0009", true},
		{"expect_almost_eq", "3.0011", false},
	}
	for _, c := range cases {
		src := strings.Replace(strings.Replace(tmpl, "WANT", c.want, 1), "TARGET", c.target, 1)
		m, err := Parse([]byte(src), "c.mlir")
		if err != nil {
			t.Fatal(err)
		}
		_, err = Eval(m, "", nil)
		if c.ok != (err == nil) {
			t.Fatalf("%s with %s: err = %v", c.target, c.want, err)
		}
		if err != nil {
			var ce *CheckError
			if !errors.As(err, &ce) || len(ce.Index) != 1 || ce.Index[0] != 2 || !strings.Contains(err.Error(), "c.mlir:4:3: check."+c.target+" failed at index [2]") {
				t.Fatalf("check error lacks position/index: %v", err)
			}
		}
	}
}

func TestULPAndAlmostEqual(t *testing.T) {
	one := float32(1)
	if d := ULPDifference32(one, math.Nextafter32(one, 2)); d != 1 {
		t.Fatalf("adjacent floats: %d", d)
	}
	if d := ULPDifference32(float32(math.NaN()), float32(math.NaN())); d != 0 {
		t.Fatalf("NaN vs NaN: %d", d)
	}
	if d := ULPDifference32(float32(math.Inf(1)), math.MaxFloat32); d != math.MaxUint64 {
		t.Fatalf("inf vs finite: %d", d)
	}
	if d := ULPDifference32(math.SmallestNonzeroFloat32, -math.SmallestNonzeroFloat32); d != 2 {
		t.Fatalf("opposite tiny: %d", d)
	}
	if AlmostEqual(0, -1e-5, 0.001) {
		t.Fatal("signs must agree for almost_eq")
	}
	if !AlmostEqual(0, 1e-5, 0.001) || AlmostEqual(1, math.Inf(1), 0.001) {
		t.Fatal("almost_eq zero/inf rules")
	}
}

func TestEvalArgumentErrors(t *testing.T) {
	m, err := Parse([]byte(addProgram), "a.mlir")
	if err != nil {
		t.Fatal(err)
	}
	bad, _ := FromFloat32s([]int64{3}, []float32{1, 2, 3})
	good, _ := FromFloat32s([]int64{2}, []float32{1, 2})
	for _, args := range [][]*Tensor{nil, {good, bad}, {good, nil}} {
		if _, err := Eval(m, "", args); err == nil {
			t.Fatalf("no error for bad args %v", args)
		}
	}
	if _, err := Eval(m, "missing", nil); err == nil {
		t.Fatal("no error for a missing function")
	}
}

func TestTopKAndSelectScalarPred(t *testing.T) {
	src := `func.func @main(%x: tensor<2x4xf32>, %p: tensor<i1>) -> (tensor<2x2xf32>, tensor<2x2xi32>, tensor<2x4xf32>) {
  %v, %i = chlo.top_k(%x, k = 2) : tensor<2x4xf32> -> (tensor<2x2xf32>, tensor<2x2xi32>)
  %n = stablehlo.negate %x : tensor<2x4xf32>
  %s = stablehlo.select %p, %x, %n : (tensor<i1>, tensor<2x4xf32>, tensor<2x4xf32>) -> tensor<2x4xf32>
  return %v, %i, %s : tensor<2x2xf32>, tensor<2x2xi32>, tensor<2x4xf32>
}`
	x, _ := FromFloat32s([]int64{2, 4}, []float32{1, 5, 5, 2, -1, -3, 0, -2})
	p, _ := FromBools(nil, []bool{false})
	out := evalText(t, src, x, p)
	v, i := out[0].Float32s(), out[1].Int32s()
	if v[0] != 5 || v[1] != 5 || i[0] != 1 || i[1] != 2 || v[2] != 0 || v[3] != -1 || i[2] != 2 || i[3] != 0 {
		t.Fatalf("top_k: %v %v", v, i)
	}
	if out[2].Float32s()[1] != -5 {
		t.Fatalf("select with scalar predicate: %v", out[2].Float32s())
	}
}

func TestDotPropagatesNaN(t *testing.T) {
	src := `func.func @main(%a: tensor<1x2xf32>, %b: tensor<2x1xf32>) -> tensor<1x1xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<1x2xf32>, tensor<2x1xf32>) -> tensor<1x1xf32>
  return %0 : tensor<1x1xf32>
}`
	a, _ := FromFloat32s([]int64{1, 2}, []float32{0, 1})
	b, _ := FromFloat32s([]int64{2, 1}, []float32{float32(math.Inf(1)), 2})
	if v := evalText(t, src, a, b)[0].Float32s()[0]; v == v {
		t.Fatalf("0*Inf + 1*2 must be NaN, got %v", v)
	}
}

func TestTensorClose(t *testing.T) {
	a, _ := FromFloat32s([]int64{3}, []float32{1, float32(math.NaN()), 3})
	b, _ := FromFloat32s([]int64{3}, []float32{1.0001, float32(math.NaN()), 3})
	if err := a.Close(b, 1e-3, 0); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(b, 1e-6, 0); err == nil || !strings.Contains(err.Error(), "index [0]") {
		t.Fatalf("expected mismatch at [0], got %v", err)
	}
	c, _ := FromInt32s([]int64{2}, []int32{1, 2})
	d, _ := FromInt32s([]int64{2}, []int32{1, 3})
	if err := c.Close(d, 1, 1); err == nil {
		t.Fatal("integers must match exactly")
	}
}

// TestDotMatchesNaive compares dot_general (blocked kernel, transposed
// operand layouts) with a naive float32 loop accumulating in the same k
// order, so the results must be bit-identical.
func TestDotMatchesNaive(t *testing.T) {
	src := `func.func @main(%a: tensor<7x6xf32>, %b: tensor<5x6xf32>) -> tensor<5x7xf32> {
  %0 = stablehlo.dot_general %b, %a, contracting_dims = [1] x [1] : (tensor<5x6xf32>, tensor<7x6xf32>) -> tensor<5x7xf32>
  return %0 : tensor<5x7xf32>
}`
	a, b := f32In(-3, 3, 7, 6), f32In(-2, 5, 5, 6)
	got := evalText(t, src, a, b)[0].Float32s()
	av, bv := a.Float32s(), b.Float32s()
	for i := 0; i < 5; i++ {
		for j := 0; j < 7; j++ {
			var s float32
			for k := 0; k < 6; k++ {
				s += bv[i*6+k] * av[j*6+k]
			}
			if got[i*7+j] != s {
				t.Fatalf("[%d,%d]: got %v want %v", i, j, got[i*7+j], s)
			}
		}
	}
}

// top_k orders floats as XLA's TopK does, in IEEE 754 total order: +NaN
// first, then +Inf, the finite values, +0 before -0, -Inf, and -NaN last;
// ties keep the lower index first. f32 and f64 alike.
func TestTopKTotalOrderNaNs(t *testing.T) {
	posNaN, negNaN := math.Float32frombits(0x7fc00000), math.Float32frombits(0xffc00000)
	negZero := float32(math.Copysign(0, -1))
	in := []float32{1, negNaN, posNaN, float32(math.Inf(-1)), negZero, float32(math.Inf(1)), 0, -2, 1}
	wantIdx := []int32{2, 5, 0, 8, 6, 4, 7, 3, 1}
	for _, ty := range []string{"f32", "f64"} {
		src := fmt.Sprintf(`func.func @main(%%x: tensor<9x%[1]s>) -> (tensor<9x%[1]s>, tensor<9xi32>) {
  %%v, %%i = chlo.top_k(%%x, k = 9) : tensor<9x%[1]s> -> (tensor<9x%[1]s>, tensor<9xi32>)
  return %%v, %%i : tensor<9x%[1]s>, tensor<9xi32>
}`, ty)
		x, _ := FromFloat32s([]int64{9}, in)
		if ty == "f64" {
			wide := make([]float64, len(in))
			for j, v := range in {
				wide[j] = float64(v) // keeps each NaN's sign
			}
			x, _ = FromFloat64s([]int64{9}, wide)
		}
		out := evalText(t, src, x)
		idx := out[1].Int32s()
		if !slices.Equal(idx, wantIdx) {
			t.Errorf("%s: top_k indices %v, want %v", ty, idx, wantIdx)
		}
		for j, w := range wantIdx {
			got := out[0].Float64At(int64(j))
			want := float64(in[w])
			if math.Float64bits(got) != math.Float64bits(want) && !(got != got && want != want && math.Signbit(got) == math.Signbit(want)) {
				t.Errorf("%s: value %d = %v, want %v", ty, j, got, want)
			}
		}
	}
}

// bitcast_convert from i1 to i1 is the identity (i1 to any other type
// stays unsupported: its bit representation is the implementation's).
func TestBitcastI1ToI1(t *testing.T) {
	src := `func.func @main(%p: tensor<2x2xi1>) -> tensor<2x2xi1> {
  %b = stablehlo.bitcast_convert %p : (tensor<2x2xi1>) -> tensor<2x2xi1>
  return %b : tensor<2x2xi1>
}`
	p, _ := FromBools([]int64{2, 2}, []bool{true, false, false, true})
	out := evalText(t, src, p)
	for j, w := range []int64{1, 0, 0, 1} {
		if got := out[0].Int64At(int64(j)); got != w {
			t.Fatalf("element %d = %d, want %d", j, got, w)
		}
	}
	if _, err := Parse([]byte(`func.func @main(%p: tensor<8xi1>) -> tensor<i8> {
  %b = stablehlo.bitcast_convert %p : (tensor<8xi1>) -> tensor<i8>
  return %b : tensor<i8>
}`), "t.mlir"); err == nil || !errors.Is(err, ErrUnsupported) {
		t.Fatalf("i1 to i8: %v, want unsupported", err)
	}
}

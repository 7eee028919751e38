package stablehlo

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestComplexLiterals parses complex dense literals in every spelling
// (MLIR's, go-xla's, hex, splat, nested) and checks their values and that
// the printed form parses back to the same bytes and prints identically.
func TestComplexLiterals(t *testing.T) {
	nan32 := float32(math.NaN())
	for _, c := range []struct {
		src  string
		want []complex128
	}{
		{`dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>`, []complex128{1 + 2i}},
		{`dense<[(1.0,2.0), (3.0,-4.0)]> : tensor<2xcomplex<f32>>`, []complex128{1 + 2i, 3 - 4i}},
		{`dense<[[(1.0, 2.0)], [(-0.5, 1e-3)]]> : tensor<2x1xcomplex<f64>>`, []complex128{1 + 2i, complex(-0.5, 1e-3)}},
		{`dense<(1.5, -2.5)> : tensor<2x2xcomplex<f64>>`, []complex128{1.5 - 2.5i, 1.5 - 2.5i, 1.5 - 2.5i, 1.5 - 2.5i}},
		{`dense<"0x0000803F00000040"> : tensor<complex<f32>>`, []complex128{1 + 2i}},
		{`dense<"0x0000803F00000040"> : tensor<3xcomplex<f32>>`, []complex128{1 + 2i, 1 + 2i, 1 + 2i}},
		{`dense<[(1, 2), (0x7FC00000, 0xFF800000)]> : tensor<2xcomplex<f32>>`, []complex128{1 + 2i, complex(float64(nan32), math.Inf(-1))}},
		// go-xla v0.1.4 prints non-finite complex64 parts as f64 bits.
		{`dense<[(1.0, 2.0), (0x7ff8000000000000, 0x7ff0000000000000)]> : tensor<2xcomplex<f32>>`, []complex128{1 + 2i, complex(math.NaN(), math.Inf(1))}},
		{`dense<(0x7FF0000000000000, -0.0)> : tensor<complex<f64>>`, []complex128{complex(math.Inf(1), math.Copysign(0, -1))}},
		{`dense<> : tensor<0xcomplex<f64>>`, nil},
	} {
		t.Run(c.src, func(t *testing.T) {
			x, err := ParseTensorLiteral(c.src)
			if err != nil {
				t.Fatal(err)
			}
			if int(x.Type.NumElements()) != len(c.want) {
				t.Fatalf("%d elements, want %d", x.Type.NumElements(), len(c.want))
			}
			for i, w := range c.want {
				g := x.Complex128At(int64(i))
				if !sameComplex(g, w) {
					t.Errorf("element %d: got %v, want %v", i, g, w)
				}
			}
			printed := x.String()
			y, err := ParseTensorLiteral(printed)
			if err != nil {
				t.Fatalf("reparse %s: %v", printed, err)
			}
			if !y.Equal(x) || y.String() != printed {
				t.Fatalf("round trip: %s -> %s", printed, y)
			}
		})
	}
}

// sameComplex is equality that matches NaN parts with NaN parts and tells
// -0 from +0.
func sameComplex(a, b complex128) bool {
	same := func(x, y float64) bool {
		return x == y && math.Signbit(x) == math.Signbit(y) || x != x && y != y
	}
	return same(real(a), real(b)) && same(imag(a), imag(b))
}

func TestComplexLiteralErrors(t *testing.T) {
	for _, c := range []struct{ src, msg string }{
		{`dense<(1.0,2.0)> : tensor<f32>`, "complex literal for f32"},
		{`dense<1.0> : tensor<complex<f32>>`, "needs (real, imaginary) literals"},
		{`dense<[(1.0,2.0), 3.0]> : tensor<2xcomplex<f32>>`, "mixes complex and real"},
		{`dense<[3.0, (1.0,2.0)]> : tensor<2xcomplex<f32>>`, "mixes complex and real"},
		{`dense<(1.0)> : tensor<complex<f32>>`, `expected ","`},
		{`dense<(true, false)> : tensor<complex<f32>>`, "expected a number"},
		{`dense<(1.0, 2.0, 3.0)> : tensor<complex<f32>>`, `expected ")"`},
		{`dense<[(1.0, 2.0)]> : tensor<2xcomplex<f32>>`, "does not match"},
		{`dense<(1e39, 0.0)> : tensor<complex<f32>>`, ""},
		{`dense<"0x0000803F"> : tensor<2xcomplex<f32>>`, "hex dense literal has 4 bytes"},
		{`dense<(0x1FFFFFFFF, 0.0)> : tensor<complex<f64>>`, ""},
	} {
		x, err := ParseTensorLiteral(c.src)
		if c.msg == "" {
			// Accepted: out-of-range decimal rounds to Inf as for f32;
			// a hex literal within 64 bits is the f64 part's bits.
			if err != nil {
				t.Errorf("%s: %v", c.src, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) {
			t.Errorf("%s: got %v (%v), want error containing %q", c.src, err, x, c.msg)
		}
	}
}

// TestComplexProgramRoundTrip prints a program using complex types, the
// complex ops and fft in both assembly forms, parses the print again and
// checks that the canonical form is stable.
func TestComplexProgramRoundTrip(t *testing.T) {
	src := `func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> (tensor<4xf32>, tensor<3xcomplex<f32>>, tensor<4xi1>) {
  %c = stablehlo.complex %a, %b : tensor<4xcomplex<f32>>
  %r = stablehlo.real %c : tensor<4xcomplex<f32>>
  %i = stablehlo.imag %c : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %f = stablehlo.fft %c, type = FFT, length = [4] : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  %g = "stablehlo.fft"(%f) {fft_type = #stablehlo<fft_type IFFT>, fft_length = array<i64: 4>} : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  %h = "stablehlo.fft"(%a) {fft_type = #stablehlo<fft_type RFFT>, fft_length = dense<4> : tensor<1xi64>} : (tensor<4xf32>) -> tensor<3xcomplex<f32>>
  %e = stablehlo.compare EQ, %g, %c : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<4xi1>
  %k = stablehlo.constant dense<(1.0, -1.0)> : tensor<complex<f64>>
  %s = stablehlo.add %r, %i : tensor<4xf32>
  return %s, %h, %e : tensor<4xf32>, tensor<3xcomplex<f32>>, tensor<4xi1>
}`
	m, err := Parse([]byte(src), "t.mlir")
	if err != nil {
		t.Fatal(err)
	}
	p1 := Print(m)
	m2, err := Parse([]byte(p1), "printed.mlir")
	if err != nil {
		t.Fatalf("reparse: %v\n%s", err, p1)
	}
	if p2 := Print(m2); p2 != p1 {
		t.Fatalf("print not stable:\n%s\nvs\n%s", p1, p2)
	}
	if Fingerprint(m) != Fingerprint(m2) {
		t.Fatal("fingerprint changed across a print round trip")
	}
	if !strings.Contains(string(Canonical(m)), "#stablehlo<comparison_type FLOAT>") {
		t.Error("canonical compare on complex should carry its default FLOAT type")
	}
	a, _ := FromFloat32s([]int64{4}, []float32{1, 2, 3, 4})
	b, _ := FromFloat32s([]int64{4}, []float32{-1, 0.5, 0, 2})
	out, err := Eval(m, "", []*Tensor{a, b})
	if err != nil {
		t.Fatal(err)
	}
	for i, w := range []float32{0, 2.5, 3, 6} {
		if g := out[0].Float32s()[i]; g != w {
			t.Errorf("real+imag[%d] = %v, want %v", i, g, w)
		}
	}
	// RFFT of [1 2 3 4]: [10, -2+2i, -2].
	for i, w := range []complex64{10, -2 + 2i, -2} {
		if g := out[1].Complex64s()[i]; cmplx.Abs(complex128(g-w)) > 1e-6 {
			t.Errorf("rfft[%d] = %v, want %v", i, g, w)
		}
	}
}

// complexInputs are values exercising signs, tiny and large magnitudes,
// zeros and the axes.
var complexInputs = []complex128{
	1 + 2i, -3 + 0.5i, 0.25 - 4i, -1 - 1i, 0, 2, -2, 3i, -0.5i,
	1e-5 + 2e-5i, 1e-9 - 1e-9i, 7.5 + 0.1i, -0.3 - 9i, 1e30 + 1e30i, 0.999 + 0.001i,
}

func complexTensor(t *testing.T, dt DType, vs []complex128) *Tensor {
	t.Helper()
	x := NewTensor(TensorType{DType: dt, Shape: []int64{int64(len(vs))}})
	for i, v := range vs {
		if dt == C64 {
			x.Complex64s()[i] = complex64(v)
		} else {
			x.Complex128s()[i] = v
		}
	}
	return x
}

// closeComplex compares got with want at a relative tolerance per part,
// scaled by |want| (or absolute near zero); NaN and Inf parts must agree.
func closeComplex(got, want complex128, tol float64) bool {
	if sameComplex(got, want) {
		return true
	}
	if cmplx.IsNaN(want) || cmplx.IsInf(want) {
		return cmplx.IsNaN(got) == cmplx.IsNaN(want) && cmplx.IsInf(got) == cmplx.IsInf(want)
	}
	return cmplx.Abs(got-want) <= tol*math.Max(cmplx.Abs(want), 1e-300)
}

// TestComplexUnaryOps checks each unary op on complex<f32> and
// complex<f64> against math/cmplx (computed on the input rounded to the
// type, as the interpreter sees it).
func TestComplexUnaryOps(t *testing.T) {
	ref := map[string]func(complex128) complex128{
		"negate":      func(z complex128) complex128 { return -z },
		"sign":        func(z complex128) complex128 { return z / complex(cmplx.Abs(z), 0) },
		"exponential": cmplx.Exp,
		"exponential_minus_one": func(z complex128) complex128 {
			if cmplx.Abs(z) < 1e-3 { // the series: e^z - 1 would cancel
				return z + z*z/2 + z*z*z/6 + z*z*z*z/24
			}
			return cmplx.Exp(z) - 1
		},
		"log": cmplx.Log,
		"log_plus_one": func(z complex128) complex128 {
			if cmplx.Abs(z) < 1e-3 {
				return z - z*z/2 + z*z*z/3 - z*z*z*z/4
			}
			return cmplx.Log(1 + z)
		},
		"logistic": func(z complex128) complex128 { return 1 / (1 + cmplx.Exp(-z)) },
		"sqrt":     cmplx.Sqrt,
		"rsqrt":    func(z complex128) complex128 { return 1 / cmplx.Sqrt(z) },
		"sine":     cmplx.Sin,
		"cosine":   cmplx.Cos,
		"tan": func(z complex128) complex128 {
			if math.Abs(imag(z)) > 20 { // XLA's limit, where cmplx.Tan gives NaN
				return complex(0, math.Copysign(1, imag(z)))
			}
			return cmplx.Tan(z)
		},
		"tanh": func(z complex128) complex128 {
			if math.Abs(real(z)) > 20 {
				return complex(math.Copysign(1, real(z)), 0)
			}
			return cmplx.Tanh(z)
		},
	}
	for _, dt := range []DType{C64, C128} {
		tol := 1e-13
		if dt == C64 {
			tol = 2e-6
		}
		for name, f := range ref {
			t.Run(fmt.Sprintf("%s/%s", dt, name), func(t *testing.T) {
				ty := TensorType{DType: dt, Shape: []int64{int64(len(complexInputs))}}
				src := fmt.Sprintf("func.func @main(%%x: %s) -> %s {\n  %%0 = stablehlo.%s %%x : %s\n  return %%0 : %s\n}", ty, ty, name, ty, ty)
				x := complexTensor(t, dt, complexInputs)
				out := evalText(t, src, x)[0]
				for i := range complexInputs {
					z := x.Complex128At(int64(i))
					w := f(z)
					if name == "sign" && z == 0 {
						w = 0
					}
					if dt == C64 {
						w = complex128(complex64(w))
					}
					g := out.Complex128At(int64(i))
					if !closeComplex(g, w, tol) {
						t.Errorf("%s(%v) = %v, want %v", name, z, g, w)
					}
				}
			})
		}
	}
}

// TestComplexLargeArguments checks XLA's limits where math/cmplx would
// produce NaN from ∞/∞ or ∞·0.
func TestComplexLargeArguments(t *testing.T) {
	for _, c := range []struct {
		f       func(complex128) complex128
		name    string
		z, want complex128
	}{
		{ctanh, "tanh", complex(400, 1), 1},
		{ctanh, "tanh", complex(-400, 1), -1},
		{ctanh, "tanh", complex(30, 1), complex(1, 4*math.Cos(1)*math.Sin(1)*math.Exp(-60))},
		{ctanh, "tanh", complex(400, math.Inf(1)), complex(math.NaN(), math.NaN())},
		{ctanh, "tanh", complex(math.Inf(1), 2), complex(1, math.Copysign(0, math.Sin(4)))},
		{ctan, "tan", complex(1, 400), 1i},
		{ctan, "tan", complex(1, -400), -1i},
		{cexpm1, "expm1", complex(800, 0), complex(math.Inf(1), 0)},
		{cexpm1, "expm1", complex(-800, 0), -1},
		{cexpm1, "expm1", complex(2, 3), cmplx.Exp(2+3i) - 1},
	} {
		if g := c.f(c.z); !closeComplex(g, c.want, 1e-15) {
			t.Errorf("%s(%v) = %v, want %v", c.name, c.z, g, c.want)
		}
	}
}

// TestComplexSmallArguments checks that expm1 and log1p keep their
// precision near zero, where e^z - 1 and log(1+z) would cancel.
func TestComplexSmallArguments(t *testing.T) {
	z := complex(1e-12, 2e-12)
	if g, w := cexpm1(z), z+z*z/2; cmplx.Abs(g-w) > 1e-26 {
		t.Errorf("expm1(%v) = %v, want %v", z, g, w)
	}
	if g, w := clog1p(z), z-z*z/2; cmplx.Abs(g-w) > 1e-26 {
		t.Errorf("log1p(%v) = %v, want %v", z, g, w)
	}
}

func TestComplexAbsRealImag(t *testing.T) {
	src := `func.func @main(%x: tensor<4xcomplex<f64>>, %y: tensor<4xcomplex<f32>>, %f: tensor<4xf32>) -> (tensor<4xf64>, tensor<4xf32>, tensor<4xf64>, tensor<4xf64>, tensor<4xf32>, tensor<4xf32>, tensor<4xcomplex<f32>>) {
  %0 = stablehlo.abs %x : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
  %1 = stablehlo.abs %y : (tensor<4xcomplex<f32>>) -> tensor<4xf32>
  %2 = stablehlo.real %x : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
  %3 = stablehlo.imag %x : (tensor<4xcomplex<f64>>) -> tensor<4xf64>
  %4 = stablehlo.real %f : (tensor<4xf32>) -> tensor<4xf32>
  %5 = stablehlo.imag %f : (tensor<4xf32>) -> tensor<4xf32>
  %6 = stablehlo.complex %4, %f : tensor<4xcomplex<f32>>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<4xf64>, tensor<4xf32>, tensor<4xf64>, tensor<4xf64>, tensor<4xf32>, tensor<4xf32>, tensor<4xcomplex<f32>>
}`
	vs := []complex128{3 + 4i, -1e300 + 1e300i, 1e-300 - 1e-300i, complex(math.Inf(-1), math.NaN())}
	x := complexTensor(t, C128, vs)
	y := complexTensor(t, C64, []complex128{3 + 4i, -1e30 + 1e30i, 1e-30 - 1e-30i, 0})
	f, _ := FromFloat32s([]int64{4}, []float32{1, -2, 0, 5})
	out := evalText(t, src, x, y, f)
	wantAbs := []float64{5, math.Sqrt2 * 1e300, math.Sqrt2 * 1e-300, math.Inf(1)}
	for i, w := range wantAbs {
		if g := out[0].Float64s()[i]; math.Abs(g-w) > 1e-15*w && g != w {
			t.Errorf("abs(%v) = %v, want %v (no overflow or underflow)", vs[i], g, w)
		}
	}
	for i, w := range []float32{5, float32(math.Sqrt2 * 1e30), float32(math.Sqrt2 * 1e-30), 0} {
		if g := out[1].Float32s()[i]; g != w {
			t.Errorf("abs c64 [%d] = %v, want %v", i, g, w)
		}
	}
	for i, v := range vs {
		if g := out[2].Float64s()[i]; g != real(v) && !(g != g && real(v) != real(v)) {
			t.Errorf("real[%d] = %v", i, g)
		}
		if g := out[3].Float64s()[i]; g != imag(v) && !(g != g && imag(v) != imag(v)) {
			t.Errorf("imag[%d] = %v", i, g)
		}
	}
	for i, v := range f.Float32s() {
		if out[4].Float32s()[i] != v || out[5].Float32s()[i] != 0 {
			t.Errorf("real/imag of float %v: %v %v", v, out[4].Float32s()[i], out[5].Float32s()[i])
		}
		if g := out[6].Complex64s()[i]; g != complex(v, v) {
			t.Errorf("complex(%v, %v) = %v", v, v, g)
		}
	}
}

// TestComplexBinaryOps checks add, subtract, multiply, divide and power
// against Go's complex arithmetic and math/cmplx, and compare's
// lexicographic order.
func TestComplexBinaryOps(t *testing.T) {
	as := []complex128{1 + 2i, -3 + 0.5i, 0.25 - 4i, 2, 0, 1e-3 + 1i, 2 + 2i}
	bs := []complex128{3 - 1i, -3 + 0.5i, 2i, 0.5, 2, 4 - 4i, 2 + 3i}
	ref := map[string]func(a, b complex128) complex128{
		"add":      func(a, b complex128) complex128 { return a + b },
		"subtract": func(a, b complex128) complex128 { return a - b },
		"multiply": func(a, b complex128) complex128 { return a * b },
		"divide":   func(a, b complex128) complex128 { return a / b },
		"power":    cmplx.Pow,
	}
	for _, dt := range []DType{C64, C128} {
		tol := 1e-14
		if dt == C64 {
			tol = 1e-6
		}
		for name, f := range ref {
			ty := TensorType{DType: dt, Shape: []int64{int64(len(as))}}
			src := fmt.Sprintf("func.func @main(%%a: %s, %%b: %s) -> %s {\n  %%0 = stablehlo.%s %%a, %%b : %s\n  return %%0 : %s\n}", ty, ty, ty, name, ty, ty)
			a, b := complexTensor(t, dt, as), complexTensor(t, dt, bs)
			out := evalText(t, src, a, b)[0]
			for i := range as {
				w := f(a.Complex128At(int64(i)), b.Complex128At(int64(i)))
				if g := out.Complex128At(int64(i)); !closeComplex(g, w, tol) {
					t.Errorf("%s %s(%v, %v) = %v, want %v", dt, name, as[i], bs[i], g, w)
				}
			}
		}
	}
	// compare: EQ/NE on both parts, orders lexicographic on (re, im).
	ca := []complex128{1 + 2i, 1 + 2i, 1 + 3i, 2 + 0i, complex(math.NaN(), 0)}
	cb := []complex128{1 + 2i, 1 + 1i, 1 + 2i, 1 + 9i, complex(math.NaN(), 0)}
	want := map[string][]uint8{
		"EQ": {1, 0, 0, 0, 0}, "NE": {0, 1, 1, 1, 1},
		"LT": {0, 0, 0, 0, 0}, "LE": {1, 0, 0, 0, 0},
		"GT": {0, 1, 1, 1, 0}, "GE": {1, 1, 1, 1, 0},
	}
	for dir, w := range want {
		src := fmt.Sprintf(`func.func @main(%%a: tensor<5xcomplex<f64>>, %%b: tensor<5xcomplex<f64>>) -> tensor<5xi1> {
  %%0 = stablehlo.compare %s, %%a, %%b, FLOAT : (tensor<5xcomplex<f64>>, tensor<5xcomplex<f64>>) -> tensor<5xi1>
  return %%0 : tensor<5xi1>
}`, dir)
		out := evalText(t, src, complexTensor(t, C128, ca), complexTensor(t, C128, cb))[0]
		for i := range w {
			if out.Data[i] != w[i] {
				t.Errorf("compare %s (%v, %v) = %d, want %d", dir, ca[i], cb[i], out.Data[i], w[i])
			}
		}
	}
}

// TestComplexConvert checks §convert's complex rules on every pair of
// real and complex types.
func TestComplexConvert(t *testing.T) {
	src := `func.func @main(%x: tensor<3xcomplex<f64>>, %i: tensor<3xi32>, %p: tensor<3xi1>) -> (tensor<3xcomplex<f32>>, tensor<3xf32>, tensor<3xi32>, tensor<3xi1>, tensor<3xcomplex<f64>>, tensor<3xcomplex<f32>>, tensor<3xbf16>) {
  %0 = stablehlo.convert %x : (tensor<3xcomplex<f64>>) -> tensor<3xcomplex<f32>>
  %1 = stablehlo.convert %x : (tensor<3xcomplex<f64>>) -> tensor<3xf32>
  %2 = stablehlo.convert %x : (tensor<3xcomplex<f64>>) -> tensor<3xi32>
  %3 = stablehlo.convert %x : (tensor<3xcomplex<f64>>) -> tensor<3xi1>
  %4 = stablehlo.convert %i : (tensor<3xi32>) -> tensor<3xcomplex<f64>>
  %5 = stablehlo.convert %p : (tensor<3xi1>) -> tensor<3xcomplex<f32>>
  %6 = stablehlo.convert %0 : (tensor<3xcomplex<f32>>) -> tensor<3xbf16>
  return %0, %1, %2, %3, %4, %5, %6 : tensor<3xcomplex<f32>>, tensor<3xf32>, tensor<3xi32>, tensor<3xi1>, tensor<3xcomplex<f64>>, tensor<3xcomplex<f32>>, tensor<3xbf16>
}`
	x := complexTensor(t, C128, []complex128{1.5 + 2.25i, -7.75 - 1e-3i, 0 + 5i})
	i, _ := FromInt32s([]int64{3}, []int32{-1, 0, 1 << 30})
	p, _ := FromBools([]int64{3}, []bool{true, false, true})
	out := evalText(t, src, x, i, p)
	wantC64 := []complex64{1.5 + 2.25i, complex(-7.75, float32(-1e-3)), 5i}
	for k, w := range wantC64 {
		if g := out[0].Complex64s()[k]; g != w {
			t.Errorf("c128->c64 [%d] = %v, want %v", k, g, w)
		}
	}
	for k, w := range []float32{1.5, -7.75, 0} {
		if g := out[1].Float32s()[k]; g != w {
			t.Errorf("c128->f32 [%d] = %v, want %v", k, g, w)
		}
		if g := out[6].Float64At(int64(k)); g != float64(w) {
			t.Errorf("c64->bf16 [%d] = %v, want %v", k, g, w)
		}
	}
	for k, w := range []int32{1, -7, 0} {
		if g := out[2].Int32s()[k]; g != w {
			t.Errorf("c128->i32 [%d] = %v, want %v", k, g, w)
		}
	}
	for k, w := range []uint8{1, 1, 0} { // the real part decides (§convert)
		if g := out[3].Data[k]; g != w {
			t.Errorf("c128->i1 [%d] = %v, want %v", k, g, w)
		}
	}
	for k, w := range []complex128{-1, 0, 1 << 30} {
		if g := out[4].Complex128s()[k]; g != w {
			t.Errorf("i32->c128 [%d] = %v, want %v", k, g, w)
		}
	}
	for k, w := range []complex64{1, 0, 1} {
		if g := out[5].Complex64s()[k]; g != w {
			t.Errorf("i1->c64 [%d] = %v, want %v", k, g, w)
		}
	}
}

// TestComplexDataMovement runs each data-movement op on a complex tensor
// and checks it against the same op on the real and the imaginary parts
// separately: moving 8- or 16-byte elements must move both parts.
func TestComplexDataMovement(t *testing.T) {
	ops := []struct{ name, body, res string }{
		{"broadcast", `%0 = stablehlo.broadcast_in_dim %x, dims = [1, 2] : (tensor<2x3xT>) -> tensor<4x2x3xT>`, "tensor<4x2x3xT>"},
		{"reshape", `%0 = stablehlo.reshape %x : (tensor<2x3xT>) -> tensor<3x2xT>`, "tensor<3x2xT>"},
		{"transpose", `%0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<2x3xT>) -> tensor<3x2xT>`, "tensor<3x2xT>"},
		{"slice", `%0 = stablehlo.slice %x [0:2, 1:3:1] : (tensor<2x3xT>) -> tensor<2x2xT>`, "tensor<2x2xT>"},
		{"concatenate", `%0 = stablehlo.concatenate %x, %x, dim = 1 : (tensor<2x3xT>, tensor<2x3xT>) -> tensor<2x6xT>`, "tensor<2x6xT>"},
		{"pad", `%z = stablehlo.slice %x [1:2, 2:3] : (tensor<2x3xT>) -> tensor<1x1xT>
  %p = stablehlo.reshape %z : (tensor<1x1xT>) -> tensor<T>
  %0 = stablehlo.pad %x, %p, low = [1, 0], high = [0, 2], interior = [1, 1] : (tensor<2x3xT>, tensor<T>) -> tensor<4x7xT>`, "tensor<4x7xT>"},
		{"reverse", `%0 = stablehlo.reverse %x, dims = [0, 1] : tensor<2x3xT>`, "tensor<2x3xT>"},
		{"dynamic_slice", `%i = stablehlo.constant dense<1> : tensor<i32>
  %0 = stablehlo.dynamic_slice %x, %i, %i, sizes = [1, 2] : (tensor<2x3xT>, tensor<i32>, tensor<i32>) -> tensor<1x2xT>`, "tensor<1x2xT>"},
		{"dynamic_update_slice", `%i = stablehlo.constant dense<0> : tensor<i32>
  %u = stablehlo.slice %x [1:2, 0:2] : (tensor<2x3xT>) -> tensor<1x2xT>
  %0 = stablehlo.dynamic_update_slice %x, %u, %i, %i : (tensor<2x3xT>, tensor<1x2xT>, tensor<i32>, tensor<i32>) -> tensor<2x3xT>`, "tensor<2x3xT>"},
		{"gather", `%i = stablehlo.constant dense<[[1], [0], [1]]> : tensor<3x1xi32>
  %0 = "stablehlo.gather"(%x, %i) {dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>, indices_are_sorted = false} : (tensor<2x3xT>, tensor<3x1xi32>) -> tensor<3x3xT>`, "tensor<3x3xT>"},
		{"select", `%c = stablehlo.constant dense<[[true, false, true], [false, false, true]]> : tensor<2x3xi1>
  %r = stablehlo.reverse %x, dims = [1] : tensor<2x3xT>
  %0 = stablehlo.select %c, %x, %r : tensor<2x3xi1>, tensor<2x3xT>`, "tensor<2x3xT>"},
		{"reduce", `%z = stablehlo.slice %x [0:1, 0:1] : (tensor<2x3xT>) -> tensor<1x1xT>
  %s = stablehlo.reshape %z : (tensor<1x1xT>) -> tensor<T>
  %0 = stablehlo.reduce(%x init: %s) applies stablehlo.add across dimensions = [1] : (tensor<2x3xT>, tensor<T>) -> tensor<2xT>`, "tensor<2xT>"},
		{"reduce_window", `%z = stablehlo.slice %x [1:2, 1:2] : (tensor<2x3xT>) -> tensor<1x1xT>
  %s = stablehlo.reshape %z : (tensor<1x1xT>) -> tensor<T>
  %0 = "stablehlo.reduce_window"(%x, %s) ({
  ^bb0(%a: tensor<T>, %b: tensor<T>):
    %r = stablehlo.add %a, %b : tensor<T>
    stablehlo.return %r : tensor<T>
  }) {window_dimensions = array<i64: 1, 2>, padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>} : (tensor<2x3xT>, tensor<T>) -> tensor<2x3xT>`, "tensor<2x3xT>"},
		{"scatter", `%i = stablehlo.constant dense<[[1], [0]]> : tensor<2x1xi32>
  %0 = "stablehlo.scatter"(%x, %i, %x) ({
  ^bb0(%a: tensor<T>, %b: tensor<T>):
    %s = stablehlo.add %a, %b : tensor<T>
    stablehlo.return %s : tensor<T>
  }) {scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>, indices_are_sorted = false, unique_indices = false} : (tensor<2x3xT>, tensor<2x1xi32>, tensor<2x3xT>) -> tensor<2x3xT>`, "tensor<2x3xT>"},
	}
	vals := []complex128{1 + 2i, -3 + 4i, 5 - 6i, 0.5 + 0.25i, -7 - 8i, 9 + 10i}
	for _, dt := range []DType{C64, C128} {
		for _, o := range ops {
			t.Run(dt.String()+"/"+o.name, func(t *testing.T) {
				prog := func(ty DType) string {
					src := fmt.Sprintf("func.func @main(%%x: tensor<2x3xT>) -> %s {\n  %s\n  return %%0 : %s\n}", o.res, o.body, o.res)
					src = strings.ReplaceAll(src, "xT>", "x"+ty.String()+">")
					return strings.ReplaceAll(src, "tensor<T>", "tensor<"+ty.String()+">")
				}
				run := func(ty DType, x *Tensor) *Tensor {
					return evalText(t, prog(ty), x)[0]
				}
				x := complexTensor(t, dt, vals)
				x.Type.Shape = []int64{2, 3}
				got := run(dt, x)
				re, im := evalRealImag(x, 0), evalRealImag(x, 1)
				wre, wim := run(dt.ComplexElem(), re), run(dt.ComplexElem(), im)
				want := evalMakeComplex(wre, wim)
				if !got.Equal(want) {
					t.Fatalf("got %s, want %s", got, want)
				}
			})
		}
	}
}

// TestComplexSort sorts complex keys with a lexicographic comparator
// (compare LT on complex numbers) and carries an index along.
func TestComplexSort(t *testing.T) {
	src := `func.func @main(%x: tensor<6xcomplex<f64>>) -> (tensor<6xcomplex<f64>>, tensor<6xi32>) {
  %i = stablehlo.iota dim = 0 : tensor<6xi32>
  %0:2 = "stablehlo.sort"(%x, %i) ({
  ^bb0(%a: tensor<complex<f64>>, %b: tensor<complex<f64>>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b : (tensor<complex<f64>>, tensor<complex<f64>>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) {dimension = 0 : i64, is_stable = true} : (tensor<6xcomplex<f64>>, tensor<6xi32>) -> (tensor<6xcomplex<f64>>, tensor<6xi32>)
  return %0#0, %0#1 : tensor<6xcomplex<f64>>, tensor<6xi32>
}`
	vals := []complex128{2 + 1i, -1 + 5i, 2 - 3i, -1 + 5i, 0, -1 - 5i}
	out := evalText(t, src, complexTensor(t, C128, vals))
	wantIdx := []int32{5, 1, 3, 4, 2, 0}
	for k, w := range wantIdx {
		if g := out[1].Int32s()[k]; g != w || out[0].Complex128s()[k] != vals[w] {
			t.Fatalf("sorted[%d] = %v (index %d), want %v (index %d)", k, out[0].Complex128s()[k], g, vals[w], w)
		}
	}
}

// TestComplexRandomArgs checks that random complex arguments fill both
// parts in [-1, 1).
func TestComplexRandomArgs(t *testing.T) {
	m, err := Parse([]byte(`func.func @main(%a: tensor<64xcomplex<f32>>, %b: tensor<64xcomplex<f64>>) -> tensor<64xcomplex<f32>> {
  return %a : tensor<64xcomplex<f32>>
}`), "t.mlir")
	if err != nil {
		t.Fatal(err)
	}
	args := RandomArgs(m.Main(), 1)
	for _, a := range args {
		var imNonZero bool
		for i := int64(0); i < a.Type.NumElements(); i++ {
			z := a.Complex128At(i)
			if math.Abs(real(z)) > 1 || math.Abs(imag(z)) > 1 {
				t.Fatalf("%s element %d = %v out of [-1, 1)", a.Type, i, z)
			}
			imNonZero = imNonZero || imag(z) != 0
		}
		if !imNonZero {
			t.Errorf("%s: imaginary parts all zero", a.Type)
		}
	}
}

// TestComplexIotaDot checks iota and dot_general (a 2x3 · 3x2 product
// with a batch) on complex numbers.
func TestComplexIotaDot(t *testing.T) {
	src := `func.func @main(%a: tensor<2x3xcomplex<f64>>, %b: tensor<3x2xcomplex<f64>>) -> (tensor<2x2xcomplex<f64>>, tensor<3xcomplex<f32>>) {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<2x3xcomplex<f64>>, tensor<3x2xcomplex<f64>>) -> tensor<2x2xcomplex<f64>>
  %1 = stablehlo.iota dim = 0 : tensor<3xcomplex<f32>>
  return %0, %1 : tensor<2x2xcomplex<f64>>, tensor<3xcomplex<f32>>
}`
	av := []complex128{1 + 1i, 2, -1i, 3 - 2i, 0.5, 4i}
	bv := []complex128{1, 2i, -1 + 1i, 3, 2 - 2i, -1}
	a, b := complexTensor(t, C128, av), complexTensor(t, C128, bv)
	a.Type.Shape, b.Type.Shape = []int64{2, 3}, []int64{3, 2}
	out := evalText(t, src, a, b)
	for m := 0; m < 2; m++ {
		for n := 0; n < 2; n++ {
			var w complex128
			for k := 0; k < 3; k++ {
				w += av[m*3+k] * bv[k*2+n]
			}
			if g := out[0].Complex128s()[m*2+n]; g != w {
				t.Errorf("dot[%d,%d] = %v, want %v", m, n, g, w)
			}
		}
	}
	for i, g := range out[1].Complex64s() {
		if g != complex(float32(i), 0) {
			t.Errorf("iota[%d] = %v", i, g)
		}
	}
}

// naiveDFT is the definition, X[k] = Σ x[j] e^(-2πi jk/n) (divided by n
// and with the opposite sign for the inverse), summed in complex128 with
// exactly reduced angles.
func naiveDFT(x []complex128, inverse bool) []complex128 {
	n := len(x)
	out := make([]complex128, n)
	sign := -1.0
	if inverse {
		sign = 1
	}
	for k := 0; k < n; k++ {
		var s complex128
		for j, v := range x {
			ang := sign * 2 * math.Pi * float64((j*k)%n) / float64(n)
			s += v * complex(math.Cos(ang), math.Sin(ang))
		}
		if inverse {
			s /= complex(float64(n), 0)
		}
		out[k] = s
	}
	return out
}

// naiveND applies naiveDFT along each of the innermost len(lengths)
// dimensions of x (row-major, shape).
func naiveND(x []complex128, shape []int64, k int, inverse bool) []complex128 {
	out := append([]complex128(nil), x...)
	r := len(shape)
	for d := r - k; d < r; d++ {
		n := shape[d]
		inner := int64(1)
		for _, s := range shape[d+1:] {
			inner *= s
		}
		outer := int64(len(out)) / max(n*inner, 1)
		for o := int64(0); o < outer; o++ {
			for in := int64(0); in < inner; in++ {
				line := make([]complex128, n)
				for j := range line {
					line[j] = out[o*n*inner+int64(j)*inner+in]
				}
				line = naiveDFT(line, inverse)
				for j := range line {
					out[o*n*inner+int64(j)*inner+in] = line[j]
				}
			}
		}
	}
	return out
}

func fftProgram(typ string, in, out TensorType, lengths []int64) string {
	return fmt.Sprintf(`func.func @main(%%x: %s) -> %s {
  %%0 = "stablehlo.fft"(%%x) {fft_type = #stablehlo<fft_type %s>, fft_length = %s} : (%s) -> %s
  return %%0 : %s
}`, in, out, typ, arrayI64(lengths), in, out, out)
}

// TestFFT checks all four fft types against the naive DFT for many
// lengths (powers of two, short and long others: the three algorithms)
// and 1 to 3 transformed dimensions, in both precisions.
func TestFFT(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	shapes := [][]int64{{1}, {2}, {3}, {4}, {5}, {7}, {8}, {16}, {31}, {33}, {64}, {100}, {3, 6}, {2, 4, 5}, {2, 3, 4, 2}, {2, 0}}
	for _, dt := range []DType{C64, C128} {
		tol := 1e-12
		if dt == C64 {
			tol = 2e-6
		}
		for _, shape := range shapes {
			for k := 1; k <= min(3, len(shape)); k++ {
				L := shape[len(shape)-k:]
				ct := TensorType{DType: dt, Shape: shape}
				n := ct.NumElements()
				vals := make([]complex128, n)
				for i := range vals {
					vals[i] = complex(rng.NormFloat64(), rng.NormFloat64())
				}
				x := complexTensor(t, dt, vals)
				x.Type.Shape = shape
				xs := make([]complex128, n)
				for i := range xs {
					xs[i] = x.Complex128At(int64(i))
				}
				for _, typ := range []string{"FFT", "IFFT"} {
					got := evalText(t, fftProgram(typ, ct, ct, L), x)[0]
					want := naiveND(xs, shape, k, typ == "IFFT")
					checkSpectrum(t, fmt.Sprintf("%s %s L=%v", typ, ct, L), got, want, tol)
				}
				// RFFT of the real parts, and IRFFT back.
				rt := TensorType{DType: dt.ComplexElem(), Shape: shape}
				re := evalRealImag(x, 0)
				half := append([]int64(nil), shape...)
				last := L[len(L)-1]
				if last > 0 {
					half[len(half)-1] = last/2 + 1
				} else {
					half[len(half)-1] = 0
				}
				ht := TensorType{DType: dt, Shape: half}
				spec := evalText(t, fftProgram("RFFT", rt, ht, L), re)[0]
				full := naiveND(realAsComplex(re), shape, k, false)
				checkSpectrum(t, fmt.Sprintf("RFFT %s L=%v", rt, L), spec, keepLast(full, shape, half[len(half)-1]), tol)
				back := evalText(t, fftProgram("IRFFT", ht, rt, L), spec)[0]
				if err := back.Close(re, 0, tol*float64(max(n, 1))*4); err != nil {
					t.Errorf("IRFFT(RFFT(x)) != x for %s L=%v: %v", rt, L, err)
				}
			}
		}
	}
}

func realAsComplex(x *Tensor) []complex128 {
	n := x.Type.NumElements()
	out := make([]complex128, n)
	for i := range out {
		out[i] = complex(x.Float64At(int64(i)), 0)
	}
	return out
}

// keepLast keeps the first m entries of each row of the last dimension.
func keepLast(x []complex128, shape []int64, m int64) []complex128 {
	last := shape[len(shape)-1]
	if last == 0 {
		return nil
	}
	var out []complex128
	for row := int64(0); row < int64(len(x))/last; row++ {
		out = append(out, x[row*last:row*last+m]...)
	}
	return out
}

// checkSpectrum compares a transform with the naive one; errors scale
// with the largest magnitude of the result (the sums' conditioning).
func checkSpectrum(t *testing.T, what string, got *Tensor, want []complex128, tol float64) {
	t.Helper()
	if int(got.Type.NumElements()) != len(want) {
		t.Fatalf("%s: %d elements, want %d", what, got.Type.NumElements(), len(want))
	}
	scale := 1.0
	for _, w := range want {
		scale = math.Max(scale, cmplx.Abs(w))
	}
	for i, w := range want {
		if g := got.Complex128At(int64(i)); cmplx.Abs(g-w) > tol*scale {
			t.Fatalf("%s: element %d = %v, want %v", what, i, g, w)
		}
	}
}

// TestFFTKnownValues checks small cases by hand: an impulse transforms
// to all ones, a constant to an impulse, and IRFFT ignores the imaginary
// parts of the zero and Nyquist frequencies.
func TestFFTKnownValues(t *testing.T) {
	imp := complexTensor(t, C64, []complex128{1, 0, 0, 0})
	ct := TensorType{DType: C64, Shape: []int64{4}}
	got := evalText(t, fftProgram("FFT", ct, ct, []int64{4}), imp)[0]
	for i, g := range got.Complex64s() {
		if g != 1 {
			t.Errorf("FFT(impulse)[%d] = %v, want 1", i, g)
		}
	}
	cst := complexTensor(t, C128, []complex128{2, 2, 2})
	c3 := TensorType{DType: C128, Shape: []int64{3}}
	got = evalText(t, fftProgram("FFT", c3, c3, []int64{3}), cst)[0]
	for i, w := range []complex128{6, 0, 0} {
		if g := got.Complex128s()[i]; cmplx.Abs(g-w) > 1e-15 {
			t.Errorf("FFT(const)[%d] = %v, want %v", i, g, w)
		}
	}
	// RFFT of a length-32 signal, with NumPy's values as IREE's
	// stablehlo fft test (iree-org/iree tests/e2e/stablehlo_ops/fft.mlir)
	// records them.
	sig := []float32{9.0, 1.0, 4.5, -0.3, 10.0, -1.0, 5.5, 0.3, 299.0, 3.5, -0.777, 2.0, 1.7, 3.5, -4.5, 0.0}
	sig = append(sig, sig...)
	x32, _ := FromFloat32s([]int64{32}, sig)
	wantRe := []float64{666.8460, 0.0, -590.16925, 0.0, 593.4485, 0.0, -579.52875, 0.0, 629.95404, 0.0, -567.1126, 0.0, 591.75146, 0.0, -583.1894, 0.0, 630.846}
	wantIm := []float64{0.0, 0.0, -23.956373, 0.0, -10.254326, 0.0, -6.1443653, 0.0, -10.0, 0.0, 3.865515, 0.0, 0.63767385, 0.0, 52.453506, 0.0, 0.0}
	got = evalText(t, fftProgram("RFFT", x32.Type, TensorType{DType: C64, Shape: []int64{17}}, []int64{32}), x32)[0]
	for k := range wantRe {
		if g := complex128(got.Complex64s()[k]); math.Abs(real(g)-wantRe[k]) > 1e-3 || math.Abs(imag(g)-wantIm[k]) > 1e-3 {
			t.Errorf("RFFT(signal)[%d] = %v, want (%v, %v)", k, g, wantRe[k], wantIm[k])
		}
	}
	spec := complexTensor(t, C128, []complex128{4 + 7i, 0, 2 + 5i})
	got = evalText(t, fftProgram("IRFFT", c3, TensorType{DType: F64, Shape: []int64{4}}, []int64{4}), spec)[0]
	for i, w := range []float64{1.5, 0.5, 1.5, 0.5} {
		if g := got.Float64s()[i]; math.Abs(g-w) > 1e-15 {
			t.Errorf("IRFFT[%d] = %v, want %v", i, g, w)
		}
	}
}

// TestComplexVerifyErrors checks the type rules of the complex ops and
// fft, and that ops this implementation does not define on complex
// numbers are reported as unsupported (not as invalid programs).
func TestComplexVerifyErrors(t *testing.T) {
	for _, c := range []struct {
		body        string
		msg         string
		unsupported bool
	}{
		{`%0 = stablehlo.complex %f, %d : (tensor<4xf32>, tensor<4xf64>) -> tensor<4xcomplex<f32>>`, "must have the same type", false},
		{`%0 = stablehlo.complex %i, %i : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xcomplex<f32>>`, "must be f32 or f64", false},
		{`%0 = stablehlo.complex %f, %f : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xcomplex<f64>>`, "operands give tensor<4xcomplex<f32>>", false},
		{`%0 = stablehlo.real %i : (tensor<4xi32>) -> tensor<4xi32>`, "floating-point or complex", false},
		{`%0 = stablehlo.imag %c : (tensor<4xcomplex<f32>>) -> tensor<4xf64>`, "operands give tensor<4xf32>", false},
		{`%0 = stablehlo.abs %c : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>`, "operands give tensor<4xf32>", false},
		{`%0 = stablehlo.floor %c : tensor<4xcomplex<f32>>`, "requires a floating-point operand", false},
		{`%0 = stablehlo.popcnt %c : tensor<4xcomplex<f32>>`, "requires an integer", false},
		{`%0 = stablehlo.maximum %c, %c : tensor<4xcomplex<f32>>`, "complex operands", true},
		{`%0 = stablehlo.remainder %c, %c : tensor<4xcomplex<f32>>`, "complex operands", true},
		{`%0 = stablehlo.clamp %c, %c, %c : tensor<4xcomplex<f32>>`, "clamp of", true},
		{`%0 = stablehlo.compare LT, %c, %c, TOTALORDER : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<4xi1>`, "compare type TOTALORDER", false},
		{`%0 = stablehlo.convert %c : (tensor<4xcomplex<f32>>) -> tensor<2xf32>`, "shapes differ", false},
		{`%0 = stablehlo.dot_general %c, %c, contracting_dims = [0] x [0] : (tensor<4xcomplex<f32>>, tensor<4xcomplex<f32>>) -> tensor<f32>`, "incompatible", false},
		{`%0 = "stablehlo.fft"(%f) {fft_type = #stablehlo<fft_type FFT>, fft_length = array<i64: 4>} : (tensor<4xf32>) -> tensor<4xf32>`, "needs a complex operand", false},
		{`%0 = "stablehlo.fft"(%c) {fft_type = #stablehlo<fft_type FFT>, fft_length = array<i64: 8>} : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>`, "innermost dimensions must be [8]", false},
		{`%0 = "stablehlo.fft"(%c) {fft_type = #stablehlo<fft_type FFT>, fft_length = array<i64>} : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>`, "1 to 3 entries", false},
		{`%0 = "stablehlo.fft"(%c) {fft_type = #stablehlo<fft_type FFT>, fft_length = array<i64: 1, 4>} : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>`, "more entries than", false},
		{`%0 = "stablehlo.fft"(%c) {fft_type = #stablehlo<fft_type DCT>, fft_length = array<i64: 4>} : (tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>`, "bad fft_type", false},
		{`%0 = "stablehlo.fft"(%c) {fft_type = #stablehlo<fft_type RFFT>, fft_length = array<i64: 4>} : (tensor<4xcomplex<f32>>) -> tensor<3xcomplex<f32>>`, "RFFT needs an f32 or f64", false},
		{`%0 = "stablehlo.fft"(%f) {fft_type = #stablehlo<fft_type RFFT>, fft_length = array<i64: 4>} : (tensor<4xf32>) -> tensor<4xcomplex<f32>>`, "operands give tensor<3xcomplex<f32>>", false},
		{`%0 = "stablehlo.fft"(%c) {fft_type = #stablehlo<fft_type IRFFT>, fft_length = array<i64: 4>} : (tensor<4xcomplex<f32>>) -> tensor<4xf32>`, "innermost dimensions must be [3]", false},
		{`%0 = "stablehlo.fft"(%c) {fft_type = #stablehlo<fft_type IRFFT>, fft_length = array<i64: 6>} : (tensor<4xcomplex<f32>>) -> tensor<6xf32>`, "", false},
		{`%0 = "stablehlo.fft"(%f) {fft_type = #stablehlo<fft_type IRFFT>, fft_length = array<i64: 6>} : (tensor<4xf32>) -> tensor<6xf32>`, "IRFFT needs a complex operand", false},
	} {
		src := `func.func @main(%c: tensor<4xcomplex<f32>>, %f: tensor<4xf32>, %d: tensor<4xf64>, %i: tensor<4xi32>) -> tensor<4xi1> {
  BODY
  %r = stablehlo.constant dense<true> : tensor<4xi1>
  return %r : tensor<4xi1>
}`
		_, err := Parse([]byte(strings.Replace(src, "BODY", c.body, 1)), "t.mlir")
		if c.msg == "" {
			if err != nil {
				t.Errorf("%s: %v", c.body, err)
			}
			continue
		}
		if err == nil || !strings.Contains(err.Error(), c.msg) || errors.Is(err, ErrUnsupported) != c.unsupported {
			t.Errorf("%s:\n got %v (unsupported %v)\nwant %q (unsupported %v)", c.body, err, errors.Is(err, ErrUnsupported), c.msg, c.unsupported)
		}
	}
}

// TestComplexChecks checks check.expect_* on complex tensors: part by
// part, reporting the element.
func TestComplexChecks(t *testing.T) {
	a := complexTensor(t, C64, []complex128{1 + 2i, 3 - 4i})
	b := complexTensor(t, C64, []complex128{1 + 2i, 3 - 4.5i})
	if err := Check(CheckSpec{Target: "check.expect_close"}, a, a.Clone()); err != nil {
		t.Fatal(err)
	}
	err := Check(CheckSpec{Target: "check.expect_eq"}, a, b)
	if err == nil || len(err.Index) != 1 || err.Index[0] != 1 || !strings.Contains(err.Detail, "imaginary") || err.Got != "(3e+00, -4e+00)" {
		t.Fatalf("got %+v", err)
	}
	if err := a.Close(b, 0, 0.6); err != nil {
		t.Fatalf("Close within tolerance: %v", err)
	}
	if err := a.Close(b, 0, 0.1); err == nil {
		t.Fatal("Close must fail on the imaginary part")
	}
}

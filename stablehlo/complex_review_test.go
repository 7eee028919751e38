package stablehlo

import (
	"errors"
	"fmt"
	"math"
	"math/cmplx"
	"runtime"
	"strings"
	"testing"
)

// TestComplexBitcastConvert checks §bitcast_convert (C2): a bitcast
// between a complex and a non-complex type is invalid (XLA's shape
// inference refuses it too), while complex to complex moves bits.
func TestComplexBitcastConvert(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"tensor<2xcomplex<f32>>", "tensor<2xi64>"},
		{"tensor<2xcomplex<f32>>", "tensor<2xf64>"},
		{"tensor<2xi64>", "tensor<2xcomplex<f32>>"},
		{"tensor<2xcomplex<f64>>", "tensor<2x2xf64>"},
		{"tensor<2x2xi64>", "tensor<2xcomplex<f64>>"},
	} {
		src := fmt.Sprintf("func.func @main(%%x: %s) -> %s {\n  %%0 = stablehlo.bitcast_convert %%x : (%s) -> %s\n  return %%0 : %s\n}", c.in, c.out, c.in, c.out, c.out)
		_, err := Parse([]byte(src), "t.mlir")
		if err == nil || errors.Is(err, ErrUnsupported) || !strings.Contains(err.Error(), "complex") {
			t.Errorf("bitcast_convert %s -> %s: got %v, want an error about complex types", c.in, c.out, err)
		}
	}
	// complex<f32> pairs to complex<f64> is a legal reinterpretation.
	src := `func.func @main(%x: tensor<2xcomplex<f32>>) -> tensor<complex<f64>> {
  %0 = stablehlo.bitcast_convert %x : (tensor<2xcomplex<f32>>) -> tensor<complex<f64>>
  return %0 : tensor<complex<f64>>
}`
	x := complexTensor(t, C64, []complex128{1 + 2i, 3 + 4i})
	got := evalText(t, src, x)[0]
	if string(got.Data) != string(x.Data) {
		t.Fatalf("bitcast moved bytes: %x, want %x", got.Data, x.Data)
	}
}

// TestComplexWideHexLiteral: go-xla writes a non-finite complex<f32> part
// as the 64-bit pattern of the widened double; only those (NaN and ±Inf,
// which narrow exactly) may be wider than 32 bits. Anything else wider
// than the part is an error, as for an f32 literal, not a silently
// narrowed or zeroed value.
func TestComplexWideHexLiteral(t *testing.T) {
	for _, src := range []string{
		`dense<(0x123456789A, 0.0)> : tensor<complex<f32>>`,       // 40 bits: 0 after narrowing
		`dense<(0x3FF0000000000000, 0.0)> : tensor<complex<f32>>`, // a finite double
		`dense<(1.0, 0x0000000100000000)> : tensor<complex<f32>>`, // a denormal double
		`dense<[(1.0, 2.0), (0x1FFFFFFFF, 0.0)]> : tensor<2xcomplex<f32>>`,
	} {
		if x, err := ParseTensorLiteral(src); err == nil || !strings.Contains(err.Error(), "too wide") {
			t.Errorf("%s: got %v (%v), want a \"too wide\" error", src, x, err)
		}
	}
	for _, c := range []struct {
		src  string
		want complex128
	}{
		{`dense<(0x7ff8000000000000, 0xfff0000000000000)> : tensor<complex<f32>>`, complex(math.NaN(), math.Inf(-1))},
		{`dense<(0x00000001, 0x7F800000)> : tensor<complex<f32>>`, complex(float64(math.Float32frombits(1)), math.Inf(1))},
		{`dense<(0x000000000000000001, 0.0)> : tensor<complex<f32>>`, complex(float64(math.Float32frombits(1)), 0)},
	} {
		x, err := ParseTensorLiteral(c.src)
		if err != nil {
			t.Errorf("%s: %v", c.src, err)
			continue
		}
		if g := x.Complex128At(0); !sameComplex(g, c.want) {
			t.Errorf("%s = %v, want %v", c.src, g, c.want)
		}
	}
}

// memSlack is the fixed overhead (tensor headers, shape slices, a plan's
// struct) an estimate per element does not cover.
const memSlack = 1 << 10

// TestMemoryScratchFFT checks fft's scratch estimate against what the
// interpreter really allocates, for the radix-2 and the Bluestein paths
// (the latter's buffers are four times the transform length).
func TestMemoryScratchFFT(t *testing.T) {
	for _, c := range []struct {
		typ     string
		in, out string
		n       int64
	}{
		{"FFT", "tensor<1025xcomplex<f64>>", "tensor<1025xcomplex<f64>>", 1025},
		{"IFFT", "tensor<1025xcomplex<f32>>", "tensor<1025xcomplex<f32>>", 1025},
		{"RFFT", "tensor<1025xf64>", "tensor<513xcomplex<f64>>", 1025},
		{"IRFFT", "tensor<513xcomplex<f64>>", "tensor<1025xf64>", 1025},
		{"FFT", "tensor<1024xcomplex<f64>>", "tensor<1024xcomplex<f64>>", 1024},
		{"FFT", "tensor<3x1025xcomplex<f64>>", "tensor<3x1025xcomplex<f64>>", 1025},
	} {
		src := fmt.Sprintf(`func.func @main(%%x: %s) -> %s {
  %%0 = "stablehlo.fft"(%%x) {fft_type = #stablehlo<fft_type %s>, fft_length = array<i64: %d>} : (%s) -> %s
  return %%0 : %s
}`, c.in, c.out, c.typ, c.n, c.in, c.out, c.out)
		m, op, est := parseScratch(t, src)
		x := RandomArgs(m.Main(), 1)[0]
		rt := op.Results[0].Type
		// memSlack: headers and shape slices, not proportional to the data.
		if used := allocatedBesides(rt, func() { evalFFT(x, rt, op.Attrs.FftType, op.Attrs.FftLength) }); used > est+memSlack {
			t.Errorf("%s %s: allocated %d bytes besides the result, estimate %d", c.typ, c.in, used, est)
		}
	}
}

// TestComplexEdgeBinsIRFFT: IRFFT takes the Hermitian signal its n/2+1
// bins describe, so the imaginary parts of bin 0 and (n even) bin n/2
// cannot matter (pocketfft's and XLA's C2R drop them).
func TestComplexEdgeBinsIRFFT(t *testing.T) {
	for _, n := range []int64{4, 5, 6, 40, 41} {
		h := n/2 + 1
		base := make([]complex128, h)
		for i := range base {
			base[i] = complex(float64(i+1), float64(3*i%5))
		}
		base[0] = complex(real(base[0]), 0)
		if n%2 == 0 {
			base[h-1] = complex(real(base[h-1]), 0)
		}
		noisy := append([]complex128(nil), base...)
		noisy[0] += 7i
		if n%2 == 0 {
			noisy[h-1] -= 3i
		}
		ht := TensorType{DType: C128, Shape: []int64{h}}
		rt := TensorType{DType: F64, Shape: []int64{n}}
		prog := fftProgram("IRFFT", ht, rt, []int64{n})
		a := evalText(t, prog, complexTensor(t, C128, base))[0]
		b := evalText(t, prog, complexTensor(t, C128, noisy))[0]
		if err := b.Close(a, 0, 1e-12); err != nil {
			t.Errorf("n=%d: %v", n, err)
		}
		// And the Hermitian signal is the naive inverse DFT's real part.
		full := make([]complex128, n)
		copy(full, base)
		for j := h; j < n; j++ {
			full[j] = cmplx.Conj(base[n-j])
		}
		want := naiveDFT(full, true)
		for i, w := range want {
			if g := a.Float64s()[i]; math.Abs(g-real(w)) > 1e-12*float64(n) {
				t.Errorf("n=%d: x[%d] = %v, want %v", n, i, g, real(w))
			}
		}
	}
}

// TestComplexControlFlow carries complex values through while, if and
// case (16-byte elements in block arguments and results).
func TestComplexControlFlow(t *testing.T) {
	src := `func.func @main(%x: tensor<2xcomplex<f64>>, %p: tensor<i1>, %k: tensor<i32>) -> (tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>) {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %w:2 = stablehlo.while(%i = %c, %v = %x) : tensor<i32>, tensor<2xcomplex<f64>>
  cond {
    %three = stablehlo.constant dense<3> : tensor<i32>
    %lt = stablehlo.compare LT, %i, %three : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %n = stablehlo.add %i, %one : tensor<i32>
    %m = stablehlo.multiply %v, %x : tensor<2xcomplex<f64>>
    stablehlo.return %n, %m : tensor<i32>, tensor<2xcomplex<f64>>
  }
  %f = "stablehlo.if"(%p) ({
    %neg = stablehlo.negate %x : tensor<2xcomplex<f64>>
    stablehlo.return %neg : tensor<2xcomplex<f64>>
  }, {
    stablehlo.return %x : tensor<2xcomplex<f64>>
  }) : (tensor<i1>) -> tensor<2xcomplex<f64>>
  %g = "stablehlo.case"(%k) ({
    stablehlo.return %x : tensor<2xcomplex<f64>>
  }, {
    %cst = stablehlo.constant dense<[(1.0, -1.0), (0x7FF8000000000000, 2.5)]> : tensor<2xcomplex<f64>>
    stablehlo.return %cst : tensor<2xcomplex<f64>>
  }) : (tensor<i32>) -> tensor<2xcomplex<f64>>
  return %w#1, %f, %g : tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>, tensor<2xcomplex<f64>>
}`
	xv := []complex128{1 + 2i, -0.5 + 0.25i}
	p, _ := FromBools(nil, []bool{true})
	k, _ := FromInt32s(nil, []int32{1})
	out := evalText(t, src, complexTensor(t, C128, xv), p, k)
	for i, z := range xv {
		if g, w := out[0].Complex128s()[i], z*z*z*z; g != w {
			t.Errorf("while[%d] = %v, want %v", i, g, w)
		}
		if g := out[1].Complex128s()[i]; g != -z {
			t.Errorf("if[%d] = %v, want %v", i, g, -z)
		}
	}
	if g := out[2].Complex128s(); !sameComplex(g[0], 1-1i) || !sameComplex(g[1], complex(math.NaN(), 2.5)) {
		t.Errorf("case = %v", g)
	}
}

// TestComplexLogAccuracy checks log's real part near the unit circle,
// where log(hypot(x, y)) rounds |z| to 1 and returns 0, and that the
// special values stay C99's.
func TestComplexLogAccuracy(t *testing.T) {
	below := 1 - 1e-10 // rounded; below-1 is exact
	for _, c := range []struct {
		z, want complex128
	}{
		{1 + 1e-9i, complex(5e-19, 1e-9)},
		{complex(1e-9, -1), complex(5e-19, -math.Pi/2+1e-9)},
		{complex(-1, 3e-8), complex(4.5e-16, math.Pi-3e-8)},
		{complex(below, 0), complex(math.Log1p(below-1), 0)},
		{complex(3, 4), complex(math.Log(5), math.Atan2(4, 3))},
		{complex(1e300, 1e300), complex(math.Log(1e300)+0.5*math.Ln2, math.Pi/4)},
		{complex(1e-300, -1e-300), complex(math.Log(1e-300)+0.5*math.Ln2, -math.Pi/4)},
	} {
		g := clog(c.z)
		if math.Abs(real(g)-real(c.want)) > 1e-15*math.Abs(real(c.want)) || math.Abs(imag(g)-imag(c.want)) > 1e-15*math.Abs(imag(c.want)) {
			t.Errorf("log(%v) = %v, want %v", c.z, g, c.want)
		}
	}
	for _, z := range []complex128{0, complex(math.Copysign(0, -1), 0), complex(math.Inf(-1), 1), complex(math.NaN(), 1), complex(1, math.Inf(1))} {
		if g, w := clog(z), cmplx.Log(z); !sameComplex(g, w) {
			t.Errorf("log(%v) = %v, want %v", z, g, w)
		}
	}
}

// TestComplexUnsupportedLinalg: cholesky and triangular_solve are defined
// on complex numbers (§cholesky, §triangular_solve) but not implemented,
// so a program using them is unsupported, not invalid.
func TestComplexUnsupportedLinalg(t *testing.T) {
	for _, src := range []string{
		`func.func @main(%a: tensor<2x2xcomplex<f32>>) -> tensor<2x2xcomplex<f32>> {
  %0 = stablehlo.cholesky %a, lower = true : tensor<2x2xcomplex<f32>>
  return %0 : tensor<2x2xcomplex<f32>>
}`,
		`func.func @main(%a: tensor<2x2xcomplex<f64>>, %b: tensor<2x3xcomplex<f64>>) -> tensor<2x3xcomplex<f64>> {
  %0 = "stablehlo.triangular_solve"(%a, %b) {left_side = true, lower = true, unit_diagonal = false, transpose_a = #stablehlo<transpose ADJOINT>} : (tensor<2x2xcomplex<f64>>, tensor<2x3xcomplex<f64>>) -> tensor<2x3xcomplex<f64>>
  return %0 : tensor<2x3xcomplex<f64>>
}`,
	} {
		if _, err := Parse([]byte(src), "t.mlir"); !errors.Is(err, ErrUnsupported) {
			t.Errorf("got %v, want ErrUnsupported\n%s", err, src)
		}
	}
}

// TestComplexLog1pBranchCut: log_plus_one keeps the sign of a zero
// imaginary part, so points on the cut x < -1 land on the side it names
// (as log does, and XLA's atan2(y, 1+x)).
func TestComplexLog1pBranchCut(t *testing.T) {
	negZero := math.Copysign(0, -1)
	for _, c := range []struct{ z, want complex128 }{
		{complex(-2, negZero), complex(0, -math.Pi)},
		{complex(-2, 0), complex(0, math.Pi)},
		{complex(-3, negZero), complex(math.Ln2, -math.Pi)},
		{complex(math.Inf(1), negZero), complex(math.Inf(1), negZero)},
	} {
		if g := clog1p(c.z); !sameComplex(g, c.want) {
			t.Errorf("log1p(%v) = %v, want %v", c.z, g, c.want)
		}
	}
}

// TestMemoryScratchComplexConvert checks the scratch estimate of convert
// to and from complex types and of a complex iota, which build their
// results from part-typed temporaries.
func TestMemoryScratchComplexConvert(t *testing.T) {
	for _, c := range []struct{ in, out string }{
		{"tensor<4096xf32>", "tensor<4096xcomplex<f32>>"},
		{"tensor<4096xi32>", "tensor<4096xcomplex<f64>>"},
		{"tensor<4096xcomplex<f64>>", "tensor<4096xf32>"},
		{"tensor<4096xcomplex<f64>>", "tensor<4096xi1>"},
		{"tensor<4096xcomplex<f32>>", "tensor<4096xcomplex<f64>>"},
		{"", "tensor<4096xcomplex<f64>>"},
	} {
		var src string
		if c.in == "" {
			src = fmt.Sprintf("func.func @main() -> %s {\n  %%0 = stablehlo.iota dim = 0 : %s\n  return %%0 : %s\n}", c.out, c.out, c.out)
		} else {
			src = fmt.Sprintf("func.func @main(%%x: %s) -> %s {\n  %%0 = stablehlo.convert %%x : (%s) -> %s\n  return %%0 : %s\n}", c.in, c.out, c.in, c.out, c.out)
		}
		m, op, est := parseScratch(t, src)
		rt := op.Results[0].Type
		var x *Tensor
		if c.in != "" {
			x = RandomArgs(m.Main(), 1)[0]
		}
		eval := func() { evalIota(rt, 0) }
		if x != nil {
			eval = func() { evalConvert(x, rt.DType) }
		}
		// memSlack: headers and shape slices, not proportional to the data.
		if used := allocatedBesides(rt, eval); used > est+memSlack {
			t.Errorf("%s -> %s: allocated %d bytes besides the result, estimate %d", c.in, c.out, used, est)
		}
	}
}

// TestComplexIntegerAttributes: a complex dense literal where an integer
// attribute belongs (padding, window_reversal) is an error, not zeros
// (Int64At has no value for complex elements).
func TestComplexIntegerAttributes(t *testing.T) {
	for _, src := range []string{
		// Read as zeros, the padding would give the declared result.
		`func.func @main(%x: tensor<4xf32>, %z: tensor<f32>) -> tensor<1xf32> {
  %r = "stablehlo.reduce_window"(%x, %z) <{padding = dense<[[(3.0, 0.0), (0.0, 0.0)]]> : tensor<1x2xcomplex<f32>>, window_dimensions = array<i64: 4>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<f32>) -> tensor<1xf32>
  return %r : tensor<1xf32>
}`,
		`func.func @main(%x: tensor<1x1x3x3xf32>, %k: tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32> {
  %r = "stablehlo.convolution"(%x, %k) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 1 : i64, window_reversal = dense<[(1.0, 0.0), (0.0, 1.0)]> : tensor<2xcomplex<f32>>} : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  return %r : tensor<1x1x2x2xf32>
}`,
	} {
		if _, err := Parse([]byte(src), "t.mlir"); err == nil || errors.Is(err, ErrUnsupported) {
			t.Errorf("got %v, want an error\n%s", err, src)
		}
	}
}

// TestMemoryScratchDotComplex: dot_general converts its operands to the
// result type before relaying them, so complex<f32> operands with a
// complex<f64> result need 16 bytes an element twice.
func TestMemoryScratchDotComplex(t *testing.T) {
	src := `func.func @main(%a: tensor<64x64xcomplex<f32>>, %b: tensor<64x64xcomplex<f32>>) -> tensor<64x64xcomplex<f64>> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [0] x [1] : (tensor<64x64xcomplex<f32>>, tensor<64x64xcomplex<f32>>) -> tensor<64x64xcomplex<f64>>
  return %0 : tensor<64x64xcomplex<f64>>
}`
	m, op, est := parseScratch(t, src)
	args := RandomArgs(m.Main(), 1)
	rt := op.Results[0].Type
	if _, err := evalDot(args[0], args[1], rt, op.Attrs.Dot); err != nil {
		t.Fatal(err)
	}
	used := allocatedBesides(rt, func() { evalDot(args[0], args[1], rt, op.Attrs.Dot) })
	if used > est+memSlack {
		t.Errorf("allocated %d bytes besides the result, estimate %d", used, est)
	}
}

// parseScratch parses src and returns it, its first op and the op's
// scratch estimate.
func parseScratch(t *testing.T, src string) (*Module, *Op, int64) {
	t.Helper()
	m, err := Parse([]byte(src), "t.mlir")
	if err != nil {
		t.Fatal(err)
	}
	op := m.Main().Body.Ops[0]
	est, err := memScratchBytes(op)
	if err != nil {
		t.Fatal(err)
	}
	return m, op, est
}

// allocatedBesides is what eval allocates beyond a result of type rt: the
// least of a few runs, since TotalAlloc counts the whole process and the
// runtime or another goroutine may allocate during any one run (noise only
// adds, so the least is the closest to eval's own).
func allocatedBesides(rt TensorType, eval func()) int64 {
	least := int64(math.MaxInt64)
	for range 5 {
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		eval()
		runtime.ReadMemStats(&after)
		least = min(least, int64(after.TotalAlloc-before.TotalAlloc)-rt.ByteSize())
	}
	return least
}

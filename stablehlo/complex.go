package stablehlo

import (
	"fmt"
	"math"
	"math/cmplx"
	"slices"
)

// complexT are the complex element types' Go types.
type complexT interface{ ~complex64 | ~complex128 }

// arithT are the element types with +, - and * (the loops that sum and
// multiply: reduce's fast folds, dot_general).
type arithT interface{ numberT | complexT }

// complexKernels are complex<f32>'s and complex<f64>'s. complex<f32>
// adds, subtracts and multiplies in float32, as XLA does; transcendental
// functions are evaluated in complex128 and rounded once.
type complexKernels[T complexT] struct{}

func (complexKernels[T]) unaryInt(name string, _, _ *Tensor) error {
	return fmt.Errorf("%s: no integer kernel for complex numbers", name)
}

func (complexKernels[T]) binary(name string, a, b, o *Tensor) error {
	return binComplex(name, elems[T](a), elems[T](b), elems[T](o))
}

func (complexKernels[T]) reduce(name string, x, init, o *Tensor, outer, inner int64) error {
	var fold func(T, []T) T
	switch name {
	case "add":
		fold = sumRow[T]
	case "multiply":
		fold = productRow[T]
	}
	return reduceRows(elems[T](x), elems[T](init)[0], elems[T](o), outer, inner, fold)
}

func (complexKernels[T]) compare(dir, _ string, a, b *Tensor, o []uint8) {
	cmpComplex(dir, elems[T](a), elems[T](b), o)
}

// clamp is never reached: the verifier rejects clamp on complex numbers
// (XLA defines no order on them); the method only completes the set.
func (complexKernels[T]) clamp(_, _, _, _ *Tensor) {}

func (complexKernels[T]) matmul(a, b, o *Tensor, B, M, K, N int64) error {
	matmul(elems[T](a), elems[T](b), elems[T](o), B, M, K, N)
	return nil
}

func binComplex[T complexT](name string, a, b, o []T) error {
	if binNum(name, a, b, o) {
		return nil
	}
	switch name {
	case "divide":
		// Go divides complex64 through complex128 with C99 Annex G's
		// handling of infinities and NaNs (runtime.complex128div).
		for i := range a {
			o[i] = a[i] / b[i]
		}
	case "power":
		for i := range a {
			o[i] = T(cmplx.Pow(complex128(a[i]), complex128(b[i])))
		}
	default:
		return fmt.Errorf("%s does not support complex operands", name)
	}
	return nil
}

// cmpComplex compares (real, imaginary) pairs lexicographically, as the
// spec's compare defines it for complex element types (§compare): EQ and
// NE on both parts, the orders on the real parts first.
func cmpComplex[T complexT](dir string, a, b []T, o []uint8) {
	for i := range a {
		x, y := complex128(a[i]), complex128(b[i])
		xr, xi, yr, yi := real(x), imag(x), real(y), imag(y)
		var r bool
		switch dir {
		case "EQ":
			r = xr == yr && xi == yi
		case "NE":
			r = xr != yr || xi != yi
		case "LT":
			r = xr < yr || xr == yr && xi < yi
		case "LE":
			r = xr < yr || xr == yr && xi <= yi
		case "GT":
			r = xr > yr || xr == yr && xi > yi
		case "GE":
			r = xr > yr || xr == yr && xi >= yi
		}
		o[i] = b2u(r)
	}
}

// complexFn applies f elementwise in complex128 and rounds once, as the
// StableHLO reference interpreter does (mapWithUpcastToDouble in
// stablehlo/reference/Element.cpp); XLA computes complex<f32> in float32
// and can differ by tens of ULP.
func complexFn[T complexT](f func(complex128) complex128, x, o []T) {
	for i, v := range x {
		o[i] = T(f(complex128(v)))
	}
}

// unaryComplexFuncs are the elementwise unary ops defined on complex
// numbers (each op's section of the spec lists complex operands), with
// XLA's choices where the spec leaves edge cases open.
var unaryComplexFuncs = map[string]func(complex128) complex128{
	"negate":                func(z complex128) complex128 { return -z },
	"sign":                  csign,
	"exponential":           cmplx.Exp,
	"exponential_minus_one": cexpm1,
	"log":                   clog,
	"log_plus_one":          clog1p,
	"logistic":              func(z complex128) complex128 { return 1 / (1 + cmplx.Exp(-z)) },
	"sqrt":                  cmplx.Sqrt,
	"rsqrt":                 func(z complex128) complex128 { return 1 / cmplx.Sqrt(z) },
	"sine":                  cmplx.Sin,
	"cosine":                cmplx.Cos,
	"tan":                   ctan,
	"tanh":                  ctanh,
}

// tanhLimit is the |real part| above which tanh's real part is ±1 to
// double precision (e^-40 < 2^-53).
const tanhLimit = 20

// ctanh is cmplx.Tanh, except that for |x| > 20 it returns XLA's limits
// (EmitComplexUnaryOp, kTanh: real part ±1 once e^2|x| overflows) where
// cmplx.Tanh would divide two infinities: ±1 + i·4cos(y)sin(y)e^(-2|x|),
// NaN when y is infinite or NaN.
func ctanh(z complex128) complex128 {
	x, y := real(z), imag(z)
	if math.Abs(x) <= tanhLimit || math.IsInf(x, 0) || math.IsNaN(x) {
		return cmplx.Tanh(z)
	}
	if math.IsInf(y, 0) || math.IsNaN(y) {
		return complex(math.NaN(), math.NaN())
	}
	s, c := math.Sincos(y)
	return complex(math.Copysign(1, x), 4*c*s*math.Exp(-2*math.Abs(x)))
}

// ctan is tan(z) = -i·tanh(iz) (XLA computes it so) for |imag| > 20, and
// cmplx.Tan otherwise.
func ctan(z complex128) complex128 {
	if math.Abs(imag(z)) <= tanhLimit || math.IsInf(imag(z), 0) || math.IsNaN(imag(z)) {
		return cmplx.Tan(z)
	}
	t := ctanh(complex(-imag(z), real(z)))
	return complex(imag(t), -real(t))
}

// csign is z/|z|, 0 at 0 and NaN when a part is NaN (XLA's
// EmitComplexSign: select(|z| == 0, 0, z/|z|)).
func csign(z complex128) complex128 {
	a := cmplx.Abs(z)
	if a == 0 {
		return 0
	}
	return complex(real(z)/a, imag(z)/a)
}

// cexpm1 is e^z - 1 as XLA computes it (EmitComplexUnaryOp, kExpm1),
// without cancellation for small z: expm1(x)cos(y) + cosm1(y) +
// i·e^x sin(y), with cosm1(y) = -2sin²(y/2) and an imaginary part of +0
// when y is zero (so a real argument gives a real result even when e^x
// overflows).
func cexpm1(z complex128) complex128 {
	x, y := real(z), imag(z)
	s := math.Sin(y / 2)
	re := math.Expm1(x)*math.Cos(y) - 2*s*s
	if y == 0 {
		return complex(re, 0)
	}
	return complex(re, math.Exp(x)*math.Sin(y))
}

// clog is the principal log(z) = log|z| + i·arg z. cmplx.Log takes
// log(hypot(x, y)), which loses the real part near the unit circle's
// axis points (log|1 + 1e-9i| = 5e-19 comes out 0, as hypot rounds to 1);
// here log|z| = ½·log1p(a²-1 + b²) there, with a = max(|x|, |y|), b =
// min, a² and b² exact inside FMAs (glibc's clog works alike), and
// log(a) + ½·log1p((b/a)²) elsewhere (XLA's EmitComplexLog), which also
// cannot overflow.
func clog(z complex128) complex128 {
	x, y := real(z), imag(z)
	a, b := math.Abs(x), math.Abs(y)
	if a < b {
		a, b = b, a
	}
	if a == 0 || math.IsInf(a, 0) || math.IsNaN(a) || math.IsNaN(b) {
		return cmplx.Log(z) // C99 Annex G's special values
	}
	var re float64
	if a >= 0.5 && a <= 2 {
		re = 0.5 * math.Log1p(math.FMA(b, b, math.FMA(a, a, -1)))
	} else {
		r := b / a
		re = math.Log(a) + 0.5*math.Log1p(r*r)
	}
	return complex(re, math.Atan2(y, x))
}

// clog1p is log(1+z) without cancellation for small z: the real part is
// ½·log1p(2x + x² + y²), the imaginary part atan2(y, 1+x).
func clog1p(z complex128) complex128 {
	x, y := real(z), imag(z)
	if math.Abs(x) >= 0.5 || math.Abs(y) >= 0.5 || math.IsNaN(x) || math.IsNaN(y) {
		// complex(1+x, y), not 1+z: Go adds the constant's +0
		// imaginary part, turning y = -0 into +0 and moving a point of
		// the branch cut (x < -1) to the other side.
		return clog(complex(1+x, y))
	}
	return complex(0.5*math.Log1p(x*(2+x)+y*y), math.Atan2(y, 1+x))
}

// evalUnaryComplex evaluates a unary op that keeps the complex type.
func evalUnaryComplex(name string, x *Tensor) (*Tensor, error) {
	f, ok := unaryComplexFuncs[name]
	if !ok {
		return nil, fmt.Errorf("%s does not support %s", name, x.Type.DType)
	}
	out := NewTensor(x.Type)
	switch x.Type.DType {
	case C64:
		xs, os := x.Complex64s(), out.Complex64s()
		if name == "negate" { // exact in complex64
			for i, v := range xs {
				os[i] = -v
			}
			return out, nil
		}
		complexFn(f, xs, os)
	case C128:
		complexFn(f, x.Complex128s(), out.Complex128s())
	default:
		return nil, fmt.Errorf("%s: %s is not complex", name, x.Type)
	}
	return out, nil
}

// evalComplexAbs is abs on complex numbers: the modulus, of the part
// type (§abs (C1)), computed as hypot so it neither overflows nor
// underflows for large or tiny parts.
func evalComplexAbs(x *Tensor) *Tensor {
	out := NewTensor(TensorType{DType: x.Type.DType.ComplexElem(), Shape: x.Type.Shape})
	switch x.Type.DType {
	case C64:
		os := out.Float32s()
		for i, v := range x.Complex64s() {
			os[i] = float32(math.Hypot(float64(real(v)), float64(imag(v))))
		}
	case C128:
		os := out.Float64s()
		for i, v := range x.Complex128s() {
			os[i] = cmplx.Abs(v)
		}
	}
	return out
}

// evalRealImag is real (part 0) or imag (part 1). On a float operand,
// real is the identity and imag is zero (§real, §imag allow float
// operands: a real number has no imaginary part).
func evalRealImag(x *Tensor, part int) *Tensor {
	dt := x.Type.DType
	if !dt.IsComplex() {
		if part == 0 {
			return x.Clone()
		}
		return NewTensor(x.Type)
	}
	out := NewTensor(TensorType{DType: dt.ComplexElem(), Shape: x.Type.Shape})
	es := dt.ComplexElem().Size()
	for i := 0; i < len(out.Data)/es; i++ {
		copy(out.Data[i*es:(i+1)*es], x.Data[(2*i+part)*es:(2*i+part+1)*es])
	}
	return out
}

// evalMakeComplex is the complex op: element i is (re[i], im[i])
// (§complex).
func evalMakeComplex(re, im *Tensor) *Tensor {
	dt := C64
	if re.Type.DType == F64 {
		dt = C128
	}
	out := NewTensor(TensorType{DType: dt, Shape: re.Type.Shape})
	es := re.Type.DType.Size()
	for i := 0; i < len(re.Data)/es; i++ {
		copy(out.Data[2*i*es:(2*i+1)*es], re.Data[i*es:(i+1)*es])
		copy(out.Data[(2*i+1)*es:(2*i+2)*es], im.Data[i*es:(i+1)*es])
	}
	return out
}

// convertComplex is convert when either side is complex (§convert):
// complex to complex converts both parts as floats; complex to any other
// type converts the real part and drops the imaginary one; any other
// type to complex converts into the real part with a zero imaginary part.
// XLA's CPU backend does the same.
func convertComplex(x *Tensor, to DType) *Tensor {
	from := x.Type.DType
	shape := slices.Clone(x.Type.Shape)
	switch {
	case from.IsComplex() && to.IsComplex():
		p := evalConvert(x.parts(), to.ComplexElem())
		return &Tensor{Type: TensorType{DType: to, Shape: shape}, Data: p.Data}
	case from.IsComplex():
		return evalConvert(evalRealImag(x, 0), to)
	}
	re := evalConvert(x, to.ComplexElem())
	return evalMakeComplex(re, NewTensor(re.Type))
}

// realTypeOf is t with a complex element type replaced by its part type
// (other types unchanged): the result type of real, imag and complex abs.
func realTypeOf(t TensorType) TensorType {
	if t.DType.IsComplex() {
		return TensorType{DType: t.DType.ComplexElem(), Shape: slices.Clone(t.Shape)}
	}
	return t
}

// complexOf is the complex type whose parts are dt (f32, f64), or
// InvalidDType.
func complexOf(dt DType) DType {
	switch dt {
	case F32:
		return C64
	case F64:
		return C128
	}
	return InvalidDType
}

// inferComplexOp holds the type rules of complex, real, imag and fft.
func inferComplexOp(op *Op) ([]TensorType, error) {
	ops := op.Operands
	switch op.Name {
	case "complex": // §complex (C1)-(C3)
		if err := checkArity(ops, 2); err != nil {
			return nil, err
		}
		l, r := ops[0].Type, ops[1].Type
		if !l.Equal(r) {
			return nil, fmt.Errorf("operands %s (%s) and %s (%s) must have the same type", ops[0], l, ops[1], r)
		}
		c := complexOf(l.DType)
		if c == InvalidDType {
			return nil, fmt.Errorf("operands must be f32 or f64, got %s", l)
		}
		return []TensorType{{DType: c, Shape: slices.Clone(l.Shape)}}, nil
	case "real", "imag": // §real, §imag (C1)-(C2)
		if err := checkArity(ops, 1); err != nil {
			return nil, err
		}
		t := ops[0].Type
		if !t.DType.IsFloat() && !t.DType.IsComplex() {
			return nil, fmt.Errorf("operand must be floating-point or complex, got %s", t)
		}
		return []TensorType{realTypeOf(t)}, nil
	}
	return inferFFT(op)
}

// inferFFT is fft's type rule (§fft (C1)-(C5)). Like XLA, FFT and IFFT
// also need fft_length to equal the operand's innermost dimensions.
func inferFFT(op *Op) ([]TensorType, error) {
	if err := checkArity(op.Operands, 1); err != nil {
		return nil, err
	}
	in := op.Operands[0].Type
	L := op.Attrs.FftLength
	k := len(L)
	if k < 1 || k > 3 {
		return nil, fmt.Errorf("fft_length %v must have 1 to 3 entries", L)
	}
	if k > in.Rank() {
		return nil, fmt.Errorf("fft_length %v has more entries than %s has dimensions", L, in)
	}
	for _, n := range L {
		if n < 0 {
			return nil, fmt.Errorf("negative fft_length %v", L)
		}
	}
	r := in.Rank()
	out := TensorType{DType: in.DType, Shape: slices.Clone(in.Shape)}
	trailing := func(t TensorType, last int64) error {
		for i := 0; i < k; i++ {
			want := L[i]
			if i == k-1 && last >= 0 {
				want = last
			}
			if t.Shape[r-k+i] != want {
				return fmt.Errorf("%s: innermost dimensions must be %v for fft_length %v", t, halfLast(L, last), L)
			}
		}
		return nil
	}
	n := L[k-1]
	half := int64(0)
	if n > 0 {
		half = n/2 + 1
	}
	switch op.Attrs.FftType {
	case "FFT", "IFFT":
		if !in.DType.IsComplex() {
			return nil, fmt.Errorf("%s needs a complex operand, got %s", op.Attrs.FftType, in)
		}
		if err := trailing(in, -1); err != nil {
			return nil, err
		}
	case "RFFT":
		c := complexOf(in.DType)
		if c == InvalidDType {
			return nil, fmt.Errorf("RFFT needs an f32 or f64 operand, got %s", in)
		}
		if err := trailing(in, -1); err != nil {
			return nil, err
		}
		out.DType = c
		out.Shape[r-1] = half
	case "IRFFT":
		if !in.DType.IsComplex() {
			return nil, fmt.Errorf("IRFFT needs a complex operand, got %s", in)
		}
		if err := trailing(in, half); err != nil {
			return nil, err
		}
		out.DType = in.DType.ComplexElem()
		out.Shape[r-1] = n
	default:
		return nil, fmt.Errorf("bad fft_type %q", op.Attrs.FftType)
	}
	return []TensorType{out}, nil
}

// halfLast is L with its last entry replaced by last when last >= 0 (the
// shape IRFFT's operand must have), for messages.
func halfLast(L []int64, last int64) []int64 {
	s := slices.Clone(L)
	if last >= 0 {
		s[len(s)-1] = last
	}
	return s
}

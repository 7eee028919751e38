package gomlx

// Complex numbers and FFT. The forms follow GoMLX's XLA backend
// (github.com/gomlx/gomlx@v0.26.0/backends/xla ops.go: Abs, Conj, FFT;
// gen_unary_ops.go: Real, Imag), which builds them with the same go-xla
// builder, so a program means the same on both.

import (
	"math"
	"slices"

	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	xtypes "github.com/gomlx/go-xla/pkg/types"
	xdtypes "github.com/gomlx/go-xla/pkg/types/dtypes"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
)

// complexCompiles reports whether the cpu backend compiles complex
// programs (complex<f32>/complex<f64> and fft) end to end: Capabilities
// lists the complex dtypes and complexOps only when it does. The builder
// emits them either way; without cpu support a program using them fails
// to compile with an error naming the op.
const complexCompiles = true

// complexOps are the ops that exist only for complex numbers.
var complexOps = []backends.OpType{
	backends.OpTypeComplex, backends.OpTypeReal, backends.OpTypeImag, backends.OpTypeConj, backends.OpTypeFFT,
}

// ordered are the ops that need an ordering, rounding or a remainder,
// which complex numbers lack. XLA refuses them too (openxla/xla
// xla/service/shape_inference.cc wants floats for floor, ceil and
// round; xla/service/elemental_ir_emitter.cc compares complex numbers
// for EQ and NE only, "complex comparison"), and the
// cpu backend would fail later with an error naming the StableHLO op
// the backend emitted (maximum inside ArgMinMax's reduce, say), so
// noComplex refuses them when they are built, naming the GoMLX op.
var ordered = map[backends.OpType]bool{
	backends.OpTypeMax: true, backends.OpTypeMin: true, backends.OpTypeRem: true,
	backends.OpTypeFloor: true, backends.OpTypeCeil: true, backends.OpTypeRound: true,
	backends.OpTypeReduceMax: true, backends.OpTypeReduceMin: true, backends.OpTypeArgMinMax: true,
	backends.OpTypeScatterMax: true, backends.OpTypeScatterMin: true,
	backends.OpTypeSelectAndScatterMax: true, backends.OpTypeSelectAndScatterMin: true,
	backends.OpTypeGreaterThan: true, backends.OpTypeGreaterOrEqual: true,
	backends.OpTypeLessThan: true, backends.OpTypeLessOrEqual: true,
}

// noComplex fails if v is complex and op (an ordered op) needs an order.
func noComplex(op backends.OpType, v *shlo.Value) {
	if ordered[op] && isComplex(v) {
		fail("dtype %s is not supported: complex numbers have no order", dtypes.DType(v.Shape().DType))
	}
}

// isComplex reports whether v holds complex numbers.
func isComplex(v *shlo.Value) bool { return dtypes.DType(v.Shape().DType).IsComplex() }

// Complex implements backends.Builder: re + i·im, with GoMLX's implicit
// broadcasting (a scalar part is broadcast to the other's shape).
func (b *Builder) Complex(re, im backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeComplex, func() *shlo.Value {
		l, r := bcast2(b.val(re), b.val(im))
		return must(shlo.Complex(l, r))
	})
}

// Real implements backends.Builder: the real part of a complex value, or
// a real value as is (as GoMLX's XLA backend documents).
func (b *Builder) Real(x backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeReal, func() *shlo.Value {
		v := b.val(x)
		if !isComplex(v) {
			return v
		}
		return must(shlo.Real(v))
	})
}

// Imag implements backends.Builder: the imaginary part of a complex
// value, or zeros for a real one.
func (b *Builder) Imag(x backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeImag, func() *shlo.Value {
		v := b.val(x)
		if !isComplex(v) {
			return must(shlo.BroadcastInDim(b.scalar(dtypes.DType(v.Shape().DType), 0), v.Shape(), nil))
		}
		return must(shlo.Imag(v))
	})
}

// Conj implements backends.Builder: complex(real, -imag). StableHLO has
// no conjugate op (XLA's Conj lowers to the same three ops).
func (b *Builder) Conj(x backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeConj, func() *shlo.Value {
		v := b.val(x)
		if !isComplex(v) {
			return v
		}
		return must(shlo.Complex(must(shlo.Real(v)), must(shlo.Negate(must(shlo.Imag(v))))))
	})
}

// FFT implements backends.Builder. GoMLX's FFTType and go-xla's are the
// same enumeration (Forward, Inverse, ForwardReal, InverseReal), which
// go-xla prints as fft_type FFT, IFFT, RFFT and IRFFT.
func (b *Builder) FFT(x backends.Op, fftType backends.FFTType, fftLength []int) (backends.Op, error) {
	return b.op1(backends.OpTypeFFT, func() *shlo.Value {
		var t xtypes.FFTType
		switch fftType {
		case backends.FFTForward:
			t = xtypes.FFTForward
		case backends.FFTInverse:
			t = xtypes.FFTInverse
		case backends.FFTForwardReal:
			t = xtypes.FFTForwardReal
		case backends.FFTInverseReal:
			t = xtypes.FFTInverseReal
		default:
			fail("FFT type %s is not supported", fftType)
		}
		return must(shlo.FFT(b.val(x), t, fftLength...))
	})
}

// absComplex is |x| = sqrt(re² + im²), as GoMLX's XLA backend builds it
// (backends/xla ops.go Abs), so both backends round alike.
func absComplex(v *shlo.Value) *shlo.Value {
	re, im := must(shlo.Real(v)), must(shlo.Imag(v))
	sq := must(shlo.Add(must(shlo.Multiply(re, re)), must(shlo.Multiply(im, im))))
	return must(shlo.Sqrt(sq))
}

// complexFlat reports whether flat is a slice of complex numbers with a
// non-finite part, returning its real and imaginary parts then. go-xla
// prints such a part as a 64-bit pattern even in a complex<f32> literal,
// which StableHLO readers need not accept, so those constants are built
// as complex(real, imag) of two float constants instead.
func complexFlat(flat any) (re, im any, ok bool) {
	switch s := flat.(type) {
	case []complex64:
		if !slices.ContainsFunc(s, func(c complex64) bool { return !finite(complex128(c)) }) {
			return nil, nil, false
		}
		r, i := make([]float32, len(s)), make([]float32, len(s))
		for k, c := range s {
			r[k], i[k] = real(c), imag(c)
		}
		return r, i, true
	case []complex128:
		if !slices.ContainsFunc(s, func(c complex128) bool { return !finite(c) }) {
			return nil, nil, false
		}
		r, i := make([]float64, len(s)), make([]float64, len(s))
		for k, c := range s {
			r[k], i[k] = real(c), imag(c)
		}
		return r, i, true
	}
	return nil, nil, false
}

// finite reports whether both parts of c are finite.
func finite(c complex128) bool {
	f := func(x float64) bool { return !math.IsInf(x, 0) && !math.IsNaN(x) }
	return f(real(c)) && f(imag(c))
}

// constant is a constant of flat's values and dims (a scalar without dims).
func (b *Builder) constant(flat any, dims ...int) *shlo.Value {
	if re, im, ok := complexFlat(flat); ok {
		r := must(b.fn.ConstantFromFlatAndDimensions(re, dims...))
		i := must(b.fn.ConstantFromFlatAndDimensions(im, dims...))
		return must(shlo.Complex(r, i))
	}
	return must(b.fn.ConstantFromFlatAndDimensions(toXLAFlat(flat), dims...))
}

// complexScalar is v as a value of complex dtype dt (imaginary part 0).
func complexScalar(dt dtypes.DType, v float64) any {
	if dt == dtypes.Complex64 {
		return complex(float32(v), 0)
	}
	return complex(v, 0)
}

// convert is ConvertDType. Conversions with a complex side are written
// with complex, real and imag around a real convert, so the program does
// not depend on how a reader treats a complex convert (XLA's HLO shape
// inference refuses complex to real): complex to real keeps the real part
// (StableHLO's convert, as go-xla's Convert documents it), real to
// complex has imaginary part 0.
func (b *Builder) convert(v *shlo.Value, dt dtypes.DType) *shlo.Value {
	from := dtypes.DType(v.Shape().DType)
	switch {
	case from == dt:
		return v
	case from.IsComplex() && dt.IsComplex():
		part := complexPart(dt)
		return must(shlo.Complex(b.convert(must(shlo.Real(v)), part), b.convert(must(shlo.Imag(v)), part)))
	case from.IsComplex():
		return b.convert(must(shlo.Real(v)), dt)
	case dt.IsComplex():
		re := b.convert(v, complexPart(dt))
		return must(shlo.Complex(re, must(shlo.BroadcastInDim(b.scalar(complexPart(dt), 0), re.Shape(), nil))))
	}
	return must(shlo.Convert(v, xdtypes.DType(dt)))
}

// complexPart is the dtype of complex dtype dt's parts.
func complexPart(dt dtypes.DType) dtypes.DType {
	if dt == dtypes.Complex64 {
		return dtypes.Float32
	}
	return dtypes.Float64
}

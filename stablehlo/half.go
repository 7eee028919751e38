package stablehlo

import (
	"math"
	"math/bits"

	"github.com/x448/float16"
)

// The 16-bit float types are stored as their IEEE (f16) or bfloat16 bit
// patterns and computed by widening to f32, which holds every f16 and
// bf16 value exactly, then rounding the result back to nearest-even. For
// +, -, *, / and sqrt that is the correctly rounded 16-bit result (f32
// has more than 2p+2 significand bits for both p = 11 and p = 8, so the
// double rounding is innocuous); it is also how XLA's CPU backend, whose
// results the JAX-generated test programs expect, evaluates them.

// isHalf reports whether d is a 16-bit float type.
func isHalf(d DType) bool { return d == F16 || d == BF16 }

// halfBits views an f16 or bf16 tensor's buffer as bit patterns.
func (t *Tensor) halfBits() []uint16 {
	if !isHalf(t.Type.DType) {
		panic("stablehlo: tensor of type " + t.Type.String() + " viewed as a 16-bit float")
	}
	t.aligned(2)
	return asWordsOrEmpty[uint16](t.Data)
}

func asWordsOrEmpty[T uint8 | uint16 | uint32 | uint64](b []byte) []T {
	if w := asWords[T](b); w != nil {
		return w
	}
	return []T{}
}

// halfToFloat32 widens a 16-bit float bit pattern exactly.
func halfToFloat32(b uint16, d DType) float32 {
	if d == BF16 {
		return math.Float32frombits(uint32(b) << 16)
	}
	return float16.Frombits(b).Float32()
}

// float32ToHalf rounds f to nearest-even in the 16-bit type d. NaNs stay
// NaN (quiet, sign kept); overflow gives ±Inf.
func float32ToHalf(f float32, d DType) uint16 {
	if d == F16 {
		return float16.Fromfloat32(f).Bits()
	}
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16) | 0x0040 // quiet NaN, payload's top bits kept
	}
	u += 0x7fff + (u>>16)&1
	return uint16(u >> 16)
}

// float64ToHalf rounds v to nearest-even in the 16-bit type d without
// double rounding: v is first rounded to f32 with round-to-odd (exact, or
// the odd neighbour toward zero), which preserves the information the
// final nearest-even step needs because f32 keeps at least two more
// significand bits than f16 or bf16.
func float64ToHalf(v float64, d DType) uint16 {
	return float32ToHalf(float64ToFloat32Odd(v), d)
}

// float64ToFloat32Odd rounds v to f32 with round-to-odd.
func float64ToFloat32Odd(v float64) float32 {
	f := float32(v)
	if math.IsNaN(v) || float64(f) == v {
		return f
	}
	// Inexact: take the neighbour toward zero and make it odd.
	if math.Abs(float64(f)) > math.Abs(v) {
		f = math.Nextafter32(f, 0)
	}
	return math.Float32frombits(math.Float32bits(f) | 1)
}

// intToFloat64Odd converts an integer (its magnitude u and sign) to f64
// with round-to-odd, so that a following rounding to a narrower float
// type is correctly rounded.
func intToFloat64Odd(u uint64, neg bool) float64 {
	var f float64
	if n := bits.Len64(u); n <= 53 {
		f = float64(u)
	} else {
		shift := n - 53
		m := u >> shift
		if u&(1<<shift-1) != 0 {
			m |= 1
		}
		f = math.Ldexp(float64(m), shift)
	}
	if neg {
		return -f
	}
	return f
}

// widenHalf returns an f32 copy of an f16/bf16 tensor (exact).
func widenHalf(t *Tensor) *Tensor {
	out := NewTensor(TensorType{DType: F32, Shape: t.Type.Shape})
	o := out.Float32s()
	for i, b := range t.halfBits() {
		o[i] = halfToFloat32(b, t.Type.DType)
	}
	return out
}

// narrowHalf rounds an f32 tensor to the 16-bit float type d.
func narrowHalf(t *Tensor, d DType) *Tensor {
	out := NewTensor(TensorType{DType: d, Shape: t.Type.Shape})
	o := out.halfBits()
	for i, f := range t.Float32s() {
		o[i] = float32ToHalf(f, d)
	}
	return out
}

// viaF32 evaluates f on f32 copies of any f16/bf16 operands and rounds
// f32 results back to the operands' 16-bit type; other tensors pass
// through unchanged.
func viaF32(f func(x []*Tensor) ([]*Tensor, error), x ...*Tensor) ([]*Tensor, error) {
	half := InvalidDType
	w := make([]*Tensor, len(x))
	for i, t := range x {
		w[i] = t
		if isHalf(t.Type.DType) {
			half = t.Type.DType
			w[i] = widenHalf(t)
		}
	}
	out, err := f(w)
	if err != nil || half == InvalidDType {
		return out, err
	}
	for i, t := range out {
		if t.Type.DType == F32 {
			out[i] = narrowHalf(t, half)
		}
	}
	return out, nil
}

// ULPDifference16 is the reference interpreter's ULP distance between two
// f16 or bf16 values given as bit patterns (the same rules as
// ULPDifference32).
func ULPDifference16(f, g uint16, d DType) uint64 {
	return ulpDifference(float64(halfToFloat32(f, d)), float64(halfToFloat32(g, d)), uint64(f), uint64(g), 0x8000)
}

// one and many adapt between single-result and multi-result kernels.
func one(out []*Tensor, err error) (*Tensor, error) {
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func many(t *Tensor, err error) ([]*Tensor, error) {
	if err != nil {
		return nil, err
	}
	return []*Tensor{t}, nil
}

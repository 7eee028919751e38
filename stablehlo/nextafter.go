package stablehlo

import (
	"encoding/binary"
	"math"
)

// evalNextAfter is chlo.next_after with XLA's rules (openxla/xla
// xla/hlo/builder/lib/math.cc, NextAfter, commit
// e6f454af1412f5cab10de7f4da95bd2a3d4487c2): NaN when either operand is
// NaN, y when x == y (so next_after(+0, -0) is -0, where Go's Nextafter
// returns x), the smallest subnormal signed like y when x is ±0, and
// otherwise x's bit pattern stepped by one toward y, in x's own type: f16
// and bf16 step by one 16-bit ULP, not by an f32 one.
func evalNextAfter(a, b *Tensor) *Tensor {
	out := NewTensor(a.Type)
	switch a.Type.DType {
	case F32:
		nextAfterFloats(a.Float32s(), b.Float32s(), out.Float32s(), math.Nextafter32)
	case F64:
		nextAfterFloats(a.Float64s(), b.Float64s(), out.Float64s(), math.Nextafter)
	case F16, BF16:
		exp, nan := uint16(0x7C00), uint16(0x7E00)
		if a.Type.DType == BF16 {
			exp, nan = 0x7F80, 0x7FC0
		}
		for i := 0; i+1 < len(out.Data); i += 2 {
			x := binary.LittleEndian.Uint16(a.Data[i:])
			y := binary.LittleEndian.Uint16(b.Data[i:])
			binary.LittleEndian.PutUint16(out.Data[i:], nextAfter16(x, y, exp, nan))
		}
	}
	return out
}

// nextAfterFloats sets os[i] to next_after(as[i], bs[i]) with step, Go's
// Nextafter for the type, which returns x rather than y when x == y.
func nextAfterFloats[T float32 | float64](as, bs, os []T, step func(x, y T) T) {
	for i := range os {
		if as[i] == bs[i] {
			os[i] = bs[i]
		} else {
			os[i] = step(as[i], bs[i])
		}
	}
}

// nextAfter16 steps the 16-bit float x (bits) toward y; exp is the
// format's exponent mask and nan its quiet NaN.
func nextAfter16(x, y, exp, nan uint16) uint16 {
	ax, ay := x&0x7FFF, y&0x7FFF
	switch {
	case ax > exp || ay > exp: // a NaN: exponent all ones, mantissa not zero
		return nan
	case x == y || ax == 0 && ay == 0:
		return y
	case ax == 0:
		return y&0x8000 | 1
	case x&0x8000 != y&0x8000 || ax > ay:
		return x - 1 // toward zero
	}
	return x + 1
}

package stablehlo

import (
	"math"
	"math/rand/v2"
)

// RandomArgs returns deterministic values for fn's arguments, the same for
// the same seed on every platform: floats uniform in [-1, 1), multiplied by
// 2/sqrt(rows) for matrices so that a weight matrix keeps activations in a
// sensible range; signed integers in [-8, 8], unsigned ones in [0, 8];
// booleans 0 or 1; complex numbers with both parts drawn like floats.
func RandomArgs(fn *Func, seed uint64) []*Tensor {
	rng := rand.New(rand.NewPCG(seed, 0x5eed))
	out := make([]*Tensor, len(fn.Args))
	for i, a := range fn.Args {
		t := NewTensor(a.Type)
		scale := 1.0
		if a.Type.Rank() == 2 && a.Type.Shape[0] > 0 {
			scale = 2 / math.Sqrt(float64(a.Type.Shape[0]))
		}
		n := a.Type.NumElements()
		for j := int64(0); j < n; j++ {
			switch a.Type.DType {
			case F32:
				t.Float32s()[j] = float32((rng.Float64()*2 - 1) * scale)
			case F64:
				t.Float64s()[j] = (rng.Float64()*2 - 1) * scale
			case F16, BF16:
				t.setFloat(j, (rng.Float64()*2-1)*scale)
			case C64:
				re := (rng.Float64()*2 - 1) * scale
				t.Complex64s()[j] = complex64(complex(re, (rng.Float64()*2-1)*scale))
			case C128:
				re := (rng.Float64()*2 - 1) * scale
				t.Complex128s()[j] = complex(re, (rng.Float64()*2-1)*scale)
			case I1:
				t.Data[j] = byte(rng.IntN(2))
			default:
				size := int64(a.Type.DType.Size())
				v := uint64(rng.IntN(17)) - 8
				if a.Type.DType.IsUnsigned() {
					v = uint64(rng.IntN(9))
				}
				for k := int64(0); k < size; k++ {
					t.Data[j*size+k] = byte(v >> (8 * k))
				}
			}
		}
		out[i] = t
	}
	return out
}

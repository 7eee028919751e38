package stablehlo

import (
	"fmt"
	"math/bits"
)

// inferRngBitGenerator is rng_bit_generator's type rule (§rng_bit_generator)
// restricted to what this package implements: the THREE_FRY algorithm with
// a tensor<2xui64> state (key, counter) and a ui64 output, as XLA's
// RngBitGenerator expander computes it. Other algorithms (DEFAULT is
// implementation-defined, PHILOX) and other types are unsupported.
func inferRngBitGenerator(op *Op) ([]TensorType, error) {
	if len(op.Operands) != 1 || len(op.Results) != 2 {
		return nil, fmt.Errorf("expects one state operand and two results")
	}
	st, out := op.Operands[0].Type, op.Results[1].Type
	if st.Rank() != 1 || !st.DType.IsInt() {
		return nil, fmt.Errorf("initial state must be a 1-D integer tensor, got %s", st)
	}
	if op.Attrs.RngAlgorithm != "THREE_FRY" {
		return nil, fmt.Errorf("rng_algorithm %s: %w", op.Attrs.RngAlgorithm, ErrUnsupported)
	}
	if !st.Equal(TensorType{DType: UI64, Shape: []int64{2}}) || out.DType != UI64 {
		return nil, fmt.Errorf("THREE_FRY with state %s and output %s (only tensor<2xui64> and ui64): %w", st, out, ErrUnsupported)
	}
	return []TensorType{st, out}, nil
}

// threefry2x32 is the Threefry-2x32 block cipher with 20 rounds (Salmon et
// al., "Parallel random numbers: as easy as 1, 2, 3", SC 2011), as XLA's
// prng library and JAX implement it.
func threefry2x32(x, k [2]uint32) [2]uint32 {
	rot := [8]int{13, 15, 26, 6, 17, 29, 16, 24}
	ks := [3]uint32{k[0], k[1], 0x1BD11BDA ^ k[0] ^ k[1]}
	x[0] += ks[0]
	x[1] += ks[1]
	for i := 0; i < 5; i++ {
		for j := 0; j < 4; j++ {
			x[0] += x[1]
			x[1] = bits.RotateLeft32(x[1], rot[(i%2)*4+j])
			x[1] ^= x[0]
		}
		x[0] += ks[(i+1)%3]
		x[1] += ks[(i+2)%3] + uint32(i+1)
	}
	return x
}

// evalRngBitGenerator implements THREE_FRY as XLA does: element e of the
// output (row-major) is Threefry-2x32 of the counter state[1] + e, split
// into 32-bit halves (low first), under the key state[0] split the same
// way; the two output words form the result, the first as the low half.
// The new state advances the counter by the number of elements.
func evalRngBitGenerator(state *Tensor, rt TensorType) []*Tensor {
	s := state.Uint64s()
	key, ctr := s[0], s[1]
	k := [2]uint32{uint32(key), uint32(key >> 32)}
	out := NewTensor(rt)
	o := out.Uint64s()
	for e := range o {
		c := ctr + uint64(e)
		r := threefry2x32([2]uint32{uint32(c), uint32(c >> 32)}, k)
		o[e] = uint64(r[1])<<32 | uint64(r[0])
	}
	ns := NewTensor(state.Type)
	ns.Uint64s()[0], ns.Uint64s()[1] = key, ctr+uint64(len(o))
	return []*Tensor{ns, out}
}

package stablehlo

import (
	"encoding/binary"
	"fmt"
	"math/bits"
)

// inferRngBitGenerator is rng_bit_generator's type rule (§rng_bit_generator)
// restricted to what this package implements, each algorithm exactly as
// XLA's RngBitGeneratorExpander computes it:
//
//   - THREE_FRY with a tensor<2xui64> state (key, counter) and a ui64
//     output;
//   - PHILOX, and DEFAULT (which XLA's CPU and GPU compilers expand as
//     PHILOX: openxla/xla xla/service/cpu/cpu_compiler.cc @ 001918b7,
//     `AddPass<RngBitGeneratorExpander>(RandomAlgorithm::RNG_PHILOX)`, and
//     the expander replaces RNG_DEFAULT by that algorithm), with a
//     tensor<2xui64> or tensor<3xui64> state (the spec's C2) and an output
//     of any 8-, 16-, 32- or 64-bit integer or float type (the widths
//     XLA's PhiloxBitGenerator switches on).
//
// Other combinations are unsupported; a PHILOX state that breaks C2 is an
// error.
func inferRngBitGenerator(op *Op) ([]TensorType, error) {
	if len(op.Operands) != 1 || len(op.Results) != 2 {
		return nil, fmt.Errorf("expects one state operand and two results")
	}
	st, out := op.Operands[0].Type, op.Results[1].Type
	if st.Rank() != 1 || !st.DType.IsInt() {
		return nil, fmt.Errorf("initial state must be a 1-D integer tensor, got %s", st)
	}
	switch op.Attrs.RngAlgorithm {
	case "THREE_FRY":
		if !st.Equal(TensorType{DType: UI64, Shape: []int64{2}}) || out.DType != UI64 {
			return nil, fmt.Errorf("THREE_FRY with state %s and output %s (only tensor<2xui64> and ui64): %w", st, out, ErrUnsupported)
		}
	case "PHILOX", "DEFAULT":
		if st.DType != UI64 || (st.Shape[0] != 2 && st.Shape[0] != 3) {
			return nil, fmt.Errorf("%s needs a tensor<2xui64> or tensor<3xui64> state, got %s", op.Attrs.RngAlgorithm, st)
		}
		if philoxWidth(out.DType) == 0 {
			return nil, fmt.Errorf("%s output element type %s (only 8-, 16-, 32- and 64-bit integers and floats): %w",
				op.Attrs.RngAlgorithm, out.DType, ErrUnsupported)
		}
	default:
		return nil, fmt.Errorf("rng_algorithm %s: %w", op.Attrs.RngAlgorithm, ErrUnsupported)
	}
	return []TensorType{st, out}, nil
}

// philoxWidth is the bit width of the unsigned integer stream XLA's
// PhiloxBitGenerator produces for an output of type d (the output holds
// those bits unchanged), or 0 if there is none: i1 and complex types are
// not generated (openxla/xla xla/hlo/builder/lib/prng.cc @ 4ead6719,
// PhiloxBitGenerator excludes PRED and complex types).
func philoxWidth(d DType) int {
	if d.IsBool() || d.IsComplex() || (!d.IsInt() && !d.IsFloat()) {
		return 0
	}
	return d.Size() * 8
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

// philox4x32 is the Philox-4x32 block function with 10 rounds (Salmon et
// al., SC 2011; Random123's philox4x32_R with R = 10), written as XLA's
// Philox4x32 (openxla/xla xla/hlo/builder/lib/prng.cc @ 4ead6719): each
// round multiplies words 0 and 2 by the two multipliers, and the key is
// bumped by the Weyl constants after every round.
func philox4x32(x [4]uint32, k [2]uint32) [4]uint32 {
	for r := 0; r < 10; r++ {
		hi0, lo0 := bits.Mul32(x[0], 0xD2511F53)
		hi1, lo1 := bits.Mul32(x[2], 0xCD9E8D57)
		x = [4]uint32{hi1 ^ x[1] ^ k[0], lo1, hi0 ^ x[3] ^ k[1], lo0}
		k[0] += 0x9E3779B9
		k[1] += 0xBB67AE85
	}
	return x
}

// philoxCounter splits a PHILOX/DEFAULT rng_bit_generator state the way
// XLA's RngBitGeneratorExpander does (openxla/xla
// xla/hlo/transforms/expanders/rng_bit_generator_expander.cc @ 80c095fc,
// GetPhiloxStateOp): the key is state[0]; the 128-bit counter is
// (state[1], state[2]) for a 3-word state and (state[1], state[0]) -- the
// state reversed, so the key doubles as the counter's high word -- for a
// 2-word one. lo and hi are the counter's low and high 64 bits.
func philoxCounter(state []uint64) (key, lo, hi uint64) {
	if len(state) >= 3 {
		return state[0], state[1], state[2]
	}
	return state[0], state[1], state[0]
}

// philoxBlocks is the number of 128-bit Philox blocks rng_bit_generator
// consumes for n elements of width bits: four 32-bit words per block, one
// element per word up to 32 bits and two words per 64-bit element (XLA's
// GeneratePhiloxBits: CeilOfRatio(num_elems, 4) blocks, with num_elems
// doubled for 64-bit outputs). The counter advances by this much.
func philoxBlocks(n int64, width int) int64 {
	if width == 64 {
		return (n + 1) / 2
	}
	return (n + 3) / 4
}

// evalRngBitGenerator runs rng_bit_generator with algorithm alg on state,
// producing a result of type rt.
func evalRngBitGenerator(alg string, state *Tensor, rt TensorType) []*Tensor {
	if alg == "PHILOX" || alg == "DEFAULT" {
		return evalPhilox(state, rt)
	}
	return evalThreeFry(state, rt)
}

// evalThreeFry implements THREE_FRY as XLA does: element e of the
// output (row-major) is Threefry-2x32 of the counter state[1] + e, split
// into 32-bit halves (low first), under the key state[0] split the same
// way; the two output words form the result, the first as the low half.
// The new state advances the counter by the number of elements.
func evalThreeFry(state *Tensor, rt TensorType) []*Tensor {
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

// evalPhilox implements PHILOX (and DEFAULT) bit for bit as XLA's
// PhiloxBitGenerator and RngBitGeneratorExpander (openxla/xla
// xla/hlo/builder/lib/prng.cc @ 4ead6719 and
// xla/hlo/transforms/expanders/rng_bit_generator_expander.cc @ 80c095fc):
//
//   - the key is state[0] split into 32-bit halves, low first; block j
//     encrypts the 128-bit counter + j (philoxCounter; the carry out of the
//     low word goes into the high one), split into four 32-bit words,
//     least significant first;
//   - outputs up to 32 bits take the four words of each block in turn
//     (element i is word i%4 of block i/4), 8- and 16-bit ones keeping the
//     low bits of the word (PhiloxRngBitNarrow converts u32 to the narrow
//     unsigned type); 64-bit outputs take two per block, words (0,1) then
//     (2,3), the first word as the low half (PhiloxRngBit64);
//   - the new state is the key followed by the advanced counter: its low
//     word only for a 2-word state (GetPhiloxOutputStateOp), so the key
//     is unchanged even if the low word wraps.
//
// Signed and float outputs hold the same bits as the unsigned stream of
// their width.
func evalPhilox(state *Tensor, rt TensorType) []*Tensor {
	s := state.Uint64s()
	key, lo, hi := philoxCounter(s)
	k := [2]uint32{uint32(key), uint32(key >> 32)}
	out := NewTensor(rt)
	n := rt.NumElements()
	width := philoxWidth(rt.DType)
	size := int64(width / 8)
	blocks := philoxBlocks(n, width)
	put := func(i int64, v uint64) {
		switch size {
		case 1:
			out.Data[i] = byte(v)
		case 2:
			binary.LittleEndian.PutUint16(out.Data[2*i:], uint16(v))
		case 4:
			binary.LittleEndian.PutUint32(out.Data[4*i:], uint32(v))
		default:
			binary.LittleEndian.PutUint64(out.Data[8*i:], v)
		}
	}
	for j := int64(0); j < blocks; j++ {
		cl, carry := bits.Add64(lo, uint64(j), 0)
		ch := hi + carry
		w := philox4x32([4]uint32{uint32(cl), uint32(cl >> 32), uint32(ch), uint32(ch >> 32)}, k)
		if width == 64 {
			for q := int64(0); q < 2 && 2*j+q < n; q++ {
				put(2*j+q, uint64(w[2*q+1])<<32|uint64(w[2*q]))
			}
			continue
		}
		for q := int64(0); q < 4 && 4*j+q < n; q++ {
			put(4*j+q, uint64(w[q]))
		}
	}
	nl, carry := bits.Add64(lo, uint64(blocks), 0)
	ns := NewTensor(state.Type)
	o := ns.Uint64s()
	o[0], o[1] = key, nl
	if len(o) > 2 {
		o[2] = hi + carry
	}
	return []*Tensor{ns, out}
}

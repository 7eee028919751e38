package stablehlo

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"testing"
)

// TestThreefry checks the Random123 known-answer vectors for
// Threefry-2x32 with 20 rounds (the ones JAX's tests use).
func TestThreefry(t *testing.T) {
	for _, c := range []struct{ key, ctr, want [2]uint32 }{
		{[2]uint32{0, 0}, [2]uint32{0, 0}, [2]uint32{0x6b200159, 0x99ba4efe}},
		{[2]uint32{0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff}, [2]uint32{0x1cb996fc, 0xbb002be7}},
		{[2]uint32{0x13198a2e, 0x03707344}, [2]uint32{0x243f6a88, 0x85a308d3}, [2]uint32{0xc4923a9c, 0x483df7a0}},
	} {
		if got := threefry2x32(c.ctr, c.key); got != c.want {
			t.Errorf("threefry2x32(%#x, key %#x) = %#x, want %#x", c.ctr, c.key, got, c.want)
		}
	}
}

func TestRngBitGenerator(t *testing.T) {
	// Key 0, counter 0: element e is threefry(e, 0) with the first word
	// as the low half; the counter advances by the element count.
	out := evalText(t, `func.func @main() -> (tensor<2xui64>, tensor<2x1xui64>) {
  %s = stablehlo.constant dense<[0, 0]> : tensor<2xui64>
  %n, %r = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x1xui64>)
  return %n, %r : tensor<2xui64>, tensor<2x1xui64>
}`)
	if s := out[0].Uint64s(); s[0] != 0 || s[1] != 2 {
		t.Errorf("new state %v, want [0 2]", s)
	}
	if got, want := out[1].Uint64s()[0], uint64(0x99ba4efe)<<32|0x6b200159; got != want {
		t.Errorf("first output %#x, want %#x", got, want)
	}
}

// TestPhilox4x32 checks the Random123 known-answer vectors for
// Philox-4x32 with 10 rounds (Random123 tests/kat_vectors, the three
// "philox4x32 10" lines: counter words, key words, expected words).
func TestPhilox4x32(t *testing.T) {
	for _, c := range []struct {
		ctr  [4]uint32
		key  [2]uint32
		want [4]uint32
	}{
		{[4]uint32{0, 0, 0, 0}, [2]uint32{0, 0}, [4]uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[4]uint32{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff},
			[4]uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[4]uint32{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, [2]uint32{0xa4093822, 0x299f31d0},
			[4]uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		if got := philox4x32(c.ctr, c.key); got != c.want {
			t.Errorf("philox4x32(%#x, key %#x) = %#x, want %#x", c.ctr, c.key, got, c.want)
		}
	}
}

// rngText is a program running rng_bit_generator once on its argument.
func rngText(alg string, stateN int, out string) string {
	st := fmt.Sprintf("tensor<%dxui64>", stateN)
	return fmt.Sprintf(`func.func @main(%%s: %s) -> (%s, %s) {
  %%n, %%r = "stablehlo.rng_bit_generator"(%%s) <{rng_algorithm = #stablehlo<rng_algorithm %s>}> : (%s) -> (%s, %s)
  return %%n, %%r : %s, %s
}`, st, st, out, alg, st, st, out, st, out)
}

func ui64Tensor(v ...uint64) *Tensor {
	x := NewTensor(TensorType{DType: UI64, Shape: []int64{int64(len(v))}})
	copy(x.Uint64s(), v)
	return x
}

// TestRngPhiloxFraming checks how rng_bit_generator PHILOX lays Philox
// blocks out, against blocks computed here from the framing XLA's
// PhiloxBitGenerator and RngBitGeneratorExpander define (see evalPhilox):
// the key and the 128-bit counter taken from the state, the carry from
// the counter's low word into its high one, 32-bit elements taking the
// block's words in turn, 64-bit ones pairing them low word first, and
// the state update.
func TestRngPhiloxFraming(t *testing.T) {
	var key, lo, hi uint64 = 0x0123456789abcdef, 0xfffffffffffffffe, 0x1111222233334444
	k := [2]uint32{uint32(key), uint32(key >> 32)}
	block := func(cl, ch uint64) [4]uint32 {
		return philox4x32([4]uint32{uint32(cl), uint32(cl >> 32), uint32(ch), uint32(ch >> 32)}, k)
	}
	// 3-word state: counter (lo, hi); blocks 0 and 1 precede the carry,
	// block 2 follows it.
	b := [3][4]uint32{block(lo, hi), block(lo+1, hi), block(0, hi+1)}
	out := evalText(t, rngText("PHILOX", 3, "tensor<3x3xui32>"), ui64Tensor(key, lo, hi))
	var want []uint32
	for j := range b {
		want = append(want, b[j][:]...)
	}
	if got := out[1].Uint32s(); !slices.Equal(got, want[:9]) {
		t.Errorf("ui32 output %#x, want %#x", got, want[:9])
	}
	if got := out[0].Uint64s(); !slices.Equal(got, []uint64{key, 1, hi + 1}) {
		t.Errorf("new state %#x, want [key 1 hi+1]", got)
	}
	// 64-bit elements, two per block, the first word low; 5 elements use
	// three blocks.
	out = evalText(t, rngText("PHILOX", 3, "tensor<5xui64>"), ui64Tensor(key, lo, hi))
	var want64 []uint64
	for j := range b {
		want64 = append(want64, uint64(b[j][1])<<32|uint64(b[j][0]), uint64(b[j][3])<<32|uint64(b[j][2]))
	}
	if got := out[1].Uint64s(); !slices.Equal(got, want64[:5]) {
		t.Errorf("ui64 output %#x, want %#x", got, want64[:5])
	}
	// A 2-word state is [key, counter low]: the counter's high word is the
	// key, and only the low word is written back, wrapping without carry.
	out = evalText(t, rngText("PHILOX", 2, "tensor<6xui32>"), ui64Tensor(key, lo))
	b2 := [2][4]uint32{block(lo, key), block(lo+1, key)}
	if got, want := out[1].Uint32s(), append(b2[0][:], b2[1][:2]...); !slices.Equal(got, want) {
		t.Errorf("2-word state ui32 output %#x, want %#x", got, want)
	}
	if got := out[0].Uint64s(); !slices.Equal(got, []uint64{key, 0}) {
		t.Errorf("2-word new state %#x, want [key 0]", got)
	}
	// DEFAULT is PHILOX (XLA's CPU compiler).
	def := evalText(t, rngText("DEFAULT", 2, "tensor<6xui32>"), ui64Tensor(key, lo))
	if !def[0].Equal(out[0]) || !def[1].Equal(out[1]) {
		t.Errorf("DEFAULT differs from PHILOX: %v %v", def[1], out[1])
	}
}

// TestRngPhiloxTypes: narrow outputs keep the low bits of the 32-bit
// stream; signed and float outputs hold the unsigned stream's bits.
func TestRngPhiloxTypes(t *testing.T) {
	st := ui64Tensor(42, 7, 9)
	u32 := evalText(t, rngText("PHILOX", 3, "tensor<7xui32>"), st)[1].Uint32s()
	u64 := evalText(t, rngText("PHILOX", 3, "tensor<7xui64>"), st)[1].Uint64s()
	for _, c := range []struct {
		ty   string
		bits func(*Tensor, int) uint64
		ref  func(int) uint64
	}{
		{"ui8", func(x *Tensor, i int) uint64 { return uint64(x.Uint8s()[i]) }, func(i int) uint64 { return uint64(uint8(u32[i])) }},
		{"i8", func(x *Tensor, i int) uint64 { return uint64(uint8(x.Int8s()[i])) }, func(i int) uint64 { return uint64(uint8(u32[i])) }},
		{"ui16", func(x *Tensor, i int) uint64 { return uint64(x.Uint16s()[i]) }, func(i int) uint64 { return uint64(uint16(u32[i])) }},
		{"bf16", func(x *Tensor, i int) uint64 { return uint64(x.halfBits()[i]) }, func(i int) uint64 { return uint64(uint16(u32[i])) }},
		{"i32", func(x *Tensor, i int) uint64 { return uint64(uint32(x.Int32s()[i])) }, func(i int) uint64 { return uint64(u32[i]) }},
		{"f32", func(x *Tensor, i int) uint64 { return uint64(math.Float32bits(x.Float32s()[i])) }, func(i int) uint64 { return uint64(u32[i]) }},
		{"i64", func(x *Tensor, i int) uint64 { return uint64(x.Int64s()[i]) }, func(i int) uint64 { return u64[i] }},
		{"f64", func(x *Tensor, i int) uint64 { return math.Float64bits(x.Float64s()[i]) }, func(i int) uint64 { return u64[i] }},
	} {
		out := evalText(t, rngText("PHILOX", 3, "tensor<7x"+c.ty+">"), st)
		for i := 0; i < 7; i++ {
			if got, want := c.bits(out[1], i), c.ref(i); got != want {
				t.Errorf("%s element %d = %#x, want %#x", c.ty, i, got, want)
			}
		}
	}
}

// TestRngPhiloxChained: feeding the new state back continues the stream
// where a single call would have, block by block (a partly used block is
// not reused).
func TestRngPhiloxChained(t *testing.T) {
	for _, n := range []int{2, 3} {
		init := ui64Tensor([]uint64{5, 1 << 40, 3}[:n]...)
		whole := evalText(t, rngText("PHILOX", n, "tensor<16xui32>"), init)
		a := evalText(t, rngText("PHILOX", n, "tensor<5xui32>"), init)
		b := evalText(t, rngText("PHILOX", n, "tensor<8xui32>"), a[0])
		if got, want := a[1].Uint32s(), whole[1].Uint32s()[:5]; !slices.Equal(got, want) {
			t.Errorf("state %d: first call %#x, want %#x", n, got, want)
		}
		if got, want := b[1].Uint32s(), whole[1].Uint32s()[8:16]; !slices.Equal(got, want) {
			t.Errorf("state %d: second call %#x, want %#x", n, got, want)
		}
		if !b[0].Equal(whole[0]) {
			t.Errorf("state %d: chained state %v, want %v", n, b[0].Uint64s(), whole[0].Uint64s())
		}
	}
}

// TestRngVerify: states the spec forbids for PHILOX are errors; element
// types and algorithms this package does not generate are unsupported.
func TestRngVerify(t *testing.T) {
	for _, c := range []struct {
		src         string
		unsupported bool
	}{
		{rngText("PHILOX", 4, "tensor<4xui32>"), false},
		{rngText("DEFAULT", 1, "tensor<4xui32>"), false},
		{strings.ReplaceAll(rngText("PHILOX", 2, "tensor<4xui32>"), "ui64", "i64"), false},
		{rngText("PHILOX", 2, "tensor<4xi1>"), true},
		{rngText("PHILOX", 2, "tensor<4xcomplex<f32>>"), true},
		{rngText("THREE_FRY", 2, "tensor<4xui32>"), true},
		{rngText("THREE_FRY", 3, "tensor<4xui64>"), true},
	} {
		_, err := Parse([]byte(c.src), "r.mlir")
		if err == nil || isUnsupported(err) != c.unsupported {
			t.Errorf("got %v, want an error (unsupported %v) for\n%s", err, c.unsupported, c.src)
		}
	}
	for _, alg := range []string{"PHILOX", "DEFAULT"} {
		for _, n := range []int{2, 3} {
			if _, err := Parse([]byte(rngText(alg, n, "tensor<2x3xf16>")), "r.mlir"); err != nil {
				t.Errorf("%s with %d-word state: %v", alg, n, err)
			}
		}
	}
}

// FuzzRngBitGenerator builds one rng_bit_generator op from the input
// (algorithm, state length and type, output type and shape, state words),
// infers its types with the verifier's rule and, when the rule accepts
// it, evaluates it: the results must have the inferred types, the key
// must be kept, PHILOX's counter must advance by the blocks used, and a
// PHILOX element must be the Philox block word the framing assigns it.
func FuzzRngBitGenerator(f *testing.F) {
	for _, seed := range [][]byte{
		{1, 3, 0, 2, 1, 3, 2, 9, 200, 7},
		{1, 2, 0, 3, 2, 5, 3, 255, 255, 255, 255, 255, 255, 255, 255},
		{2, 3, 0, 9, 1, 7, 1},
		{0, 2, 0, 3, 1, 4},
		{1, 4, 0, 2, 1, 1},
		{3, 2, 0, 0, 1, 2},
	} {
		f.Add(seed)
	}
	algs := []string{"THREE_FRY", "PHILOX", "DEFAULT", "BOGUS"}
	dts := []DType{UI8, UI16, UI32, UI64, I8, I16, I32, I64, F16, BF16, F32, F64, I1, C64}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		alg := algs[fb.next()%len(algs)]
		stLen := fb.small(0, 5)
		stDT := UI64
		if fb.next()%8 == 7 {
			stDT = I64
		}
		outDT := dts[fb.next()%len(dts)]
		shape := fb.shape(3)
		st := TensorType{DType: stDT, Shape: []int64{stLen}}
		rt := TensorType{DType: outDT, Shape: shape}
		op := &Op{Name: "rng_bit_generator", Operands: []*Value{{Type: st}},
			Results: []*Value{{Type: st}, {Type: rt}}, Attrs: Attrs{RngAlgorithm: alg}}
		types, err := inferRngBitGenerator(op)
		if err != nil {
			return
		}
		if len(types) != 2 || !types[0].Equal(st) || !types[1].Equal(rt) {
			t.Fatalf("%s: inferred %v for state %s, output %s", alg, types, st, rt)
		}
		state := NewTensor(st)
		for i := range state.Data {
			state.Data[i] = byte(fb.next())
		}
		out := evalRngBitGenerator(alg, state, rt)
		if !out[0].Type.Equal(st) || !out[1].Type.Equal(rt) {
			t.Fatalf("%s: results %s, %s; want %s, %s", alg, out[0].Type, out[1].Type, st, rt)
		}
		s, ns := state.Uint64s(), out[0].Uint64s()
		if ns[0] != s[0] {
			t.Fatalf("%s: key %#x changed to %#x", alg, s[0], ns[0])
		}
		if alg == "THREE_FRY" {
			return
		}
		n, width := rt.NumElements(), philoxWidth(outDT)
		key, lo, hi := philoxCounter(s)
		blocks := philoxBlocks(n, width)
		nl, carry := bits.Add64(lo, uint64(blocks), 0)
		if ns[1] != nl || (len(ns) > 2 && ns[2] != hi+carry) {
			t.Fatalf("%s: new state %#x from %#x after %d blocks", alg, ns, s, blocks)
		}
		if n == 0 {
			return
		}
		e := int64(fb.next()) % n
		size := int64(width / 8)
		var got uint64
		for b := size - 1; b >= 0; b-- {
			got = got<<8 | uint64(out[1].Data[e*size+b])
		}
		per := int64(4)
		if width == 64 {
			per = 2
		}
		cl, c := bits.Add64(lo, uint64(e/per), 0)
		ch := hi + c
		w := philox4x32([4]uint32{uint32(cl), uint32(cl >> 32), uint32(ch), uint32(ch >> 32)}, [2]uint32{uint32(key), uint32(key >> 32)})
		want := uint64(w[e%4])
		if width == 64 {
			want = uint64(w[2*(e%2)+1])<<32 | uint64(w[2*(e%2)])
		} else if width < 32 {
			want &= 1<<width - 1
		}
		if got != want {
			t.Fatalf("%s %s element %d = %#x, want %#x", alg, rt, e, got, want)
		}
	})
}

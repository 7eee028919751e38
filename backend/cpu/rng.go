package cpu

import (
	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers rng_bit_generator, a kernel root: PHILOX (and
// DEFAULT) and THREE_FRY, bit for bit as the interpreter does
// (stablehlo/rng.go).

// genRngBits lowers rng_bit_generator by algorithm: PHILOX and DEFAULT
// (XLA's CPU compiler expands DEFAULT as PHILOX) by genPhilox, THREE_FRY
// by genRng. The verifier has already rejected every other form.
func genRngBits(g *gen, op *stablehlo.Op) {
	switch op.Attrs.RngAlgorithm {
	case "PHILOX", "DEFAULT":
		genPhilox(g, op)
	default:
		genRng(g, op)
	}
}

// genPhilox implements rng_bit_generator PHILOX bit for bit as the
// interpreter does (stablehlo's evalPhilox, which follows XLA's
// PhiloxBitGenerator and RngBitGeneratorExpander: openxla/xla
// xla/hlo/builder/lib/prng.cc @ 4ead6719 and
// xla/hlo/transforms/expanders/rng_bit_generator_expander.cc @ 80c095fc).
// The key is state[0]; the 128-bit counter is (state[1], state[2]) for a
// 3-word state and (state[1], state[0]) for a 2-word one. Block j is
// Philox-4x32-10 of counter + j; elements of up to 32 bits take its four
// words in turn (narrow ones their low bits), 64-bit elements two words
// each, low word first. Elements are stored with memcpy so signed and
// float outputs get the unsigned stream's bits unchanged. The state is
// read into locals before anything is written, so the kernel is correct
// even if the runtime hands it the same buffer for the old and the new
// state.
func genPhilox(g *gen, op *stablehlo.Op) {
	st := g.input(op.Operands[0])
	ns, out := g.output(op.Results[0]), g.output(op.Results[1])
	words := op.Operands[0].Type.Shape[0]
	rt := op.Results[1].Type
	n := rt.NumElements()
	size := rt.DType.Size()
	perBlock, blocks := int64(4), (n+3)/4
	if size == 8 {
		perBlock, blocks = 2, (n+1)/2
	}
	hiWord := 0 // a 2-word state's counter high word is the key
	if words >= 3 {
		hiWord = 2
	}
	g.line("{")
	g.ind++
	g.line("const uint64_t key = %s[0], lo = %s[1], hi = %s[%d];", st, st, st, hiWord)
	g.line("unsigned char* ob = (unsigned char*)%s;", out)
	g.line("for (int64_t j = 0; j < %dll; j++) {", blocks)
	g.ind++
	g.line("const uint64_t cl = lo + (uint64_t)j, ch = hi + (cl < lo);")
	g.line("uint32_t x0 = (uint32_t)cl, x1 = (uint32_t)(cl >> 32), x2 = (uint32_t)ch, x3 = (uint32_t)(ch >> 32);")
	g.line("uint32_t k0 = (uint32_t)key, k1 = (uint32_t)(key >> 32);")
	g.line("for (int r = 0; r < 10; r++) {")
	g.line("\tconst uint64_t p0 = (uint64_t)x0 * 0xD2511F53u, p1 = (uint64_t)x2 * 0xCD9E8D57u;")
	g.line("\tx0 = (uint32_t)(p1 >> 32) ^ x1 ^ k0; x1 = (uint32_t)p1;")
	g.line("\tx2 = (uint32_t)(p0 >> 32) ^ x3 ^ k1; x3 = (uint32_t)p0;")
	g.line("\tk0 += 0x9E3779B9u; k1 += 0xBB67AE85u;")
	g.line("}")
	g.line("const uint32_t w[4] = {x0, x1, x2, x3};")
	g.line("for (int64_t q = 0; q < %d; q++) {", perBlock)
	g.ind++
	g.line("const int64_t i = j * %d + q;", perBlock)
	g.line("if (i >= %dll) break;", n)
	switch size {
	case 8:
		g.line("const uint64_t v = (uint64_t)w[2 * q] | ((uint64_t)w[2 * q + 1] << 32);")
	case 4:
		g.line("const uint32_t v = w[q];")
	case 2:
		g.line("const uint16_t v = (uint16_t)w[q];")
	default:
		g.line("const uint8_t v = (uint8_t)w[q];")
	}
	g.line("memcpy(ob + i * %d, &v, %d);", size, size)
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.line("const uint64_t nl = lo + %dull;", blocks)
	g.line("%s[0] = key;", ns)
	g.line("%s[1] = nl;", ns)
	if words >= 3 {
		g.line("%s[2] = hi + (nl < lo);", ns)
	}
	g.ind--
	g.line("}")
}

// genRng implements rng_bit_generator THREE_FRY with a tensor<2xui64>
// state (the only form the front end accepts) as the interpreter does:
// element e is threefry(counter + e) under the key; the counter advances
// by the element count.
func genRng(g *gen, op *stablehlo.Op) {
	st := g.input(op.Operands[0])
	ns, out := g.output(op.Results[0]), g.output(op.Results[1])
	n := op.Results[1].Type.NumElements()
	g.line("const uint64_t key = %s[0], ctr = %s[1];", st, st)
	g.line("for (int64_t e = 0; e < %d; e++) %s[e] = xk_threefry(ctr + (uint64_t)e, key);", n, out)
	g.line("%s[0] = key;", ns)
	g.line("%s[1] = ctr + %dull;", ns, n)
}

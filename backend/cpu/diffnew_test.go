package cpu

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestDifferentialHalfAndBitOps compares the cpu backend with the
// interpreter, bit for bit, on seeded random programs over f16 and bf16
// (every op rounds to 16 bits; conversions from f64 and wide integers
// must not round twice) and the integer bit ops (shifts with amounts out
// of range, popcnt, count_leading_zeros), reverse, bitcast_convert,
// is_finite and reduce_precision. Inputs include NaN, ±Inf, ±0,
// subnormals and values near the 16-bit rounding boundaries.
func TestDifferentialHalfAndBitOps(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 5))
	randomDifferential(t, 6, func(i int) (string, string) {
		dt := []string{"f16", "bf16"}[i%2]
		return fmt.Sprint(i, dt), randomHalfProgram(rng, dt)
	}, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		args := stablehlo.RandomArgs(m.Main(), uint64(i))
		specialHalves(args[0], rng)
		d := args[1].Float64s()
		d[0], d[1], d[2] = 1+math.Pow(2, -11)+math.Pow(2, -40), 65519.99, math.Pow(2, -25)+math.Pow(2, -60)
		for j := 3; j < len(d); j++ {
			d[j] = (rng.Float64()*2 - 1) * math.Pow(2, float64(rng.IntN(40)-20))
		}
		n := args[2].Int64s()
		for j := range n {
			n[j] = rng.Int64() >> uint(rng.IntN(63))
			if j%2 == 1 {
				n[j] = -n[j]
			}
		}
		s := args[3].Int32s()
		for j := range s {
			s[j] = int32(rng.IntN(80) - 40)
		}
		got, want := runBoth(t, exe, m, args)
		assertSame(t, "", got, want)
	})
}

// specialHalves puts edge values into a 16-bit float tensor.
func specialHalves(x *stablehlo.Tensor, rng *rand.Rand) {
	specials := map[stablehlo.DType][]uint16{
		stablehlo.F16:  {0x7C00, 0xFC00, 0x7E00, 0x0000, 0x8000, 0x0001, 0x83FF, 0x7BFF, 0x3C01, 0xFBFF},
		stablehlo.BF16: {0x7F80, 0xFF80, 0x7FC0, 0x0000, 0x8000, 0x0001, 0x807F, 0x7F7F, 0x3F81, 0xFF7F},
	}[x.Type.DType]
	for j, b := range specials {
		k := 2 * (j * 2)
		x.Data[k], x.Data[k+1] = byte(b), byte(b>>8)
	}
	// Some values with many significant bits in float arithmetic.
	for k := 2 * len(specials) * 2; k+1 < len(x.Data); k += 6 {
		b := uint16(rng.Uint32())
		x.Data[k], x.Data[k+1] = byte(b), byte(b>>8)
	}
}

func randomHalfProgram(rng *rand.Rand, dt string) string {
	var b strings.Builder
	T := "tensor<6x8x" + dt + ">"
	fmt.Fprintf(&b, "func.func @main(%%h: %s, %%d: tensor<6x8xf64>, %%n: tensor<6x8xi64>, %%s: tensor<6x8xi32>) -> (%s, tensor<6x8xi32>, tensor<6xi1>, %s) {\n", T, T, T)
	// Conversions that must round once.
	fmt.Fprintf(&b, "  %%c0 = stablehlo.convert %%d : (tensor<6x8xf64>) -> %s\n", T)
	fmt.Fprintf(&b, "  %%c1 = stablehlo.convert %%n : (tensor<6x8xi64>) -> %s\n", T)
	fmt.Fprintf(&b, "  %%c2 = stablehlo.convert %%s : (tensor<6x8xi32>) -> %s\n", T)
	// A chain whose float intermediates are inexact, so every step must
	// round to 16 bits to match.
	fmt.Fprintf(&b, "  %%q0 = stablehlo.divide %%h, %%c0 : %s\n", T)
	fmt.Fprintf(&b, "  %%q1 = stablehlo.multiply %%q0, %%c0 : %s\n", T)
	fmt.Fprintf(&b, "  %%q2 = stablehlo.add %%q1, %%q0 : %s\n", T)
	fmt.Fprintf(&b, "  %%q3 = stablehlo.divide %%q2, %%c2 : %s\n", T)
	vals := []string{"%h", "%c0", "%c1", "%c2", "%q3"}
	pick := func() string { return vals[rng.IntN(len(vals))] }
	for i := 0; i < 12; i++ {
		v := fmt.Sprintf("%%v%d", i)
		switch rng.IntN(7) {
		case 0, 1:
			op := []string{"add", "subtract", "multiply", "divide", "maximum", "minimum", "remainder"}[rng.IntN(7)]
			if op != "remainder" {
				fmt.Fprintf(&b, "  %s = stablehlo.%s %s, %s : %s\n", v, op, pick(), pick(), T)
				break
			}
			// IEEE 754 (§6.3) leaves the sign of a NaN result open, and
			// C's fmod and Go's math.Mod pick different ones (0 rem 0 is
			// -NaN in C, +NaN in Go). The bitcasts and TOTALORDER
			// compares below see the sign, so remainder's NaNs are made
			// one quiet NaN; the other ops' NaNs come from the same
			// hardware instructions in both.
			fmt.Fprintf(&b, "  %s_r = stablehlo.remainder %s, %s : %s\n", v, pick(), pick(), T)
			fmt.Fprintf(&b, "  %s_n = stablehlo.compare NE, %s_r, %s_r, FLOAT : (%s, %s) -> tensor<6x8xi1>\n", v, v, v, T, T)
			fmt.Fprintf(&b, "  %s_q = stablehlo.constant dense<%s> : %s\n", v, map[string]string{"f16": "0x7E00", "bf16": "0x7FC0"}[dt], T)
			fmt.Fprintf(&b, "  %s = stablehlo.select %s_n, %s_q, %s_r : tensor<6x8xi1>, %s\n", v, v, v, v, T)
		case 2:
			op := []string{"negate", "abs", "sign", "sqrt", "floor", "ceil", "round_nearest_even"}[rng.IntN(7)]
			fmt.Fprintf(&b, "  %s = stablehlo.%s %s : %s\n", v, op, pick(), T)
		case 3:
			a, c := pick(), pick()
			dir := []string{"EQ", "NE", "LT", "LE", "GT", "GE"}[rng.IntN(6)]
			ct := []string{"FLOAT", "TOTALORDER"}[rng.IntN(2)]
			fmt.Fprintf(&b, "  %s_p = stablehlo.compare %s, %s, %s, %s : (%s, %s) -> tensor<6x8xi1>\n", v, dir, a, c, ct, T, T)
			fmt.Fprintf(&b, "  %s = stablehlo.select %s_p, %s, %s : tensor<6x8xi1>, %s\n", v, v, a, c, T)
		case 4:
			fmt.Fprintf(&b, "  %s_w = stablehlo.convert %s : (%s) -> tensor<6x8xf64>\n", v, pick(), T)
			fmt.Fprintf(&b, "  %s_k = stablehlo.constant dense<1.0009765625000002> : tensor<6x8xf64>\n", v)
			fmt.Fprintf(&b, "  %s_m = stablehlo.multiply %s_w, %s_k : tensor<6x8xf64>\n", v, v, v)
			fmt.Fprintf(&b, "  %s = stablehlo.convert %s_m : (tensor<6x8xf64>) -> %s\n", v, v, T)
		case 5:
			fmt.Fprintf(&b, "  %s_r = stablehlo.reverse %s, dims = [0] : %s\n", v, pick(), T)
			fmt.Fprintf(&b, "  %s = stablehlo.reduce_precision %s_r, format = e5m%d : %s\n", v, v, rng.IntN(4), T)
		default:
			fmt.Fprintf(&b, "  %s_f = stablehlo.is_finite %s : (%s) -> tensor<6x8xi1>\n", v, pick(), T)
			fmt.Fprintf(&b, "  %s_z = stablehlo.constant dense<0.0> : %s\n", v, T)
			fmt.Fprintf(&b, "  %s = stablehlo.select %s_f, %s, %s_z : tensor<6x8xi1>, %s\n", v, v, pick(), v, T)
		}
		vals = append(vals, v)
	}
	last := vals[len(vals)-1]
	// Integer bit ops on the bits of the result, and back.
	fmt.Fprintf(&b, "  %%bits = stablehlo.bitcast_convert %s : (%s) -> tensor<6x8xui16>\n", last, T)
	fmt.Fprintf(&b, "  %%wide = stablehlo.convert %%bits : (tensor<6x8xui16>) -> tensor<6x8xi32>\n")
	fmt.Fprintf(&b, "  %%sl = stablehlo.shift_left %%wide, %%s : tensor<6x8xi32>\n")
	fmt.Fprintf(&b, "  %%sr = stablehlo.shift_right_arithmetic %%sl, %%s : tensor<6x8xi32>\n")
	fmt.Fprintf(&b, "  %%su = stablehlo.shift_right_logical %%sr, %%s : tensor<6x8xi32>\n")
	fmt.Fprintf(&b, "  %%pc = stablehlo.popcnt %%su : tensor<6x8xi32>\n")
	fmt.Fprintf(&b, "  %%cz = stablehlo.count_leading_zeros %%sr : tensor<6x8xi32>\n")
	fmt.Fprintf(&b, "  %%ints = stablehlo.add %%pc, %%cz : tensor<6x8xi32>\n")
	fmt.Fprintf(&b, "  %%bytes = stablehlo.bitcast_convert %%bits : (tensor<6x8xui16>) -> tensor<6x8x2xui8>\n")
	fmt.Fprintf(&b, "  %%back = stablehlo.bitcast_convert %%bytes : (tensor<6x8x2xui8>) -> %s\n", T)
	// Sequential 16-bit accumulation.
	fmt.Fprintf(&b, "  %%zero = stablehlo.constant dense<0.0> : tensor<%s>\n", dt)
	fmt.Fprintf(&b, "  %%sum = stablehlo.reduce(%%q0 init: %%zero) applies stablehlo.add across dimensions = [1] : (%s, tensor<%s>) -> tensor<6x%s>\n", T, dt, dt)
	fmt.Fprintf(&b, "  %%fin = stablehlo.is_finite %%sum : (tensor<6x%s>) -> tensor<6xi1>\n", dt)
	fmt.Fprintf(&b, "  %%all = stablehlo.add %%back, %%q3 : %s\n", T)
	fmt.Fprintf(&b, "  %%sb = stablehlo.broadcast_in_dim %%sum, dims = [0] : (tensor<6x%s>) -> %s\n", dt, T)
	fmt.Fprintf(&b, "  %%out = stablehlo.add %%all, %%sb : %s\n", T)
	fmt.Fprintf(&b, "  return %s, %%ints, %%fin, %%out : %s, tensor<6x8xi32>, tensor<6xi1>, %s\n}\n", last, T, T)
	return b.String()
}

package cpu

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestDifferentialIntegers compares integer semantics that C leaves
// undefined or that are easy to get wrong (division and remainder by zero
// and by -1, negative powers, conversions that overflow) with the reference
// interpreter, on seeded random programs whose inputs include zeros.
func TestDifferentialIntegers(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 3))
	intProgram := func(i int) (string, string) { return fmt.Sprint(i), randomIntProgram(rng) }
	randomDifferential(t, 8, intProgram, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		args := randomArgs(m, uint64(i))
		// Extreme values exercise overflow paths.
		x := args[0].Int32s()
		x[0], x[1], x[2] = -2147483648, 2147483647, -1
		y := args[1].Int32s()
		y[0], y[1], y[3] = -1, 0, 0
		got, want := runBoth(t, exe, m, args)
		// Integer outputs: sameValues is exact equality.
		assertSame(t, "", got, want)
	})
}

func randomIntProgram(rng *rand.Rand) string {
	var b strings.Builder
	T := "tensor<4x6xi32>"
	b.WriteString("func.func @main(%x: tensor<4x6xi32>, %y: tensor<4x6xi32>, %f: tensor<4x6xf32>) -> (tensor<4x6xi32>, tensor<4x6xi32>) {\n")
	// Every program starts with the ops whose edge cases matter most.
	b.WriteString("  %d0 = stablehlo.divide %x, %y : tensor<4x6xi32>\n")
	b.WriteString("  %d1 = stablehlo.remainder %x, %y : tensor<4x6xi32>\n")
	b.WriteString("  %d2 = stablehlo.power %y, %x : tensor<4x6xi32>\n")
	b.WriteString("  %d3 = stablehlo.divide %y, %x : tensor<4x6xi32>\n")
	vals := []string{"%x", "%y", "%d0", "%d1", "%d2", "%d3"}
	pick := func() string { return vals[rng.IntN(len(vals))] }
	for i := 0; i < 10; i++ {
		v := fmt.Sprintf("%%v%d", i)
		switch rng.IntN(6) {
		case 0, 1:
			op := []string{"add", "subtract", "multiply", "divide", "remainder", "power", "maximum", "minimum", "and", "or", "xor"}[rng.IntN(11)]
			fmt.Fprintf(&b, "  %s = stablehlo.%s %s, %s : %s\n", v, op, pick(), pick(), T)
		case 2:
			op := []string{"negate", "abs", "sign", "not"}[rng.IntN(4)]
			fmt.Fprintf(&b, "  %s = stablehlo.%s %s : %s\n", v, op, pick(), T)
		case 3:
			a, c := pick(), pick()
			dir := []string{"EQ", "NE", "LT", "LE", "GT", "GE"}[rng.IntN(6)]
			fmt.Fprintf(&b, "  %s_p = stablehlo.compare %s, %s, %s, SIGNED : (%s, %s) -> tensor<4x6xi1>\n", v, dir, a, c, T, T)
			fmt.Fprintf(&b, "  %s = stablehlo.select %s_p, %s, %s : tensor<4x6xi1>, %s\n", v, v, a, c, T)
		case 4:
			// Float to int conversions out of range (scaled by 1e10).
			fmt.Fprintf(&b, "  %s_c = stablehlo.constant dense<1.0e10> : tensor<4x6xf32>\n", v)
			fmt.Fprintf(&b, "  %s_m = stablehlo.multiply %%f, %s_c : tensor<4x6xf32>\n", v, v)
			fmt.Fprintf(&b, "  %s_i = stablehlo.convert %s_m : (tensor<4x6xf32>) -> %s\n", v, v, T)
			fmt.Fprintf(&b, "  %s = stablehlo.add %s_i, %s : %s\n", v, v, pick(), T)
		default:
			fmt.Fprintf(&b, "  %s_lo = stablehlo.constant dense<-3> : tensor<i32>\n", v)
			fmt.Fprintf(&b, "  %s_hi = stablehlo.constant dense<5> : tensor<i32>\n", v)
			fmt.Fprintf(&b, "  %s = stablehlo.clamp %s_lo, %s, %s_hi : (tensor<i32>, %s, tensor<i32>) -> %s\n", v, v, pick(), v, T, T)
		}
		vals = append(vals, v)
	}
	fmt.Fprintf(&b, "  %%sum0 = stablehlo.add %%d0, %%d1 : %s\n", T)
	fmt.Fprintf(&b, "  %%sum1 = stablehlo.add %%d2, %%d3 : %s\n", T)
	fmt.Fprintf(&b, "  %%sum2 = stablehlo.add %%sum0, %%sum1 : %s\n", T)
	fmt.Fprintf(&b, "  return %s, %%sum2 : %s, %s\n}\n", vals[len(vals)-1], T, T)
	return b.String()
}

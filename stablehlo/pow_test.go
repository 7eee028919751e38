package stablehlo

import (
	"math"
	"testing"
)

func TestPow64(t *testing.T) {
	for _, c := range []struct{ x, y, want float64 }{
		// glibc's correctly rounded pow; math.Pow is 19 ULP off here.
		{math.Float64frombits(4605641439313540100), math.Float64frombits(4630927410806936340), math.Float64frombits(4557503606536606960)},
		{2, 0.5, math.Sqrt2},
		{2, 10, 1024},
		{-2, 3, -8},
		{-2, 2, 4},
		{-2, 0.5, math.NaN()},
		{0, -1, math.Inf(1)},
		{10, 400, math.Inf(1)},
		{10, -400, 0},
		{2, -1074, math.SmallestNonzeroFloat64},
		{math.Inf(1), -1, 0},
		{1, math.NaN(), 1},
	} {
		got := pow64(c.x, c.y)
		if math.Float64bits(got) != math.Float64bits(c.want) && !(got != got && c.want != c.want) {
			t.Errorf("pow64(%v, %v) = %v (%#x), want %v (%#x)", c.x, c.y, got, math.Float64bits(got), c.want, math.Float64bits(c.want))
		}
	}
	// Against math.Pow on ordinary values: within a few ULP.
	for i := 1; i < 200; i++ {
		x, y := float64(i)*0.173, float64(i%17)-8.5
		if d := ULPDifference64(pow64(x, y), math.Pow(x, y)); d > 64 {
			t.Errorf("pow64(%v, %v) is %d ULP from math.Pow", x, y, d)
		}
	}
}

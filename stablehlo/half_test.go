package stablehlo

import (
	"math"
	"strconv"
	"testing"
)

func TestFloat64ToHalf(t *testing.T) {
	p := math.Pow
	for _, c := range []struct {
		v    float64
		d    DType
		want uint16
	}{
		{1, F16, 0x3C00},
		{-2, F16, 0xC000},
		{1 + p(2, -11), F16, 0x3C00},                // tie: to even (1)
		{1 + 3*p(2, -11), F16, 0x3C02},              // tie: to even (1+2^-9)
		{1 + p(2, -11) + p(2, -40), F16, 0x3C01},    // above the tie; f64→f32→f16 would give 1
		{65504, F16, 0x7BFF},                        // largest finite
		{65519.99, F16, 0x7BFF},                     // below the overflow threshold
		{65520, F16, 0x7C00},                        // tie at the top rounds to Inf
		{p(2, -24), F16, 0x0001},                    // smallest subnormal
		{p(2, -25), F16, 0x0000},                    // tie: to even (0)
		{p(2, -25) + p(2, -60), F16, 0x0001},        // above the tie
		{math.Copysign(0, -1), F16, 0x8000},         // -0 keeps its sign
		{math.Inf(-1), F16, 0xFC00},                 // -Inf
		{1, BF16, 0x3F80},                           // bf16 is f32's top half
		{1 + p(2, -8), BF16, 0x3F80},                // tie: to even
		{1 + 3*p(2, -8), BF16, 0x3F82},              // tie: to even
		{1 + p(2, -8) + p(2, -30), BF16, 0x3F81},    // above the tie, beyond f32's precision
		{3.3961e38, BF16, 0x7F7F},                   // below the overflow threshold
		{3.3962e38, BF16, 0x7F80},                   // above it: Inf
		{math.SmallestNonzeroFloat32, BF16, 0x0000}, // below half the smallest bf16 subnormal
	} {
		if got := float64ToHalf(c.v, c.d); got != c.want {
			t.Errorf("%s(%g) = %#04x, want %#04x", c.d, c.v, got, c.want)
		}
	}
	for _, d := range []DType{F16, BF16} {
		b := float64ToHalf(math.NaN(), d)
		if f := halfToFloat32(b, d); f == f {
			t.Errorf("%s(NaN) = %#04x, not a NaN", d, b)
		}
	}
}

// TestHalfWidenExact checks that every f16 and bf16 bit pattern widens to
// f32 and rounds back to itself (NaNs to a NaN).
func TestHalfWidenExact(t *testing.T) {
	for _, d := range []DType{F16, BF16} {
		for b := 0; b < 1<<16; b++ {
			f := halfToFloat32(uint16(b), d)
			back := float32ToHalf(f, d)
			if f != f {
				if g := halfToFloat32(back, d); g == g {
					t.Fatalf("%s %#04x: NaN came back as %#04x", d, b, back)
				}
				continue
			}
			if back != uint16(b) || float64ToHalf(float64(f), d) != uint16(b) {
				t.Fatalf("%s %#04x -> %g -> %#04x", d, b, f, back)
			}
		}
	}
}

func TestHalfOps(t *testing.T) {
	src := `func.func @main() -> (tensor<3xbf16>, tensor<3xf16>, tensor<3xi1>, tensor<2xf32>, tensor<f16>, tensor<3xi32>, tensor<2xf16>) {
  %a = stablehlo.constant dense<[1.0, 2.0, -3.5]> : tensor<3xbf16>
  %e = stablehlo.constant dense<0.00390625> : tensor<3xbf16>
  %s = stablehlo.add %a, %e : tensor<3xbf16>
  %h = stablehlo.constant dense<[1.0, 0x7E00, 65504.0]> : tensor<3xf16>
  %hh = stablehlo.add %h, %h : tensor<3xf16>
  %c = stablehlo.compare LT, %h, %hh, FLOAT : (tensor<3xf16>, tensor<3xf16>) -> tensor<3xi1>
  %big = stablehlo.constant dense<[18014399583223809, -18014399583223809]> : tensor<2xi64>
  %bf = stablehlo.convert %big : (tensor<2xi64>) -> tensor<2xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f16>
  %r = stablehlo.reduce(%h init: %z) applies stablehlo.maximum across dimensions = [0] : (tensor<3xf16>, tensor<f16>) -> tensor<f16>
  %i = stablehlo.convert %a : (tensor<3xbf16>) -> tensor<3xi32>
  %m = stablehlo.constant dense<[[1.0, 2.0]]> : tensor<1x2xf16>
  %d = stablehlo.dot_general %m, %m, contracting_dims = [0] x [0] : (tensor<1x2xf16>, tensor<1x2xf16>) -> tensor<2x2xf16>
  %ds = stablehlo.slice %d [0:2, 1:2] : (tensor<2x2xf16>) -> tensor<2x1xf16>
  %dr = stablehlo.reshape %ds : (tensor<2x1xf16>) -> tensor<2xf16>
  return %s, %hh, %c, %bf, %r, %i, %dr : tensor<3xbf16>, tensor<3xf16>, tensor<3xi1>, tensor<2xf32>, tensor<f16>, tensor<3xi32>, tensor<2xf16>
}`
	out := evalText(t, src)
	want := []string{
		// 1 + 2^-8 ties to 1 in bf16; 2 + 2^-8 and -3.5 + 2^-8 round to the operand.
		"dense<[1, 2, -3.5]> : tensor<3xbf16>",
		"dense<[2, NaN, +Inf]> : tensor<3xf16>",
		"dense<[true, false, true]> : tensor<3xi1>",
		// 2^54 + 2^30 + 1 rounds up to 2^54 + 2^31 in f32; via f64 it
		// would tie to 2^54 (printed as the shortest f64 decimal).
		"dense<[18014400656965630, -18014400656965630]> : tensor<2xf32>",
		"dense<NaN> : tensor<f16>", // maximum propagates NaN
		"dense<[1, 2, -3]> : tensor<3xi32>",
		"dense<[2, 4]> : tensor<2xf16>",
	}
	for i, w := range want {
		if got := denseDecimal(out[i]); got != w {
			t.Errorf("result %d = %s, want %s", i, got, w)
		}
	}
	// The canonical form keeps 16-bit constants exactly.
	m, err := Parse([]byte(src), "half.mlir")
	if err != nil {
		t.Fatal(err)
	}
	checkCanonicalStable(t, m)
}

// denseDecimal renders a tensor's values in decimal (NaN, ±Inf by name)
// for test messages.
func denseDecimal(t *Tensor) string {
	s := "dense<"
	n := t.Type.NumElements()
	if t.Type.Rank() > 0 {
		s += "["
	}
	for i := int64(0); i < n; i++ {
		if i > 0 {
			s += ", "
		}
		switch {
		case t.Type.DType == I1:
			s += map[bool]string{true: "true", false: "false"}[t.Data[i] != 0]
		case t.Type.DType.IsFloat():
			v := t.Float64At(i)
			switch {
			case v != v:
				s += "NaN"
			case math.IsInf(v, 1):
				s += "+Inf"
			default:
				s += formatG(v)
			}
		default:
			s += formatG(float64(t.Int64At(i)))
		}
	}
	if t.Type.Rank() > 0 {
		s += "]"
	}
	return s + "> : " + t.Type.String()
}

func formatG(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }

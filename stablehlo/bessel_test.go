package stablehlo

import (
	"math"
	"testing"
)

// Reference values: e^-|x| times the power series of I0 and I1 summed in
// float64 (math.fsum-free Python, 200 terms), to 1e-15.
func TestBesselFunctions(t *testing.T) {
	cases := []struct {
		x, i0e, i1e float64
	}{
		{0, 1, 0},
		{1, 0.46575960759364043, 0.2079104153497085},
		{-1, 0.46575960759364043, -0.2079104153497085},
		{2, 0.30850832255367103, 0.2152692892489376},
		{8, 0.1434317818568503, 0.1341424932926982},
		{10, 0.12783333716342862, 0.12126268138445555},
		{-50, 0.05656162664745419, -0.05599312389289542},
	}
	for _, c := range cases {
		if g := besselI0e(c.x); math.Abs(g-c.i0e) > 1e-15*math.Max(1, math.Abs(c.i0e)) {
			t.Errorf("i0e(%g) = %.17g, want %.17g", c.x, g, c.i0e)
		}
		if g := besselI1e(c.x); math.Abs(g-c.i1e) > 1e-15*math.Max(1, math.Abs(c.i1e)) {
			t.Errorf("i1e(%g) = %.17g, want %.17g", c.x, g, c.i1e)
		}
	}
	if !math.IsNaN(besselI0e(math.NaN())) || !math.IsNaN(besselI1e(math.NaN())) {
		t.Error("NaN must propagate")
	}
	if besselI0e(math.Inf(1)) != 0 || besselI1e(math.Inf(-1)) != 0 || !math.Signbit(besselI1e(math.Inf(-1))) {
		t.Errorf("i0e(inf) = %g, i1e(-inf) = %g, want 0 and -0", besselI0e(math.Inf(1)), besselI1e(math.Inf(-1)))
	}
}

func TestBesselOps(t *testing.T) {
	runOpCases(t, []opCase{
		{"i0e f32", `  %a = stablehlo.constant dense<[0.0, 1.0, -2.0]> : tensor<3xf32>
  %r = chlo.bessel_i0e %a : tensor<3xf32> -> tensor<3xf32>`, "tensor<3xf32>", "dense<[1.0, 0.46575960759364043, 0.30850832255367103]>"},
		{"i1e f64 generic", `  %a = stablehlo.constant dense<[0.0, -1.0]> : tensor<2xf64>
  %r = "chlo.bessel_i1e"(%a) : (tensor<2xf64>) -> tensor<2xf64>`, "tensor<2xf64>", "dense<[0.0, -0.2079104153497085]>"},
	})
}

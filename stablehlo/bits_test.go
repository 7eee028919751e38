package stablehlo

import (
	"strings"
	"testing"
)

func literal(t *testing.T, s string) *Tensor {
	t.Helper()
	x, err := ParseTensorLiteral(s)
	if err != nil {
		t.Fatalf("%s: %v", s, err)
	}
	return x
}

// opCase is one table entry: a body computing %r from constants, the
// result type, and the expected literal.
type opCase struct {
	name, body, rtype, want string
}

func runOpCases(t *testing.T, cases []opCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := "func.func @main() -> " + c.rtype + " {\n" + c.body + "\n  return %r : " + c.rtype + "\n}\n"
			got := evalText(t, src)[0]
			want := literal(t, c.want+" : "+c.rtype)
			if !got.Equal(want) {
				t.Fatalf("got %s, want %s", got, want)
			}
			// The canonical form parses back to the same program.
			m, _ := Parse([]byte(src), "t.mlir")
			m2, err := Parse(Canonical(m), "c.mlir")
			if err != nil || string(Canonical(m2)) != string(Canonical(m)) {
				t.Fatalf("canonical form does not round-trip: %v\n%s", err, Canonical(m))
			}
		})
	}
}

func TestShiftsAndBitCounts(t *testing.T) {
	runOpCases(t, []opCase{
		// §shift_left: amounts >= the width (or negative, read as
		// unsigned) give 0.
		{"shl i8", `  %a = stablehlo.constant dense<[1, 1, -1, 3, 5]> : tensor<5xi8>
  %b = stablehlo.constant dense<[0, 7, 1, 8, -1]> : tensor<5xi8>
  %r = stablehlo.shift_left %a, %b : tensor<5xi8>`, "tensor<5xi8>", "dense<[1, -128, -2, 0, 0]>"},
		{"shl ui32", `  %a = stablehlo.constant dense<[1, 4294967295, 7]> : tensor<3xui32>
  %b = stablehlo.constant dense<[31, 4, 32]> : tensor<3xui32>
  %r = stablehlo.shift_left %a, %b : tensor<3xui32>`, "tensor<3xui32>", "dense<[2147483648, 4294967280, 0]>"},
		{"shr logical i8", `  %a = stablehlo.constant dense<[-128, -1, 64, -1]> : tensor<4xi8>
  %b = stablehlo.constant dense<[7, 4, 1, 9]> : tensor<4xi8>
  %r = stablehlo.shift_right_logical %a, %b : tensor<4xi8>`, "tensor<4xi8>", "dense<[1, 15, 32, 0]>"},
		// §shift_right_arithmetic: large amounts fill with the sign.
		{"shr arithmetic i32", `  %a = stablehlo.constant dense<[-8, -8, 8, 8, -1]> : tensor<5xi32>
  %b = stablehlo.constant dense<[1, 40, 2, 40, -3]> : tensor<5xi32>
  %r = stablehlo.shift_right_arithmetic %a, %b : tensor<5xi32>`, "tensor<5xi32>", "dense<[-4, -1, 2, 0, -1]>"},
		{"shr arithmetic ui8", `  %a = stablehlo.constant dense<[128, 255, 4]> : tensor<3xui8>
  %b = stablehlo.constant dense<[1, 9, 1]> : tensor<3xui8>
  %r = stablehlo.shift_right_arithmetic %a, %b : tensor<3xui8>`, "tensor<3xui8>", "dense<[192, 255, 2]>"},
		{"shr i64", `  %a = stablehlo.constant dense<[-9223372036854775808, 1]> : tensor<2xi64>
  %b = stablehlo.constant dense<[63, 64]> : tensor<2xi64>
  %r = stablehlo.shift_right_logical %a, %b : tensor<2xi64>`, "tensor<2xi64>", "dense<[1, 0]>"},
		{"popcnt", `  %a = stablehlo.constant dense<[0, -1, 5, -128]> : tensor<4xi8>
  %r = stablehlo.popcnt %a : tensor<4xi8>`, "tensor<4xi8>", "dense<[0, 8, 2, 1]>"},
		{"popcnt ui64", `  %a = stablehlo.constant dense<[18446744073709551615, 3]> : tensor<2xui64>
  %r = stablehlo.popcnt %a : tensor<2xui64>`, "tensor<2xui64>", "dense<[64, 2]>"},
		{"clz", `  %a = stablehlo.constant dense<[0, 1, -1, 256]> : tensor<4xi16>
  %r = stablehlo.count_leading_zeros %a : tensor<4xi16>`, "tensor<4xi16>", "dense<[16, 15, 0, 7]>"},
		{"clz i64", `  %a = stablehlo.constant dense<[0, 1]> : tensor<2xi64>
  %r = stablehlo.count_leading_zeros %a : tensor<2xi64>`, "tensor<2xi64>", "dense<[64, 63]>"},
	})
}

func TestFloatBitOps(t *testing.T) {
	runOpCases(t, []opCase{
		{"is_finite f32", `  %a = stablehlo.constant dense<[1.0, 0x7F800000, 0xFF800000, 0x7FC00000, -0.0]> : tensor<5xf32>
  %r = stablehlo.is_finite %a : (tensor<5xf32>) -> tensor<5xi1>`, "tensor<5xi1>", "dense<[true, false, false, false, true]>"},
		{"is_finite f16", `  %a = stablehlo.constant dense<[65504.0, 0x7C00, 0x7E00]> : tensor<3xf16>
  %r = stablehlo.is_finite %a : (tensor<3xf16>) -> tensor<3xi1>`, "tensor<3xi1>", "dense<[true, false, false]>"},
		{"bitcast f32 to i32", `  %a = stablehlo.constant dense<[1.0, -2.0]> : tensor<2xf32>
  %r = stablehlo.bitcast_convert %a : (tensor<2xf32>) -> tensor<2xi32>`, "tensor<2xi32>", "dense<[1065353216, -1073741824]>"},
		// Little-endian: the extra innermost dimension holds the bytes
		// from least significant up.
		{"bitcast ui16 to ui8", `  %a = stablehlo.constant dense<[258, 65535]> : tensor<2xui16>
  %r = stablehlo.bitcast_convert %a : (tensor<2xui16>) -> tensor<2x2xui8>`, "tensor<2x2xui8>", "dense<[[2, 1], [255, 255]]>"},
		{"bitcast ui8 to f32", `  %a = stablehlo.constant dense<[[0, 0, 128, 63]]> : tensor<1x4xui8>
  %r = stablehlo.bitcast_convert %a : (tensor<1x4xui8>) -> tensor<1xf32>`, "tensor<1xf32>", "dense<1.0>"},
		{"bitcast bf16", `  %a = stablehlo.constant dense<[1.0, -0.0]> : tensor<2xbf16>
  %r = stablehlo.bitcast_convert %a : (tensor<2xbf16>) -> tensor<2xui16>`, "tensor<2xui16>", "dense<[16256, 32768]>"},
		// §reduce_precision to f16's format: ties to even, overflow to
		// Inf, values below the smallest normal to 0, NaN kept.
		{"reduce_precision e5m10", `  %a = stablehlo.constant dense<[1.00048828125, 1.00146484375, 65520.0, 1.0e-8, 0x7FC00001, -3.0]> : tensor<6xf32>
  %r = stablehlo.reduce_precision %a, format = e5m10 : tensor<6xf32>`, "tensor<6xf32>", "dense<[1.0, 1.001953125, 0x7F800000, 0.0, 0x7FC00001, -3.0]>"},
		{"reduce_precision f64 e8m23", `  %a = stablehlo.constant dense<[0.1, 1.0e300]> : tensor<2xf64>
  %r = stablehlo.reduce_precision %a, format = e8m23 : tensor<2xf64>`, "tensor<2xf64>", "dense<[0.100000001490116119384765625, 0x7FF0000000000000]>"},
		{"reduce_precision e5m0 NaN becomes Inf", `  %a = stablehlo.constant dense<[0x7FC00000, 3.0]> : tensor<2xf32>
  %r = stablehlo.reduce_precision %a, format = e5m0 : tensor<2xf32>`, "tensor<2xf32>", "dense<[0x7F800000, 2.0]>"}, // 3 ties to 2 (even exponent)
	})
}

func TestReverseAndDynamicSlices(t *testing.T) {
	runOpCases(t, []opCase{
		{"reverse", `  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %r = stablehlo.reverse %a, dims = [1] : tensor<2x3xi32>`, "tensor<2x3xi32>", "dense<[[3, 2, 1], [6, 5, 4]]>"},
		{"reverse both", `  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xf16>
  %r = stablehlo.reverse %a, dims = [0, 1] : tensor<2x3xf16>`, "tensor<2x3xf16>", "dense<[[6.0, 5.0, 4.0], [3.0, 2.0, 1.0]]>"},
		{"reverse empty", `  %a = stablehlo.constant dense<> : tensor<0x3xi32>
  %r = stablehlo.reverse %a, dims = [0, 1] : tensor<0x3xi32>`, "tensor<0x3xi32>", "dense<>"},
		{"reverse generic", `  %a = stablehlo.constant dense<[1, 2]> : tensor<2xi64>
  %r = "stablehlo.reverse"(%a) {dimensions = array<i64: 0>} : (tensor<2xi64>) -> tensor<2xi64>`, "tensor<2xi64>", "dense<[2, 1]>"},
		// §dynamic_slice: start indices are clamped to [0, dim - size].
		{"dynamic_slice clamped", `  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6], [7, 8, 9]]> : tensor<3x3xi32>
  %i = stablehlo.constant dense<-5> : tensor<i64>
  %j = stablehlo.constant dense<7> : tensor<i64>
  %r = stablehlo.dynamic_slice %a, %i, %j, sizes = [2, 2] : (tensor<3x3xi32>, tensor<i64>, tensor<i64>) -> tensor<2x2xi32>`, "tensor<2x2xi32>", "dense<[[2, 3], [5, 6]]>"},
		{"dynamic_slice ui8 index", `  %a = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %i = stablehlo.constant dense<255> : tensor<ui8>
  %r = "stablehlo.dynamic_slice"(%a, %i) <{slice_sizes = array<i64: 1>}> : (tensor<3xf32>, tensor<ui8>) -> tensor<1xf32>`, "tensor<1xf32>", "dense<3.0>"},
		{"dynamic_slice ui64 index", `  %a = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi8>
  %i = stablehlo.constant dense<18446744073709551615> : tensor<ui64>
  %r = stablehlo.dynamic_slice %a, %i, sizes = [2] : (tensor<3xi8>, tensor<ui64>) -> tensor<2xi8>`, "tensor<2xi8>", "dense<[2, 3]>"},
		{"dynamic_update_slice clamped", `  %a = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %u = stablehlo.constant dense<[[0, 0]]> : tensor<1x2xi32>
  %i = stablehlo.constant dense<9> : tensor<i32>
  %j = stablehlo.constant dense<-1> : tensor<i32>
  %r = stablehlo.dynamic_update_slice %a, %u, %i, %j : (tensor<2x3xi32>, tensor<1x2xi32>, tensor<i32>, tensor<i32>) -> tensor<2x3xi32>`, "tensor<2x3xi32>", "dense<[[1, 2, 3], [0, 0, 6]]>"},
	})
}

func TestNewOpTypeErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`%r = stablehlo.shift_left %b, %b : tensor<2xi1>`, "requires an integer operand"},
		{`%r = stablehlo.shift_left %f, %f : tensor<2xf32>`, "requires an integer or i1 operand"},
		{`%r = stablehlo.popcnt %f : tensor<2xf32>`, "requires an integer or i1 operand"},
		{`%r = stablehlo.is_finite %i : (tensor<2xi32>) -> tensor<2xi1>`, "requires a floating-point operand"},
		{`%r = stablehlo.reverse %i, dims = [0, 0] : tensor<2xi32>`, "bad or repeated dimension 0"},
		{`%r = stablehlo.reverse %i, dims = [1] : tensor<2xi32>`, "bad or repeated dimension 1"},
		{`%r = stablehlo.bitcast_convert %f : (tensor<2xf32>) -> tensor<2x2xi32>`, "shapes differ"},
		{`%r = stablehlo.bitcast_convert %f : (tensor<2xf32>) -> tensor<2x3xui8>`, "plus a dimension of 4"},
		{`%r = stablehlo.bitcast_convert %b : (tensor<2xi1>) -> tensor<2xui8>`, "bitcast_convert of i1"},
		{`%r = stablehlo.dynamic_slice %i, %s, sizes = [3] : (tensor<2xi32>, tensor<i32>) -> tensor<3xi32>`, "slice size 3 out of [0, 2]"},
		{`%r = stablehlo.dynamic_slice %i, %f, sizes = [1] : (tensor<2xi32>, tensor<2xf32>) -> tensor<1xi32>`, "must be an integer scalar"},
		{`%r = stablehlo.dynamic_slice %i, sizes = [1] : (tensor<2xi32>) -> tensor<1xi32>`, "0 start indices for rank 1"},
		{`%r = stablehlo.dynamic_update_slice %i, %f, %s : (tensor<2xi32>, tensor<2xf32>, tensor<i32>) -> tensor<2xi32>`, "does not match operand"},
		{`%r = stablehlo.reduce_precision %f, format = e0m3 : tensor<2xf32>`, "bad format e0m3"},
	} {
		src := `func.func @main(%b: tensor<2xi1>, %f: tensor<2xf32>, %i: tensor<2xi32>, %s: tensor<i32>) -> tensor<i32> {
  ` + c.body + `
  return %s : tensor<i32>
}`
		_, err := Parse([]byte(src), "e.mlir")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.body, err, c.want)
		}
	}
}

package stablehlo

import "testing"

func TestNextAfter(t *testing.T) {
	runOpCases(t, []opCase{
		// XLA's rules: y when x == y (so +0 toward -0 gives -0), the
		// smallest subnormal signed like y from zero.
		{"f32", `  %a = stablehlo.constant dense<[0.0, 0.0, 1.0, 1.0, -1.0]> : tensor<5xf32>
  %b = stablehlo.constant dense<[-0.0, -1.0, 2.0, 1.0, 1.0]> : tensor<5xf32>
  %r = "chlo.next_after"(%a, %b) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>`, "tensor<5xf32>",
			"dense<[0x80000000, 0x80000001, 0x3F800001, 0x3F800000, 0xBF7FFFFF]>"},
		// 16-bit types step by their own ULP.
		{"f16", `  %a = stablehlo.constant dense<[1.0, 1.0, 0.0, 0x7C00]> : tensor<4xf16>
  %b = stablehlo.constant dense<[2.0, 0.0, 1.0, 0.0]> : tensor<4xf16>
  %r = "chlo.next_after"(%a, %b) : (tensor<4xf16>, tensor<4xf16>) -> tensor<4xf16>`, "tensor<4xf16>",
			"dense<[0x3C01, 0x3BFF, 0x0001, 0x7BFF]>"},
		{"bf16 NaN", `  %a = stablehlo.constant dense<[1.0, 0x7FC1]> : tensor<2xbf16>
  %b = stablehlo.constant dense<[-2.0, 1.0]> : tensor<2xbf16>
  %r = "chlo.next_after"(%a, %b) : (tensor<2xbf16>, tensor<2xbf16>) -> tensor<2xbf16>`, "tensor<2xbf16>",
			"dense<[0x3F7F, 0x7FC0]>"},
	})
}

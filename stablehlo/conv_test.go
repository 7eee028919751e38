package stablehlo

import (
	"strings"
	"testing"
)

func conv1D(window, attrs, rtype string) string {
	return `  %x = stablehlo.constant dense<[[[1.0], [2.0], [3.0], [4.0]]]> : tensor<1x4x1xf32>
  %k = stablehlo.constant dense<[[[1.0]], [[10.0]]]> : tensor<2x1x1xf32>
  %r = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {` + window + `} {` + attrs + `} : (tensor<1x4x1xf32>, tensor<2x1x1xf32>) -> ` + rtype
}

func TestConvolution(t *testing.T) {
	g1 := "batch_group_count = 1 : i64, feature_group_count = 1 : i64"
	runOpCases(t, []opCase{
		{"valid", conv1D("", g1, "tensor<1x3x1xf32>"), "tensor<1x3x1xf32>", "dense<[[[21.0], [32.0], [43.0]]]>"},
		{"pad and stride", conv1D("stride = [2], pad = [[1, 1]]", g1, "tensor<1x3x1xf32>"), "tensor<1x3x1xf32>", "dense<[[[10.0], [32.0], [4.0]]]>"},
		// lhs_dilation inserts zeros between input elements.
		{"lhs dilation", conv1D("lhs_dilate = [2]", g1, "tensor<1x6x1xf32>"), "tensor<1x6x1xf32>", "dense<[[[1.0], [20.0], [2.0], [30.0], [3.0], [40.0]]]>"},
		{"rhs dilation", conv1D("rhs_dilate = [2]", g1, "tensor<1x2x1xf32>"), "tensor<1x2x1xf32>", "dense<[[[31.0], [42.0]]]>"},
		{"negative padding", conv1D("pad = [[-1, 0]]", g1, "tensor<1x2x1xf32>"), "tensor<1x2x1xf32>", "dense<[[[32.0], [43.0]]]>"},
		{"window reversal", conv1D("reverse = [true]", g1, "tensor<1x3x1xf32>"), "tensor<1x3x1xf32>", "dense<[[[12.0], [23.0], [34.0]]]>"},
		// Two feature groups: each output feature sees its own input feature.
		{"feature groups", `  %x = stablehlo.constant dense<[[[1.0, 3.0], [2.0, 4.0]]]> : tensor<1x2x2xf32>
  %k = stablehlo.constant dense<[[[5.0, 7.0]]]> : tensor<1x1x2xf32>
  %r = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<1x2x2xf32>, tensor<1x1x2xf32>) -> tensor<1x2x2xf32>`,
			"tensor<1x2x2xf32>", "dense<[[[5.0, 21.0], [10.0, 28.0]]]>"},
		// Two batch groups: output feature g reads input batch group g.
		{"batch groups", `  %x = stablehlo.constant dense<[[[1]], [[2]]]> : tensor<2x1x1xi32>
  %k = stablehlo.constant dense<[[[3, 4]]]> : tensor<1x1x2xi32>
  %r = stablehlo.convolution(%x, %k) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {} {batch_group_count = 2 : i64, feature_group_count = 1 : i64} : (tensor<2x1x1xi32>, tensor<1x1x2xi32>) -> tensor<1x1x2xi32>`,
			"tensor<1x1x2xi32>", "dense<[[[3, 8]]]>"},
		{"generic NCHW", `  %x = stablehlo.constant dense<[[[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]]]> : tensor<1x1x3x3xf16>
  %k = stablehlo.constant dense<[[[[1.0, 0.0], [0.0, 1.0]]]]> : tensor<1x1x2x2xf16>
  %r = "stablehlo.convolution"(%x, %k) {batch_group_count = 1 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<0> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_strides = array<i64: 1, 1>} : (tensor<1x1x3x3xf16>, tensor<1x1x2x2xf16>) -> tensor<1x1x2x2xf16>`,
			"tensor<1x1x2x2xf16>", "dense<[[[[6.0, 8.0], [12.0, 14.0]]]]>"},
	})
}

func TestConvolutionTypeErrors(t *testing.T) {
	for _, c := range []struct{ window, attrs, rtype, want string }{
		{"", "feature_group_count = 3 : i64", "tensor<1x3x1xf32>", "feature groups 3"},
		{"stride = [1, 1]", "", "tensor<1x3x1xf32>", "window attributes must have 1 entries"},
		{"", "", "tensor<1x4x1xf32>", "declared tensor<1x4x1xf32> but the operands give tensor<1x3x1xf32>"},
		{"pad = [[1]]", "", "tensor<1x3x1xf32>", "pad entries must be [lo, hi]"},
	} {
		src := "func.func @main() -> " + c.rtype + " {\n" + conv1D(c.window, c.attrs, c.rtype) + "\n  return %r : " + c.rtype + "\n}"
		_, err := Parse([]byte(src), "e.mlir")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %s: got %v, want %q", c.window, c.attrs, err, c.want)
		}
	}
}

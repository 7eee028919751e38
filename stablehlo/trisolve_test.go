package stablehlo

import "testing"

func triSolve(a, b, attrs, at, bt string) string {
	return `  %a = stablehlo.constant dense<` + a + `> : ` + at + `
  %b = stablehlo.constant dense<` + b + `> : ` + bt + `
  %r = "stablehlo.triangular_solve"(%a, %b) <{` + attrs + `}> : (` + at + `, ` + bt + `) -> ` + bt
}

func TestTriangularSolve(t *testing.T) {
	const a22, b21 = "tensor<2x2xf32>", "tensor<2x1xf32>"
	lowerA := "[[2.0, 99.0], [3.0, 4.0]]" // 99 is outside the lower triangle: never read
	runOpCases(t, []opCase{
		{"left lower", triSolve(lowerA, "[[2.0], [11.0]]", "left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false", a22, b21), b21, "dense<[[1.0], [2.0]]>"},
		{"left upper unit diagonal", triSolve("[[5.0, 2.0], [99.0, 7.0]]", "[[5.0], [3.0]]", "left_side = true, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = true", a22, b21), b21, "dense<[[-1.0], [3.0]]>"},
		{"left transposed", triSolve(lowerA, "[[8.0], [8.0]]", "left_side = true, lower = true, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = false", a22, b21), b21, "dense<[[1.0], [2.0]]>"},
		{"right side", triSolve(lowerA, "[[8.0, 8.0]]", "left_side = false, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false", a22, "tensor<1x2xf32>"), "tensor<1x2xf32>", "dense<[[1.0, 2.0]]>"},
		{"batched f16", triSolve("[[[2.0]], [[4.0]]]", "[[[6.0]], [[8.0]]]", "left_side = true, lower = true, transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = false", "tensor<2x1x1xf16>", "tensor<2x1x1xf16>"), "tensor<2x1x1xf16>", "dense<[[[3.0]], [[2.0]]]>"},
	})
}

func TestCholesky(t *testing.T) {
	// a = L·Lᵀ with L = [[2, 0], [1, 3]]: a = [[4, 2], [2, 10]]. The
	// triangle not named by lower is never read (99) and comes out zero.
	runOpCases(t, []opCase{
		{"lower", `  %a = stablehlo.constant dense<[[4.0, 99.0], [2.0, 10.0]]> : tensor<2x2xf32>
  %r = stablehlo.cholesky %a, lower = true : tensor<2x2xf32>`, "tensor<2x2xf32>", "dense<[[2.0, 0.0], [1.0, 3.0]]>"},
		{"upper generic batched f64", `  %a = stablehlo.constant dense<[[[4.0, 2.0], [99.0, 10.0]], [[9.0, 0.0], [99.0, 1.0]]]> : tensor<2x2x2xf64>
  %r = "stablehlo.cholesky"(%a) <{lower = false}> : (tensor<2x2x2xf64>) -> tensor<2x2x2xf64>`, "tensor<2x2x2xf64>", "dense<[[[2.0, 1.0], [0.0, 3.0]], [[3.0, 0.0], [0.0, 1.0]]]>"},
		{"not positive definite", `  %a = stablehlo.constant dense<[[-1.0]]> : tensor<1x1xf16>
  %r = stablehlo.cholesky %a, lower = true : tensor<1x1xf16>`, "tensor<1x1xf16>", "dense<0x7E00>"},
	})
}

package stablehlo

import (
	"strings"
	"testing"
)

const addBody = `({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  })`

func TestGatherScatter(t *testing.T) {
	runOpCases(t, []opCase{
		{"gather rows", `  %x = stablehlo.constant dense<[[1, 2], [3, 4], [5, 6]]> : tensor<3x2xi32>
  %i = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xi64>
  %r = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 2>}> : (tensor<3x2xi32>, tensor<2x1xi64>) -> tensor<2x2xi32>`,
			"tensor<2x2xi32>", "dense<[[5, 6], [1, 2]]>"},
		// §gather: start indices are clamped so the slice fits.
		{"gather clamped", `  %x = stablehlo.constant dense<[1, 2, 3, 4]> : tensor<4xi32>
  %i = stablehlo.constant dense<[[-3], [3], [9]]> : tensor<3x1xi32>
  %r = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 2>}> : (tensor<4xi32>, tensor<3x1xi32>) -> tensor<3x2xi32>`,
			"tensor<3x2xi32>", "dense<[[1, 2], [3, 4], [3, 4]]>"},
		{"gather batching dims", `  %x = stablehlo.constant dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi32>
  %i = stablehlo.constant dense<[[2], [0]]> : tensor<2x1xui32>
  %r = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [1], operand_batching_dims = [0], start_indices_batching_dims = [0], start_index_map = [1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 1>}> : (tensor<2x3xi32>, tensor<2x1xui32>) -> tensor<2xi32>`,
			"tensor<2xi32>", "dense<[3, 4]>"},
		{"gather implicit index vector", `  %x = stablehlo.constant dense<[10, 20, 30]> : tensor<3xi32>
  %i = stablehlo.constant dense<[2, 1]> : tensor<2xi32>
  %r = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1>}> : (tensor<3xi32>, tensor<2xi32>) -> tensor<2xi32>`,
			"tensor<2xi32>", "dense<[30, 20]>"},
		// Out-of-bounds updates are skipped (XLA's choice; the spec leaves
		// it to the implementation); duplicates accumulate in order.
		{"scatter add skip oob", `  %x = stablehlo.constant dense<0.0> : tensor<4xf32>
  %i = stablehlo.constant dense<[[1], [5], [-1], [3], [1]]> : tensor<5x1xi64>
  %u = stablehlo.constant dense<[10.0, 20.0, 30.0, 40.0, 1.0]> : tensor<5xf32>
  %r = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ` + addBody + ` : (tensor<4xf32>, tensor<5x1xi64>, tensor<5xf32>) -> tensor<4xf32>`,
			"tensor<4xf32>", "dense<[0.0, 11.0, 0.0, 40.0]>"},
		// A window that does not fit is skipped as a whole, not clamped.
		{"scatter window skip", `  %x = stablehlo.constant dense<0> : tensor<2x3xi32>
  %i = stablehlo.constant dense<[[0, 1], [1, 2]]> : tensor<2x2xi32>
  %u = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %r = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0, 1], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    stablehlo.return %b : tensor<i32>
  }) : (tensor<2x3xi32>, tensor<2x2xi32>, tensor<2x2xi32>) -> tensor<2x3xi32>`,
			"tensor<2x3xi32>", "dense<[[0, 1, 2], [0, 0, 0]]>"},
		{"scatter max rows", `  %x = stablehlo.constant dense<[[5.0, 5.0], [5.0, 5.0]]> : tensor<2x2xf32>
  %i = stablehlo.constant dense<[1]> : tensor<1xi32>
  %u = stablehlo.constant dense<[1.0, 9.0]> : tensor<2xf32>
  %r = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [0], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0]>, unique_indices = true, indices_are_sorted = true}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %m = stablehlo.maximum %a, %b : tensor<f32>
    stablehlo.return %m : tensor<f32>
  }) : (tensor<2x2xf32>, tensor<1xi32>, tensor<2xf32>) -> tensor<2x2xf32>`,
			"tensor<2x2xf32>", "dense<[[5.0, 5.0], [5.0, 9.0]]>"},
		{"scatter multiply bf16 general body", `  %x = stablehlo.constant dense<2.0> : tensor<3xbf16>
  %i = stablehlo.constant dense<[[0], [0]]> : tensor<2x1xi32>
  %u = stablehlo.constant dense<[3.0, 0.5]> : tensor<2xbf16>
  %r = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %c = stablehlo.constant dense<1.0> : tensor<bf16>
    %m = stablehlo.multiply %a, %b : tensor<bf16>
    %n = stablehlo.multiply %m, %c : tensor<bf16>
    stablehlo.return %n : tensor<bf16>
  }) : (tensor<3xbf16>, tensor<2x1xi32>, tensor<2xbf16>) -> tensor<3xbf16>`,
			"tensor<3xbf16>", "dense<[3.0, 2.0, 2.0]>"},
	})
}

func TestSortAndWindows(t *testing.T) {
	runOpCases(t, []opCase{
		// Two operands sorted by the first; equal keys keep their order.
		{"sort stable by key", `  %k = stablehlo.constant dense<[3, 1, 2, 1]> : tensor<4xi32>
  %v = stablehlo.constant dense<[10, 20, 30, 40]> : tensor<4xi32>
  %s:2 = "stablehlo.sort"(%k, %v) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
    %lt = stablehlo.compare LT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  }) : (tensor<4xi32>, tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>)
  %r = stablehlo.concatenate %s#0, %s#1, dim = 0 : (tensor<4xi32>, tensor<4xi32>) -> tensor<8xi32>`,
			"tensor<8xi32>", "dense<[1, 1, 2, 3, 20, 40, 30, 10]>"},
		{"sort descending dim 1", `  %k = stablehlo.constant dense<[[1.0, 3.0, 2.0], [0.5, -1.0, 4.0]]> : tensor<2x3xf32>
  %r = "stablehlo.sort"(%k) <{dimension = 1 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %gt = stablehlo.compare GT, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %gt : tensor<i1>
  }) : (tensor<2x3xf32>) -> tensor<2x3xf32>`,
			"tensor<2x3xf32>", "dense<[[3.0, 2.0, 1.0], [4.0, 0.5, -1.0]]>"},
		// cumsum as JAX writes it: a window of n with n-1 low padding.
		{"reduce_window cumsum", `  %x = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %z) <{padding = dense<[[3, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 4>}> ` + addBody + ` : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>`,
			"tensor<4xf32>", "dense<[1.0, 3.0, 6.0, 10.0]>"},
		{"reduce_window strides and window dilation", `  %x = stablehlo.constant dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0]> : tensor<6xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %z) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>, window_dilations = array<i64: 2>}> ` + addBody + ` : (tensor<6xf32>, tensor<f32>) -> tensor<2xf32>`,
			"tensor<2xf32>", "dense<[4.0, 8.0]>"},
		// Base dilation holes hold the init value (§reduce_window).
		{"reduce_window base dilation", `  %x = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %z = stablehlo.constant dense<0.5> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %z) <{window_dimensions = array<i64: 2>, base_dilations = array<i64: 2>}> ` + addBody + ` : (tensor<3xf32>, tensor<f32>) -> tensor<4xf32>`,
			"tensor<4xf32>", "dense<[2.0, 3.0, 3.0, 4.0]>"},
		{"reduce_window variadic 2d", `  %x = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %y = stablehlo.constant dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %o = stablehlo.constant dense<1> : tensor<i32>
  %w:2 = "stablehlo.reduce_window"(%x, %y, %z, %o) <{window_dimensions = array<i64: 2, 1>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<i32>, %d: tensor<i32>):
    %s = stablehlo.add %a, %c : tensor<i32>
    %p = stablehlo.multiply %b, %d : tensor<i32>
    stablehlo.return %s, %p : tensor<i32>, tensor<i32>
  }) : (tensor<2x2xi32>, tensor<2x2xi32>, tensor<i32>, tensor<i32>) -> (tensor<1x2xi32>, tensor<1x2xi32>)
  %r = stablehlo.concatenate %w#0, %w#1, dim = 0 : (tensor<1x2xi32>, tensor<1x2xi32>) -> tensor<2x2xi32>`,
			"tensor<2x2xi32>", "dense<[[4, 6], [3, 8]]>"},
		{"select_and_scatter max pool grad", `  %x = stablehlo.constant dense<[1.0, 5.0, 3.0, 2.0, 4.0, 6.0]> : tensor<6xf32>
  %s = stablehlo.constant dense<[10.0, 20.0, 30.0]> : tensor<3xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.select_and_scatter"(%x, %s, %z) <{window_dimensions = array<i64: 2>, window_strides = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %ge = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %p = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %p : tensor<f32>
  }) : (tensor<6xf32>, tensor<3xf32>, tensor<f32>) -> tensor<6xf32>`,
			"tensor<6xf32>", "dense<[0.0, 10.0, 20.0, 0.0, 0.0, 30.0]>"},
		// Overlapping windows over padding: padding is never selected, and
		// scatters to one element accumulate.
		{"select_and_scatter padded overlap", `  %x = stablehlo.constant dense<[1, 3, 2]> : tensor<3xi32>
  %s = stablehlo.constant dense<[1, 2, 3]> : tensor<3xi32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %r = "stablehlo.select_and_scatter"(%x, %s, %z) <{window_dimensions = array<i64: 3>, padding = dense<[[1, 1]]> : tensor<1x2xi64>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %ge = stablehlo.compare GE, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %ge : tensor<i1>
  }, {
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %p = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %p : tensor<i32>
  }) : (tensor<3xi32>, tensor<3xi32>, tensor<i32>) -> tensor<3xi32>`,
			"tensor<3xi32>", "dense<[0, 6, 0]>"},
	})
}

func TestIndexOpTypeErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`%r = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 5>}> : (tensor<3x2xf32>, tensor<2x1xi32>) -> tensor<2x5xf32>`, "slice size 5 out of [0, 2]"},
		{`%r = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0, 1], index_vector_dim = 1>, slice_sizes = array<i64: 1, 2>}> : (tensor<3x2xf32>, tensor<2x1xi32>) -> tensor<2x2xf32>`, "start_index_map [0 1] has 2 entries"},
		{`%r = "stablehlo.gather"(%x, %i) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 2>}> : (tensor<3x2xf32>, tensor<2x1xi32>) -> tensor<2x3xf32>`, "declared tensor<2x3xf32> but the operands give tensor<2x2xf32>"},
		{`%r = "stablehlo.scatter"(%x, %i, %x) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<3x2xf32>, tensor<2x1xi32>, tensor<3x2xf32>) -> tensor<3x2xf32>`, "do not match the indices' batch dimensions"},
		{`%r = "stablehlo.scatter"(%x, %i, %u) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) : (tensor<3x2xf32>, tensor<2x1xi32>, tensor<2x2xf32>) -> tensor<3x2xf32>`, "scatter update computation result #0"},
		{`%z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %z) <{window_dimensions = array<i64: 2>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    stablehlo.return %b : tensor<f32>
  }) : (tensor<3x2xf32>, tensor<f32>) -> tensor<2x2xf32>`, "window_dimensions has 1 entries for rank 2"},
		{`%r = "stablehlo.sort"(%x) <{dimension = 2 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare LT, %a, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) : (tensor<3x2xf32>) -> tensor<3x2xf32>`, "dimension 2 out of range"},
	} {
		src := "func.func @main(%x: tensor<3x2xf32>, %i: tensor<2x1xi32>, %u: tensor<2x2xf32>) -> tensor<i32> {\n  " + c.body + "\n  %k = stablehlo.constant dense<0> : tensor<i32>\n  return %k : tensor<i32>\n}"
		_, err := Parse([]byte(src), "e.mlir")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

package cpu

import (
	"fmt"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// indexOpsProgram uses every indexing and windowed op the backend lowers,
// with index inputs that go out of bounds on both sides (the random
// integers are in [-8, 8]) and with duplicates.
const indexOpsProgram = `func.func @main(%x: tensor<5x4xf32>, %ii: tensor<3x1xi32>, %bi: tensor<2x1xi64>, %si: tensor<6x1xi32>, %su: tensor<6x2xf32>,
    %h: tensor<7xbf16>, %hi: tensor<4x1xui32>, %hu: tensor<4xbf16>, %d0: tensor<i8>, %d1: tensor<ui64>, %keys: tensor<3x6xi32>, %vals: tensor<3x6xf32>,
    %f: tensor<9xf16>, %g: tensor<6x5xi32>) ->
    (tensor<3x3xf32>, tensor<2x4xf32>, tensor<5x4xf32>, tensor<7xbf16>, tensor<3x2xf32>, tensor<5x4xf32>, tensor<4x4xf32>, tensor<3x5xi32>,
     tensor<9xf16>, tensor<5x4xf32>, tensor<3x6xi32>, tensor<3x6xf32>, tensor<3x6xf32>) {
  %g0 = "stablehlo.gather"(%x, %ii) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>}> : (tensor<5x4xf32>, tensor<3x1xi32>) -> tensor<3x3xf32>
  %g1 = "stablehlo.gather"(%x, %bi) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 4>, indices_are_sorted = false}> : (tensor<5x4xf32>, tensor<2x1xi64>) -> tensor<2x4xf32>
  %s0 = "stablehlo.scatter"(%x, %si, %su) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %t = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %t : tensor<f32>
  }) : (tensor<5x4xf32>, tensor<6x1xi32>, tensor<6x2xf32>) -> tensor<5x4xf32>
  %s1 = "stablehlo.scatter"(%h, %hi, %hu) <{scatter_dimension_numbers = #stablehlo.scatter<inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<bf16>, %b: tensor<bf16>):
    %t = stablehlo.multiply %a, %b : tensor<bf16>
    %u = stablehlo.add %t, %b : tensor<bf16>
    stablehlo.return %u : tensor<bf16>
  }) : (tensor<7xbf16>, tensor<4x1xui32>, tensor<4xbf16>) -> tensor<7xbf16>
  %ds = stablehlo.dynamic_slice %x, %d0, %d0, sizes = [3, 2] : (tensor<5x4xf32>, tensor<i8>, tensor<i8>) -> tensor<3x2xf32>
  %z64 = stablehlo.constant dense<1> : tensor<ui64>
  %du = stablehlo.dynamic_update_slice %x, %ds, %d1, %z64 : (tensor<5x4xf32>, tensor<3x2xf32>, tensor<ui64>, tensor<ui64>) -> tensor<5x4xf32>
  %zero = stablehlo.constant dense<0.0> : tensor<f32>
  %ninf = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %rw:2 = "stablehlo.reduce_window"(%x, %x, %zero, %ninf) <{window_dimensions = array<i64: 2, 3>, window_strides = array<i64: 2, 1>, base_dilations = array<i64: 2, 1>, window_dilations = array<i64: 1, 2>, padding = dense<[[1, -1], [2, 2]]> : tensor<2x2xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>, %c: tensor<f32>, %d: tensor<f32>):
    %p = stablehlo.add %a, %c : tensor<f32>
    %q = stablehlo.maximum %b, %d : tensor<f32>
    stablehlo.return %p, %q : tensor<f32>, tensor<f32>
  }) : (tensor<5x4xf32>, tensor<5x4xf32>, tensor<f32>, tensor<f32>) -> (tensor<4x4xf32>, tensor<4x4xf32>)
  %gz = stablehlo.constant dense<0> : tensor<i32>
  %rg = "stablehlo.reduce_window"(%g, %gz) <{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 2, 1>}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %p = stablehlo.add %a, %b : tensor<i32>
    stablehlo.return %p : tensor<i32>
  }) : (tensor<6x5xi32>, tensor<i32>) -> tensor<3x4xi32>
  %rgp = stablehlo.pad %rg, %gz, low = [0, 0], high = [0, 1], interior = [0, 0] : (tensor<3x4xi32>, tensor<i32>) -> tensor<3x5xi32>
  %hn = stablehlo.constant dense<0xFC00> : tensor<f16>
  %cm = "stablehlo.reduce_window"(%f, %hn) <{padding = dense<[[8, 0]]> : tensor<1x2xi64>, window_dimensions = array<i64: 9>}> ({
  ^bb0(%a: tensor<f16>, %b: tensor<f16>):
    %p = stablehlo.maximum %a, %b : tensor<f16>
    stablehlo.return %p : tensor<f16>
  }) : (tensor<9xf16>, tensor<f16>) -> tensor<9xf16>
  %src = stablehlo.slice %x [0:3, 0:4] : (tensor<5x4xf32>) -> tensor<3x4xf32>
  %sas = "stablehlo.select_and_scatter"(%x, %src, %zero) <{window_dimensions = array<i64: 3, 2>, window_strides = array<i64: 2, 1>, padding = dense<[[1, 1], [0, 1]]> : tensor<2x2xi64>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %c = stablehlo.compare GE, %a, %b, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }, {
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %p = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %p : tensor<f32>
  }) : (tensor<5x4xf32>, tensor<3x4xf32>, tensor<f32>) -> tensor<5x4xf32>
  %st:2 = "stablehlo.sort"(%keys, %vals) <{dimension = 1 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>, %c: tensor<f32>, %d: tensor<f32>):
    %p = stablehlo.compare GT, %a, %b, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<3x6xi32>, tensor<3x6xf32>) -> (tensor<3x6xi32>, tensor<3x6xf32>)
  %sv = "stablehlo.sort"(%vals) <{dimension = -1 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %p = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<3x6xf32>) -> tensor<3x6xf32>
  return %g0, %g1, %s0, %s1, %ds, %du, %rw#0, %rgp, %cm, %sas, %st#0, %st#1, %sv : tensor<3x3xf32>, tensor<2x4xf32>, tensor<5x4xf32>, tensor<7xbf16>, tensor<3x2xf32>, tensor<5x4xf32>, tensor<4x4xf32>, tensor<3x5xi32>, tensor<9xf16>, tensor<5x4xf32>, tensor<3x6xi32>, tensor<3x6xf32>, tensor<3x6xf32>
}
`

// TestDifferentialIndexOps compares the lowered gather, scatter,
// dynamic_slice, dynamic_update_slice, reduce_window, select_and_scatter
// and sort with the interpreter, bit for bit, on seeded random inputs
// whose indices fall inside and outside the operands.
func TestDifferentialIndexOps(t *testing.T) {
	m, exe := compileText(t, indexOpsProgram)
	for seed := uint64(0); seed < 24; seed++ {
		args := stablehlo.RandomArgs(m.Main(), seed)
		// Duplicate keys and a NaN among the values to sort.
		k := args[10].Int32s()
		k[1], k[4] = k[0], k[0]
		args[11].Float32s()[2] = float32(nanF32())
		if seed%3 == 0 {
			args[9].Uint64s()[0] = 1 << 63 // saturates, then clamps
		}
		got, want := runBoth(t, exe, m, args)
		assertSame(t, fmt.Sprint("seed ", seed), got, want)
	}
}

func nanF32() float32 {
	var z float32
	return z / z
}

// convProgram holds convolutions with every window feature: NHWC/HWIO and
// NCHW/OIHW layouts, strides, negative and positive padding, lhs and rhs
// dilation, window reversal, feature and batch groups, on i32 and f16
// (whose sums are exact or rounded once, so they compare bit for bit)
// and f32 (compared with a tolerance: the C compiler may fuse
// multiply-adds).
const convProgram = `func.func @main(%a: tensor<2x6x5x4xi32>, %k: tensor<3x2x2x6xi32>, %h: tensor<4x3x5x5xf16>, %hk: tensor<6x3x2x3xf16>, %f: tensor<1x9x3xf32>, %fk: tensor<3x3x4xf32>) ->
    (tensor<2x1x11x6xi32>, tensor<2x6x2x2xf16>, tensor<1x5x4xf32>) {
  %c0 = stablehlo.convolution(%a, %k) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [2, 1], pad = [[1, -1], [2, 1]], lhs_dilate = [1, 2], rhs_dilate = [2, 1], reverse = [true, false]} {batch_group_count = 1 : i64, feature_group_count = 2 : i64} : (tensor<2x6x5x4xi32>, tensor<3x2x2x6xi32>) -> tensor<2x1x11x6xi32>
  %c1 = "stablehlo.convolution"(%h, %hk) {batch_group_count = 2 : i64, dimension_numbers = #stablehlo.conv<[b, f, 0, 1]x[o, i, 0, 1]->[b, f, 0, 1]>, feature_group_count = 1 : i64, lhs_dilation = array<i64: 1, 1>, padding = dense<[[0, 0], [1, 0]]> : tensor<2x2xi64>, rhs_dilation = array<i64: 1, 1>, window_reversal = array<i1: false, true>, window_strides = array<i64: 2, 2>} : (tensor<4x3x5x5xf16>, tensor<6x3x2x3xf16>) -> tensor<2x6x2x2xf16>
  %c2 = stablehlo.convolution(%f, %fk) dim_numbers = [b, 0, f]x[0, i, o]->[b, 0, f], window = {stride = [2], pad = [[1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<1x9x3xf32>, tensor<3x3x4xf32>) -> tensor<1x5x4xf32>
  return %c0, %c1, %c2 : tensor<2x1x11x6xi32>, tensor<2x6x2x2xf16>, tensor<1x5x4xf32>
}
`

// TestDifferentialConvolution compares the lowered convolution with the
// interpreter on seeded random inputs.
func TestDifferentialConvolution(t *testing.T) {
	m, exe := compileText(t, convProgram)
	for seed := uint64(0); seed < 6; seed++ {
		args := stablehlo.RandomArgs(m.Main(), seed)
		got, want := runBoth(t, exe, m, args)
		assertSame(t, fmt.Sprint("seed ", seed), got, want, 0, 1)
		assertClose(t, got[2:], want[2:], 1e-5)
	}
}

const halfDotProgram = `func.func @main(%a: tensor<2x3x4x5xbf16>, %b: tensor<2x5x4x6xbf16>, %c: tensor<7x3xf16>, %d: tensor<3x2xf16>, %t: tensor<3x8xf16>) ->
    (tensor<2x3x6xbf16>, tensor<7x2xf32>, tensor<3x3xf16>, tensor<3x3xi32>) {
  %0 = stablehlo.dot_general %a, %b, batching_dims = [0] x [0], contracting_dims = [2, 3] x [2, 1] : (tensor<2x3x4x5xbf16>, tensor<2x5x4x6xbf16>) -> tensor<2x3x6xbf16>
  %1 = stablehlo.dot_general %c, %d, contracting_dims = [1] x [0] : (tensor<7x3xf16>, tensor<3x2xf16>) -> tensor<7x2xf32>
  %v, %i = chlo.top_k(%t, k = 3) : tensor<3x8xf16> -> (tensor<3x3xf16>, tensor<3x3xi32>)
  return %0, %1, %v, %i : tensor<2x3x6xbf16>, tensor<7x2xf32>, tensor<3x3xf16>, tensor<3x3xi32>
}
`

// TestDifferentialHalfDotTopK compares dot_general and top_k on 16-bit
// floats (products of 16-bit values are exact in f32, so sums in the same
// order agree bit for bit) with the interpreter; top_k's input has ties
// and a NaN.
func TestDifferentialHalfDotTopK(t *testing.T) {
	m, exe := compileText(t, halfDotProgram)
	for seed := uint64(0); seed < 6; seed++ {
		args := stablehlo.RandomArgs(m.Main(), seed)
		tk := args[4].Data
		tk[0], tk[1] = 0x00, 0x7E // NaN first in row 0
		copy(tk[4:6], tk[2:4])    // a tie
		got, want := runBoth(t, exe, m, args)
		assertSame(t, fmt.Sprint("seed ", seed), got, want)
	}
}

const triRngProgram = `func.func @main(%a: tensor<2x4x4xf64>, %b: tensor<2x4x3xf64>, %c: tensor<2x3x4xf64>, %h: tensor<4x4xf16>, %hb: tensor<4x2xf16>, %s: tensor<2xui64>) ->
    (tensor<2x4x3xf64>, tensor<2x4x3xf64>, tensor<2x3x4xf64>, tensor<2x3x4xf64>, tensor<4x2xf16>, tensor<2xui64>, tensor<5x3xui64>) {
  %0 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x4x4xf64>, tensor<2x4x3xf64>) -> tensor<2x4x3xf64>
  %1 = "stablehlo.triangular_solve"(%a, %b) <{left_side = true, lower = false, transpose_a = #stablehlo<transpose TRANSPOSE>, unit_diagonal = true}> : (tensor<2x4x4xf64>, tensor<2x4x3xf64>) -> tensor<2x4x3xf64>
  %2 = "stablehlo.triangular_solve"(%a, %c) <{left_side = false, lower = true, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = false}> : (tensor<2x4x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %3 = "stablehlo.triangular_solve"(%a, %c) <{left_side = false, lower = false, transpose_a = #stablehlo<transpose ADJOINT>, unit_diagonal = false}> : (tensor<2x4x4xf64>, tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
  %4 = "stablehlo.triangular_solve"(%h, %hb) <{left_side = true, lower = false, transpose_a = #stablehlo<transpose NO_TRANSPOSE>, unit_diagonal = true}> : (tensor<4x4xf16>, tensor<4x2xf16>) -> tensor<4x2xf16>
  %n, %r = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<5x3xui64>)
  return %0, %1, %2, %3, %4, %n, %r : tensor<2x4x3xf64>, tensor<2x4x3xf64>, tensor<2x3x4xf64>, tensor<2x3x4xf64>, tensor<4x2xf16>, tensor<2xui64>, tensor<5x3xui64>
}
`

// TestDifferentialTriSolveRng compares triangular_solve (every side,
// triangle, transpose and diagonal option; within a tolerance, since the
// C compiler may fuse multiply-adds) and rng_bit_generator (bit for bit,
// with a counter that wraps) with the interpreter.
func TestDifferentialTriSolveRng(t *testing.T) {
	m, exe := compileText(t, triRngProgram)
	for seed := uint64(0); seed < 4; seed++ {
		args := stablehlo.RandomArgs(m.Main(), seed)
		a := args[0].Float64s()
		for bt := 0; bt < 2; bt++ {
			for i := 0; i < 4; i++ {
				a[bt*16+i*5] = 2 + float64(i) // a well-conditioned diagonal
			}
		}
		args[5].Uint64s()[0] = 0x0123456789abcdef
		args[5].Uint64s()[1] = ^uint64(0) - 7 // the counter wraps around
		got, want := runBoth(t, exe, m, args)
		assertClose(t, got[:5], want[:5], 2e-3)
		assertSame(t, fmt.Sprint("seed ", seed), got, want, 5, 6)
	}
}

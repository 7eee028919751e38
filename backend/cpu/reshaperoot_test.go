package cpu

import (
	"context"
	"testing"

	"strings"

	"github.com/xlacache/xlacache/stablehlo"
)

// reshapeRootPrograms end in a reshape that is its kernel's root, which
// genLoop runs over the operand's shape (kernels.go): dims merged after a
// transpose (the embedding's attention output), dims split, a reshape
// that neither merges nor splits (6x4 -> 4x6), dims of size 1, to a
// scalar, an empty tensor, 16-bit floats and booleans, and one of
// parMinElements elements whose loop splits over threads.
var reshapeRootPrograms = map[string]string{
	"merge_transposed": `func.func @main(%a: tensor<8x4x32x32xf32>) -> tensor<256x128xf32> {
  %0 = stablehlo.transpose %a, dims = [0, 2, 1, 3] : (tensor<8x4x32x32xf32>) -> tensor<8x32x4x32xf32>
  %1 = stablehlo.reshape %0 : (tensor<8x32x4x32xf32>) -> tensor<256x128xf32>
  return %1 : tensor<256x128xf32>
}`,
	"split": `func.func @main(%a: tensor<24x10xf64>) -> tensor<2x3x4x5x2xf64> {
  %0 = stablehlo.transpose %a, dims = [1, 0] : (tensor<24x10xf64>) -> tensor<10x24xf64>
  %1 = stablehlo.reshape %0 : (tensor<10x24xf64>) -> tensor<2x3x4x5x2xf64>
  return %1 : tensor<2x3x4x5x2xf64>
}`,
	"regroup": `func.func @main(%a: tensor<4x6xi32>) -> tensor<6x4xi32> {
  %0 = stablehlo.negate %a : tensor<4x6xi32>
  %1 = stablehlo.reshape %0 : (tensor<4x6xi32>) -> tensor<6x4xi32>
  return %1 : tensor<6x4xi32>
}`,
	"unit_dims": `func.func @main(%a: tensor<1x7x1x3xf32>) -> tensor<3x1x7xf32> {
  %0 = stablehlo.exponential %a : tensor<1x7x1x3xf32>
  %1 = stablehlo.reshape %0 : (tensor<1x7x1x3xf32>) -> tensor<3x1x7xf32>
  return %1 : tensor<3x1x7xf32>
}`,
	"to_scalar": `func.func @main(%a: tensor<1x1xf32>) -> tensor<f32> {
  %0 = stablehlo.abs %a : tensor<1x1xf32>
  %1 = stablehlo.reshape %0 : (tensor<1x1xf32>) -> tensor<f32>
  return %1 : tensor<f32>
}`,
	"empty": `func.func @main(%a: tensor<3x0x5xf32>) -> tensor<0x15xf32> {
  %0 = stablehlo.negate %a : tensor<3x0x5xf32>
  %1 = stablehlo.reshape %0 : (tensor<3x0x5xf32>) -> tensor<0x15xf32>
  return %1 : tensor<0x15xf32>
}`,
	"half": `func.func @main(%a: tensor<6x10xbf16>, %b: tensor<6x10xf16>) -> (tensor<60xbf16>, tensor<3x20xf16>) {
  %0 = stablehlo.multiply %a, %a : tensor<6x10xbf16>
  %1 = stablehlo.reshape %0 : (tensor<6x10xbf16>) -> tensor<60xbf16>
  %2 = stablehlo.add %b, %b : tensor<6x10xf16>
  %3 = stablehlo.reshape %2 : (tensor<6x10xf16>) -> tensor<3x20xf16>
  return %1, %3 : tensor<60xbf16>, tensor<3x20xf16>
}`,
	"bool": `func.func @main(%a: tensor<5x6xf32>, %b: tensor<5x6xf32>) -> tensor<30xi1> {
  %0 = stablehlo.compare GT, %a, %b : (tensor<5x6xf32>, tensor<5x6xf32>) -> tensor<5x6xi1>
  %1 = stablehlo.reshape %0 : (tensor<5x6xi1>) -> tensor<30xi1>
  return %1 : tensor<30xi1>
}`,
	"big_parallel": `func.func @main(%a: tensor<16x64x130xf32>) -> tensor<1024x130xf32> {
  %0 = stablehlo.transpose %a, dims = [1, 0, 2] : (tensor<16x64x130xf32>) -> tensor<64x16x130xf32>
  %1 = stablehlo.reshape %0 : (tensor<64x16x130xf32>) -> tensor<1024x130xf32>
  return %1 : tensor<1024x130xf32>
}`,
}

// TestReshapeRootMatchesInterpreter compiles reshapeRootPrograms untuned
// on 1, 2 and 3 threads and requires the interpreter's outputs bit for
// bit (moving elements rounds nothing; the exponential is the prelude's,
// which matches it too).
func TestReshapeRootMatchesInterpreter(t *testing.T) {
	untunedOnThreads(t, reshapeRootPrograms, 11, func(t *testing.T, exe *Executable, args, want []*stablehlo.Tensor) {
		got, err := exe.Run(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		assertSame(t, "", got, want)
	})
}

// TestReshapeRootLoopsOverOperand checks that a root reshape's kernel
// reads its operand with plain loop indices: no division or remainder
// left in the generated C of the embedding's transpose + reshape (a
// parallel one's part bounds divide), and a parallel default for a big
// one.
func TestReshapeRootLoopsOverOperand(t *testing.T) {
	for _, c := range []struct {
		name    string
		threads int
		par     bool
	}{{"merge_transposed", 1, false}, {"big_parallel", 2, true}} {
		l := lowerText(t, reshapeRootPrograms[c.name], c.name+".mlir")
		for _, op := range l.roots {
			k, err := newKernel(l, op, c.threads)
			if err != nil {
				t.Fatal(err)
			}
			if k.parallel(k.cands[0]) != c.par {
				t.Errorf("%s: default %s, parallel want %v", c.name, k.cands[0], c.par)
			}
			src, err := k.body(k.cands[0], "k")
			if err != nil {
				t.Fatal(err)
			}
			if body := src[strings.Index(src, "void k"):]; !c.par && strings.ContainsAny(body, "/%") {
				t.Errorf("%s: kernel divides its indices:\n%s", c.name, body)
			}
		}
	}
}

// TestReshapeCopyStep: a reshape of a buffer (an argument, a reduction's
// result) is a copy step of the plan, with no kernel, and a reshape
// computed from fused ops stays a kernel; every output matches the
// interpreter's, also after the plan's round trip through its encoding.
func TestReshapeCopyStep(t *testing.T) {
	programs := map[string]struct {
		src    string
		copies int
	}{
		"argument": {`func.func @main(%a: tensor<6x4xf32>) -> tensor<3x8xf32> {
  %0 = stablehlo.reshape %a : (tensor<6x4xf32>) -> tensor<3x8xf32>
  return %0 : tensor<3x8xf32>
}`, 1},
		"reduced": {`func.func @main(%a: tensor<4x6x5xf64>) -> (tensor<2x12xf64>, tensor<24xi1>) {
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [2] : (tensor<4x6x5xf64>, tensor<f64>) -> tensor<4x6xf64>
  %1 = stablehlo.reshape %0 : (tensor<4x6xf64>) -> tensor<2x12xf64>
  %2 = stablehlo.compare GT, %0, %0 : (tensor<4x6xf64>, tensor<4x6xf64>) -> tensor<4x6xi1>
  %3 = stablehlo.reshape %2 : (tensor<4x6xi1>) -> tensor<24xi1>
  return %1, %3 : tensor<2x12xf64>, tensor<24xi1>
}`, 1},
		"fused": {reshapeRootPrograms["regroup"], 0},
	}
	for name, tc := range programs {
		t.Run(name, func(t *testing.T) {
			m, exe := compileTextWith(t, tc.src, untuned())
			copies := 0
			for _, s := range exe.Plan().Steps {
				if s.Op == stepCopy {
					copies++
				}
			}
			if copies != tc.copies {
				t.Errorf("%d copy steps, want %d: %+v", copies, tc.copies, exe.Plan().Steps)
			}
			for _, k := range exe.Kernels() {
				if k.Copy() != strings.HasPrefix(k.Desc, "reshape") || (k.Copy() && tc.copies == 0) {
					t.Errorf("kernel %s (%s): copy step %v", k.Desc, k.Name, k.Copy())
				}
			}
			args := randomArgs(m, 7)
			want, err := stablehlo.Eval(m, "", args)
			if err != nil {
				t.Fatal(err)
			}
			if err := checkRun(exe, args, want); err != nil {
				t.Fatal(err)
			}
			if err := checkRun(roundTrip(t, exe), args, want); err != nil {
				t.Fatalf("after the round trip: %v", err)
			}
		})
	}
}

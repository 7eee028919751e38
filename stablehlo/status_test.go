package stablehlo

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestUnsupportedStatus checks that valid StableHLO outside the supported
// subset is reported as unsupported with its reason, never as a failure.
func TestUnsupportedStatus(t *testing.T) {
	const dot = `module @jit_main {
  func.func public @main() -> (tensor<2x2xf32>) {
    %a = stablehlo.constant dense<1.0> : tensor<2x2xf32>
    %0 = DOT
    return %0 : tensor<2x2xf32>
  }
}
`
	const algo = `lhs_precision_type = tf32, rhs_precision_type = tf32, accumulation_type = f32, lhs_component_count = 1, rhs_component_count = 1, num_primitive_operations = 1, allow_imprecise_accumulation = false`
	cases := []struct {
		name, src, reason string
	}{
		// Complex types parse now (TestComplexStatus); an f8 type is
		// still outside the subset and must be named whole.
		{"f8 type", `func.func @main() -> tensor<3x4xf8E4M3FN> {
  %0 = stablehlo.constant dense<1.0> : tensor<3x4xf8E4M3FN>
  return %0 : tensor<3x4xf8E4M3FN>
}`, "tensor<3x4xf8E4M3FN>: element type f8E4M3FN is not supported"},
		{"token argument", `func.func @main(%t: !stablehlo.token) -> !stablehlo.token {
  return %t : !stablehlo.token
}`, "type !stablehlo.token is not supported"},
		{"token result", `func.func @main() -> tensor<f32> {
  %0 = stablehlo.create_token : !stablehlo.token
  %c = stablehlo.constant dense<1.0> : tensor<f32>
  return %c : tensor<f32>
}`, "unknown op stablehlo.create_token"},
		{"quantized element", `func.func @main(%a: tensor<2x!quant.uniform<i8:f32, 1.0>>) -> tensor<2xf32> {
  %c = stablehlo.constant dense<1.0> : tensor<2xf32>
  return %c : tensor<2xf32>
}`, "element type !quant.uniform<i8:f32, 1.0> is not supported"},
		{"dot algorithm pretty", strings.Replace(dot, "DOT", `stablehlo.dot_general %a, %a, contracting_dims = [1] x [0], algorithm = <`+algo+`> : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>`, 1),
			"dot_general algorithm attribute is not supported"},
		{"dot algorithm generic", strings.Replace(dot, "DOT", `"stablehlo.dot_general"(%a, %a) <{algorithm = #stablehlo.dot_algorithm<`+algo+`>, dot_dimension_numbers = #stablehlo.dot<lhs_contracting_dimensions = [1], rhs_contracting_dimensions = [0]>}> : (tensor<2x2xf32>, tensor<2x2xf32>) -> tensor<2x2xf32>`, 1),
			"dot_general algorithm attribute is not supported"},
		{"no main", `module @m {
  func.func private @helper() -> tensor<f32> {
    %c = stablehlo.constant dense<1.0> : tensor<f32>
    return %c : tensor<f32>
  }
}`, "no @main function"},
	}
	dir := t.TempDir()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "_")+".mlir")
			if err := os.WriteFile(path, []byte(c.src), 0o600); err != nil {
				t.Fatal(err)
			}
			r := RunOne(context.Background(), path, InterpRunner)
			if r.Status != "unsupported" || !strings.Contains(r.Detail, c.reason) {
				t.Fatalf("got %s (%s), want unsupported naming %q", r.Status, r.Detail, c.reason)
			}
		})
	}
}

// TestTensorTypeErrors checks that type errors name the whole type and that
// malformed types stay errors (not "unsupported").
func TestTensorTypeErrors(t *testing.T) {
	for _, c := range []struct {
		inner       string
		unsupported bool
		msg         string
	}{
		{"3x4xf8E4M3FN", true, "element type f8E4M3FN is not supported"},
		{"f8E5M2", true, "element type f8E5M2 is not supported"},
		{"2xcomplex<i32>", true, "element type complex<i32> is not supported"},
		{"2xi4", true, "element type i4 is not supported"},
		{"?x3xf32", true, "dynamic shapes are not supported"},
		{"3xf32, #enc", true, "tensor encodings are not supported"},
		{"3x", false, "bad element type"},
		{"-1xf32", false, "bad element type"},
	} {
		_, err := parseTensorInner(c.inner)
		if err == nil || !strings.Contains(err.Error(), c.msg) || isUnsupported(err) != c.unsupported {
			t.Errorf("tensor<%s>: got %v (unsupported %v), want %q (unsupported %v)", c.inner, err, isUnsupported(err), c.msg, c.unsupported)
		}
	}
	for inner, want := range map[string]TensorType{
		"2x0x3xui16":         {DType: UI16, Shape: []int64{2, 0, 3}},
		"3x4xcomplex<f64>":   {DType: C128, Shape: []int64{3, 4}},
		"complex<f32>":       {DType: C64, Shape: []int64{}},
		"2x complex< f32 > ": {DType: C64, Shape: []int64{2}},
	} {
		ty, err := parseTensorInner(inner)
		if err != nil || !ty.Equal(want) {
			t.Errorf("tensor<%s>: %v %v, want %v", inner, ty, err, want)
		}
	}
}

// TestComplexStatus checks that programs on complex numbers, once
// reported unsupported, now run and pass.
func TestComplexStatus(t *testing.T) {
	src := `func.func @main() -> tensor<2xf32> {
  %0 = stablehlo.constant dense<[(1.0,2.0), (3.0,-4.0)]> : tensor<2xcomplex<f32>>
  %1 = stablehlo.real %0 : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  %2 = stablehlo.abs %0 : (tensor<2xcomplex<f32>>) -> tensor<2xf32>
  %3 = stablehlo.add %1, %2 : tensor<2xf32>
  %4 = stablehlo.constant dense<[3.23606801, 8.0]> : tensor<2xf32>
  stablehlo.custom_call @check.expect_close(%3, %4) {has_side_effect = true} : (tensor<2xf32>, tensor<2xf32>) -> ()
  return %3 : tensor<2xf32>
}`
	path := filepath.Join(t.TempDir(), "complex.mlir")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if r := RunOne(context.Background(), path, InterpRunner); r.Status != "pass" {
		t.Fatalf("got %s (%s), want pass", r.Status, r.Detail)
	}
}

func isUnsupported(err error) bool {
	return errors.Is(err, ErrUnsupported)
}

// TestExpectEqNaN: check.expect_eq treats a NaN result as matching a NaN
// expectation (the "got 0x7FC00000, want 0x7FC00000"), but still
// tells NaN from a number.
func TestExpectEqNaN(t *testing.T) {
	nan := math.Float32frombits(0x7FC00000)
	got, _ := FromFloat32s([]int64{3}, []float32{nan, 1, float32(math.Copysign(0, -1))})
	want, _ := FromFloat32s([]int64{3}, []float32{nan, 1, 0})
	if err := Check(CheckSpec{Target: "check.expect_eq"}, got, want); err != nil {
		t.Fatalf("identical NaNs (and -0 == +0): %v", err)
	}
	want.Float32s()[0] = 2
	if err := Check(CheckSpec{Target: "check.expect_eq"}, got, want); err == nil || err.Index[0] != 0 {
		t.Fatalf("NaN vs 2 must fail at index 0, got %v", err)
	}
	if err := Check(CheckSpec{Target: "check.expect_eq"}, want, got); err == nil {
		t.Fatal("2 vs NaN must fail")
	}
	g64, _ := FromFloat64s([]int64{1}, []float64{math.NaN()})
	w64, _ := FromFloat64s([]int64{1}, []float64{math.Float64frombits(0x7FF8000000000000)})
	if err := Check(CheckSpec{Target: "check.expect_eq"}, g64, w64); err != nil {
		t.Fatalf("f64 NaNs: %v", err)
	}
}

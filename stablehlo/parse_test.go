package stablehlo

import (
	"errors"
	"strings"
	"testing"
)

const addProgram = `module @m {
  func.func public @main(%a: tensor<2xf32>, %b: tensor<2xf32>) -> tensor<2xf32> {
    %0 = stablehlo.add %a, %b : tensor<2xf32>
    return %0 : tensor<2xf32>
  }
}
`

func TestParseErrors(t *testing.T) {
	cases := []struct {
		name, src, want string
		unsupported     bool
	}{
		{"unknown op", strings.Replace(addProgram, "stablehlo.add", "stablehlo.foo", 1), "f.mlir:3:10: unknown op stablehlo.foo", true},
		{"unknown generic op", strings.Replace(addProgram, "stablehlo.add %a, %b : tensor<2xf32>", `"stablehlo.all_to_all"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>`, 1), "f.mlir:3:10: unknown op stablehlo.all_to_all", true},
		{"unknown value", strings.Replace(addProgram, "%a, %b", "%a, %c", 1), "f.mlir:3:28: unknown value %c", false},
		{"truncated", addProgram[:len(addProgram)-30], "f.mlir:", false},
		{"unbalanced brace", strings.Replace(addProgram, "  }\n}", "  }\n", 1), "module is not closed", false},
		{"bad number", strings.Replace(addProgram, "%0 = stablehlo.add %a, %b : tensor<2xf32>", "%0 = stablehlo.constant dense<[1.0, 2.0.0]> : tensor<2xf32>", 1), "f.mlir:3:", false},
		{"type mismatch", strings.Replace(addProgram, "%b: tensor<2xf32>", "%b: tensor<3xf32>", 1), "value %b has type tensor<3xf32> but the op declares tensor<2xf32>", false},
		{"result type mismatch", strings.Replace(addProgram, "-> tensor<2xf32> {", "-> tensor<2xi32> {", 1), "value %0 has type tensor<2xf32> but tensor<2xi32> is declared", false},
		{"operand types differ", strings.Replace(strings.Replace(addProgram, "%b: tensor<2xf32>", "%b: tensor<2xi32>", 1), "stablehlo.add %a, %b : tensor<2xf32>", "stablehlo.add %a, %b : (tensor<2xf32>, tensor<2xi32>) -> tensor<2xf32>", 1), "operands %a (tensor<2xf32>) and %b (tensor<2xi32>) must have the same type", false},
		{"redefinition", strings.Replace(addProgram, "%0 = stablehlo.add", "%a = stablehlo.add", 1), "redefinition of value %a", false},
		{"dynamic shape", strings.Replace(addProgram, "%a: tensor<2xf32>", "%a: tensor<?xf32>", 1), "dynamic shapes are not supported", true},
		{"bad element type", strings.Replace(addProgram, "%a: tensor<2xf32>", "%a: tensor<2xf8E4M3FN>", 1), "element type f8E4M3FN is not supported", true},
		{"unterminated string", `module { func.func @main() -> () { "stablehlo.add`, "unterminated string", false},
		{"unknown callee", strings.Replace(addProgram, "%0 = stablehlo.add %a, %b : tensor<2xf32>", "%0 = call @nope(%a) : (tensor<2xf32>) -> tensor<2xf32>", 1), "call to unknown function @nope", false},
		{"bad broadcast", strings.Replace(addProgram, "%0 = stablehlo.add %a, %b : tensor<2xf32>", "%0 = stablehlo.broadcast_in_dim %a, dims = [1] : (tensor<2xf32>) -> tensor<2xf32>", 1), "bad broadcast dimension 1", false},
		{"bad dense", strings.Replace(addProgram, "%0 = stablehlo.add %a, %b : tensor<2xf32>", "%0 = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<2xf32>", 1), "does not match tensor<2xf32>", false},
		{"empty", "", "no functions", false},
		{"garbage", "module { func.func @main() -> () { } } }}}", "f.mlir:", false},
		{"missing return", "module {\n func.func @main() -> () {\n }\n}", "f.mlir:2:2: function @main: body is empty", false},
		{"recursion", "module {\n func.func @main() -> tensor<f32> {\n  %0 = call @main() : () -> tensor<f32>\n  return %0 : tensor<f32>\n }\n}", "recursive call", false},
		{"bad custom call", strings.Replace(addProgram, "%0 = stablehlo.add %a, %b : tensor<2xf32>", "stablehlo.custom_call @foo(%a) : (tensor<2xf32>) -> ()\n    %0 = stablehlo.add %a, %b : tensor<2xf32>", 1), `custom_call target "foo"`, true},
		{"huge tensor", strings.Replace(addProgram, "%a: tensor<2xf32>", "%a: tensor<99999999999x99999999999xf32>", 1), "more than", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.src), "f.mlir")
			if err == nil {
				t.Fatalf("no error for:\n%s", c.src)
			}
			if !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %q does not contain %q", err, c.want)
			}
			if got := errors.Is(err, ErrUnsupported); got != c.unsupported {
				t.Fatalf("errors.Is(ErrUnsupported) = %v for %q", got, err)
			}
		})
	}
}

func TestParseForms(t *testing.T) {
	src := `#loc1 = loc("x.py":1:2)
module @jit_f attributes {mhlo.num_partitions = 1 : i32, mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32> {mhlo.layout_mode = "default"} loc("a")) -> (tensor<3xf32> {jax.result_info = "", mhlo.layout_mode = "default"}, tensor<2xi32>) {
    %cst = stablehlo.constant dense<0.000000e+00> : tensor<f32> loc(#loc1)
    %0 = stablehlo.reduce(%arg0 init: %cst) applies stablehlo.add across dimensions = [0] : (tensor<2x3xf32>, tensor<f32>) -> tensor<3xf32>
    %1:2 = call @pair() : () -> (tensor<2xi32>, tensor<2xi32>)
    %2 = "stablehlo.add"(%1#0, %1#1) : (tensor<2xi32>, tensor<2xi32>) -> tensor<2xi32> loc(fused["a", "b"])
    %c = stablehlo.constant dense<"0x0100000002000000"> : tensor<2xi32>
    %3 = stablehlo.multiply %2, %c : tensor<2xi32>
    return %0, %3 : tensor<3xf32>, tensor<2xi32>
  }
  func.func private @pair() -> (tensor<2xi32>, tensor<2xi32>) {
    %c = stablehlo.constant dense<[1, -2]> : tensor<2xi32>
    %d = stablehlo.iota dim = 0 : tensor<2xi32>
    stablehlo.return %c, %d : tensor<2xi32>, tensor<2xi32>
  }
}
`
	m, err := Parse([]byte(src), "forms.mlir")
	if err != nil {
		t.Fatal(err)
	}
	if m.Name != "jit_f" || m.Attrs["mhlo.num_replicas"] != "1 : i32" || len(m.Funcs) != 2 || m.Funcs[1].Public {
		t.Fatalf("module header parsed wrong: %+v", m)
	}
	if m.Funcs[0].ArgAttrs[0]["mhlo.layout_mode"] != `"default"` {
		t.Fatalf("arg attrs: %v", m.Funcs[0].ArgAttrs)
	}
	x, _ := FromFloat32s([]int64{2, 3}, []float32{1, 2, 3, 4, 5, 6})
	res, err := Eval(m, "main", []*Tensor{x})
	if err != nil {
		t.Fatal(err)
	}
	if got := res[0].Float32s(); got[0] != 5 || got[1] != 7 || got[2] != 9 {
		t.Fatalf("reduce: %v", got)
	}
	// (1+0)*1, (-2+1)*2
	if got := res[1].Int32s(); got[0] != 1 || got[1] != -2 {
		t.Fatalf("call/multi-result/hex: %v", got)
	}
}

func TestParseTensorLiteral(t *testing.T) {
	cases := []struct {
		src  string
		want string
	}{
		{"dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>", `dense<"0x01000000020000000300000004000000"> : tensor<2x2xi32>`},
		{"dense<1.5> : tensor<3xf32>", "dense<1.5e+00> : tensor<3xf32>"},
		{"dense<0x7FC00000> : tensor<f32>", "dense<0x7FC00000> : tensor<f32>"},
		{"dense<[[true, false]]> : tensor<1x2xi1>", `dense<[[true, false]]> : tensor<1x2xi1>`},
		{`dense<"0x0100"> : tensor<2xi1>`, `dense<[true, false]> : tensor<2xi1>`},
		{"dense<> : tensor<0xf32>", "dense<> : tensor<0xf32>"},
		{"dense<255> : tensor<ui8>", "dense<255> : tensor<ui8>"},
	}
	for _, c := range cases {
		tt, err := ParseTensorLiteral(c.src)
		if err != nil {
			t.Fatalf("%s: %v", c.src, err)
		}
		if got := tt.String(); got != c.want {
			t.Errorf("%s: got %s, want %s", c.src, got, c.want)
		}
		back, err := ParseTensorLiteral(tt.String())
		if err != nil || !back.Equal(tt) {
			t.Errorf("%s: round trip failed: %v", c.src, err)
		}
	}
	for _, bad := range []string{"dense<256> : tensor<ui8>", "dense<[1, 2]> : tensor<3xi32>", "dense<1.5> : tensor<i32>", "dense<[[1], [2, 3]]> : tensor<2x2xi32>", "dense<\"0x01\"> : tensor<2xi32>", "dense<1>"} {
		if _, err := ParseTensorLiteral(bad); err == nil {
			t.Errorf("%s: no error", bad)
		}
	}
}

// Errors quote a bounded amount of the input, however long the bad text.
func TestParseErrorIsBounded(t *testing.T) {
	inner := strings.Repeat("tensor<", 20000) + "f32" + strings.Repeat(">", 20000)
	src := "func.func @main(%a: tensor<" + inner + ">) {\n  return\n}\n"
	_, err := Parse([]byte(src), "big.mlir")
	if err == nil {
		t.Fatal("nested tensor types were accepted")
	}
	if n := len(err.Error()); n > 1000 {
		t.Fatalf("error message is %d bytes long", n)
	}
}

package stablehlo

import (
	"strings"
	"testing"
)

func TestControlFlow(t *testing.T) {
	runOpCases(t, []opCase{
		// Sum 0..9 with a pretty while; the body reads %ten from outside.
		{"while pretty", `  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %ten = stablehlo.constant dense<10> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %w:2 = stablehlo.while(%i = %i0, %s = %i0) : tensor<i32>, tensor<i32>
   cond {
    %c = stablehlo.compare LT, %i, %ten, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %n = stablehlo.add %i, %one : tensor<i32>
    %t = stablehlo.add %s, %i : tensor<i32>
    stablehlo.return %n, %t : tensor<i32>, tensor<i32>
  }
  %r = stablehlo.add %w#1, %w#0 : tensor<i32>`, "tensor<i32>", "dense<55>"},
		{"while generic zero trips", `  %x = stablehlo.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %r = "stablehlo.while"(%x) ({
  ^bb0(%a: tensor<2xf32>):
    %f = stablehlo.constant dense<false> : tensor<i1>
    stablehlo.return %f : tensor<i1>
  }, {
  ^bb0(%a: tensor<2xf32>):
    %d = stablehlo.add %a, %a : tensor<2xf32>
    stablehlo.return %d : tensor<2xf32>
  }) : (tensor<2xf32>) -> tensor<2xf32>`, "tensor<2xf32>", "dense<[1.0, 2.0]>"},
		{"if true", ifProgram("true"), "tensor<i64>", "dense<1>"},
		{"if false", ifProgram("false"), "tensor<i64>", "dense<3>"},
		// §case: an index outside [0, N) runs the last branch.
		{"case in range", caseProgram("1"), "tensor<f32>", "dense<20.0>"},
		{"case negative", caseProgram("-1"), "tensor<f32>", "dense<30.0>"},
		{"case too large", caseProgram("7"), "tensor<f32>", "dense<30.0>"},
	})
}

// ifProgram returns 1 when pred is true, else 1 + 2.
func ifProgram(pred string) string {
	return `  %p = stablehlo.constant dense<` + pred + `> : tensor<i1>
  %a = stablehlo.constant dense<1> : tensor<i64>
  %b = stablehlo.constant dense<2> : tensor<i64>
  %r = "stablehlo.if"(%p) ({
    stablehlo.return %a : tensor<i64>
  }, {
    %s = stablehlo.add %a, %b : tensor<i64>
    stablehlo.return %s : tensor<i64>
  }) : (tensor<i1>) -> tensor<i64>`
}

func caseProgram(index string) string {
	return `  %k = stablehlo.constant dense<` + index + `> : tensor<i32>
  %r = "stablehlo.case"(%k) ({
    %c = stablehlo.constant dense<10.0> : tensor<f32>
    stablehlo.return %c : tensor<f32>
  }, {
    %c = stablehlo.constant dense<20.0> : tensor<f32>
    stablehlo.return %c : tensor<f32>
  }, {
    %c = stablehlo.constant dense<30.0> : tensor<f32>
    stablehlo.return %c : tensor<f32>
  }) : (tensor<i32>) -> tensor<f32>`
}

// TestControlFlowInline checks that Inline keeps a while whose body calls
// a function and reads an outer value, and that it evaluates alike.
func TestControlFlowInline(t *testing.T) {
	src := `func.func private @inc(%x: tensor<i32>) -> tensor<i32> {
  %one = stablehlo.constant dense<1> : tensor<i32>
  %y = stablehlo.add %x, %one : tensor<i32>
  return %y : tensor<i32>
}
func.func @main() -> tensor<i32> {
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %lim = stablehlo.constant dense<5> : tensor<i32>
  %w = stablehlo.while(%i = %i0) : tensor<i32>
   cond {
    %c = stablehlo.compare LT, %i, %lim : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %n = func.call @inc(%i) : (tensor<i32>) -> tensor<i32>
    stablehlo.return %n : tensor<i32>
  }
  return %w : tensor<i32>
}`
	m, err := Parse([]byte(src), "w.mlir")
	if err != nil {
		t.Fatal(err)
	}
	flat, err := Inline(m)
	if err != nil {
		t.Fatal(err)
	}
	for _, mod := range []*Module{m, flat} {
		out, err := Eval(mod, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := out[0].Int64At(0); got != 5 {
			t.Errorf("while result %d, want 5", got)
		}
	}
	if strings.Contains(string(Canonical(flat)), "func.call") {
		t.Error("call left inside the while body after Inline")
	}
}

func TestControlFlowErrors(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`%r = "stablehlo.if"(%s) ({
    stablehlo.return %s : tensor<i32>
  }, {
    stablehlo.return %s : tensor<i32>
  }) : (tensor<i32>) -> tensor<i32>`, "predicate %s must be tensor<i1>"},
		{`%p = stablehlo.constant dense<true> : tensor<i1>
  %r = "stablehlo.if"(%p) ({
    stablehlo.return %s : tensor<i32>
  }, {
    stablehlo.return %p : tensor<i1>
  }) : (tensor<i1>) -> tensor<i32>`, "if branch 1 result #0"},
		{`%r = stablehlo.while(%i = %s) : tensor<i32>
   cond {
    stablehlo.return %i : tensor<i32>
  } do {
    stablehlo.return %i : tensor<i32>
  }`, "while cond result #0"},
		{`%r = "stablehlo.case"(%s) : (tensor<i32>) -> tensor<i32>`, "needs at least one branch"},
		{`%r = stablehlo.add %s, %s : tensor<i32>
  %q = "stablehlo.reduce"(%r, %s) ({
  ^bb0(%a: tensor<i32>, %b: tensor<i32>):
    %x = stablehlo.add %a, %r : tensor<i32>
    stablehlo.return %x : tensor<i32>
  }) {dimensions = array<i64>} : (tensor<i32>, tensor<i32>) -> tensor<i32>`, "isolated from above"},
	} {
		src := "func.func @main(%s: tensor<i32>) -> tensor<i32> {\n  " + c.body + "\n  return %s : tensor<i32>\n}"
		_, err := Parse([]byte(src), "e.mlir")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want %q", err, c.want)
		}
	}
}

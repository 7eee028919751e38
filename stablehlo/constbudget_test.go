package stablehlo

import (
	"strings"
	"testing"
)

// A module of many splat constants, each small as text and each within the
// per-literal bound, must be refused by its total before it is expanded:
// otherwise parsing alone ends the process in Go's fatal out-of-memory.
func TestModuleConstantBudget(t *testing.T) {
	savedMax, savedFrom := maxModuleConstantBytes, constantCheckFrom
	maxModuleConstantBytes, constantCheckFrom = 1<<20, 0
	defer func() { maxModuleConstantBytes, constantCheckFrom = savedMax, savedFrom }()

	var b strings.Builder
	b.WriteString("func.func @main() -> tensor<65536xf64> {\n")
	for i := range 4 {
		b.WriteString("  %c" + string(rune('0'+i)) + " = stablehlo.constant dense<1.0> : tensor<65536xf64>\n")
	}
	b.WriteString("  return %c0 : tensor<65536xf64>\n}\n")
	_, err := Parse([]byte(b.String()), "consts.mlir")
	if err == nil {
		t.Fatal("4 constants of 512 KiB parsed under a 1 MiB module bound")
	}
	for _, want := range []string{"consts.mlir", "tensor<65536xf64>", "module's constants"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %q", err, want)
		}
	}
	// Two of them fit.
	ok := "func.func @main() -> tensor<65536xf64> {\n  %a = stablehlo.constant dense<1.0> : tensor<65536xf64>\n  %b = stablehlo.constant dense<2.0> : tensor<65536xf64>\n  %c = stablehlo.add %a, %b : tensor<65536xf64>\n  return %c : tensor<65536xf64>\n}\n"
	if _, err := Parse([]byte(ok), "ok.mlir"); err != nil {
		t.Fatalf("a module within the bound: %v", err)
	}
}

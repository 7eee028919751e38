package stablehlo

import (
	"strings"
	"testing"
)

const canonPretty = `module @jit_f attributes {mhlo.num_replicas = 1 : i32} {
  func.func public @main(%arg0: tensor<2x3xf32>, %arg1: tensor<3xf32>) -> (tensor<2x3xi1> {jax.result_info = "out"}) {
    %cst = stablehlo.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
    %0 = stablehlo.add %arg1, %cst : tensor<3xf32>
    %1 = stablehlo.broadcast_in_dim %0, dims = [1] : (tensor<3xf32>) -> tensor<2x3xf32>
    %2 = stablehlo.compare  GT, %arg0, %1,  FLOAT : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    return %2 : tensor<2x3xi1>
  }
}
`

// canonGeneric is canonPretty in generic form with other SSA names,
// locations, comments, a different module name and result_info, and the
// compare type left to its default.
const canonGeneric = `// a comment
#loc = loc("f.py":3:1)
module @other attributes {mhlo.num_replicas = 1 : i32} {
  func.func @main(%x: tensor<2x3xf32> loc(#loc), %y: tensor<3xf32>) -> (tensor<2x3xi1> {jax.result_info = "renamed"}) {
    %c = "stablehlo.constant"() {value = dense<[1.000000e+00, 2.0, 3.0]> : tensor<3xf32>} : () -> tensor<3xf32> loc(#loc)
    %s = "stablehlo.add"(%y, %c) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %b = "stablehlo.broadcast_in_dim"(%s) {broadcast_dimensions = array<i64: 1>} : (tensor<3xf32>) -> tensor<2x3xf32>
    %r = "stablehlo.compare"(%x, %b) {comparison_direction = #stablehlo<comparison_direction GT>} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
    "stablehlo.return"(%r) : (tensor<2x3xi1>) -> ()
  }
}
`

func fingerprintOf(t *testing.T, src string) [32]byte {
	t.Helper()
	m, err := Parse([]byte(src), "canon.mlir")
	if err != nil {
		t.Fatalf("parse: %v\n%s", err, src)
	}
	return Fingerprint(m)
}

func TestCanonicalSameProgram(t *testing.T) {
	base := fingerprintOf(t, canonPretty)
	same := map[string]string{
		"generic form, renamed, locations": canonGeneric,
		"reformatted":                      strings.ReplaceAll(strings.ReplaceAll(canonPretty, "    ", "\t  "), ", ", " ,  "),
		"renamed values":                   strings.ReplaceAll(strings.ReplaceAll(canonPretty, "%arg0", "%input"), "%cst", "%k"),
		"locations":                        strings.ReplaceAll(canonPretty, "tensor<3xf32>\n    %1", "tensor<3xf32> loc(\"x.py\":1:1)\n    %1"),
		"result_info":                      strings.Replace(canonPretty, `jax.result_info = "out"`, `jax.result_info = "[0]"`, 1),
		"hex constant":                     strings.Replace(canonPretty, "dense<[1.0, 2.0, 3.0]>", `dense<"0x0000803F0000004000004040">`, 1),
	}
	for name, src := range same {
		if got := fingerprintOf(t, src); got != base {
			a, _ := Parse([]byte(canonPretty), "a")
			b, _ := Parse([]byte(src), "b")
			t.Errorf("%s: fingerprint differs\n%s\nvs\n%s", name, Canonical(a), Canonical(b))
		}
	}
}

func TestCanonicalDifferentProgram(t *testing.T) {
	base := fingerprintOf(t, canonPretty)
	diff := map[string][2]string{
		"constant":      {"dense<[1.0, 2.0, 3.0]>", "dense<[1.0, 2.0, 3.5]>"},
		"shape":         {"tensor<2x3xf32>, %arg1", "tensor<2x3xf32>, %arg1"}, // replaced below
		"attribute":     {"GT, %arg0", "GE, %arg0"},
		"compare type":  {"FLOAT :", "TOTALORDER :"},
		"op":            {"stablehlo.add %arg1", "stablehlo.subtract %arg1"},
		"operand order": {"stablehlo.add %arg1, %cst", "stablehlo.add %cst, %arg1"},
		"module attr":   {"mhlo.num_replicas = 1", "mhlo.num_replicas = 2"},
		"visibility":    {"func.func public @main", "func.func private @main"},
		"layout attr":   {`{jax.result_info = "out"}`, `{jax.result_info = "out", mhlo.layout_mode = "default"}`},
		"func attr":     {`"out"}) {`, `"out"}) attributes {xla.flag = 1 : i32} {`},
	}
	for name, r := range diff {
		src := strings.Replace(canonPretty, r[0], r[1], 1)
		if name == "shape" {
			// Broadcast into 4x3 instead of 2x3 (all types follow).
			src = strings.ReplaceAll(canonPretty, "2x3x", "4x3x")
		}
		if src == canonPretty {
			t.Fatalf("%s: replacement did not apply", name)
		}
		if got := fingerprintOf(t, src); got == base {
			t.Errorf("%s: fingerprint unchanged", name)
		}
	}
	// -0.0 and +0.0 are different constants.
	z1 := strings.Replace(canonPretty, "dense<[1.0, 2.0, 3.0]>", "dense<0.0>", 1)
	z2 := strings.Replace(canonPretty, "dense<[1.0, 2.0, 3.0]>", "dense<-0.0>", 1)
	if fingerprintOf(t, z1) == fingerprintOf(t, z2) {
		t.Error("+0 and -0 constants share a fingerprint")
	}
}

func TestCanonicalIsStableAndParses(t *testing.T) {
	m, err := Parse([]byte(canonPretty), "a.mlir")
	if err != nil {
		t.Fatal(err)
	}
	c := checkCanonicalStable(t, m)
	if strings.Contains(string(c), "loc(") || strings.Contains(string(c), "jit_f") || strings.Contains(string(c), "result_info") {
		t.Fatalf("canonical form keeps debug info:\n%s", c)
	}
}

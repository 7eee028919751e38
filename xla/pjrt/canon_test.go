package pjrt

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// mapEntry encodes one map<string,string> entry as field num.
func mapEntry(num protowire.Number, k, v string) []byte {
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.BytesType)
	e = protowire.AppendString(e, k)
	e = protowire.AppendTag(e, 2, protowire.BytesType)
	e = protowire.AppendString(e, v)
	out := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(out, e)
}

func message(num protowire.Number, fields ...[]byte) []byte {
	out := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(out, bytes.Join(fields, nil))
}

func varint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func TestCanonicalOptions(t *testing.T) {
	debug := func(entries ...[]byte) []byte {
		return message(fieldCompileBuildOptions, varint(4, 1),
			message(fieldBuildDebugOptions, append([][]byte{varint(100, 1)}, entries...)...))
	}
	a1, a2 := mapEntry(fieldDebugLatencyEstimator, "rtt_us", "-1"), mapEntry(fieldDebugLatencyEstimator, "chunk_size_bytes", "-1")
	x1 := mapEntry(fieldCompileEnvOverrides, "a", "1")
	x2 := mapEntry(fieldCompileEnvOverrides, "b", "2")
	for _, tc := range []struct {
		name  string
		a, b  []byte
		equal bool
	}{
		{"debug map order", debug(a1, a2), debug(a2, a1), true},
		{"env overrides order", bytes.Join([][]byte{x1, varint(5, 1), x2}, nil), bytes.Join([][]byte{x2, varint(5, 1), x1}, nil), true},
		{"debug map value", debug(a1, a2), debug(a1, mapEntry(fieldDebugLatencyEstimator, "chunk_size_bytes", "7")), false},
		{"other field", debug(a1), bytes.Join([][]byte{debug(a1), varint(5, 1)}, nil), false},
		{"repeated non-map field order kept", bytes.Join([][]byte{varint(2, 1), varint(2, 2)}, nil), bytes.Join([][]byte{varint(2, 2), varint(2, 1)}, nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca, err := canonicalOptions(tc.a)
			if err != nil {
				t.Fatal(err)
			}
			cb, err := canonicalOptions(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Equal(ca, cb); got != tc.equal {
				t.Errorf("canonical forms equal: %v, want %v", got, tc.equal)
			}
		})
	}
	if _, err := canonicalOptions([]byte{0x1a, 0x05, 0x00}); err == nil {
		t.Error("truncated options accepted")
	}
}

// The compile options JAX 0.11.2 (with the lammps-jax-pjrt-cpu plugin,
// through the wrapper) sent for one program from two processes, as the
// helper received them: their bytes differ only in map order.
func TestCanonicalOptionsJAXProcesses(t *testing.T) {
	a, err := os.ReadFile("testdata/jax-0.11.2-options-a.pb")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/jax-0.11.2-options-b.pb")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Fatal("the fixtures are identical: nothing to canonicalize")
	}
	ca, err := canonicalOptions(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := canonicalOptions(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca, cb) {
		t.Error("one program's options from two JAX processes give two keys")
	}
}

func TestProgramKey(t *testing.T) {
	const base = `module @m {
  func.func @main(%arg0: tensor<f32>, %w: tensor<f32>) -> tensor<f32> {
    %0 = "stablehlo.subtract"(%arg0, %w) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    return %0 : tensor<f32>
  }
}`
	for _, tc := range []struct {
		name  string
		other string
		same  bool
	}{
		{"identical", base, true},
		{"parameter renamed", strings.ReplaceAll(base, "%w", "%var_uuid_1234"), true},
		{"all values renamed", strings.NewReplacer("%arg0", "%x", "%w", "%y", "%0", "%z.1").Replace(base), true},
		{"numbers renamed", strings.ReplaceAll(base, "%0", "%17"), true},
		{"parameters swapped", strings.Replace(base, "(%arg0: tensor<f32>, %w: tensor<f32>)", "(%w: tensor<f32>, %arg0: tensor<f32>)", 1), false},
		{"operands swapped", strings.Replace(base, "(%arg0, %w)", "(%w, %arg0)", 1), false},
		{"one name for two values", strings.ReplaceAll(base, "%w", "%arg0"), false},
		{"module renamed", strings.Replace(base, "@m", "@n", 1), false},
		{"other op", strings.Replace(base, "subtract", "add", 1), false},
		{"other type", strings.ReplaceAll(base, "f32", "f64"), false},
		{"string contents kept", strings.Replace(base, `"stablehlo.subtract"`, `"stablehlo.subtract%w"`, 1), false},
		{"result number kept", strings.Replace(base, "return %0", "return %0#1", 1), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := programKey("mlir", []byte(base)), programKey("mlir", []byte(tc.other))
			if bytes.Equal(a, b) != tc.same {
				t.Errorf("same key %v, want %v\n%s\n%s", bytes.Equal(a, b), tc.same, a, b)
			}
		})
	}
	// A string literal or comment is copied as it is, names in it untouched.
	if got := string(renameSSA([]byte(`%a = "x%a\"%b" // %c` + "\n%c"))); got != `%0 = "x%a\"%b" // %c`+"\n%1" {
		t.Errorf("renameSSA: %q", got)
	}
	// Bytecode and other formats are not rewritten, and never share a key
	// with text.
	bc := append([]byte(mlirBytecodeMagic), "%a"...)
	if got := programKey("mlir", bc); !bytes.HasSuffix(got, bc) {
		t.Errorf("bytecode rewritten: %q", got)
	}
	if bytes.Equal(programKey("mlir", []byte("%a")), programKey("hlo", []byte("%0"))) {
		t.Error("formats share a key")
	}
}

// TestProgramKeyGoMLXTrainer: GoMLX v0.26.0's training step of one MLP
// (examples/gomlx/testdata/trainbench, fixed seed) as two processes sent
// it to the helper: the texts differ in the names of the loss metrics'
// variables (a random UUID each), the key does not.
func TestProgramKeyGoMLXTrainer(t *testing.T) {
	a, err := os.ReadFile("testdata/gomlx-0.26.0-trainer-mlp-a.mlir")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/gomlx-0.26.0-trainer-mlp-b.mlir")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Fatal("the fixtures are identical: they no longer show the difference")
	}
	if !bytes.Equal(programKey("mlir", a), programKey("mlir", b)) {
		t.Error("the two processes' training steps have different keys")
	}
	// Swapping two parameters of one type changes the program: the key too.
	swapped := bytes.Replace(a, []byte("%var__fnn_hidden_layer_0_biases: tensor<256xf32>, %var__fnn_hidden_layer_1_weights: tensor<256x256xf32>, %var__fnn_hidden_layer_1_biases: tensor<256xf32>"),
		[]byte("%var__fnn_hidden_layer_1_biases: tensor<256xf32>, %var__fnn_hidden_layer_1_weights: tensor<256x256xf32>, %var__fnn_hidden_layer_0_biases: tensor<256xf32>"), 1)
	if bytes.Equal(swapped, a) {
		t.Fatal("fixture changed: parameters not found")
	}
	if bytes.Equal(programKey("mlir", a), programKey("mlir", swapped)) {
		t.Error("swapped parameters share the key")
	}
}

func BenchmarkProgramKeyGoMLXTrainer(b *testing.B) {
	src, err := os.ReadFile("testdata/gomlx-0.26.0-trainer-mlp-a.mlir")
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(src)))
	for b.Loop() {
		programKey("mlir", src)
	}
}

package pjrt

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestDeclaredSignature(t *testing.T) {
	for _, tc := range []struct {
		name, format, text, want string
	}{
		{"one result", "mlir", addText, "o=1;t=11;d=4"},
		{"public, two results with attributes", "mlir",
			`func.func public @main(%a: tensor<2x3xf32>) -> (tensor<2x3xf32> {jax.result_info = "a"}, tensor<i32>) {`,
			"o=2;t=11,4;d=2x3|"},
		{"unsigned and bf16", "mlir", `func.func @main(%a: tensor<2xui8>) -> (tensor<2xui8>, tensor<5x1xbf16>) {`, "o=2;t=6,13;d=2|5x1"},
		{"no results", "mlir", `func.func @main(%a: tensor<2xf32>) {`, "o=0;t=;d="},
		{"nested parentheses in arguments", "mlir", `func.func @main(%a: tensor<2xf32> {mhlo.sharding = "{replicated}"}, %b: tuple<tensor<1xf32>>) -> tensor<2xf32> {`, "o=1;t=11;d=2"},
		{"dynamic dimension", "mlir", `func.func @main(%a: tensor<?xf32>) -> tensor<?xf32> {`, ""},
		{"complex", "mlir", `func.func @main(%a: tensor<2xcomplex<f32>>) -> tensor<2xcomplex<f32>> {`, ""},
		{"tuple result", "mlir", `func.func @main(%a: tensor<2xf32>) -> tuple<tensor<2xf32>> {`, ""},
		{"no main", "mlir", `func.func @f(%a: tensor<2xf32>) -> tensor<2xf32> {`, ""},
		{"bytecode", "mlir", "ML\xefR\x00binary", ""},
		{"hlo", "hlo", addText, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := declaredSignature(Request{Format: tc.format, Program: []byte(tc.text)})
			if got != tc.want {
				t.Errorf("declaredSignature = %q, want %q", got, tc.want)
			}
		})
	}
}

// The examples' declarations must read as the wrapper reports their
// outputs, or no example entry could pass its probe (the real-plugin
// tests check the wrapper's side).
func TestDeclaredSignatureExamples(t *testing.T) {
	for name, want := range map[string]string{
		"mlp": "o=1;t=11;d=64x10", "cnn": "o=1;t=11;d=16x10",
		"transformer": "o=1;t=11;d=128x256", "embedding": "o=1;t=11;d=8x128",
	} {
		text, err := os.ReadFile(filepath.Join("..", "..", "examples", name, name+".mlir"))
		if err != nil {
			t.Fatal(err)
		}
		if got := declaredSignature(Request{Format: "mlir", Program: text}); got != want {
			t.Errorf("%s: %q, want %q", name, got, want)
		}
	}
}

func TestModuleName(t *testing.T) {
	for _, tc := range []struct{ format, text, want string }{
		{"mlir", addText, "add"},
		{"mlir", "module @jit_f.1 attributes {} {", "jit_f.1"},
		{"mlir", "func.func @main() {", "pjrt"},
		{"hlo", addText, "pjrt"},
	} {
		if got := moduleName(Request{Format: tc.format, Program: []byte(tc.text)}); got != tc.want {
			t.Errorf("moduleName(%q) = %q, want %q", tc.text, got, tc.want)
		}
	}
}

func TestDescribeCPU(t *testing.T) {
	dir := t.TempDir()
	info := filepath.Join(dir, "cpuinfo")
	os.WriteFile(info, []byte("processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 85\nmodel name\t: Xeon\nflags\t\t: fpu  avx2 avx512f\nbogomips\t: 4000\n\nprocessor\t: 1\nflags\t\t: other\n"), 0o644)
	got := describeCPU("amd64", info)
	want := "arch amd64\nvendor_id GenuineIntel\ncpu family 6\nmodel 85\nflags fpu avx2 avx512f\n"
	if got != want {
		t.Errorf("describeCPU:\n%s\nwant\n%s", got, want)
	}
	if got := describeCPU("arm64", filepath.Join(dir, "missing")); got != "arch arm64\n" {
		t.Errorf("without cpuinfo: %q", got)
	}
	if h := hostCPU(); !strings.HasPrefix(h, "arch ") {
		t.Errorf("hostCPU = %q", h)
	}
}

func TestPluginName(t *testing.T) {
	for path, want := range map[string]string{
		"/x/pjrt_c_api_cpu_plugin.so":  "cpu",
		"/x/pjrt_c_api_cuda_plugin.so": "cuda",
		"/x/pjrt-plugin-metal.so":      "metal",
		"/x/xla_cpu_pjrt.so":           "cpu",
		"/x/libtpu.so":                 "",
	} {
		if got := PluginName(path); got != want {
			t.Errorf("PluginName(%s) = %q, want %q", path, got, want)
		}
	}
}

func TestRequestRoundTrip(t *testing.T) {
	r := request("/p.so")
	got, err := parseRequest(encodeRequest(r))
	if err != nil || !reflect.DeepEqual(got, r) {
		t.Fatalf("round trip: %+v, %v", got, err)
	}
	if _, err := parseRequest(append(encodeRequest(r), 0)); err == nil {
		t.Error("trailing byte accepted")
	}
}

func TestDecodeEntry(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
		ok   bool
	}{
		{"good", entry{Signature: "o=1", Executable: []byte("x")}.encode(), true},
		{"short", []byte{0, 0}, false},
		{"signature beyond the end", []byte{0, 0, 1, 0, 'x'}, false},
		{"no executable", entry{Signature: "o=1"}.encode(), false},
	} {
		if _, err := decodeEntry(tc.data); (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestPluginHashMemo: a plugin's hash is kept on disk for the next
// process, and a memo is used only when it is this user's, writable by
// nobody else, and names the file as it is now.
func TestPluginHashMemo(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "plugin.so")
	if err := os.WriteFile(plugin, []byte("plugin one"), 0o755); err != nil {
		t.Fatal(err)
	}
	memo := filepath.Join(dir, "memo")
	real := func() string { h := sha256.Sum256(must(os.ReadFile(plugin))); return hex.EncodeToString(h[:]) }
	sum := func() string {
		t.Helper()
		f := &fileHashes{dir: memo}
		s, err := f.sum(plugin)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := sum(); got != real() {
		t.Fatalf("first hash %s, want %s", got, real())
	}
	st := must(os.Stat(plugin))
	name := (&fileHashes{dir: memo}).memoFile(plugin, fileID(st))
	if _, err := os.Stat(name); err != nil {
		t.Fatalf("no memo written: %v", err)
	}
	// A new process takes the memo as it is: shown by one that says
	// something else.
	forged := strings.Repeat("ab", sha256.Size)
	writeForged := func(perm os.FileMode) {
		t.Helper()
		data := fmt.Sprintf("%s\n%s\n%s\n%s\n", memoVersion, plugin, fileID(must(os.Stat(plugin))), forged)
		if err := os.WriteFile(name, []byte(data), perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(name, perm); err != nil {
			t.Fatal(err)
		}
	}
	writeForged(0o600)
	if got := sum(); got != forged {
		t.Fatalf("memo not used: %s", got)
	}
	for _, tc := range []struct {
		name  string
		setup func()
	}{
		{"writable by others", func() { writeForged(0o666) }},
		{"directory writable by others", func() { writeForged(0o600); os.Chmod(memo, 0o777) }},
		{"other owner", func() {
			writeForged(0o600)
			if os.Getuid() != 0 {
				t.Skip("chown needs root")
			}
			if err := os.Chown(name, os.Getuid()+1, -1); err != nil {
				t.Fatal(err)
			}
		}},
		{"other path inside", func() {
			os.WriteFile(name, []byte(fmt.Sprintf("%s\n%s\n%s\n%s\n", memoVersion, plugin+"x", fileID(must(os.Stat(plugin))), forged)), 0o600)
		}},
		{"bad hash", func() {
			os.WriteFile(name, []byte(fmt.Sprintf("%s\n%s\n%s\n%s\n", memoVersion, plugin, fileID(must(os.Stat(plugin))), "zz")), 0o600)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			os.Chmod(memo, 0o700)
			tc.setup()
			if got := sum(); got != real() {
				t.Errorf("got %s, want the file's hash %s", got, real())
			}
		})
	}
	// The plugin rewritten in place, same size and modification time: a
	// new change time, a new identity, a new hash (the forged memo of the
	// old identity is never read).
	os.Chmod(memo, 0o700)
	writeForged(0o600)
	mt := st.ModTime()
	if err := os.WriteFile(plugin, []byte("plugin two"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(plugin, mt, mt); err != nil {
		t.Fatal(err)
	}
	if got := sum(); got != real() || got == forged {
		t.Errorf("rewritten plugin: %s, want %s", got, real())
	}
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

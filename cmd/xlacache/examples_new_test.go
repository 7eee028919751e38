package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/examples/cnn"
	"github.com/xlacache/xlacache/examples/embedding"
	"github.com/xlacache/xlacache/npy"
	"github.com/xlacache/xlacache/stablehlo"
)

// TestCLIExamplesColdWarm runs the CNN and embedding examples through
// `xlacache run` the way the README shows: a cold run that compiles and
// stores the executable, a warm run that must hit it and give the same
// bits, and the reference interpreter on the same inputs, which the cpu
// results must match within float32 tolerance.
func TestCLIExamplesColdWarm(t *testing.T) {
	for _, ex := range []struct {
		name string
		src  []byte
	}{
		{"cnn", cnn.Source},
		{"embedding", embedding.Source},
	} {
		t.Run(ex.name, func(t *testing.T) {
			dir := t.TempDir()
			prog := filepath.Join(dir, ex.name+".mlir")
			if err := os.WriteFile(prog, ex.src, 0o600); err != nil {
				t.Fatal(err)
			}
			in := filepath.Join(dir, "in.npz")
			writeExampleInputs(t, ex.src, in)
			env := map[string]string{config.EnvDir: filepath.Join(dir, "cache"), config.EnvMinCompileTime: "0"}
			run := func(want string, extra ...string) {
				t.Helper()
				args := append([]string{"run", prog, "--inputs", in}, extra...)
				out, code := runAdminCLI(t, env, args...)
				if code != 0 || !strings.Contains(out, want) {
					t.Fatalf("xlacache %s: exit %d, want %q in\n%s", strings.Join(args, " "), code, want, out)
				}
			}
			run("executable miss", "--output", filepath.Join(dir, "cold.npz"))
			run("executable hit", "--output", filepath.Join(dir, "warm.npz"))
			run("backend interp", "--backend", "interp", "--output", filepath.Join(dir, "interp.npz"))

			cold := readOut(t, filepath.Join(dir, "cold.npz"))
			warm := readOut(t, filepath.Join(dir, "warm.npz"))
			want := readOut(t, filepath.Join(dir, "interp.npz"))
			if cold.DType != npy.Float32 || !bytes.Equal(cold.Data, warm.Data) {
				t.Fatalf("warm result differs from cold (dtype %s)", cold.DType)
			}
			closeF32(t, cold, want, 1e-4)
		})
	}
}

// writeExampleInputs writes main's arguments to path as an .npz named by
// argument: deterministic random weights (as `run --inputs random` makes
// them) and, for int32 arguments (token ids), ids spread over the whole
// embedding table, a few out of range so that gather's clamping is run.
func writeExampleInputs(t *testing.T, src []byte, path string) {
	t.Helper()
	m, err := stablehlo.Parse(src, "example")
	if err != nil {
		t.Fatal(err)
	}
	fn := m.Main()
	args := stablehlo.RandomArgs(fn, 1)
	rng := rand.New(rand.NewPCG(3, 5))
	var named []npy.Named
	for i, a := range fn.Args {
		if a.Type.DType == stablehlo.I32 {
			ids := args[i].Int32s()
			for j := range ids {
				ids[j] = rng.Int32N(embedding.Vocab)
			}
			ids[0], ids[1], ids[2] = -5, embedding.Vocab, embedding.Vocab+100
		}
		arr, err := npy.FromTensor(args[i])
		if err != nil {
			t.Fatal(err)
		}
		named = append(named, npy.Named{Name: a.Name, Array: arr})
	}
	if err := npy.WriteNPZFile(path, named); err != nil {
		t.Fatal(err)
	}
}

// readOut reads the single output array of an .npz written by run.
func readOut(t *testing.T, path string) *npy.Array {
	t.Helper()
	a, err := npy.ReadNPZFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(a) != 1 || a[0].Name != "out0" {
		t.Fatalf("%s: %d arrays, want out0 alone", path, len(a))
	}
	return a[0].Array
}

// closeF32 compares float32 arrays with a mixed absolute/relative
// tolerance: the cpu backend and the interpreter accumulate in different
// orders.
func closeF32(t *testing.T, got, want *npy.Array, tol float64) {
	t.Helper()
	if got.DType != want.DType || len(got.Data) != len(want.Data) || len(got.Data)%4 != 0 {
		t.Fatalf("got %s %v, want %s %v", got.DType, got.Shape, want.DType, want.Shape)
	}
	bad := 0
	for i := 0; i < len(got.Data); i += 4 {
		a := float64(math.Float32frombits(binary.LittleEndian.Uint32(got.Data[i:])))
		b := float64(math.Float32frombits(binary.LittleEndian.Uint32(want.Data[i:])))
		if math.IsNaN(a) || math.IsNaN(b) || math.Abs(a-b) > tol*math.Max(1, math.Abs(b)) {
			if bad < 5 {
				t.Errorf("element %d: cpu %v, interpreter %v", i/4, a, b)
			}
			bad++
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d elements differ", bad, len(got.Data)/4)
	}
}

package cpu

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/examples/embedding"
	"github.com/xlacache/xlacache/stablehlo"
)

func loadModule(t testing.TB, path string) *stablehlo.Module {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stablehlo.Parse(src, filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	if err := stablehlo.Verify(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// randomArgs makes deterministic inputs for main's arguments, scaled so
// activations stay in tanh's and softmax's interesting range.
func randomArgs(m *stablehlo.Module, seed uint64) []*stablehlo.Tensor {
	rng := rand.New(rand.NewPCG(seed, 7))
	var args []*stablehlo.Tensor
	for _, a := range m.Main().Args {
		t := stablehlo.NewTensor(a.Type)
		fillRandom(t.Data, a.Type.DType, rng)
		if a.Type.DType == stablehlo.F32 && a.Type.Rank() == 2 {
			scale := float32(1 / math.Sqrt(float64(a.Type.Shape[0])))
			for i, v := range t.Float32s() {
				t.Float32s()[i] = v * scale * 2
			}
		}
		args = append(args, t)
	}
	return args
}

// assertClose compares float outputs with a mixed absolute/relative
// tolerance suited to float32 accumulation order differences.
func assertClose(t *testing.T, got, want []*stablehlo.Tensor, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d outputs, want %d", len(got), len(want))
	}
	for i := range got {
		if !got[i].Type.Equal(want[i].Type) {
			t.Fatalf("output %d: type %s, want %s", i, got[i].Type, want[i].Type)
		}
		n := got[i].Type.NumElements()
		bad := 0
		for j := int64(0); j < n; j++ {
			a, b := got[i].Float64At(j), want[i].Float64At(j)
			if math.IsNaN(a) && math.IsNaN(b) {
				continue
			}
			if math.Abs(a-b) > tol*math.Max(1, math.Abs(b)) {
				if bad < 5 {
					t.Errorf("output %d element %d: got %v, want %v", i, j, a, b)
				}
				bad++
			}
		}
		if bad > 0 {
			t.Errorf("output %d: %d of %d elements differ", i, bad, n)
		}
	}
}

// exampleFiles are the generated example programs (examples/gen).
var exampleFiles = []string{
	"../../examples/mlp/mlp.mlir",
	"../../examples/transformer/transformer.mlir",
	"../../examples/cnn/cnn.mlir",
	"../../examples/embedding/embedding.mlir",
}

// tokenIDs replaces every int32 argument of main (the embedding example's
// token ids) with ids spread over the whole table: randomArgs' integers
// lie in [-8, 8], which would read only its first rows. A few ids are out
// of range on purpose: gather clamps them into the table (spec: gather,
// "clamp"), and the cpu backend must clamp them the same way.
func tokenIDs(m *stablehlo.Module, args []*stablehlo.Tensor, seed uint64) {
	vocab := int32(embedding.Vocab)
	rng := rand.New(rand.NewPCG(seed, 11))
	for i, a := range m.Main().Args {
		if a.Type.DType != stablehlo.I32 {
			continue
		}
		ids := args[i].Int32s()
		for j := range ids {
			ids[j] = rng.Int32N(vocab)
		}
		for j, id := range []int32{-1, -1000, vocab, vocab + 7, vocab - 1, 0} {
			if j < len(ids) {
				ids[j] = id
			}
		}
	}
}

// TestExamplesMatchInterpreter compiles the examples in their default
// configurations, except the CNN, which is autotuned (on a short timing
// budget: which candidate wins does not matter here) so that every
// convolution and pooling candidate runs on a real model's shapes: one
// that disagrees with the default fails the test binary (TestMain).
// Tuning all four compiled every candidate of every kernel and took four
// fifths of this test's time; the tuning machinery itself is tested in
// autotune_test.go and tiers_test.go.
func TestExamplesMatchInterpreter(t *testing.T) {
	for _, ex := range exampleFiles {
		t.Run(filepath.Base(ex), func(t *testing.T) {
			m := loadModule(t, ex)
			b := New()
			b.TuneBudget = 10e6
			b.NoTune = filepath.Base(ex) != "cnn.mlir"
			exe, err := b.CompileModule(context.Background(), m, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Close()
			args := randomArgs(m, 1)
			tokenIDs(m, args, 1)
			got, want := runBoth(t, exe, m, args)
			assertClose(t, got, want, 1e-4)
			for _, k := range exe.Kernels() {
				t.Logf("%s %s: %s (tuned %v)", k.Name, k.Desc, k.Config, k.Tuned)
			}
		})
	}
}

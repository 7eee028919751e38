package pjrt

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// EnvBench turns on TestRealBenchmark (minutes of compiling).
const EnvBench = "XLACACHE_PJRT_BENCH"

// TestRealBenchmark measures, for each example and each real plugin, the
// time to a runnable program in a new process: the plain plugin's compile
// against the wrapper's hit, both from process start (ready) and for the
// compile call alone, and how much of a hit is the inner deserialize.
// Every hit must load without an inner compile and compute the plain
// plugin's outputs. Run with XLACACHE_PJRT_BENCH=1 -v.
func TestRealBenchmark(t *testing.T) {
	if os.Getenv(EnvBench) == "" {
		t.Skip("set " + EnvBench + "=1 to run the benchmark")
	}
	examples := []string{"mlp", "cnn", "embedding", "transformer"}
	var table strings.Builder
	fmt.Fprintf(&table, "\n| plugin | example | plain compile ms | plain ready ms | hit compile ms | of it deserialize ms | hit ready ms | compile ratio | ready ratio |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for name, inner := range realPlugins(t) {
		sock := serve(t, &Server{Cache: openCache(t, t.TempDir())})
		h := wrapped(t, inner, sock)
		for _, ex := range examples {
			prog := filepath.Join("..", "..", "examples", ex, ex+".mlir")
			plain := host{inner: inner}.run(t, prog)
			cold := h.run(t, prog)
			expect(t, ex+" cold", cold, 1, 0, 0, 1)
			hit := h.run(t, prog)
			expect(t, ex+" hit", hit, 0, 1, 0, 0)
			p, w := plain.Results[0], hit.Results[0]
			if p.Outputs != w.Outputs {
				t.Errorf("%s %s: hit outputs %s, plain %s", name, ex, w.Outputs, p.Outputs)
			}
			deser := float64(hit.Counters[4]) / 1e6
			fmt.Fprintf(&table, "| %s | %s | %.0f | %.0f | %.1f | %.1f | %.0f | %.0fx | %.1fx |\n",
				name, ex, p.CompileMS, p.ReadyMS, w.CompileMS, deser, w.ReadyMS, p.CompileMS/w.CompileMS, p.ReadyMS/w.ReadyMS)
		}
	}
	t.Log(table.String())
}

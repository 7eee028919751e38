package pjrt

import (
	"fmt"
	"log/slog"
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
// plugin's outputs. A second table breaks each hit's overhead beyond the
// inner deserialize down from the helper's "served" line. Run with
// XLACACHE_PJRT_BENCH=1 -v.
func TestRealBenchmark(t *testing.T) {
	if os.Getenv(EnvBench) == "" {
		t.Skip("set " + EnvBench + "=1 to run the benchmark")
	}
	examples := []string{"mlp", "cnn", "embedding", "transformer"}
	var table, parts strings.Builder
	fmt.Fprintf(&table, "\n| plugin | example | plain compile ms | plain ready ms | hit compile ms | of it deserialize ms | hit ready ms | compile ratio | ready ratio |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	fmt.Fprintf(&parts, "\n| plugin | example | program KB | hit compile ms | deserialize ms | overhead ms | request ms | key ms | lookup ms | decode ms | rest ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for name, inner := range realPlugins(t) {
		log := &servedLog{}
		sock := serve(t, &Server{Cache: openCache(t, t.TempDir()), Logger: slog.New(log)})
		h := wrapped(t, inner, sock)
		for _, ex := range examples {
			prog := filepath.Join("..", "..", "examples", ex, ex+".mlir")
			plain := host{inner: inner}.run(t, prog)
			cold := h.run(t, prog)
			expect(t, ex+" cold", cold, 1, 0, 0, 1)
			log.take()
			hit := h.run(t, prog)
			expect(t, ex+" hit", hit, 0, 1, 0, 0)
			served := log.take()
			p, w := plain.Results[0], hit.Results[0]
			if p.Outputs != w.Outputs {
				t.Errorf("%s %s: hit outputs %s, plain %s", name, ex, w.Outputs, p.Outputs)
			}
			deser := float64(hit.Counters[4]) / 1e6
			fmt.Fprintf(&table, "| %s | %s | %.0f | %.0f | %.1f | %.1f | %.0f | %.0fx | %.1fx |\n",
				name, ex, p.CompileMS, p.ReadyMS, w.CompileMS, deser, w.ReadyMS, p.CompileMS/w.CompileMS, p.ReadyMS/w.ReadyMS)
			if len(served) != 1 {
				t.Errorf("%s %s: %d served lines for one hit", name, ex, len(served))
				continue
			}
			l := served[0]
			f := func(k string) float64 { v, _ := l[k].(float64); return v }
			// The rest: the wrapper building its request, the probe, the
			// socket and the hand-overs between the two processes.
			over, decode := w.CompileMS-deser, f("load_ms")-f("wrapper_ms")
			fmt.Fprintf(&parts, "| %s | %s | %.0f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f |\n",
				name, ex, float64(l["program_bytes"].(int64))/1024, w.CompileMS, deser, over,
				f("request_ms"), f("key_ms"), f("lookup_ms"), decode,
				over-f("request_ms")-f("key_ms")-f("lookup_ms")-decode)
		}
	}
	t.Log(table.String())
	t.Log(parts.String())
}

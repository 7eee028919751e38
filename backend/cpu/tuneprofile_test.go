package cpu

import (
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
)

// BenchmarkTuneProfile compiles each example named in XLACACHE_TUNEPROF
// (comma-separated) cold, with tuning, into a fresh cache, logging the
// autotuner's debug lines to stderr (candidate builds, timing, and per
// kernel its candidates, timing time and choice) and the compile's phases.
// It is how the autotune phase's cost is found; run it with -benchtime=1x
// -v, pinned (taskset) and with XLACACHE_CPU_THREADS as compilerbench
// does. Without the variable it skips: each compile builds and times
// every candidate.
func BenchmarkTuneProfile(b *testing.B) {
	v := os.Getenv("XLACACHE_TUNEPROF")
	if v == "" {
		b.Skip("set XLACACHE_TUNEPROF=transformer4l,... to profile tuned cold compiles")
	}
	for _, ex := range strings.Split(v, ",") {
		opts := config.Defaults()
		opts.Dir = b.TempDir()
		c := openCache(b, opts, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug})))
		text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
		if err != nil {
			b.Fatal(err)
		}
		t0 := time.Now()
		r, exe := compileIn(b, c, New(), ex, string(text))
		cold := time.Since(t0)
		exe.Close()
		c.Close()
		var ph []string
		for _, p := range r.PhaseTotals() {
			ph = append(ph, p.Name+"="+p.Duration.Round(time.Millisecond).String())
		}
		b.Logf("%s: cold %v phases %s", ex, cold.Round(time.Millisecond), strings.Join(ph, " "))
	}
}

package cpu

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
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
		ctx := context.Background()
		opts := config.Defaults()
		opts.Dir = b.TempDir()
		opts.MinCompileTime = 0
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c, err := cache.Open(ctx, opts, log)
		if err != nil {
			b.Fatal(err)
		}
		text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
		if err != nil {
			b.Fatal(err)
		}
		be := New()
		t0 := time.Now()
		_, r, err := cache.Compile(ctx, c, be, cache.Program{Name: ex, Text: text})
		if err != nil {
			b.Fatal(err)
		}
		var ph []string
		for _, p := range r.PhaseTotals() {
			ph = append(ph, p.Name+"="+p.Duration.Round(time.Millisecond).String())
		}
		b.Logf("%s: cold %v phases %s", ex, time.Since(t0).Round(time.Millisecond), strings.Join(ph, " "))
	}
}

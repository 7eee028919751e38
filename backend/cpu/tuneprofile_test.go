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

// TestTuneProfile compiles each example named in XLACACHE_TUNEPROF (comma-
// separated) cold, with tuning, into a fresh cache, logging the autotuner's
// debug lines (per kernel: candidates and timing took) to stderr.
func TestTuneProfile(t *testing.T) {
	v := os.Getenv("XLACACHE_TUNEPROF")
	if v == "" {
		t.Skip("set XLACACHE_TUNEPROF=transformer4l,... to profile tuned cold compiles")
	}
	for _, ex := range strings.Split(v, ",") {
		ctx := context.Background()
		opts := config.Defaults()
		opts.Dir = t.TempDir()
		opts.MinCompileTime = 0
		log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c, err := cache.Open(ctx, opts, log)
		if err != nil {
			t.Fatal(err)
		}
		text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
		if err != nil {
			t.Fatal(err)
		}
		be := New()
		t0 := time.Now()
		_, r, err := cache.Compile(ctx, c, be, cache.Program{Name: ex, Text: text})
		if err != nil {
			t.Fatal(err)
		}
		var ph []string
		for _, p := range r.PhaseTotals() {
			ph = append(ph, p.Name+"="+p.Duration.Round(time.Millisecond).String())
		}
		t.Logf("%s: cold %v phases %s", ex, time.Since(t0).Round(time.Millisecond), strings.Join(ph, " "))
	}
}

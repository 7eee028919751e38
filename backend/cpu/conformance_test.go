package cpu

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/stablehlo"
)

// conformanceDir finds the shared StableHLO test programs.
func conformanceDir(t testing.TB) string {
	if d := os.Getenv("XLACACHE_CONFORMANCE_DIR"); d != "" {
		return d
	}
	d, err := filepath.Abs("../../../shared/conformance/stablehlo-testdata")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(d); err != nil {
		t.Fatalf("conformance programs not found at %s (set XLACACHE_CONFORMANCE_DIR): %v", d, err)
	}
	return d
}

// testCache opens a cache in a fresh directory with every subcache on.
func testCache(t testing.TB, dir string) *cache.Cache {
	opts := config.Defaults()
	opts.Dir = dir
	opts.MinCompileTime = 0
	c, err := cache.Open(context.Background(), opts, slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestConformance(t *testing.T) {
	dir := conformanceDir(t)
	c := testCache(t, t.TempDir())
	var out bytes.Buffer
	passed, failed, skipped, err := stablehlo.RunConformance(context.Background(), dir, ConformanceRunner(c), &out)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "pass ") && line != "" {
			t.Log(line)
		}
	}
	t.Logf("%d passed, %d failed, %d skipped", passed, failed, skipped)
	if failed > 0 || skipped > 0 || passed != 128 {
		t.Errorf("conformance through cpu: %d passed, %d failed, %d skipped", passed, failed, skipped)
	}
}

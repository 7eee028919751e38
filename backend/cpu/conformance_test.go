package cpu

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/testneed"
	"github.com/xlacache/xlacache/stablehlo"
)

// conformanceDir finds the shared StableHLO test programs.
func conformanceDir(t testing.TB) string {
	return sharedConformanceDir(t, "XLACACHE_CONFORMANCE_DIR", "stablehlo-testdata")
}

// extConformanceDir finds the development set stablehlo-ext (read in
// place, never copied into the repository).
func extConformanceDir(t testing.TB) string {
	return sharedConformanceDir(t, "XLACACHE_CONFORMANCE_EXT_DIR", "stablehlo-ext")
}

func sharedConformanceDir(t testing.TB, env, name string) string {
	t.Helper()
	return testneed.SharedData(t, env, "conformance/"+name)
}

// testCache opens a cache in a fresh directory with every subcache on.
func testCache(t testing.TB, dir string) *cache.Cache {
	opts := config.Defaults()
	opts.Dir = dir
	c := openCache(t, opts, slog.New(disagreeWatch{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})}))
	t.Cleanup(func() { c.Close() })
	return c
}

// runConformanceParallel runs every program of dir through the cpu
// backend, GOMAXPROCS files at a time (compiling C dominates), all sharing
// the cache c so identical kernels are compiled once. Results are in file
// order.
func runConformanceParallel(t *testing.T, dir string, c *cache.Cache) []stablehlo.ConformanceResult {
	files, err := stablehlo.ConformanceFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("no .mlir files in %s", dir)
	}
	res := make([]stablehlo.ConformanceResult, len(files))
	next := make(chan int)
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			run := ConformanceRunner(c)
			for i := range next {
				res[i] = stablehlo.RunOne(context.Background(), files[i], run)
			}
		}()
	}
	for i := range files {
		next <- i
	}
	close(next)
	wg.Wait()
	return res
}

// tally counts results and logs every line that is not a pass.
func tally(t *testing.T, res []stablehlo.ConformanceResult) (passed, failed, skipped int) {
	for _, r := range res {
		switch r.Status {
		case "pass":
			passed++
		case "unsupported":
			skipped++
			t.Logf("unsupported %s: %s", r.File, r.Detail)
		default:
			failed++
			t.Logf("fail %s: %s", r.File, r.Detail)
		}
	}
	return passed, failed, skipped
}

// TestConformance and TestConformanceExt share one cache (sharedCache):
// kernels the sets have in common compile once, and each program still
// goes through the whole pipeline (the executables tier is per program).
func TestConformance(t *testing.T) {
	dir := conformanceDir(t)
	c := sharedCache(t)
	passed, failed, skipped := tally(t, runConformanceParallel(t, dir, c))
	t.Logf("%d passed, %d failed, %d skipped", passed, failed, skipped)
	if failed > 0 || skipped > 0 || passed != 128 {
		t.Errorf("conformance through cpu: %d passed, %d failed, %d skipped", passed, failed, skipped)
	}
}

// extPassCPU is the number of stablehlo-ext programs: the cpu backend
// passes every one of them (the last six, JAX's threefry PRNG loops, since
// while/if/case became control steps of the plan).
const extPassCPU = 226

// TestConformanceExt runs the development set stablehlo-ext through the
// cpu backend: no program may fail (a wrong result, an error that is not
// "unsupported", a crash) or be unsupported, and all extPassCPU must
// pass. Every program the backend passes must pass on the interpreter too.
func TestConformanceExt(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles every program of stablehlo-ext")
	}
	dir := extConformanceDir(t)
	res := runConformanceParallel(t, dir, sharedCache(t))
	passed, failed, skipped := tally(t, res)
	for _, r := range res {
		if r.Status == "pass" {
			if ir := stablehlo.RunOne(context.Background(), filepath.Join(dir, r.File), stablehlo.InterpRunner); ir.Status != "pass" {
				t.Errorf("%s passes on cpu but is %s on interp: %s", r.File, ir.Status, ir.Detail)
			}
		}
	}
	t.Logf("stablehlo-ext on cpu: %d passed, %d failed, %d unsupported", passed, failed, skipped)
	if failed > 0 || skipped > 0 || passed != extPassCPU {
		t.Errorf("stablehlo-ext on cpu: %d passed (want %d), %d failed, %d unsupported", passed, extPassCPU, failed, skipped)
	}
}

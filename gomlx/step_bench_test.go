package gomlx_test

import (
	stdctx "context"
	"os"
	"testing"

	"github.com/xlacache/xlacache/examples/gomlx/trainmodel"
	"github.com/xlacache/xlacache/gomlx"
)

// BenchmarkTrainModelStep times one of trainmodel's training steps (the
// compilerbench gomlx-* programs) on the xlacache backend, the first step
// (compiles) excluded; profile it with -cpuprofile. XLACACHE_BENCH_DIR
// keeps the cache between runs (default: a new directory, so a cold
// compile first); XLACACHE_BENCH_TUNE=1 tunes the kernels.
func BenchmarkTrainModelStep(b *testing.B) {
	for _, name := range trainmodel.Names {
		b.Run(name, func(b *testing.B) {
			dir := os.Getenv("XLACACHE_BENCH_DIR")
			if dir == "" {
				dir = b.TempDir()
			}
			cfg := "dir=" + dir + ",min_compile_time_secs=0"
			if os.Getenv("XLACACHE_BENCH_TUNE") != "1" {
				cfg += ",notune"
			}
			be, err := gomlx.NewWithLookup(stdctx.Background(), cfg, os.LookupEnv, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer be.Finalize()
			step, err := trainmodel.New(be, name)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := step.Run(); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := step.Run(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

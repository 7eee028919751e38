package cpu

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkKernelProfile compiles each example named in
// XLACACHE_PROFILE_EXAMPLES (comma-separated, e.g. embedding,mlp) with
// autotuning on the configured threads and runs it in a loop
// (XLACACHE_PROFILE_RUNS times, default 200), logging every kernel's
// share of the run time, largest first (an entry ending in .mlir is a
// program's path; XLACACHE_PROFILE_NOTUNE=1 skips the tuning). It is how
// the run-time work finds the kernels worth improving; run it with
// -benchtime=1x -v, or under perf record for the instructions inside one.
// Without the variable it skips, so that -bench . does not spend minutes
// tuning the examples.
func BenchmarkKernelProfile(b *testing.B) {
	v := os.Getenv("XLACACHE_PROFILE_EXAMPLES")
	if v == "" {
		b.Skip("set XLACACHE_PROFILE_EXAMPLES (e.g. embedding,transformer,mlp) to profile examples kernel by kernel")
	}
	names := strings.Split(v, ",")
	runs := 200
	if v, err := strconv.Atoi(os.Getenv("XLACACHE_PROFILE_RUNS")); err == nil && v > 0 {
		runs = v
	}
	for _, ex := range names {
		b.Run(ex, func(b *testing.B) {
			path := filepath.Join("../../examples", ex, ex+".mlir")
			if strings.HasSuffix(ex, ".mlir") {
				path = ex // a program's file, e.g. one gomlx's TestDumpTrainModel wrote
			}
			m := loadModule(b, path)
			be := New()
			be.NoTune = os.Getenv("XLACACHE_PROFILE_NOTUNE") == "1"
			exe, err := be.CompileModule(context.Background(), m, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer exe.Close()
			args := randomArgs(m, 1)
			tokenIDs(m, args, 1)
			for i := 0; i < b.N; i++ {
				if _, err := exe.Run(context.Background(), args); err != nil {
					b.Fatal(err)
				}
				exe.stepNanos = make([]int64, len(exe.plan.Steps))
				start := time.Now()
				for r := 0; r < runs; r++ {
					if _, err := exe.Run(context.Background(), args); err != nil {
						b.Fatal(err)
					}
				}
				total := time.Since(start)
				steps := exe.stepNanos
				exe.stepNanos = nil
				order := make([]int, len(steps))
				for j := range order {
					order[j] = j
				}
				sort.Slice(order, func(x, y int) bool { return steps[order[x]] > steps[order[y]] })
				var sum int64
				for _, n := range steps {
					sum += n
				}
				b.Logf("%s on %d threads: %v per run, kernels %v", ex, exe.threads, total/time.Duration(runs), time.Duration(sum/int64(runs)))
				// Kernels that share a name (the steps that call one
				// runtime routine) are listed in step order: each step
				// takes the next of its name's.
				byName := map[string][]KernelInfo{}
				for _, k := range exe.plan.Kernels {
					byName[k.Name] = append(byName[k.Name], k)
				}
				info := make([]KernelInfo, len(exe.plan.Steps))
				seen := map[string]int{}
				for j, s := range exe.plan.Steps {
					if ks := byName[s.Kernel]; len(ks) > 0 {
						info[j] = ks[min(seen[s.Kernel], len(ks)-1)]
						seen[s.Kernel]++
					}
				}
				for _, j := range order {
					s := exe.plan.Steps[j]
					k := info[j]
					b.Logf("%5.1f%% %8v step %d %s [%s] %s", 100*float64(steps[j])/float64(max(sum, 1)), time.Duration(steps[j]/int64(runs)), j, k.Desc, k.Config, s.Kernel)
				}
			}
		})
	}
}

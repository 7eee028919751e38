package cpu

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

// compileThrough compiles text through a freshly opened cache on dir (a new
// Cache and a new Backend, as a new process would have) and returns the
// report and the time to a runnable executable.
func compileThrough(b testing.TB, dir, name string, text []byte) (*cache.Report, time.Duration, *Executable) {
	c := testCache(b, dir)
	be := New()
	start := time.Now()
	exe, rep, err := cache.Compile(context.Background(), c, be, cache.Program{Name: name, Text: text})
	d := time.Since(start)
	if err != nil {
		b.Fatal(err)
	}
	return rep, d, exe.(*Executable)
}

func phaseSummary(rep *cache.Report) string {
	var parts []string
	for _, p := range rep.PhaseTotals() {
		parts = append(parts, fmt.Sprintf("%s=%v", p.Name, p.Duration.Round(time.Millisecond)))
	}
	return strings.Join(parts, " ")
}

// BenchmarkTiers measures, per example, a cold compile, a warm start
// (executable hit), a kernel-tier-only hit (executables and autotune
// cleared) and an autotune-tier-only hit (executables and kernels cleared),
// and reports each as a ratio to cold. Run with -benchtime=1x. The
// examples are the MLP (nothing in it is tuned: its products run on the
// gemm routine) and the cnn (its convolutions are).
func BenchmarkTiers(b *testing.B) {
	for _, ex := range []string{"mlp", "cnn"} {
		b.Run(ex, func(b *testing.B) {
			text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				rep, cold, exe := compileThrough(b, dir, ex, text)
				exe.Close()
				b.Logf("cold compile %v: %s", cold.Round(time.Millisecond), phaseSummary(rep))
				rep, warm, exe := compileThrough(b, dir, ex, text)
				exe.Close()
				if !rep.Hit {
					b.Fatalf("second compile missed the executables tier")
				}
				b.Logf("warm start %v: %s", warm.Round(time.Microsecond), phaseSummary(rep))
				proc := warmProcess(b, dir, ex)
				b.Logf("warm start in a new process (wall time from exec to a loaded program, process start-up included): %v", proc.Round(time.Microsecond))

				// Kernel tier only first, while it still holds everything
				// the cold compile stored (clearing it for the
				// autotune-only case would leave only final objects).
				os.RemoveAll(filepath.Join(dir, "executables"))
				os.RemoveAll(filepath.Join(dir, "cpu", "autotune"))
				rep, kernOnly, exe := compileThrough(b, dir, ex, text)
				exe.Close()
				b.Logf("kernel-tier-only %v: %s tiers=%v", kernOnly.Round(time.Millisecond), phaseSummary(rep), rep.Tiers)

				os.RemoveAll(filepath.Join(dir, "executables"))
				os.RemoveAll(filepath.Join(dir, "cpu", "kernels"))
				rep, tuneOnly, exe := compileThrough(b, dir, ex, text)
				exe.Close()
				b.Logf("autotune-tier-only %v: %s tiers=%v", tuneOnly.Round(time.Millisecond), phaseSummary(rep), rep.Tiers)

				b.ReportMetric(cold.Seconds(), "cold_s")
				b.ReportMetric(warm.Seconds()*1e3, "warm_ms")
				b.ReportMetric(float64(cold)/float64(warm), "warm_speedup_x")
				b.ReportMetric(float64(cold)/float64(proc), "warm_process_speedup_x")
				b.ReportMetric(float64(cold)/float64(tuneOnly), "autotune_hit_speedup_x")
				b.ReportMetric(float64(cold)/float64(kernOnly), "kernel_hit_speedup_x")
			}
		})
	}
}

// BenchmarkLoad times Backend.Load of a serialized executable: decoding
// the plan, loading its kernel library from memory and resolving every
// kernel, the backend's part of a warm start (the cache's lookup and
// verification are the rest). transformer4l has some 300 kernels.
func BenchmarkLoad(b *testing.B) {
	for _, ex := range []string{"mlp", "transformer", "transformer4l"} {
		b.Run(ex, func(b *testing.B) {
			text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
			if err != nil {
				b.Fatal(err)
			}
			b.Setenv("XLACACHE_CPU_TUNE", "off")
			_, _, exe := compileThrough(b, b.TempDir(), ex, text)
			data, err := exe.Serialize()
			exe.Close()
			if err != nil {
				b.Fatal(err)
			}
			be := New()
			b.ResetTimer()
			for range b.N {
				x, err := be.Load(context.Background(), data, nil)
				if err != nil {
					b.Fatal(err)
				}
				x.(*Executable).Close()
			}
		})
	}
}

// warmProcess re-runs this test binary as a new process that compiles the
// example through the cache in dir (an executable hit) and runs it once,
// and returns the process's wall time.
func warmProcess(b *testing.B, dir, ex string) time.Duration {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperWarmProcess$")
	cmd.Env = append(os.Environ(), "XLACACHE_CPU_HELPER_DIR="+dir, "XLACACHE_CPU_HELPER_EXAMPLE="+ex)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	d := time.Since(start)
	if err != nil || !strings.Contains(string(out), "helper: hit") {
		b.Fatalf("warm process: %v\n%s", err, out)
	}
	return d
}

// TestHelperWarmProcess is not a test of its own: warmProcess runs it in a
// child process (the pattern os/exec's tests use). Without the helper
// environment it has nothing to do.
func TestHelperWarmProcess(t *testing.T) {
	dir, ex := os.Getenv("XLACACHE_CPU_HELPER_DIR"), os.Getenv("XLACACHE_CPU_HELPER_EXAMPLE")
	if dir == "" {
		return
	}
	text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
	if err != nil {
		t.Fatal(err)
	}
	rep, _, exe := compileThrough(t, dir, ex, text)
	defer exe.Close()
	// A start ends with a loaded, runnable program; running the model on
	// generated inputs is not part of it (it is timed elsewhere), so the
	// child runs it only when asked.
	if os.Getenv("XLACACHE_CPU_HELPER_RUN") != "" {
		m := loadModule(t, filepath.Join("../../examples", ex, ex+".mlir"))
		if _, err := exe.Run(context.Background(), randomArgs(m, 1)); err != nil {
			t.Fatal(err)
		}
	}
	if rep.Hit {
		fmt.Println("helper: hit")
	}
}

const dotProgram = `func.func @main(%a: tensor<512x512xf32>, %b: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<512x512xf32>, tensor<512x512xf32>) -> tensor<512x512xf32>
  return %0 : tensor<512x512xf32>
}
`

// BenchmarkDot512 times the autotuned dot_general kernel at 512x512x512
// f32 alone (median of samples, as the autotuner does), and the untuned
// and tuned builds end to end through Executable.Run (both run the gemm
// routine at this size), and reports GFLOPS next to a single-core peak
// estimate at the clock /proc/cpuinfo reports (boost clocks can exceed
// it). The ikj default it used to compare with is no longer built.
func BenchmarkDot512(b *testing.B) {
	m, err := stablehlo.Parse([]byte(dotProgram), "dot512.mlir")
	if err != nil {
		b.Fatal(err)
	}
	if err := stablehlo.Verify(m); err != nil {
		b.Fatal(err)
	}
	flat, err := stablehlo.Inline(m)
	if err != nil {
		b.Fatal(err)
	}
	l, err := analyze(flat.Main(), "dot512.mlir")
	if err != nil {
		b.Fatal(err)
	}
	k, err := newKernel(l, l.roots[0], 1)
	if err != nil {
		b.Fatal(err)
	}
	comp, err := cc.Find(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	// One thread: this benchmark compares with a single-core peak
	// (BenchmarkVsOpenBLAS covers all threads).
	one := New()
	one.Threads = 1
	pl := &pipeline{b: one, cc: comp, log: slog.Default()}
	args := randomArgs(m, 3)
	endToEnd := func(noTune bool) time.Duration {
		be := New()
		be.NoTune = noTune
		be.Threads = 1
		exe, err := be.CompileModule(context.Background(), m, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer exe.Close()
		var ts []time.Duration
		for i := 0; i < 7; i++ {
			s := time.Now()
			if _, err := exe.Run(context.Background(), args); err != nil {
				b.Fatal(err)
			}
			ts = append(ts, time.Since(s))
		}
		sort.Slice(ts, func(i, j int) bool { return ts[i] < ts[j] })
		return ts[len(ts)/2]
	}
	flops := 2.0 * 512 * 512 * 512
	gf := func(d time.Duration) float64 { return flops / d.Seconds() / 1e9 }
	for i := 0; i < b.N; i++ {
		recs, err := pl.tuneAll(context.Background(), []*kernel{k}, nil)
		if err != nil {
			b.Fatal(err)
		}
		rec := recs[0]
		tuned := time.Duration(rec.Timings[rec.Config.String()])
		ghz := cc.DetectCPU().MHz / 1000
		if ghz <= 0 {
			ghz = 3
		}
		peak := cc.DetectCPU().PeakGFLOPS(ghz)
		defRun, tunedRun := endToEnd(true), endToEnd(false)
		// The candidates' reference is the gemm routine, which the
		// autotuner does not time (routineConfig): it is timed end to
		// end below. The ikj default is no longer built.
		b.Logf("kernel: tuned %s %v (%.1f GFLOPS)", rec.Config, tuned, gf(tuned))
		// At this size both builds run the gemm routine (runtime.go:
		// untuned builds always, tuned ones from routineMinWork).
		b.Logf("end to end (Executable.Run, allocating result tensors): untuned build %v (%.1f GFLOPS), tuned build %v (%.1f GFLOPS), both the runtime gemm", defRun, gf(defRun), tunedRun, gf(tunedRun))
		b.Logf("single-core f32 peak estimate %.0f GFLOPS at %.2f GHz, 2 FMA pipes (%s); boost clocks raise it", peak, ghz, cc.DetectCPU().Summary())
		b.ReportMetric(gf(tuned), "tuned_GFLOPS")
		b.ReportMetric(float64(defRun)/float64(tunedRun), "run_speedup_x")
		b.ReportMetric(peak, "peak_est_GFLOPS")
	}
}

package jaxtest_test

import (
	"flag"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testneed"
)

// warmRepeats is how many times each warm start is timed (the fastest
// counts).
const warmRepeats = 3

var benchLayers = flag.Int("jaxbench.layers", 48, "depth of the MLP BenchmarkJAXFirstStep trains (its compile cost)")

// BenchmarkJAXFirstStep measures the time to the first training step of a
// real JAX program (testdata/train.py: an MLP of -jaxbench.layers tanh
// layers of width 64, unrolled, so that JAX's compile takes seconds; 8
// jitted computations; one step), with jaxlib 0.12.0.1, each as a whole
// process (interpreter start, import of JAX, compile or cache load, first
// step):
//
//	cold-s        host A under `xlacache exec`, empty directory and bucket
//	hostB-s       host B under exec: another, empty directory, the bucket
//	              host A filled (exec fills the directory, JAX hits); the
//	              fastest of warmRepeats tries, each with a new directory
//	warmlocal-s   plain JAX (no xlacache) on a warm directory of its own
//	execwarm-s    the same under exec (no bucket); each the fastest of
//	              warmRepeats runs, plain and exec alternating
//	execoverhead-s  what exec adds to a JAX start: the wall time outside
//	              the script's own measured time, under exec minus plain
//	              (fastest of each), so that JAX's import and load, which
//	              vary by seconds on a shared machine, cancel out
//
// and the ratios cold/hostB and hostB/warmlocal (goals: >= 5 and <= 1.2).
// Every run's hits are checked, so a number never comes from a cache
// that missed.
func BenchmarkJAXFirstStep(b *testing.B) {
	jl := jaxlibs[len(jaxlibs)-1]
	py := testneed.PeerPython(b, jl.list)
	bin := xlacacheBin(b)
	bucket := startBucket(b)
	args := []string{"--layers", fmt.Sprint(*benchLayers), "--width", "64", "--steps", "1"}
	var cold, hostB, warmLocal, execWarm, overhead time.Duration
	for i := 0; b.Loop(); i++ {
		base := b.TempDir()
		shared := bucket(fmt.Sprintf("bench-%d-%d", time.Now().UnixNano(), i))
		// outside is the last timed run's wall time minus the time the
		// script measured itself: process starts, interpreter start, and
		// under exec, exec's own work. JAX's import and load, the noisy
		// part on a shared machine, are inside the script's time.
		var outside time.Duration
		timed := func(want string, env []string, argv ...string) time.Duration {
			t0 := time.Now()
			r := runCmd(b, env, argv[0], argv[1:]...)
			d := time.Since(t0)
			res, err := parseTrain(r)
			outside = d - time.Duration(res.TotalS*float64(time.Second))
			if err != nil {
				b.Fatal(err)
			}
			h, m := res.hits()
			if (want == "hit" && m != 0) || (want == "miss" && h != 0) {
				b.Fatalf("%v: %d hits, %d misses, want all %ss", argv, h, m, want)
			}
			return d
		}
		train := append([]string{py, testdata(b, "train.py")}, args...)
		execTrain := append([]string{bin, "exec", "--"}, train...)
		a, bdir, w, e := filepath.Join(base, "a"), filepath.Join(base, "b"), filepath.Join(base, "w"), filepath.Join(base, "e")
		cold += timed("miss", execEnv(a, shared...), execTrain...)
		// Host B: each try a new, empty directory filled through the bucket;
		// the fastest counts, as for the warm starts below.
		bestB := time.Duration(1 << 62)
		for k := range warmRepeats {
			bestB = min(bestB, timed("hit", execEnv(fmt.Sprintf("%s%d", bdir, k), shared...), execTrain...))
		}
		hostB += bestB
		plain := cleanEnv("JAX_COMPILATION_CACHE_DIR="+w, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0")
		timed("miss", plain, train...)
		timed("miss", execEnv(e), execTrain...)
		// Warm starts vary by seconds on a shared machine: plain and exec
		// alternate, and the fastest of each counts.
		bestPlain, bestExec := time.Duration(1<<62), time.Duration(1<<62)
		outPlain, outExec := time.Duration(1<<62), time.Duration(1<<62)
		for range warmRepeats {
			bestPlain = min(bestPlain, timed("hit", plain, train...))
			outPlain = min(outPlain, outside)
			bestExec = min(bestExec, timed("hit", execEnv(e), execTrain...))
			outExec = min(outExec, outside)
		}
		warmLocal += bestPlain
		execWarm += bestExec
		overhead += outExec - outPlain
		b.Logf("outside the script: plain %v, exec %v (fastest of %d)", outPlain, outExec, warmRepeats)
	}
	n := float64(b.N)
	b.ReportMetric(cold.Seconds()/n, "cold-s")
	b.ReportMetric(hostB.Seconds()/n, "hostB-s")
	b.ReportMetric(warmLocal.Seconds()/n, "warmlocal-s")
	b.ReportMetric(execWarm.Seconds()/n, "execwarm-s")
	b.ReportMetric(cold.Seconds()/hostB.Seconds(), "cold/hostB")
	b.ReportMetric(hostB.Seconds()/warmLocal.Seconds(), "hostB/warmlocal")
	b.ReportMetric(overhead.Seconds()/n, "execoverhead-s")
	b.ReportMetric(0, "ns/op")
}

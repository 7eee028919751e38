package jaxtest_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
)

// TestPersistentCacheHits is issue 21's test 6: jax-ml/jax#38445 reports
// CPUs on which JAX's persistent cache never hits, because XLA:CPU's
// loader refuses every entry over a +prefer-no-gather/+prefer-no-scatter
// CPU feature check, visible only as error log lines. For each jaxlib, two
// processes run the same jit with one JAX_COMPILATION_CACHE_DIR (and a
// minimum compile time of 0): the first must write what it compiled, the
// second must load every one of those entries, counted by JAX itself (its
// jax.monitoring cache-hit and cache-miss events). Both plainly and under
// `xlacache exec`. A cache that writes and never loads fails here, naming
// the issue when the feature check is in the log.
func TestPersistentCacheHits(t *testing.T) {
	for _, jl := range jaxlibs {
		for _, under := range []string{"plain", "exec"} {
			t.Run(jl.version+"/"+under, func(t *testing.T) {
				t.Parallel()
				py := testneed.PeerPython(t, jl.list)
				dir := filepath.Join(t.TempDir(), "cache")
				var env []string
				var cmd []string
				switch under {
				case "plain":
					if err := os.MkdirAll(dir, 0o755); err != nil {
						t.Fatal(err)
					}
					env = cleanEnv("JAX_COMPILATION_CACHE_DIR="+dir,
						"JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS=0",
						"JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES=0")
					cmd = []string{py, testdata(t, "jit.py")}
				case "exec":
					env = cleanEnv("XLACACHE_DIR="+dir, "XLACACHE_MIN_COMPILE_TIME_SECS=0", "XLACACHE_MIN_ENTRY_SIZE_BYTES=0")
					cmd = []string{xlacacheBin(t), "exec", "--", py, testdata(t, "jit.py")}
				}
				var res [2]jaxResult
				var stderr [2]string
				for i := range res {
					r := runCmd(t, env, cmd[0], cmd[1:]...)
					var err error
					res[i], err = checkRun(r, jl)
					if err != nil {
						t.Fatalf("run %d: %v", i+1, err)
					}
					stderr[i] = r.stderr
				}
				written := entries(t, dir)
				cold, warm := res[0].Events, res[1].Events
				feature := featureLines(stderr[1])
				t.Logf("jaxlib %s %s: run 1 misses=%d hits=%d, %d entries written; run 2 misses=%d hits=%d; feature-check log lines in run 2: %d",
					jl.version, under, cold[eventMiss], cold[eventHit], written, warm[eventMiss], warm[eventHit], len(feature))
				switch {
				case cold[eventMiss] == 0 || written == 0:
					t.Fatalf("the cold run stored nothing (misses %d, %d entries): the test proves nothing\nstderr: %s",
						cold[eventMiss], written, tail(stderr[0], 3000))
				case warm[eventHit] == 0 && len(feature) > 0:
					t.Fatalf("jax-ml/jax#38445 happens here: %d entries written, 0 loaded; XLA:CPU refused them:\n%s",
						written, strings.Join(feature, "\n"))
				case warm[eventHit] != cold[eventMiss] || warm[eventMiss] != 0:
					t.Fatalf("%d entries written, the warm run loaded %d and missed %d, want %d and 0\nstderr: %s",
						written, warm[eventHit], warm[eventMiss], cold[eventMiss], tail(stderr[1], 3000))
				}
				if len(feature) > 0 {
					t.Errorf("entries loaded, but XLA logged the feature check anyway:\n%s", strings.Join(feature, "\n"))
				}
			})
		}
	}
}

// entries counts JAX's executable entries in dir: files named
// <module>-<sha256>-cache (JAX 0.4.36's layout and later).
func entries(t *testing.T, dir string) int {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil {
		t.Fatalf("cache directory: %v", err)
	}
	n := 0
	for _, de := range des {
		if strings.HasSuffix(de.Name(), "-cache") && de.Type().IsRegular() {
			n++
		}
	}
	return n
}

// featureLines are log lines of XLA:CPU's CPU-feature check on a loaded
// executable (jax-ml/jax#38445).
func featureLines(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "prefer-no-gather") || strings.Contains(l, "prefer-no-scatter") ||
			(strings.Contains(strings.ToLower(l), "cpu feature") && strings.Contains(strings.ToLower(l), "mismatch")) {
			out = append(out, strings.TrimSpace(l))
		}
	}
	return out
}

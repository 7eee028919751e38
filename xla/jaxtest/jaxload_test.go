package jaxtest_test

import (
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
)

// runLine is exec's report of what JAX did in its directory.
var runLine = regexp.MustCompile(`this run: JAX wrote (\d+) entries, loaded (\d+) \(of (\d+) present at start\)`)

// execCounts parses exec's report line from stderr: written, loaded and
// present.
func execCounts(t *testing.T, stderr string) (written, loaded, present int) {
	t.Helper()
	m := runLine.FindStringSubmatch(stderr)
	if m == nil {
		t.Fatalf("no %q line from exec\nstderr: %s", "this run: JAX wrote", tail(stderr, 3000))
	}
	n := func(s string) int { v, _ := strconv.Atoi(s); return v }
	return n(m[1]), n(m[2]), n(m[3])
}

// TestExecCountsJAXLoads is issue 21 item 6 and issue 24 items 2 and 5
// with real JAX under `xlacache exec`, with XLACACHE_REQUIRE_HIT=fail and
// XLACACHE's default minimum compile time (1 s, which every compile of
// jit.py beats: exec must store them anyway to see them). The cold run
// writes what it compiles, loads nothing, and exec fails it, naming the
// modules, after the job ran to its end; `xlacache stats` then says those
// entries were never loaded. The warm run loads as many entries as JAX
// counts hits, compiles nothing and passes; stats then has none never
// loaded.
func TestExecCountsJAXLoads(t *testing.T) {
	for _, jl := range jaxlibs {
		t.Run(jl.version, func(t *testing.T) {
			t.Parallel()
			py := testneed.PeerPython(t, jl.list)
			dir := filepath.Join(t.TempDir(), "cache")
			env := cleanEnv("XLACACHE_DIR="+dir, "XLACACHE_REQUIRE_HIT=fail")
			bin := xlacacheBin(t)

			cold := runCmd(t, env, bin, "exec", "-v", "--target", "jax", "--", py, testdata(t, "jit.py"))
			if cold.err != nil || cold.exitCode == 0 {
				t.Fatalf("cold run under require-hit fail: exit %d %v, want a failure\nstderr: %s", cold.exitCode, cold.err, tail(cold.stderr, 3000))
			}
			var res jaxResult
			if err := line(cold.stdout, "JAXTEST", &res); err != nil {
				t.Fatalf("the job did not run to its end: %v\nstderr: %s", err, tail(cold.stderr, 3000))
			}
			if err := res.check(jl); err != nil {
				t.Fatal(err)
			}
			misses := res.Events[eventMiss]
			written, loaded, present := execCounts(t, cold.stderr)
			if misses == 0 || written != misses || loaded != 0 || present != 0 {
				t.Fatalf("cold run: exec says %d written, %d loaded of %d; JAX counted %d misses", written, loaded, present, misses)
			}
			if !strings.Contains(cold.stderr, "XLACACHE_REQUIRE_HIT=fail") || !strings.Contains(cold.stderr, "JAX module jit_") {
				t.Fatalf("cold run: no require-hit failure naming the modules\nstderr: %s", tail(cold.stderr, 3000))
			}
			st := runCmd(t, cleanEnv("XLACACHE_DIR="+dir), bin, "stats")
			if want := "JAX: " + strconv.Itoa(written) + " entries, " + strconv.Itoa(written) + " never loaded since written"; !strings.Contains(st.stdout, want) {
				t.Fatalf("stats after the cold run lacks %q:\n%s%s", want, st.stdout, st.stderr)
			}

			warm := runCmd(t, env, bin, "exec", "-v", "--target", "jax", "--", py, testdata(t, "jit.py"))
			wres, err := checkRun(warm, jl)
			if err != nil {
				t.Fatalf("warm run under require-hit fail: %v", err)
			}
			hits := wres.Events[eventHit]
			written, loaded, present = execCounts(t, warm.stderr)
			t.Logf("jaxlib %s: cold run %d misses; warm run %d hits, exec: %d written, %d loaded of %d", jl.version, misses, hits, written, loaded, present)
			if hits != misses || written != 0 || loaded != hits || present != misses {
				t.Fatalf("warm run: exec says %d written, %d loaded of %d; JAX counted %d hits (cold: %d misses)\nstderr: %s",
					written, loaded, present, hits, misses, tail(warm.stderr, 3000))
			}
			st = runCmd(t, cleanEnv("XLACACHE_DIR="+dir), bin, "stats")
			if want := "JAX: " + strconv.Itoa(misses) + " entries, 0 never loaded since written"; !strings.Contains(st.stdout, want) {
				t.Fatalf("stats after the warm run lacks %q:\n%s%s", want, st.stdout, st.stderr)
			}
		})
	}
}

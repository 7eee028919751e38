package jaxtest_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testneed"
	"github.com/xlacache/xlacache/xla/jaxcache"
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
// loaded. Last, with every entry's executable one XLA refuses, the run
// loads nothing, writes nothing, and still fails, naming each module.
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

			// jax-ml/jax#38445's shape: every entry read, refused by
			// XLA's loader, compiled again, and not rewritten (JAX's put
			// skips a key that exists). Executables XLA cannot parse
			// stand in for the refused ones.
			modules := refuseAll(t, dir)
			bad := runCmd(t, env, bin, "exec", "-v", "--target", "jax", "--", py, testdata(t, "jit.py"))
			if bad.err != nil || bad.exitCode == 0 {
				t.Fatalf("run with refused entries under require-hit fail: exit %d %v, want a failure\nstderr: %s", bad.exitCode, bad.err, tail(bad.stderr, 3000))
			}
			written, loaded, present = execCounts(t, bad.stderr)
			if written != 0 || loaded != 0 || present != misses {
				t.Fatalf("refused entries: exec says %d written, %d loaded of %d, want 0 and 0 of %d\nstderr: %s", written, loaded, present, misses, tail(bad.stderr, 3000))
			}
			for _, m := range modules {
				if !strings.Contains(bad.stderr, "JAX module "+m+" (its entry was read, refused by XLA's loader") {
					t.Errorf("require-hit failure does not name refused module %s\nstderr: %s", m, tail(bad.stderr, 3000))
				}
			}
		})
	}
}

// refuseAll replaces the executable of every JAX entry in dir with bytes
// XLA cannot parse, keeping the key, codec and compile time, and returns
// the entries' modules.
func refuseAll(t *testing.T, dir string) []string {
	t.Helper()
	d, err := jaxcache.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var modules []string
	for _, e := range d.Entries {
		data, err := os.ReadFile(e.Path)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := jaxcache.Decode(data)
		if err != nil {
			t.Fatal(err)
		}
		bad, err := jaxcache.Encode(dec.Codec, dec.CompileTime, []byte(strings.Repeat("not an executable ", 64)))
		if err != nil {
			t.Fatal(err)
		}
		if err := jaxcache.WriteEntry(dir, e.Key, bad, time.Now().Add(-time.Hour), 0); err != nil {
			t.Fatal(err)
		}
		modules = append(modules, e.Module)
	}
	return modules
}

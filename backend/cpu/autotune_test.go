package cpu

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/cache"
)

func TestPickConfig(t *testing.T) {
	ms := func(v ...float64) []time.Duration {
		out := make([]time.Duration, len(v))
		for i, x := range v {
			out[i] = time.Duration(x * float64(time.Millisecond))
		}
		return out
	}
	tests := []struct {
		name   string
		times  []time.Duration
		cached []int // candidates whose final object is cached
		want   int
		asked  bool // whether the cache may be consulted
	}{
		{"clear winner", ms(100, 50, 80), nil, 1, false},
		{"first within 3% wins", ms(100, 51, 50), nil, 1, true},
		{"all equal keeps the default", ms(10, 10, 10), nil, 0, true},
		{"cached within noise wins", ms(100, 50, 54, 53), []int{2}, 2, true},
		{"fastest cached within noise wins", ms(100, 50, 54, 53), []int{2, 3}, 3, true},
		{"cached beyond noise loses", ms(100, 50, 70), []int{2}, 1, false},
		{"discarded never wins", ms(100, -1e-6, 50, 52), []int{1}, 2, true},
		{"no cache consulted without choice", ms(100, 50), []int{0}, 1, false},
		{"default alone", ms(7), []int{0}, 0, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			asked := false
			got := pickConfig(tc.times, func(c int) bool {
				asked = true
				for _, x := range tc.cached {
					if x == c {
						return true
					}
				}
				return false
			})
			if got != tc.want {
				t.Errorf("pickConfig(%v, cached %v) = %d, want %d", tc.times, tc.cached, got, tc.want)
			}
			if asked && !tc.asked {
				t.Errorf("consulted the cache without a choice to make")
			}
			if got2 := pickConfig(tc.times, nil); tc.cached == nil && got2 != got {
				t.Errorf("without a cache: %d, want %d", got2, got)
			}
		})
	}
}

// tunedProgram has two kernels worth tuning, two dot_generals, and a
// reduce with a tanh fused into it that is tunable alone but too small
// beside them to be tuned (see relevant).
const tunedProgram = `func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>, %c: tensor<80x256xf32>) -> tensor<64xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
  %1 = stablehlo.dot_general %0, %c, contracting_dims = [1] x [0] : (tensor<64x80xf32>, tensor<80x256xf32>) -> tensor<64x256xf32>
  %2 = stablehlo.tanh %1 : tensor<64x256xf32>
  %3 = stablehlo.constant dense<0.0> : tensor<f32>
  %4 = stablehlo.reduce(%2 init: %3) applies stablehlo.add across dimensions = [1] : (tensor<64x256xf32>, tensor<f32>) -> tensor<64xf32>
  return %4 : tensor<64xf32>
}
`

// sharingProgram shares its first kernel (the same dot_general on
// arguments) with tunedProgram and nothing else worth tuning.
const sharingProgram = `func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>) -> tensor<64x80xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
  %1 = stablehlo.exponential %0 : tensor<64x80xf32>
  return %1 : tensor<64x80xf32>
}
`

// countingCompiler points XLACACHE_CC at a wrapper script that logs every
// invocation's arguments, one line each, and runs the real compiler. Each
// line ends with "# defines" and the final kernels the invocation's batch
// units define (their file names name the batch, not the kernels).
func countingCompiler(t *testing.T) (logPath string) {
	t.Helper()
	logPath = filepath.Join(t.TempDir(), "invocations.log")
	wrapCompiler(t, `defs=""
for a in "$@"; do case "$a" in *_b_*.c) defs="$defs $(sed -n 's/^void \(k_[0-9a-f]*\)(void\*\* bufs).*/\1/p' "$a" | tr '\n' ' ')";; esac; done
`+fmt.Sprintf("printf '%%s # defines %%s\\n' \"$*\" \"$defs\" >> '%s'\n", logPath))
	return logPath
}

// wrapCompiler points XLACACHE_CC at a shell script that runs prelude,
// then the real compiler with the same arguments. The script refuses
// -print-search-dirs, so that the backend links through it (the driver)
// rather than running the linker itself (cc's direct link): the tests
// that count or fail links see every link.
func wrapCompiler(t *testing.T, prelude string) {
	t.Helper()
	real, err := cc.Find(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "wrapcc")
	body := fmt.Sprintf("#!/bin/sh\n[ \"$*\" = -print-search-dirs ] && exit 1\n%sexec '%s' \"$@\"\n", prelude, real.Path)
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cc.EnvCC, script)
	// The compiler probe memo goes to the user cache directory; keep this
	// test's throw-away compiler out of the real one.
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
}

// finalKernelFile matches the source files of final kernel objects
// (cc.Compile names them s<index>_<unit>.c; batches of final kernels are
// b_<hash>, batch.go).
var finalKernelFile = regexp.MustCompile(`^s[0-9]+_b_[0-9a-f]{24}\.c$`)

// invocations reads the log and splits it into compiles of final kernels,
// every other compile (the autotuner's), and links of objects.
func invocations(t *testing.T, logPath string) (final, other, links []string) {
	t.Helper()
	f, err := os.Open(logPath)
	if os.IsNotExist(err) {
		return nil, nil, nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		var srcs []string
		for _, a := range strings.Fields(line) {
			if strings.HasSuffix(a, ".c") {
				srcs = append(srcs, a)
			}
		}
		switch {
		case len(srcs) == 0 && strings.Contains(line, "-shared"):
			links = append(links, line)
		case len(srcs) == 0:
			other = append(other, line) // a probe; none expected once found
		default:
			allFinal := true
			for _, s := range srcs {
				allFinal = allFinal && finalKernelFile.MatchString(s)
			}
			if allFinal {
				final = append(final, line)
			} else {
				other = append(other, line)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return final, other, links
}

// TestKernelTierServesAutotuning checks that autotuning takes its candidate
// builds from the kernel tier: with the executable and the autotune tier
// gone but the kernel tier warm, re-tuning runs no compiler at all (only
// the final link runs, plus compiles of final kernels whose winner
// changed), and a different program sharing a kernel reuses that kernel's
// candidates too. The compiler is counted through a wrapper script.
func TestKernelTierServesAutotuning(t *testing.T) {
	logPath := countingCompiler(t)
	dir := t.TempDir()
	var progress []string
	compile := func(name, text string) (*cache.Report, *Executable) {
		c := openCacheDir(t, dir)
		defer c.Close()
		b := New()
		b.TuneBudget = 20 * time.Millisecond
		b.Progress = func(stage string, done, total int) {
			progress = append(progress, fmt.Sprintf("%s %d/%d", stage, done, total))
		}
		return compileIn(t, c, b, name, text)
	}
	rep, exe := compile("tuned", tunedProgram)
	firstConfig := map[string]string{} // kernel description -> config
	for _, k := range exe.Kernels() {
		firstConfig[k.Desc] = k.Config
	}
	m := parseText(t, tunedProgram)
	args := randomArgs(m, 3)
	want, err := exe.Run(context.Background(), args)
	exe.Close()
	if err != nil {
		t.Fatal(err)
	}
	if rep.Hit || rep.Tiers["cpu/autotune"].Misses != 2 {
		t.Fatalf("cold compile: want 2 kernels tuned, got %+v", rep.Tiers)
	}
	if _, other, _ := invocations(t, logPath); len(other) == 0 {
		t.Fatal("cold compile built no autotune candidates (is the log working?)")
	}
	// Progress advances per candidate unit built and per kernel timed.
	wantProgress := []string{"autotune 0/4", "autotune 4/4"}
	if len(progress) < 5 || progress[0] != wantProgress[0] || !contains(progress, wantProgress[1]) {
		t.Errorf("progress = %v, want %v and every step between", progress, wantProgress)
	}

	for _, tc := range []struct{ name, text string }{{"tuned", tunedProgram}, {"sharing", sharingProgram}} {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range []string{"executables", filepath.Join("cpu", "autotune")} {
				if err := os.RemoveAll(filepath.Join(dir, d)); err != nil {
					t.Fatal(err)
				}
			}
			if err := os.Remove(logPath); err != nil {
				t.Fatal(err)
			}
			rep, exe := compile(tc.name, tc.text)
			defer exe.Close()
			if rep.Tiers["cpu/autotune"].Misses == 0 || rep.Tiers["cpu/kernels"].Hits == 0 {
				t.Fatalf("want a re-tune served by the kernel tier, got %+v", rep.Tiers)
			}
			final, other, links := invocations(t, logPath)
			if len(other) != 0 {
				t.Errorf("autotuning ran the compiler %d times with the kernel tier warm:\n%s", len(other), strings.Join(other, "\n"))
			}
			if len(links) > 1 {
				t.Errorf("%d link steps, want only the final one:\n%s", len(links), strings.Join(links, "\n"))
			}
			recompiled := 0
			for _, k := range exe.Kernels() {
				if !k.ObjectHit {
					recompiled++
					t.Logf("compiled again: %s (%s)", k.Desc, k.Config)
					// Content naming: the same kernel in the same
					// configuration must find its object again.
					if firstConfig[k.Desc] == k.Config {
						t.Errorf("kernel %s in unchanged configuration %s missed the kernel tier", k.Desc, k.Config)
					}
				}
			}
			if len(final) > 0 && recompiled == 0 {
				t.Errorf("compiled final kernels although every object was a hit:\n%s", strings.Join(final, "\n"))
			}
			t.Logf("final kernels recompiled (winner changed beyond noise): %d", recompiled)
			if tc.name == "tuned" {
				got, err := exe.Run(context.Background(), args)
				if err != nil {
					t.Fatal(err)
				}
				assertClose(t, got, want, 1e-4)
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// TestFixedObjectsBesideCandidates checks that a tuned compile whose
// candidates leave a compiler job idle compiles the final objects of the
// kernels it does not tune beside them (startFixedObjects): the
// candidate build here waits, up to 30 seconds, for a final kernel's
// compile to start, and says whether it did. With two jobs and one
// kernel to tune, it must have: sharingProgram's exponential is compiled
// while the product's candidates are, once, and the compile after the
// tuning compiles nothing. With one job there is nothing beside the
// candidates, and the same program compiles its exponential after them.
func TestFixedObjectsBesideCandidates(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "invocations.log")
	started := filepath.Join(dir, "final-started")
	wrapCompiler(t, fmt.Sprintf(`case " $* " in
*" -c "*_b_*) : > '%[1]s'; echo "final $*" >> '%[2]s';;
*" -save-temps=obj "*) i=0; while [ ! -e '%[1]s' ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done
  if [ -e '%[1]s' ]; then echo "candidates after a final compile began" >> '%[2]s'; else echo "candidates alone" >> '%[2]s'; fi;;
esac
`, started, logPath))
	m := parseText(t, sharingProgram)
	args := randomArgs(m, 5)
	var want [][]byte
	for _, jobs := range []int{2, 1} {
		t.Run(fmt.Sprintf("jobs=%d", jobs), func(t *testing.T) {
			os.Remove(started)
			os.Remove(logPath)
			if jobs == 1 {
				// Nothing else compiles beside the candidates: let them
				// start rather than wait out the 30 seconds.
				if err := os.WriteFile(started, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			c := openCacheDir(t, t.TempDir())
			defer c.Close()
			b := New()
			b.TuneBudget = 20 * time.Millisecond
			b.Jobs, b.cpus = jobs, jobs
			rep, exe := compileIn(t, c, b, "sharing", sharingProgram)
			defer exe.Close()
			if got := rep.Tiers["cpu/autotune"].Misses; got != 1 {
				t.Fatalf("want one kernel tuned, got %+v", rep.Tiers)
			}
			log, err := os.ReadFile(logPath)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(log)), "\n")
			var finals int
			for _, l := range lines {
				if strings.HasPrefix(l, "final ") {
					finals++
				}
			}
			if jobs == 2 && !slices.Contains(lines, "candidates after a final compile began") {
				t.Errorf("the candidates were built alone, want the exponential's object compiled beside them:\n%s", log)
			}
			if jobs == 1 && (len(lines) < 2 || !strings.HasPrefix(lines[len(lines)-1], "final ")) {
				t.Errorf("with one job, want the final compile after the candidates:\n%s", log)
			}
			if finals != 1 {
				t.Errorf("%d final compiles, want 1 (the exponential's object, compiled once):\n%s", finals, log)
			}
			got, err := exe.Run(context.Background(), args)
			if err != nil {
				t.Fatal(err)
			}
			outs := make([][]byte, len(got))
			for i, g := range got {
				outs[i] = g.Data
			}
			if want == nil {
				want = outs
			} else if !slices.EqualFunc(outs, want, bytes.Equal) {
				t.Errorf("outputs differ from the two-job compile's")
			}
		})
	}
}

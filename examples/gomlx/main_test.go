package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/testneed"
)

// childEnv makes the test binary run the example's main instead of the
// tests (TestExampleColdThenWarm re-executes it as a new process).
const childEnv = "XLACACHE_GOMLX_EXAMPLE_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// noPlugin skips the test when a PJRT plugin may be installed: the
// example would then train on XLA, not the CI case.
func noPlugin(t *testing.T) {
	t.Helper()
	if v := os.Getenv("PJRT_PLUGIN_LIBRARY_PATH"); v != "" {
		t.Skipf("PJRT_PLUGIN_LIBRARY_PATH=%s is set: a plugin may be installed, not the CI case", v)
	}
}

// TestExampleRunsWithoutPlugin runs the example as CI does, where no PJRT
// plugin is installed: it must say that XLA's caches are inactive and
// train on xlacache's GoMLX backend.
func TestExampleRunsWithoutPlugin(t *testing.T) {
	noPlugin(t)
	empty := t.TempDir()
	env := map[string]string{
		"XLACACHE_DIR":             filepath.Join(t.TempDir(), "cache"),
		"PJRT_PLUGIN_LIBRARY_PATH": empty, // go-xla searches only here
		"HOME":                     empty,
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	var out bytes.Buffer
	if err := run(context.Background(), &out, lookup); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "XLA plugin") {
		t.Skipf("a PJRT plugin is installed on this machine; ran on XLA:\n%s", s)
	}
	if !strings.Contains(s, "XLA's caches are inactive") || !strings.Contains(s, "trained on xlacache") {
		t.Errorf("output:\n%s", s)
	}
}

// TestLossMatchesSimpleGo trains on the xlacache backend and on GoMLX's
// pure-Go backend: the losses and weights agree to 1e-5.
func TestLossMatchesSimpleGo(t *testing.T) {
	noPlugin(t)
	env := map[string]string{"XLACACHE_DIR": t.TempDir(), "GOMLX_BACKEND": "xlacache"}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	opts, err := config.FromEnv(lookup)
	if err != nil {
		t.Fatal(err)
	}
	xb, _, err := newBackend(context.Background(), &bytes.Buffer{}, opts, lookup)
	if err != nil {
		t.Fatal(err)
	}
	defer xb.Finalize()
	got, err := train(xb)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	defer sb.Finalize()
	want, err := train(sb)
	if err != nil {
		t.Fatal(err)
	}
	if got.backend != "xlacache" {
		t.Fatalf("trained on %s", got.backend)
	}
	for _, c := range []struct {
		what      string
		got, want float32
	}{{"first loss", got.first, want.first}, {"final loss", got.final, want.final}, {"w", got.w, want.w}, {"b", got.b, want.b}} {
		if math.Abs(float64(c.got-c.want)) > 1e-5*math.Max(1, math.Abs(float64(c.want))) {
			t.Errorf("%s: xlacache %v, pure Go %v", c.what, c.got, c.want)
		}
	}
	if got.final >= got.first/100 || got.w < 2.9 || got.w > 3.1 || got.b < 0.9 || got.b > 1.1 {
		t.Errorf("did not converge: %+v", got)
	}
}

var statsRE = regexp.MustCompile(`first step (\S+), .*; (\d+) program\(s\) compiled, (\d+) from the cache`)

// TestExampleColdThenWarm runs the example twice as new processes on one
// cache directory: the first compiles, the second takes every program
// from the cache.
func TestExampleColdThenWarm(t *testing.T) {
	noPlugin(t)
	dir, empty := t.TempDir(), t.TempDir()
	for i, warm := range []bool{false, true} {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), childEnv+"=1", "XLACACHE_DIR="+dir, "GOMLX_BACKEND=xlacache",
			"PJRT_PLUGIN_LIBRARY_PATH="+empty)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("run %d: %v\n%s", i, err, out)
		}
		m := statsRE.FindStringSubmatch(string(out))
		if m == nil || !strings.Contains(string(out), "trained on xlacache") {
			t.Fatalf("run %d output:\n%s", i, out)
		}
		compiled, _ := strconv.Atoi(m[2])
		hits, _ := strconv.Atoi(m[3])
		want := 0
		if warm {
			want = compiled
		}
		if compiled < 1 || hits != want {
			t.Errorf("run %d (warm %v): %d compiled, %d from the cache; want %d from the cache", i, warm, compiled, hits, want)
		}
		t.Logf("%s run: first step %s", map[bool]string{false: "cold", true: "warm"}[warm], m[1])
	}
}

func TestBackendChoice(t *testing.T) {
	noPlugin(t)
	for v, want := range map[string]string{"go": "SimpleGo", "xlacache:dir=" + t.TempDir(): "xlacache", "bogus": ""} {
		lookup := func(k string) (string, bool) {
			if k == "GOMLX_BACKEND" {
				return v, true
			}
			return "", false
		}
		b, _, err := newBackend(context.Background(), &bytes.Buffer{}, config.Defaults(), lookup)
		if want == "" {
			if err == nil {
				b.Finalize()
				t.Errorf("GOMLX_BACKEND=%s: no error", v)
			}
			continue
		}
		if err != nil {
			t.Fatalf("GOMLX_BACKEND=%s: %v", v, err)
		}
		if got := b.Name(); !strings.HasPrefix(got, want) {
			t.Errorf("GOMLX_BACKEND=%s: backend %s, want %s", v, got, want)
		}
		b.Finalize()
	}
}

var weightsRE = regexp.MustCompile(`trained on (\S+): loss \S+ -> (\S+), y = (\S+)\*x \+ (\S+)`)

// TestExampleOnRealPlugin trains the example on GoMLX's XLA backend with a
// real PJRT plugin given by path (GOMLX_BACKEND=xla:<path>, auto-install
// off), with every XLA cache flag xlacache sets (subcaches all, writer),
// in two new processes: both converge; the first compiles through the
// caching wrapper xla.Prepare set up and stores, the second loads every
// program from the cache (the wrapper's trace: hits, no compile).
func TestExampleOnRealPlugin(t *testing.T) {
	for pkg, plugin := range testneed.PJRTPlugins(t) {
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			dir, home := t.TempDir(), t.TempDir()
			trace := filepath.Join(t.TempDir(), "trace")
			for i, warm := range []bool{false, true} {
				os.Remove(trace)
				cmd := exec.Command(os.Args[0])
				cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, childEnv + "=1",
					"GOMLX_BACKEND=xla:" + plugin, "GOMLX_NO_AUTO_INSTALL=1",
					"XLACACHE_DIR=" + dir, "XLACACHE_ENABLE_XLA_CACHES=all", "XLACACHE_ROLE=writer",
					"XLACACHE_MIN_COMPILE_TIME_SECS=0", "XLACACHE_PJRT_TRACE=" + trace}
				out, err := cmd.CombinedOutput()
				if err != nil {
					t.Fatalf("run %d: %v\n%s", i, err, out)
				}
				s := string(out)
				m := weightsRE.FindStringSubmatch(s)
				if m == nil || !strings.HasPrefix(m[1], "xla") {
					t.Fatalf("run %d did not train on XLA:\n%s", i, s)
				}
				w, _ := strconv.ParseFloat(m[3], 64)
				b, _ := strconv.ParseFloat(m[4], 64)
				if math.Abs(w-3) > 0.1 || math.Abs(b-1) > 0.1 {
					t.Errorf("run %d: y = %v*x + %v, want 3x + 1\n%s", i, w, b, s)
				}
				if !strings.Contains(s, "XLA cache flags: --") || !strings.Contains(s, "executable cache: xlacache's PJRT wrapper") {
					t.Errorf("run %d: XLA's flags or the wrapper not set up:\n%s", i, s)
				}
				tr, _ := os.ReadFile(trace)
				compiles, hits := strings.Count(string(tr), " compile\n"), strings.Count(string(tr), " hit\n")
				switch {
				case !warm && (compiles < 1 || hits != 0):
					t.Errorf("first run: %d compiles, %d hits; want compiles only\n%s", compiles, hits, s)
				case warm && (compiles != 0 || hits < 1):
					t.Errorf("second run: %d compiles, %d hits; want hits only\n%s", compiles, hits, s)
				}
				t.Logf("run %d: %d compiled, %d from the cache; %s", i, compiles, hits, strings.TrimSpace(s[strings.LastIndex(s, "first step"):]))
			}
		})
	}
}

// trainRes is what testdata/trainbench prints.
type trainRes struct {
	Loss   float64 `json:"loss"`
	First  float64 `json:"first_step_ms"`
	Second float64 `json:"second_step_ms"`
	Ready  float64 `json:"ready_ms"`
	// Client is process start to the PJRT client created.
	Client float64 `json:"client_ms"`
	// Through the wrapper: time in compile calls, of it in the inner
	// compile and in the inner deserialize.
	CompileCall  float64 `json:"compile_call_ms"`
	InnerCompile float64 `json:"inner_compile_ms"`
	Deserialize  float64 `json:"deserialize_ms"`
	// Probe is the time in hits' probes (the output signature).
	Probe float64 `json:"probe_ms"`
	// Served holds the in-process helper's line for each compile (its
	// phases in ms: request, key, lookup, load, wrapper; see
	// xla/pjrt.Server).
	Served []map[string]any `json:"served"`
}

// servedSum sums a phase ("key_ms", ...) over every compile served.
func (r trainRes) servedSum(name string) float64 {
	var sum float64
	for _, l := range r.Served {
		v, _ := l[name].(float64)
		sum += v
	}
	return sum
}

// buildTrainbench builds testdata/trainbench and returns a function that
// runs it as a new process on a model and plugin, with env added to a
// minimal environment (fixed seed, auto-install off).
func buildTrainbench(t *testing.T) func(t *testing.T, model, plugin string, env ...string) trainRes {
	bin := filepath.Join(t.TempDir(), "trainbench")
	if out, err := exec.Command("go", "build", "-o", bin, "./testdata/trainbench").CombinedOutput(); err != nil {
		t.Fatalf("building trainbench: %v\n%s", err, out)
	}
	home := t.TempDir()
	return func(t *testing.T, model, plugin string, env ...string) trainRes {
		t.Helper()
		cmd := exec.Command(bin, "-model", model, "-plugin", plugin)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GOMLX_NO_AUTO_INSTALL=1", "TRAINBENCH_SEED=1"}, env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("trainbench %s: %v\n%s", model, err, stderr.String())
		}
		var r trainRes
		if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
			t.Fatalf("trainbench output %q: %v", stdout.String(), err)
		}
		return r
	}
}

// traceCounts runs f with a fresh wrapper trace file and counts the
// wrapper's inner compiles and cache hits in it.
func traceCounts(t *testing.T, trace string, f func()) (compiles, hits int) {
	t.Helper()
	os.Remove(trace)
	f()
	tr, _ := os.ReadFile(trace)
	return strings.Count(string(tr), " compile\n"), strings.Count(string(tr), " hit\n")
}

// TestTrainerHitsOnRealPlugin trains GoMLX's MLP with its Trainer (Adam,
// loss metrics) through the caching wrapper in two new processes: the
// first compiles every program, the second compiles none and loads every
// one (variable initialization and the training step), with the same
// loss. GoMLX names the training step's parameters after variables whose
// names hold a random UUID, so the two processes send the program under
// different names (xla/pjrt's programKey).
func TestTrainerHitsOnRealPlugin(t *testing.T) {
	plugins := testneed.PJRTPlugins(t)
	run := buildTrainbench(t)
	for pkg, plugin := range plugins {
		t.Run(filepath.Base(pkg), func(t *testing.T) {
			trace := filepath.Join(t.TempDir(), "trace")
			env := []string{"XLACACHE_DIR=" + t.TempDir(), "XLACACHE_MIN_COMPILE_TIME_SECS=0", "XLACACHE_PJRT_TRACE=" + trace}
			var cold, warm trainRes
			c1, h1 := traceCounts(t, trace, func() { cold = run(t, "mlp", plugin, env...) })
			c2, h2 := traceCounts(t, trace, func() { warm = run(t, "mlp", plugin, env...) })
			if c1 < 2 || h1 != 0 {
				t.Errorf("first process: %d compiles, %d hits; want at least 2 compiles (initialization, training step), no hit", c1, h1)
			}
			if c2 != 0 || h2 != c1 {
				t.Errorf("second process: %d compiles, %d hits; want 0 compiles, %d hits", c2, h2, c1)
			}
			if cold.Loss != warm.Loss {
				t.Errorf("loss %v in the first process, %v in the second", cold.Loss, warm.Loss)
			}
			t.Logf("%d programs; first step %.0f ms cold, %.0f ms warm", c1, cold.First, warm.First)
		})
	}
}

// TestBenchTrainingSteps (XLACACHE_PJRT_BENCH=1) times GoMLX's MLP and
// transformer training steps (testdata/trainbench: GoMLX's layers, its
// Trainer and Adam) on each real plugin in new processes: the plain
// plugin, then through the caching wrapper cold (compile and store) and
// warm (a new process). It logs a table; the numbers are in
// docs/pjrt.md. The inner compile time is the plain plugin's compile of
// the same programs (measured in the cold run, inside the wrapper). The
// warm run must take every program from the cache.
func TestBenchTrainingSteps(t *testing.T) {
	if os.Getenv("XLACACHE_PJRT_BENCH") != "1" {
		t.Skip("set XLACACHE_PJRT_BENCH=1 to run the benchmark")
	}
	plugins := testneed.PJRTPlugins(t)
	run := buildTrainbench(t)
	table := "| plugin | model | inner compile ms | hit compile calls ms | of it deserialize ms | compile ratio | plain first step ms | hit first step ms | plain ready ms | hit ready ms | programs hit/compiled | ready ratio |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|\n"
	// Where a hit's time beyond the inner deserialize goes, summed over
	// the programs (from the helper's "served" lines); and the prefetch
	// window: the warm process's time from client creation to the first
	// step that is neither a compile call nor running a step (GoMLX
	// building its graphs), all a deserialize started at client creation
	// could overlap.
	parts := "| plugin | model | hit compile calls ms | deserialize ms | overhead ms | request ms | key ms | lookup ms | decode ms | probe ms | rest ms | prefetch window ms |\n|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n"
	for pkg, plugin := range plugins {
		for _, model := range []string{"mlp", "transformer"} {
			t.Run(filepath.Base(pkg)+"/"+model, func(t *testing.T) {
				plain := run(t, model, plugin)
				dir, trace := t.TempDir(), filepath.Join(t.TempDir(), "trace")
				env := []string{"XLACACHE_DIR=" + dir, "XLACACHE_MIN_COMPILE_TIME_SECS=0", "XLACACHE_PJRT_TRACE=" + trace}
				cold := run(t, model, plugin, env...)
				var hit trainRes
				compiles, hits := traceCounts(t, trace, func() { hit = run(t, model, plugin, env...) })
				if hits < 1 || compiles != 0 {
					t.Errorf("warm run: %d hits, %d compiles; want hits only", hits, compiles)
				}
				if hit.Loss != plain.Loss {
					t.Errorf("loss %v on the plain plugin, %v on a hit", plain.Loss, hit.Loss)
				}
				table += fmt.Sprintf("| %s | %s | %.0f | %.1f | %.1f | %.0fx | %.0f | %.0f | %.0f | %.0f | %d/%d | %.1fx |\n", filepath.Base(pkg), model,
					cold.InnerCompile, hit.CompileCall, hit.Deserialize, cold.InnerCompile/hit.CompileCall,
					plain.First, hit.First, plain.Ready, hit.Ready, hits, compiles, plain.Ready/hit.Ready)
				if len(hit.Served) != hits {
					t.Errorf("warm run: %d served lines for %d hits", len(hit.Served), hits)
				}
				window := (hit.Ready - hit.First - hit.Client) + (hit.First - hit.CompileCall - hit.Second)
				// The rest: the wrapper building its request, the socket and
				// the hand-overs between the host and the helper.
				over := hit.CompileCall - hit.Deserialize
				decode := hit.servedSum("load_ms") - hit.servedSum("wrapper_ms")
				rest := over - hit.servedSum("request_ms") - hit.servedSum("key_ms") - hit.servedSum("lookup_ms") - decode - hit.Probe
				parts += fmt.Sprintf("| %s | %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.0f |\n", filepath.Base(pkg), model,
					hit.CompileCall, hit.Deserialize, over, hit.servedSum("request_ms"), hit.servedSum("key_ms"),
					hit.servedSum("lookup_ms"), decode, hit.Probe, rest, window)
			})
		}
	}
	t.Logf("\n%s\n%s", table, parts)
}

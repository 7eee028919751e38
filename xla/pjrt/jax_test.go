package pjrt

// JAX through the wrapper, in real processes: the peer environment of
// scripts/peers.sh pjrt-plugins holds jax and jaxlib 0.11.2 beside the
// plugins, and testdata/jaxrun.py jits a few functions on the platform
// that JAX_PLATFORMS names. JAX loads the wrapper the way `xlacache pjrt
// env` tells it to (Prepare, then Setup.Env's PJRT_NAMES_AND_LIBRARY_PATHS);
// the wrapper's trace file counts compiles and hits per process.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testneed"
)

// jaxPlatform is the name JAX registers the plugin under. Not "cpu":
// that is jaxlib's own CPU backend, which JAX would keep using.
const jaxPlatform = "wrapcpu"

// jaxReport is what testdata/jaxrun.py prints.
type jaxReport struct {
	JAX      string `json:"jax"`
	Platform string `json:"platform"`
	Results  []struct {
		Name   string `json:"name"`
		DType  string `json:"dtype"`
		Shape  []int  `json:"shape"`
		SHA256 string `json:"sha256"`
		// FirstMS is the first call's time: trace, compile or load, run.
		FirstMS float64 `json:"first_call_ms"`
	} `json:"results"`
	Stderr string `json:"-"`
}

// traceCounts is one process's lines in the wrapper's trace file, by
// word (compile, hit, fallback, refused).
type traceCounts map[string]int

// runJAX runs testdata/jaxrun.py with python in a new process, JAX's own
// persistent cache off, with env added to a cleaned environment, and
// returns its report and the wrapper's trace lines of that process.
func runJAX(t *testing.T, python string, env []string) (jaxReport, traceCounts) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	trace := filepath.Join(t.TempDir(), "trace")
	script, err := filepath.Abs("testdata/jaxrun.py")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, python, script)
	for _, kv := range os.Environ() {
		// Nothing of the caller's may choose the platform, turn JAX's
		// persistent cache on or point the wrapper elsewhere.
		if !strings.HasPrefix(kv, "XLACACHE_") && !strings.HasPrefix(kv, "PJRT_") &&
			!strings.HasPrefix(kv, "JAX_") && !strings.HasPrefix(kv, "XLA_FLAGS=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "JAX_ENABLE_COMPILATION_CACHE=false", EnvTrace+"="+trace)
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("jaxrun.py: %v\n%s", err, stderr.String())
	}
	var r jaxReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("jaxrun.py output %q: %v\n%s", stdout.String(), err, stderr.String())
	}
	r.Stderr = stderr.String()
	if len(r.Results) == 0 {
		t.Fatalf("jaxrun.py ran nothing\n%s", r.Stderr)
	}
	return r, readTrace(t, trace, cmd.Process.Pid)
}

// readTrace counts the lines of pid in the trace file at path (absent:
// the wrapper saw no compile). A line of another process fails the test:
// each run has its own file.
func readTrace(t *testing.T, path string, pid int) traceCounts {
	t.Helper()
	counts := traceCounts{}
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return counts
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	want := strconv.Itoa(pid)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		p, what, ok := strings.Cut(sc.Text(), " ")
		if !ok || p != want {
			t.Fatalf("trace line %q: want %q and a word", sc.Text(), want)
		}
		counts[what]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return counts
}

// JAX 0.11.2 runs jitted functions through the wrapper around each real
// plugin: a cold process compiles every function and stores it, a new
// process loads every one (no inner compile), and the outputs are bit for
// bit those of the plain plugin.
func TestJAXColdThenHit(t *testing.T) {
	plugins := realPlugins(t)
	python := testneed.PeerPython(t, testneed.PluginsList)
	buildDir := t.TempDir()
	for name, inner := range plugins {
		t.Run(name, func(t *testing.T) {
			plain, tr := runJAX(t, python, []string{
				"PJRT_NAMES_AND_LIBRARY_PATHS=" + jaxPlatform + ":" + inner,
				"JAX_PLATFORMS=" + jaxPlatform,
			})
			if len(tr) != 0 {
				t.Fatalf("the plain plugin wrote trace lines: %v", tr)
			}
			sock := serve(t, &Server{Cache: openCache(t, t.TempDir())})
			// The code path of `xlacache pjrt env`: build, lay out, and
			// the environment it prints (no helper binary: this test
			// process serves the socket).
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			st, err := Prepare(ctx, buildDir, inner, jaxPlatform, sock, "")
			if err != nil {
				t.Fatal(err)
			}
			env := []string{"JAX_PLATFORMS=" + jaxPlatform}
			for _, kv := range st.Env() {
				env = append(env, kv[0]+"="+kv[1])
			}
			n := len(plain.Results)
			cold, tr := runJAX(t, python, env)
			if tr["compile"] != n || tr["hit"] != 0 || tr["fallback"] != 0 || tr["refused"] != 0 {
				t.Errorf("cold process: trace %v, want %d compiles and nothing else\n%s", tr, n, cold.Stderr)
			}
			warm, tr := runJAX(t, python, env)
			if tr["hit"] != n || tr["compile"] != 0 || tr["fallback"] != 0 || tr["refused"] != 0 {
				t.Errorf("new process: trace %v, want %d hits and nothing else\n%s", tr, n, warm.Stderr)
			}
			for _, r := range []jaxReport{plain, cold, warm} {
				if r.JAX != "0.11.2" {
					t.Errorf("jax %s, want 0.11.2 (the version peers/pjrt-plugins.txt pins)", r.JAX)
				}
			}
			for i, want := range plain.Results {
				if i < len(cold.Results) && i < len(warm.Results) {
					t.Logf("%s: first call %.0f ms plain, %.0f ms cold, %.0f ms hit", want.Name,
						want.FirstMS, cold.Results[i].FirstMS, warm.Results[i].FirstMS)
				}
				for what, r := range map[string]jaxReport{"cold": cold, "hit": warm} {
					if len(r.Results) != n || r.Results[i].Name != want.Name || r.Results[i].SHA256 != want.SHA256 {
						t.Errorf("%s: %s output %+v, want the plain plugin's %+v", want.Name, what, r.Results, want)
					}
				}
			}
		})
	}
}

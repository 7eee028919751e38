// Package jaxtest_test runs real JAX processes (from the peer environments
// scripts/peers.sh installs) against the environment xlacache gives them:
// every claim docs/xla.md makes about JAX, tested against JAX itself. A
// test whose peer is not installed skips (fails under CI=true) through
// internal/testneed.
package jaxtest_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testneed"
)

var update = flag.Bool("update", false, "rewrite testdata/census.md from this run")

// jaxlib is one peer environment and the releases stated wrong for it.
type jaxlib struct {
	list    string // peers/<list>.txt
	version string // the jaxlib it installs
	older   string // a release stated older than the installed one
	newer   string // and one stated newer
	// filelock: the list pins the filelock package, which JAX's own size
	// bound (jax_compilation_cache_max_size) needs.
	filelock bool
}

// jaxlibs are the peers: the newest JAX and the oldest release xlacache
// claims per-process autotune modes for (docs/xla.md, jaxlib 0.4.36, the
// default xlacache assumes).
var jaxlibs = []jaxlib{
	{list: "jax-0.4.36", version: "0.4.36", older: "0.4.35", newer: "0.12.0"},
	{list: "jax-0.12.0.1", version: "0.12.0.1", older: "0.4.36", newer: "0.13.0", filelock: true},
}

// jaxResult is what testdata/jit.py prints.
type jaxResult struct {
	JAX        string            `json:"jax"`
	JAXLib     string            `json:"jaxlib"`
	Backend    string            `json:"backend"`
	Devices    int               `json:"devices"`
	Y          []int64           `json:"y"`
	Sum        int64             `json:"sum"`
	Events     map[string]int    `json:"events"`
	XLAOptions map[string]string `json:"xla_options"`
	Env        map[string]string `json:"env"`
}

// The jit in testdata/jit.py: x*2+1 and sum(x*x) over arange(8).
var (
	wantY   = []int64{1, 3, 5, 7, 9, 11, 13, 15}
	wantSum = int64(140)
)

// Events JAX records (jax/_src/compiler.py, compilation_cache.py, in both
// releases tested).
const (
	eventHit  = "/jax/compilation_cache/cache_hits"
	eventMiss = "/jax/compilation_cache/cache_misses"
)

// check says what is wrong with r as the output of jit.py under jl.
func (r jaxResult) check(jl jaxlib) error {
	switch {
	case r.JAXLib != jl.version:
		return fmt.Errorf("jaxlib %s, want %s", r.JAXLib, jl.version)
	case r.Backend != "cpu" || r.Devices < 1:
		return fmt.Errorf("backend %q with %d devices, want cpu", r.Backend, r.Devices)
	case fmt.Sprint(r.Y) != fmt.Sprint(wantY) || r.Sum != wantSum:
		return fmt.Errorf("jit gave %v and %d, want %v and %d", r.Y, r.Sum, wantY, wantSum)
	}
	return nil
}

// slots bounds the JAX processes running at once: each start takes a core
// for a second or more.
var slots = make(chan struct{}, max(2, min(runtime.NumCPU(), 4)))

// processTimeout bounds one JAX process; a start takes seconds, so this
// only stops a hang from holding the test for its whole -timeout.
const processTimeout = 3 * time.Minute

// run is one finished process.
type run struct {
	exitCode int
	stdout   string
	stderr   string
	err      error // start failure or timeout
}

// runCmd runs name args with env (the whole environment), in a slot.
func runCmd(t testing.TB, env []string, name string, args ...string) run {
	t.Helper()
	slots <- struct{}{}
	defer func() { <-slots }()
	return runCmdCtx(t, context.Background(), env, name, args...)
}

// runCmdCtx runs name args with env outside the slots, until it exits,
// ctx ends or processTimeout passes.
func runCmdCtx(t testing.TB, ctx context.Context, env []string, name string, args ...string) run {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, processTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	cmd.Dir = t.TempDir()
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	r := run{stdout: out.String(), stderr: errb.String()}
	if ee, ok := err.(*exec.ExitError); ok {
		r.exitCode = ee.ExitCode()
		if ctx.Err() != nil {
			r.err = fmt.Errorf("stopped: %w (limit %v)", ctx.Err(), processTimeout)
		}
	} else if err != nil {
		r.err = err
	}
	return r
}

// line finds the JSON after prefix in out.
func line(out, prefix string, v any) error {
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), prefix+" "); ok {
			return json.Unmarshal([]byte(rest), v)
		}
	}
	return fmt.Errorf("no %q line in the output", prefix)
}

// cleanEnv is this process's environment without anything that steers
// JAX, XLA or xlacache, so a case sees only what it sets.
func cleanEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if k == "XLA_FLAGS" || k == "TF_CPP_MIN_LOG_LEVEL" || strings.HasPrefix(k, "JAX_") || strings.HasPrefix(k, "XLACACHE_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// merge returns base with vars set (replacing the same names).
func merge(base []string, vars map[string]string) []string {
	var out []string
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := vars[k]; !ok {
			out = append(out, kv)
		}
	}
	for k, v := range vars {
		out = append(out, k+"="+v)
	}
	return out
}

// testdata returns the absolute path of a testdata file.
func testdata(t testing.TB, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

var (
	binOnce sync.Once
	binPath string
	binErr  error
	binDir  string
)

// xlacacheBin builds cmd/xlacache once per test binary.
func xlacacheBin(t testing.TB) string {
	t.Helper()
	binOnce.Do(func() {
		root, err := testneed.RepoRoot()
		if err != nil {
			binErr = err
			return
		}
		binDir, binErr = os.MkdirTemp("", "jaxtest-bin-")
		if binErr != nil {
			return
		}
		binPath = filepath.Join(binDir, "xlacache")
		cmd := exec.Command("go", "build", "-o", binPath, "./cmd/xlacache")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			binErr = fmt.Errorf("go build ./cmd/xlacache: %v\n%s", err, out)
		}
	})
	if binErr != nil {
		t.Fatal(binErr)
	}
	return binPath
}

func TestMain(m *testing.M) {
	flag.Parse()
	code := m.Run()
	if binDir != "" {
		os.RemoveAll(binDir)
	}
	os.Exit(code)
}

// tail is the end of s, for failure messages.
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

package xla

// Prepare against the real PJRT plugins of scripts/peers.sh pjrt-plugins
// (internal/testneed): the probe's verdict on each flag is checked
// against what the plugin does with it, and every environment Prepare
// makes (subcache choice × role) is run in a real go-xla process through
// the caching wrapper Prepare sets up. Without the plugins these tests
// skip (fail under CI=true).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/testneed"
)

// EnvWriteCensus, set to 1, makes TestRealFlagCensus write the census
// table to testdata/pjrt-census.md (copied into docs/xla.md).
const EnvWriteCensus = "XLACACHE_WRITE_CENSUS"

// realPlugins maps a display name to each installed real plugin.
func realPlugins(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for pkg, path := range testneed.PJRTPlugins(t) {
		switch pkg {
		case "xla_plugins/xla_cpu_pjrt":
			out["xla-cpu-pjrt 0.0.1"] = path
		case "lammps_jax_pjrt_cpu":
			out["lammps-jax-pjrt-cpu 0.11.2"] = path
		default:
			out[pkg] = path
		}
	}
	return out
}

var (
	runnerOnce sync.Once
	runnerPath string
	runnerErr  error
)

// pjrtRunner builds xla/pjrt's go-xla host (testdata/pjrtrun) once.
func pjrtRunner(t *testing.T) string {
	t.Helper()
	runnerOnce.Do(func() {
		dir, err := os.MkdirTemp("", "xla-pjrtrun")
		if err != nil {
			runnerErr = err
			return
		}
		runnerPath = filepath.Join(dir, "pjrtrun")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", runnerPath, "./pjrt/testdata/pjrtrun").CombinedOutput(); err != nil {
			runnerErr = fmt.Errorf("building pjrtrun: %v: %s", err, out)
		}
	})
	if runnerErr != nil {
		t.Fatal(runnerErr)
	}
	return runnerPath
}

// hostResult is what one pjrtrun process did.
type hostResult struct {
	aborted  bool // XLA refused a flag and ended the process
	counters []uint64
	outputs  string
	stderr   string
}

// runHost runs pjrtrun (go-xla: load the plugin, create a client, compile
// and run add.mlir) with exactly env, and fails the test on anything but
// success or XLA's unknown-flag abort.
func runHost(t *testing.T, env map[string]string, plugin string) hostResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	prog, _ := filepath.Abs("pjrt/testdata/add.mlir")
	cmd := exec.CommandContext(ctx, pjrtRunner(t), "-plugin", plugin, prog)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + env["HOME"]}
	for k, v := range env {
		if k != "HOME" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := hostResult{stderr: stderr.String()}
	if err != nil {
		if strings.Contains(r.stderr, "Unknown flag") {
			r.aborted = true
			return r
		}
		t.Fatalf("pjrtrun: %v\nXLA_FLAGS=%s\n%s", err, env[EnvXLAFlags], r.stderr)
	}
	var rep struct {
		Results []struct {
			Outputs string `json:"outputs_sha256"`
			Err     string `json:"err"`
		} `json:"results"`
		Counters []uint64 `json:"counters"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || len(rep.Results) != 1 || rep.Results[0].Err != "" {
		t.Fatalf("pjrtrun output %q (%v)\n%s", stdout.String(), err, r.stderr)
	}
	r.counters, r.outputs = rep.Counters, rep.Results[0].Outputs
	return r
}

// censusFlags are the flags Prepare can emit (every value it gives them)
// and a control no XLA knows.
func censusFlags(dir string) []Flag {
	return []Flag{
		{Name: FlagAutotuneCacheDir, Value: AutotuneDir(dir), HasValue: true},
		{Name: FlagAutotuneCacheMode, Value: ModeUpdate, HasValue: true},
		{Name: FlagAutotuneCacheMode, Value: ModeRead, HasValue: true},
		{Name: FlagKernelCacheFile, Value: KernelFile(dir), HasValue: true},
		{Name: FlagLLVMModuleParallelism, Value: "true", HasValue: true},
		{Name: FlagAutotunerCacheDir, Value: AutotuneDir(dir), HasValue: true},
		{Name: "xla_no_such_flag_for_control", Value: "1", HasValue: true},
	}
}

// TestRealFlagCensus sets each flag alone in XLA_FLAGS of a go-xla process
// on each real plugin: the flags the probe says the plugin registers are
// accepted, every other one aborts the process.
func TestRealFlagCensus(t *testing.T) {
	plugins := realPlugins(t)
	names := make([]string, 0, len(plugins))
	for n := range plugins {
		names = append(names, n)
	}
	sort.Strings(names)
	dir := t.TempDir()
	if err := CreateAutotuneDir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	verdict := map[string]map[string]string{} // flag -> plugin -> verdict
	flags := censusFlags(dir)
	for _, name := range names {
		sup, err := ProbePlugin(context.Background(), plugins[name])
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range flags {
			r := runHost(t, map[string]string{"HOME": t.TempDir(), EnvXLAFlags: f.String()}, plugins[name])
			known := sup.Knows(f.Name)
			if r.aborted == known {
				t.Errorf("%s: --%s: probe says registered=%v, process aborted=%v\n%s", name, f.Name, known, r.aborted, r.stderr)
			}
			row := strings.Replace(f.String(), dir, "$DIR", 1)
			if verdict[row] == nil {
				verdict[row] = map[string]string{}
			}
			verdict[row][name] = map[bool]string{false: "accepted", true: "**aborts**"}[r.aborted]
		}
	}
	var b strings.Builder
	b.WriteString("| flag in `XLA_FLAGS` (go-xla process, plain plugin) |")
	for _, n := range names {
		fmt.Fprintf(&b, " %s |", n)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(names)) + "\n")
	for _, f := range flags {
		row := strings.Replace(f.String(), dir, "$DIR", 1)
		fmt.Fprintf(&b, "| `%s` |", row)
		for _, n := range names {
			fmt.Fprintf(&b, " %s |", verdict[row][n])
		}
		b.WriteString("\n")
	}
	t.Logf("census:\n%s", b.String())
	if os.Getenv(EnvWriteCensus) == "1" {
		if err := os.WriteFile("testdata/pjrt-census.md", []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// TestRealPrepareNeverAborts runs, for each real plugin, each subcache
// choice and each role, a go-xla process in exactly the environment
// Prepare made (XLA's flags from the probe, and the caching wrapper found
// by go-xla's search by name): it never aborts, and computes what the
// plain plugin computes. A writer's second process loads the program from
// the cache; a reader never stores.
func TestRealPrepareNeverAborts(t *testing.T) {
	plugins := realPlugins(t)
	buildDir := t.TempDir()
	subcaches := map[string][]config.Subcache{
		"all":      {config.SubcacheAutotune, config.SubcacheKernels},
		"none":     {},
		"autotune": {config.SubcacheAutotune},
		"kernels":  {config.SubcacheKernels},
	}
	for name, path := range plugins {
		t.Run(name, func(t *testing.T) {
			// go-xla finds the plugin by name "cpu" in this directory.
			search := t.TempDir()
			if err := os.Symlink(path, filepath.Join(search, "pjrt_c_api_cpu_plugin.so")); err != nil {
				t.Fatal(err)
			}
			home := t.TempDir()
			want := runHost(t, map[string]string{"HOME": home, EnvPluginPath: search}, "cpu").outputs
			for sc, subs := range subcaches {
				for _, role := range []config.Role{config.RoleWriter, config.RoleReader} {
					t.Run(sc+"/"+role.String(), func(t *testing.T) {
						o := config.Defaults()
						o.Dir = t.TempDir()
						o.Subcaches, o.Role, o.MinCompileTime = subs, role, 0
						env := fakeEnv{"HOME": home, EnvPluginPath: search}
						p, err := Prepare(context.Background(), o, PrepareOptions{PluginName: "cpu", LookupEnv: env.lookup, Setenv: env.set, WrapperDir: buildDir})
						if err != nil {
							t.Fatal(err)
						}
						defer p.Close()
						if p.Wrapper == nil {
							t.Fatalf("no wrapper: %s", p.WrapperSkipped)
						}
						first := runHost(t, env, "cpu")
						if first.aborted {
							t.Fatalf("aborted with XLA_FLAGS=%q (probe: %v)\n%s", env[EnvXLAFlags], p.Support.Known(), first.stderr)
						}
						if first.outputs != want {
							t.Errorf("outputs %s, plain plugin %s", first.outputs, want)
						}
						// counters: inner compiles, hits, fallbacks, stored
						if len(first.counters) != 5 {
							t.Fatalf("no wrapper counters: the process did not load the wrapper\n%s", first.stderr)
						}
						c := first.counters
						if role == config.RoleReader {
							if c[0] != 1 || c[1] != 0 || c[2] != 0 || c[3] != 0 {
								t.Errorf("reader: compiles %d, hits %d, fallbacks %d, stored %d; want one compile, nothing stored\n%s", c[0], c[1], c[2], c[3], first.stderr)
							}
							return
						}
						if c[0] != 1 || c[3] != 1 || c[2] != 0 {
							t.Errorf("writer, cold: compiles %d, fallbacks %d, stored %d; want 1, 0, 1\n%s", c[0], c[2], c[3], first.stderr)
						}
						second := runHost(t, env, "cpu")
						if c := second.counters; len(c) != 5 || c[0] != 0 || c[1] != 1 {
							t.Errorf("writer, new process: counters %v, want a hit and no compile\n%s", c, second.stderr)
						}
						if second.outputs != want {
							t.Errorf("hit: outputs %s, plain plugin %s", second.outputs, want)
						}
					})
				}
			}
		})
	}
}

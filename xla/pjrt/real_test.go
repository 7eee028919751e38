package pjrt

// Tests against real PJRT plugins, in real processes: testdata/pjrtrun (a
// go-xla program) loads the wrapper by name through go-xla's own loader
// (PJRT_PLUGIN_LIBRARY_PATH), compiles, runs and reports its outputs'
// hash and the wrapper's counters; the helper runs in this test process
// (or, for the on-demand test, as this test binary started by the
// wrapper).

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testneed"
)

// EnvTestPlugin names a real PJRT plugin for these tests, instead of the
// ones scripts/peers.sh pjrt-plugins installs.
const EnvTestPlugin = "XLACACHE_TEST_PJRT_PLUGIN"

func TestMain(m *testing.M) {
	// Started by the wrapper as its helper: `<binary> pjrt serve ...`.
	if len(os.Args) > 2 && os.Args[1] == "pjrt" && os.Args[2] == "serve" {
		os.Exit(helperMain(os.Args[3:]))
	}
	code := m.Run()
	if toolDir != "" {
		os.RemoveAll(toolDir)
	}
	os.Exit(code)
}

// helperMain is `xlacache pjrt serve` for the on-demand test: the same
// Listen, Server and cache, opened from the environment, and a pid file
// beside the socket so the test can end it.
func helperMain(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	sock := fs.String("socket", "", "")
	idle := fs.Duration("idle-exit", 0, "")
	if fs.Parse(args) != nil {
		return 2
	}
	ln, err := Listen(*sock)
	if err != nil {
		return 0
	}
	os.WriteFile(*sock+".pid", fmt.Appendf(nil, "%d", os.Getpid()), 0o600)
	o, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		return 1
	}
	c, err := cache.Open(context.Background(), o, slog.Default())
	if err != nil {
		c = nil
	}
	(&Server{Cache: c, IdleExit: *idle}).Serve(context.Background(), ln)
	return 0
}

// realPlugins returns the real PJRT plugins to test with, by name:
// XLACACHE_TEST_PJRT_PLUGIN's, or those that scripts/peers.sh
// pjrt-plugins installed (internal/testneed). Without any the test is
// skipped (failed under CI=true).
func realPlugins(t *testing.T) map[string]string {
	t.Helper()
	if p := os.Getenv(EnvTestPlugin); p != "" {
		return map[string]string{"env": p}
	}
	found := map[string]string{}
	for pkg, path := range testneed.PJRTPlugins(t) {
		switch pkg {
		case "xla_plugins/xla_cpu_pjrt":
			found["xla-cpu-pjrt"] = path
		case "lammps_jax_pjrt_cpu":
			found["lammps-jax-pjrt-cpu"] = path
		default:
			found[pkg] = path
		}
	}
	return found
}

// plugin returns one real plugin: name's if installed, else any.
func plugin(t *testing.T, name string) string {
	t.Helper()
	all := realPlugins(t)
	if p, ok := all[name]; ok {
		return p
	}
	for _, p := range all {
		return p
	}
	return ""
}

var (
	toolOnce sync.Once
	toolDir  string
	toolErr  error
	wrapper  string // the built wrapper
	runner   string // the built testdata/pjrtrun
)

// tools builds the wrapper and the pjrtrun host once per test binary.
func tools(t *testing.T) {
	t.Helper()
	toolOnce.Do(func() {
		if toolDir, toolErr = os.MkdirTemp("", "xlacache-pjrt-test"); toolErr != nil {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if wrapper, toolErr = Build(ctx, toolDir, ""); toolErr != nil {
			return
		}
		runner = filepath.Join(toolDir, "pjrtrun")
		out, err := exec.CommandContext(ctx, "go", "build", "-o", runner, "./testdata/pjrtrun").CombinedOutput()
		if err != nil {
			toolErr = fmt.Errorf("building testdata/pjrtrun: %v: %s", err, out)
		}
	})
	if toolErr != nil {
		t.Fatal(toolErr)
	}
}

type runReport struct {
	Plugin  string `json:"plugin"`
	Results []struct {
		Program   string  `json:"program"`
		CompileMS float64 `json:"compile_ms"`
		ReadyMS   float64 `json:"ready_ms"`
		Outputs   string  `json:"outputs_sha256"`
		Err       string  `json:"err"`
	} `json:"results"`
	Counters []uint64 `json:"counters"`
	Stderr   string   `json:"-"`
}

// inner compiles, hits, fallbacks, stored
func (r runReport) counts() (compiles, hits, fallbacks, stored uint64) {
	if len(r.Counters) != 5 {
		return 99, 99, 99, 99
	}
	return r.Counters[0], r.Counters[1], r.Counters[2], r.Counters[3]
}

// host describes how a pjrtrun process loads its plugin.
type host struct {
	inner  string // the real plugin
	dir    string // wrapper layout directory ("" for the plain plugin)
	socket string
	extra  []string // environment
	flags  []string // pjrtrun flags
	// compileErrs lets programs fail to compile (run returns their
	// errors in the report instead of failing the test).
	compileErrs bool
}

// wrapped lays the wrapper out for inner and returns a host using it
// through go-xla's search by name ("cpu").
func wrapped(t *testing.T, inner, socket string) host {
	t.Helper()
	tools(t)
	d, _, err := Layout(t.TempDir(), wrapper, inner, "cpu")
	if err != nil {
		t.Fatal(err)
	}
	return host{inner: inner, dir: d, socket: socket}
}

// run runs pjrtrun on programs in a new process and fails the test on any
// program error.
func (h host) run(t *testing.T, programs ...string) runReport {
	t.Helper()
	tools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	args := append([]string{"-plugin", "cpu"}, h.flags...)
	if h.dir == "" {
		args[1] = h.inner
	}
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "XLACACHE_") && !strings.HasPrefix(kv, "PJRT_") {
			env = append(env, kv)
		}
	}
	if h.dir != "" {
		env = append(env, "PJRT_PLUGIN_LIBRARY_PATH="+h.dir, EnvInner+"="+h.inner, EnvSocket+"="+h.socket)
	}
	env = append(env, h.extra...)
	for i, p := range programs {
		if !filepath.IsAbs(p) {
			programs[i], _ = filepath.Abs(p)
		}
	}
	cmd := exec.CommandContext(ctx, runner, append(args, programs...)...)
	cmd.Env = env
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pjrtrun: %v\n%s", err, stderr.String())
	}
	var r runReport
	if err := json.Unmarshal(stdout.Bytes(), &r); err != nil {
		t.Fatalf("pjrtrun output %q: %v", stdout.String(), err)
	}
	r.Stderr = stderr.String()
	for _, res := range r.Results {
		if h.compileErrs {
			break
		}
		if res.Err != "" || res.Outputs == "" {
			t.Fatalf("%s: %s\n%s", res.Program, res.Err, r.Stderr)
		}
	}
	return r
}

func expect(t *testing.T, what string, r runReport, compiles, hits, fallbacks, stored uint64) {
	t.Helper()
	c, h, f, s := r.counts()
	if c != compiles || h != hits || f != fallbacks || s != stored {
		t.Errorf("%s: inner compiles %d, hits %d, fallbacks %d, stored %d; want %d, %d, %d, %d\nstderr:\n%s",
			what, c, h, f, s, compiles, hits, fallbacks, stored, r.Stderr)
	}
}

const (
	addProgram   = "testdata/add.mlir"
	otherProgram = "testdata/other.mlir"
	mlpProgram   = "../../examples/mlp/mlp.mlir"
)

// keys records the key each program got, by module name.
type keys struct {
	mu sync.Mutex
	m  map[string]cache.Key
}

func (k *keys) hook(r Request, key cache.Key) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.m == nil {
		k.m = map[string]cache.Key{}
	}
	k.m[moduleName(r)] = key
}

func (k *keys) get(t *testing.T, module string) cache.Key {
	t.Helper()
	k.mu.Lock()
	defer k.mu.Unlock()
	key, ok := k.m[module]
	if !ok {
		t.Fatalf("no request for module %s", module)
	}
	return key
}

// A cold process compiles and stores; a new process loads without one
// inner compile and computes bit-identical outputs to the plain plugin's.
func TestRealColdThenHit(t *testing.T) {
	for name, inner := range realPlugins(t) {
		t.Run(name, func(t *testing.T) {
			programs := []string{addProgram}
			if name == "xla-cpu-pjrt" || name == "env" {
				programs = append(programs, mlpProgram)
			}
			plain := host{inner: inner}.run(t, programs...)
			sock := serve(t, &Server{Cache: openCache(t, t.TempDir())})
			h := wrapped(t, inner, sock)
			cold := h.run(t, programs...)
			expect(t, "cold", cold, uint64(len(programs)), 0, 0, uint64(len(programs)))
			warm := h.run(t, programs...)
			expect(t, "new process", warm, 0, uint64(len(programs)), 0, 0)
			for i := range programs {
				if cold.Results[i].Outputs != plain.Results[i].Outputs || warm.Results[i].Outputs != plain.Results[i].Outputs {
					t.Errorf("%s: outputs plain %s, cold %s, hit %s: want identical", programs[i],
						plain.Results[i].Outputs, cold.Results[i].Outputs, warm.Results[i].Outputs)
				}
			}
		})
	}
}

// Entries that must never load: another program's executable under this
// key (forged with valid checksums), a corrupted file, an entry signed
// with another key, and another plugin's executable of the same program.
// Each is a miss: compile, correct outputs.
func TestRealBadEntriesNeverLoad(t *testing.T) {
	inner := plugin(t, "xla-cpu-pjrt")
	ctx := context.Background()
	dir := t.TempDir()
	c := openCache(t, dir)
	var k keys
	sock := serve(t, &Server{Cache: c, keyHook: k.hook})
	h := wrapped(t, inner, sock)
	want := host{inner: inner}.run(t, addProgram).Results[0].Outputs
	h.run(t, addProgram, otherProgram)
	tier := c.Tier(cache.ExecutablesTier)
	addKey, otherKey := k.get(t, "add"), k.get(t, "other")
	good, ok := tier.Get(ctx, addKey)
	if !ok {
		t.Fatal("no entry stored for add")
	}
	entryFile := func(t *testing.T) string {
		t.Helper()
		var files []string
		filepath.Walk(filepath.Join(dir, "executables"), func(p string, info os.FileInfo, err error) error {
			if err == nil && info.Mode().IsRegular() && filepath.Base(p) == addKey.String() {
				files = append(files, p)
			}
			return nil
		})
		if len(files) != 1 {
			t.Fatalf("entry files for add: %v", files)
		}
		return files[0]
	}
	// replace stores payload under add's key with valid checksums (the
	// first writer of a key wins: the entry there goes first).
	replace := func(t *testing.T, payload []byte) {
		t.Helper()
		if err := os.Remove(entryFile(t)); err != nil {
			t.Fatal(err)
		}
		if err := tier.Put(ctx, addKey, payload, time.Second); err != nil {
			t.Fatal(err)
		}
		if got, ok := tier.Get(ctx, addKey); !ok || !bytes.Equal(got, payload) {
			t.Fatal("the replacement entry was not stored")
		}
	}
	check := func(t *testing.T, what string) {
		t.Helper()
		r := h.run(t, addProgram)
		expect(t, what, r, 1, 0, 0, 1)
		if r.Results[0].Outputs != want {
			t.Errorf("%s: outputs %s, want %s", what, r.Results[0].Outputs, want)
		}
	}

	t.Run("another program's executable", func(t *testing.T) {
		forged, ok := tier.Get(ctx, otherKey)
		if !ok {
			t.Fatal("no entry stored for other")
		}
		replace(t, forged)
		check(t, "forged entry")
	})

	t.Run("corrupt file", func(t *testing.T) {
		file := entryFile(t)
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		data[len(data)/2] ^= 0xff
		if err := os.WriteFile(file, data, 0o600); err != nil {
			t.Fatal(err)
		}
		check(t, "corrupt entry")
	})

	t.Run("signed with another key", func(t *testing.T) {
		sdir := t.TempDir()
		other := openCache(t, sdir, func(o *config.Options) { o.SigningKey = sign.NewHMAC([]byte("the other key, 32 bytes long....")) })
		if err := other.Tier(cache.ExecutablesTier).Put(ctx, addKey, good, time.Second); err != nil {
			t.Fatal(err)
		}
		other.Close()
		signed := openCache(t, sdir, func(o *config.Options) { o.SigningKey = sign.NewHMAC([]byte("this cache's key, 32 bytes long.")) })
		hs := wrapped(t, inner, serve(t, &Server{Cache: signed}))
		r := hs.run(t, addProgram)
		expect(t, "entry signed with another key", r, 1, 0, 0, 1)
	})

	if lp, ok := realPlugins(t)["lammps-jax-pjrt-cpu"]; ok {
		t.Run("another plugin's executable", func(t *testing.T) {
			var lk keys
			lc := openCache(t, t.TempDir())
			hl := wrapped(t, lp, serve(t, &Server{Cache: lc, keyHook: lk.hook}))
			hl.run(t, addProgram)
			foreign, ok := lc.Tier(cache.ExecutablesTier).Get(ctx, lk.get(t, "add"))
			if !ok {
				t.Fatal("no entry stored by the other plugin")
			}
			if lk.get(t, "add").Digest == addKey.Digest {
				t.Fatal("two plugins gave the same key")
			}
			replace(t, foreign)
			check(t, "other plugin's entry")
		})
	}
}

// Many goroutines compiling one program at once in a cold process: one
// inner compile, the others load its entry, every output the same.
func TestRealConcurrentCompiles(t *testing.T) {
	inner := plugin(t, "xla-cpu-pjrt")
	sock := serve(t, &Server{Cache: openCache(t, t.TempDir())})
	const n = 8
	want := host{inner: inner}.run(t, addProgram).Results[0].Outputs
	h := wrapped(t, inner, sock)
	h.flags = []string{"-parallel", fmt.Sprint(n)}
	r := h.run(t, addProgram)
	expect(t, "8 goroutines", r, 1, n-1, 0, 1)
	if len(r.Results) != n {
		t.Fatalf("%d results, want %d", len(r.Results), n)
	}
	for i, res := range r.Results {
		if res.Outputs != want {
			t.Errorf("goroutine %d: outputs %s, want %s", i, res.Outputs, want)
		}
	}
}

// The cache unreachable in every way a deployment meets: no helper, a
// helper that never answers, one that hangs up, an unusable directory.
// The program runs, compiled by the inner plugin, with the same outputs.
func TestRealCacheUnreachable(t *testing.T) {
	inner := plugin(t, "xla-cpu-pjrt")
	want := host{inner: inner}.run(t, addProgram).Results[0].Outputs
	silent := func(hangUp bool) string {
		sock := filepath.Join(shortDir(t), "h.sock")
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { ln.Close() })
		go func() {
			for {
				c, err := ln.Accept()
				if err != nil {
					return
				}
				if hangUp {
					c.Close()
				} else {
					t.Cleanup(func() { c.Close() })
				}
			}
		}()
		return sock
	}
	for _, tc := range []struct {
		name   string
		socket func() string
	}{
		{"no helper", func() string { return filepath.Join(shortDir(t), "none.sock") }},
		{"helper never answers", func() string { return silent(false) }},
		{"helper hangs up", func() string { return silent(true) }},
		{"cache directory unusable", func() string {
			file := filepath.Join(t.TempDir(), "file")
			os.WriteFile(file, nil, 0o600)
			o := config.Defaults()
			o.Dir = filepath.Join(file, "cache")
			c, err := cache.Open(context.Background(), o, slog.Default())
			if err != nil {
				c = nil // as xlacache pjrt serve does
			}
			return serve(t, &Server{Cache: c})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := wrapped(t, inner, tc.socket())
			h.extra = []string{EnvTimeoutMS + "=500"}
			start := time.Now()
			r := h.run(t, addProgram)
			c, hits, _, stored := r.counts()
			if c != 1 || hits != 0 || stored != 0 {
				t.Errorf("inner compiles %d, hits %d, stored %d; want one compile, nothing cached\n%s", c, hits, stored, r.Stderr)
			}
			if r.Results[0].Outputs != want {
				t.Errorf("outputs %s, want %s", r.Results[0].Outputs, want)
			}
			if strings.Count(r.Stderr, "xlacache-pjrt:") > 1 {
				t.Errorf("more than one log line:\n%s", r.Stderr)
			}
			if time.Since(start) > time.Minute {
				t.Errorf("took %v", time.Since(start))
			}
		})
	}
}

// The host CPU's features and the inner plugin's file are each part of the
// key: either one changed, the entry is not loaded.
func TestRealKeySplitsByCPUAndPlugin(t *testing.T) {
	inner := plugin(t, "xla-cpu-pjrt")
	dir := t.TempDir()
	runWith := func(cpu, plug string) runReport {
		c := openCache(t, dir)
		defer c.Close()
		return wrapped(t, plug, serve(t, &Server{Cache: c, CPUFeatures: cpu})).run(t, addProgram)
	}
	expect(t, "first", runWith("cpu A", inner), 1, 0, 0, 1)
	expect(t, "same CPU, same plugin", runWith("cpu A", inner), 0, 1, 0, 0)
	expect(t, "other CPU features", runWith("cpu B", inner), 1, 0, 0, 1)

	// The same plugin with one byte appended: a loadable library whose
	// file hash differs.
	copyPath := filepath.Join(t.TempDir(), filepath.Base(inner))
	data, err := os.ReadFile(inner)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(copyPath, append(data, 0), 0o755); err != nil {
		t.Fatal(err)
	}
	expect(t, "other plugin file", runWith("cpu A", copyPath), 1, 0, 0, 1)
}

// With no helper running and XLACACHE_PJRT_HELPER set, the wrapper starts
// one (here: this test binary), and a later process hits.
func TestRealHelperStartedOnDemand(t *testing.T) {
	inner := plugin(t, "xla-cpu-pjrt")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(shortDir(t), "h.sock")
	t.Cleanup(func() {
		if pid, err := os.ReadFile(sock + ".pid"); err == nil {
			var p int
			fmt.Sscan(string(pid), &p)
			if proc, err := os.FindProcess(p); err == nil && p > 0 {
				proc.Kill()
				proc.Wait()
			}
		}
	})
	h := wrapped(t, inner, sock)
	h.extra = []string{EnvHelper + "=" + self, EnvIdle + "=30s", "XLACACHE_DIR=" + t.TempDir(),
		"XLACACHE_MIN_COMPILE_TIME_SECS=0", "XLACACHE_ROLE=writer"}
	expect(t, "first process", h.run(t, addProgram), 1, 0, 0, 1)
	expect(t, "second process", h.run(t, addProgram), 0, 1, 0, 0)
}

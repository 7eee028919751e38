package testneed

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// recorder is a testing.TB that records how Missing ended the test
// instead of ending the real one.
type recorder struct {
	testing.TB
	mu      sync.Mutex
	skipped string
	fatal   string
	logs    []string
}

func (r *recorder) Helper() {}
func (r *recorder) Skip(args ...any) {
	r.skipped = strings.TrimSpace(strings.Join(strArgs(args), " "))
}
func (r *recorder) Fatal(args ...any) {
	r.fatal = strings.TrimSpace(strings.Join(strArgs(args), " "))
}
func (r *recorder) Logf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs = append(r.logs, format)
}

func strArgs(args []any) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a.(string)
	}
	return out
}

func TestMissing(t *testing.T) {
	for _, tc := range []struct {
		name, ci  string
		wantSkip  bool
		wantFatal bool
	}{
		{"outside CI skips", "", true, false},
		{"CI=false skips", "false", true, false},
		{"CI=1 is not CI=true: skips", "1", true, false},
		{"CI=true fails", "true", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(EnvCI, tc.ci)
			log := filepath.Join(t.TempDir(), "skips")
			t.Setenv(EnvSkipLog, log)
			r := &recorder{TB: t}
			Missing(r, "peers", "jax 0.12\tenv\n(x)", "bash scripts/peers.sh")
			if got := r.skipped != ""; got != tc.wantSkip {
				t.Errorf("skipped = %q, want skip %v", r.skipped, tc.wantSkip)
			}
			if got := r.fatal != ""; got != tc.wantFatal {
				t.Errorf("fatal = %q, want fatal %v", r.fatal, tc.wantFatal)
			}
			msg := r.skipped + r.fatal
			if strings.Count(msg, "\n") > 0 || !strings.Contains(msg, "bash scripts/peers.sh") || !strings.Contains(msg, "jax 0.12") {
				t.Errorf("message %q: want one line naming what is missing and the install command", msg)
			}
			b, err := os.ReadFile(log)
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != "peers\tjax 0.12 env (x)\n" {
				t.Errorf("skip log = %q", b)
			}
		})
	}
}

// TestSkipLogAppendsConcurrently: many tests reporting at once leave one
// whole line each.
func TestSkipLogAppendsConcurrently(t *testing.T) {
	t.Setenv(EnvCI, "")
	log := filepath.Join(t.TempDir(), "skips")
	t.Setenv(EnvSkipLog, log)
	var wg sync.WaitGroup
	for i := 0; i < 50; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			Missing(&recorder{TB: t}, "versitygw", strings.Repeat("x", 100), "go install …")
		}()
	}
	wg.Wait()
	b, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(lines) != 50 {
		t.Fatalf("%d lines, want 50", len(lines))
	}
	for _, l := range lines {
		if l != "versitygw\t"+strings.Repeat("x", 100) {
			t.Fatalf("torn line %q", l)
		}
	}
}

func TestSkipLogUnwritableDoesNotFail(t *testing.T) {
	t.Setenv(EnvCI, "")
	t.Setenv(EnvSkipLog, filepath.Join(t.TempDir(), "no", "such", "dir", "log"))
	r := &recorder{TB: t}
	Missing(r, "g", "w", "h")
	if r.skipped == "" || r.fatal != "" || len(r.logs) != 1 {
		t.Fatalf("skipped %q fatal %q logs %q", r.skipped, r.fatal, r.logs)
	}
}

func TestPeerEnvVar(t *testing.T) {
	for list, want := range map[string]string{
		"jax-0.12.0.1": "XLACACHE_PEER_JAX_0_12_0_1",
		"jax-0.4.36":   "XLACACHE_PEER_JAX_0_4_36",
		"pjrt-plugins": "XLACACHE_PEER_PJRT_PLUGINS",
	} {
		if got := PeerEnvVar(list); got != want {
			t.Errorf("PeerEnvVar(%q) = %q, want %q", list, got, want)
		}
	}
}

// TestVenvNameMatchesScript: the Go side and scripts/peers.sh must name a
// list's venv alike (sha256sum | cut -c1-12).
func TestVenvNameMatchesScript(t *testing.T) {
	// printf 'a\n' | sha256sum
	if got, want := VenvName("x", []byte("a\n")), "x-87428fc52280"; got != want {
		t.Fatalf("VenvName = %q, want %q", got, want)
	}
}

// fakePeers makes a repository with peers/<list>.txt and a peers
// directory, returning both.
func fakePeers(t *testing.T, list, content string) (repo, peers string) {
	t.Helper()
	repo, peers = t.TempDir(), t.TempDir()
	if err := os.WriteFile(filepath.Join(repo, "go.mod"), []byte("module x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "peers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(repo, "peers", list+".txt"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(repo, "a", "b")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Chdir(sub)
	t.Setenv(EnvPeersDir, peers)
	t.Setenv(PeerEnvVar(list), "")
	return repo, peers
}

func makeVenv(t *testing.T, venv string, marker bool) string {
	t.Helper()
	py := filepath.Join(venv, "bin", "python")
	if err := os.MkdirAll(filepath.Dir(py), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(py, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if marker {
		if err := os.WriteFile(filepath.Join(venv, markerFile), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return py
}

func TestPeerPython(t *testing.T) {
	t.Setenv(EnvCI, "")
	t.Setenv(EnvSkipLog, "")
	const list = "jax-9.9"

	t.Run("installed", func(t *testing.T) {
		_, peers := fakePeers(t, list, "jax==9.9\n")
		py := makeVenv(t, filepath.Join(peers, VenvName(list, []byte("jax==9.9\n"))), true)
		if got := PeerPython(t, list); got != py {
			t.Fatalf("PeerPython = %q, want %q", got, py)
		}
	})
	t.Run("interrupted install (no marker) is missing", func(t *testing.T) {
		_, peers := fakePeers(t, list, "jax==9.9\n")
		makeVenv(t, filepath.Join(peers, VenvName(list, []byte("jax==9.9\n"))), false)
		r := &recorder{TB: t}
		PeerPython(r, list)
		if !strings.Contains(r.skipped, PeersCommand) {
			t.Fatalf("skipped = %q, want the install command", r.skipped)
		}
	})
	t.Run("venv of an older list is not used", func(t *testing.T) {
		_, peers := fakePeers(t, list, "jax==9.9\n")
		makeVenv(t, filepath.Join(peers, VenvName(list, []byte("jax==9.8\n"))), true)
		r := &recorder{TB: t}
		PeerPython(r, list)
		if r.skipped == "" {
			t.Fatal("a venv for other pins was accepted")
		}
	})
	t.Run("environment variable wins", func(t *testing.T) {
		fakePeers(t, list, "jax==9.9\n")
		py := makeVenv(t, filepath.Join(t.TempDir(), "v"), false)
		t.Setenv(PeerEnvVar(list), py)
		if got := PeerPython(t, list); got != py {
			t.Fatalf("PeerPython = %q, want %q", got, py)
		}
	})
	t.Run("environment variable naming nothing is missing", func(t *testing.T) {
		fakePeers(t, list, "jax==9.9\n")
		t.Setenv(PeerEnvVar(list), filepath.Join(t.TempDir(), "nope"))
		r := &recorder{TB: t}
		PeerPython(r, list)
		if r.skipped == "" {
			t.Fatal("a missing interpreter was accepted")
		}
	})
	t.Run("CI=true fails", func(t *testing.T) {
		fakePeers(t, list, "jax==9.9\n")
		t.Setenv(EnvCI, "true")
		r := &recorder{TB: t}
		PeerPython(r, list)
		if r.fatal == "" || r.skipped != "" {
			t.Fatalf("fatal %q skipped %q", r.fatal, r.skipped)
		}
	})
}

// TestFindPJRTPlugins builds two shared objects, one exporting
// GetPjrtApi, and expects only that one found.
func TestFindPJRTPlugins(t *testing.T) {
	cc, err := exec.LookPath("cc")
	if err != nil {
		Missing(t, "toolchain", "a C compiler (cc)", "apt-get install gcc libc6-dev")
	}
	venv := t.TempDir()
	site := filepath.Join(venv, "lib", "python3.12", "site-packages")
	build := func(dir, name, src string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(site, dir), 0o755); err != nil {
			t.Fatal(err)
		}
		c := filepath.Join(t.TempDir(), "x.c")
		if err := os.WriteFile(c, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(cc, "-shared", "-fPIC", "-o", filepath.Join(site, dir, name), c).CombinedOutput(); err != nil {
			t.Fatalf("cc: %v\n%s", err, out)
		}
	}
	build("xla_plugins/fake_pjrt", "fake.so", "void *GetPjrtApi(void) { return 0; }\n")
	build("other", "other.so", "void *GetSomethingElse(void) { return 0; }\n")
	build("caller", "caller.so", "extern void *GetPjrtApi(void); void *f(void) { return GetPjrtApi(); }\n")
	got, err := FindPJRTPlugins(venv)
	if err != nil {
		t.Fatal(err)
	}
	want := filepath.Join(site, "xla_plugins/fake_pjrt", "fake.so")
	if len(got) != 1 || got["xla_plugins/fake_pjrt"] != want {
		t.Fatalf("FindPJRTPlugins = %v, want only %s", got, want)
	}
}

// TestPJRTPluginsInstalled: the plugins peer holds both plugin wheels'
// libraries (skips where scripts/peers.sh has not installed it).
func TestPJRTPluginsInstalled(t *testing.T) {
	got := PJRTPlugins(t)
	for _, dir := range []string{"xla_plugins/xla_cpu_pjrt", "lammps_jax_pjrt_cpu"} {
		if got[dir] == "" {
			t.Errorf("no PJRT plugin in %s; found %v", dir, got)
		}
	}
	t.Logf("%v", got)
}

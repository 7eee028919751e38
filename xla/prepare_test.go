package xla

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
)

type fakeEnv map[string]string

func (e fakeEnv) lookup(k string) (string, bool) { v, ok := e[k]; return v, ok }
func (e fakeEnv) set(k, v string) error          { e[k] = v; return nil }

func TestPrepare(t *testing.T) {
	ctx := context.Background()
	A, K := config.SubcacheAutotune, config.SubcacheKernels
	t.Run("writer creates the autotune dir and merges", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "cache with space")
		env := fakeEnv{"XLA_FLAGS": "--xla_gpu_autotune_level=2", EnvXLAVersion: "0.5.0"}
		p, err := Prepare(ctx, opts(dir, 0, config.RoleAuto, A, K), PrepareOptions{LookupEnv: env.lookup, Setenv: env.set})
		if err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(AutotuneDir(dir)); err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Fatalf("autotune dir: %v %v", st, err)
		}
		pf, err := ParseFlags(env["XLA_FLAGS"])
		if err != nil {
			t.Fatal(err)
		}
		for name, want := range map[string]string{
			FlagAutotuneCacheDir: AutotuneDir(dir), FlagAutotuneCacheMode: ModeUpdate,
			FlagKernelCacheFile: KernelFile(dir), "xla_gpu_autotune_level": "2",
		} {
			if f, ok := pf.Lookup(name); !ok || f.Value != want {
				t.Errorf("--%s = %q (%v), want %q; XLA_FLAGS=%q", name, f.Value, ok, want, env["XLA_FLAGS"])
			}
		}
		if p.Support.Source != SourceVersion {
			t.Errorf("support source %s", p.Support.Source)
		}
	})
	t.Run("reader does not create anything", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "c")
		env := fakeEnv{}
		if _, err := Prepare(ctx, opts(dir, 1, config.RoleAuto, A, K), PrepareOptions{LookupEnv: env.lookup, Setenv: env.set}); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			t.Errorf("reader created %s: %v", dir, err)
		}
		if !strings.Contains(env["XLA_FLAGS"], "cache_mode=AUTOTUNE_CACHE_MODE_READ") || strings.Contains(env["XLA_FLAGS"], FlagKernelCacheFile) {
			t.Errorf("XLA_FLAGS=%q", env["XLA_FLAGS"])
		}
	})
	t.Run("old stated version sets nothing", func(t *testing.T) {
		env := fakeEnv{"XLA_FLAGS": "--keep"}
		p, err := Prepare(ctx, opts(t.TempDir(), 0, config.RoleAuto, A), PrepareOptions{Version: "0.4.31", LookupEnv: env.lookup, Setenv: env.set})
		if err != nil {
			t.Fatal(err)
		}
		if env["XLA_FLAGS"] != "--keep" || len(p.Skipped) != 1 {
			t.Errorf("XLA_FLAGS=%q skipped=%v", env["XLA_FLAGS"], p.Skipped)
		}
	})
	t.Run("plugin probe wins over a stated version", func(t *testing.T) {
		plugin := fakePlugin(t, 10, []string{probeAnchor, FlagAutotuneCacheDir}, nil)
		env := fakeEnv{}
		if _, err := Prepare(ctx, opts(t.TempDir(), 0, config.RoleAuto, A), PrepareOptions{Plugin: plugin, Version: "0.9.0", LookupEnv: env.lookup, Setenv: env.set}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(env["XLA_FLAGS"], FlagAutotuneCacheDir) || strings.Contains(env["XLA_FLAGS"], FlagAutotuneCacheMode) {
			t.Errorf("XLA_FLAGS=%q", env["XLA_FLAGS"])
		}
	})
	t.Run("plugin found by name on go-xla's search path", func(t *testing.T) {
		plugin := fakePlugin(t, 10, []string{probeAnchor}, nil) // knows none of our flags
		env := fakeEnv{EnvPluginPath: "/nonexistent:" + filepath.Dir(plugin)}
		if got, ok := FindPlugin("fake", env.lookup); !ok || got != plugin {
			t.Fatalf("FindPlugin = %q %v", got, ok)
		}
		p, err := Prepare(ctx, opts(t.TempDir(), 0, config.RoleAuto, A), PrepareOptions{PluginName: "fake", LookupEnv: env.lookup, Setenv: env.set})
		if err != nil {
			t.Fatal(err)
		}
		if _, set := env["XLA_FLAGS"]; set || p.Support.Source != SourcePlugin {
			t.Errorf("XLA_FLAGS=%q support=%v", env["XLA_FLAGS"], p.Support)
		}
	})
	t.Run("flags file is read and inlined", func(t *testing.T) {
		f := filepath.Join(t.TempDir(), "flags")
		if err := os.WriteFile(f, []byte("--xla_gpu_autotune_level=1\n"), 0o600); err != nil {
			t.Fatal(err)
		}
		env := fakeEnv{"XLA_FLAGS": f}
		if _, err := Prepare(ctx, opts(t.TempDir(), 0, config.RoleAuto, A), PrepareOptions{LookupEnv: env.lookup, Setenv: env.set}); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(env["XLA_FLAGS"], "--xla_gpu_autotune_level=1") || !strings.HasPrefix(env["XLA_FLAGS"], "--"+FlagAutotuneCacheDir) {
			t.Errorf("XLA_FLAGS=%q", env["XLA_FLAGS"])
		}
	})
	t.Run("bad version is an error and changes nothing", func(t *testing.T) {
		env := fakeEnv{}
		if _, err := Prepare(ctx, opts(t.TempDir(), 0, config.RoleAuto, A), PrepareOptions{Version: "latest", LookupEnv: env.lookup, Setenv: env.set}); err == nil || !strings.Contains(err.Error(), "latest") {
			t.Errorf("err = %v", err)
		}
		if len(env) != 0 {
			t.Errorf("env changed: %v", env)
		}
	})
	t.Run("caching off", func(t *testing.T) {
		env := fakeEnv{}
		if _, err := Prepare(ctx, config.Defaults(), PrepareOptions{LookupEnv: env.lookup, Setenv: env.set}); err != nil || len(env) != 0 {
			t.Errorf("err=%v env=%v", err, env)
		}
	})
}

// TestLaunchEnvBash has bash eval the output for a writer and a reader and
// checks what a launched program would see.
func TestLaunchEnvBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := "/tmp/xla cache/it's \"here\""
	sup := SupportForVersion(Version{0, 6, 0}, SourceVersion)
	var goKey string
	for _, tc := range []struct {
		index  int
		target Target
		want   map[string]string
	}{
		{0, TargetAll, map[string]string{"XLACACHE_DIR": dir, "XLACACHE_PROCESS_INDEX": "0", EnvJAXCacheDir: dir, EnvJAXXLACaches: "all", "XLA_FLAGS": "--user"}},
		// Readers get the same JAX settings as the writer (kernel cache
		// included): JAX hashes the kernel cache file into its key.
		{2, TargetAll, map[string]string{"XLACACHE_PROCESS_INDEX": "2", EnvJAXCacheDir: dir, EnvJAXXLACaches: "all", "XLA_FLAGS": "--user"}},
		{0, TargetGo, map[string]string{"XLA_FLAGS": `--xla_gpu_per_fusion_autotune_cache_dir="/tmp/xla cache/it's \"here\"/xla_gpu_per_fusion_autotune_cache_dir" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE --xla_gpu_kernel_cache_file="/tmp/xla cache/it's \"here\"/xla_gpu_kernel_cache_file" --xla_gpu_enable_llvm_module_compilation_parallelism=true --user`}},
		{1, TargetGo, map[string]string{"XLA_FLAGS": `--xla_gpu_per_fusion_autotune_cache_dir="/tmp/xla cache/it's \"here\"/xla_gpu_per_fusion_autotune_cache_dir" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_READ --xla_gpu_enable_llvm_module_compilation_parallelism=true --user`, EnvJAXCacheDir: ""}},
	} {
		o := opts(dir, tc.index, config.RoleAuto, config.SubcacheAutotune, config.SubcacheKernels)
		l, err := LaunchEnv(o, tc.target, sup, "--user")
		if err != nil {
			t.Fatal(err)
		}
		script, err := FormatLaunch(l, ShellBash, []string{"header line\nwith newline; touch /tmp/pwned"})
		if err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bash, "-c", `export XLA_FLAGS=--user; eval "$1"; printf '%s\0' "$XLACACHE_DIR" "$XLACACHE_PROCESS_INDEX" "$JAX_COMPILATION_CACHE_DIR" "$JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES" "$XLA_FLAGS"`, "bash", script)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("bash: %v\n%s", err, script)
		}
		vals := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
		got := map[string]string{"XLACACHE_DIR": vals[0], "XLACACHE_PROCESS_INDEX": vals[1], EnvJAXCacheDir: vals[2], EnvJAXXLACaches: vals[3], "XLA_FLAGS": vals[4]}
		for k, v := range tc.want {
			if got[k] != v {
				t.Errorf("index %d target %s: %s = %q, want %q\nscript:\n%s", tc.index, tc.target, k, got[k], v, script)
			}
		}
		// XLA reads the path back exactly.
		if tc.target == TargetGo {
			pf, err := ParseFlags(got["XLA_FLAGS"])
			if err != nil {
				t.Fatal(err)
			}
			if f, _ := pf.Lookup(FlagAutotuneCacheDir); f.Value != AutotuneDir(dir) {
				t.Errorf("XLA would read dir %q", f.Value)
			}
			// Writer and readers of one job key their executables alike.
			key, err := NormalizeFlagsForKey(got["XLA_FLAGS"])
			if err != nil {
				t.Fatal(err)
			}
			if goKey == "" {
				goKey = key
			} else if key != goKey {
				t.Errorf("index %d keys XLA_FLAGS as %q, another process as %q", tc.index, key, goKey)
			}
		}
	}
	if _, err := os.Stat("/tmp/pwned"); err == nil {
		t.Error("a comment line ran as a command")
	}
}

func TestFormatLaunchFishAndJSON(t *testing.T) {
	l := Launch{Vars: []EnvVar{{Name: "A", Value: `it's \ here`}}}
	fish, err := FormatLaunch(l, ShellFish, nil)
	if err != nil || !strings.Contains(fish, `set -gx A 'it\'s \\ here';`) {
		t.Errorf("fish: %q %v", fish, err)
	}
	js, err := FormatLaunch(l, ShellJSON, nil)
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ Env map[string]string }
	if err := json.Unmarshal([]byte(js), &back); err != nil || back.Env["A"] != `it's \ here` {
		t.Errorf("json: %s %v", js, err)
	}
	if _, err := FormatLaunch(l, "tcsh", nil); err == nil {
		t.Error("unknown shell accepted")
	}
}

func TestPluginSearchPaths(t *testing.T) {
	got := PluginSearchPaths(fakeEnv{"HOME": "/h", "LD_LIBRARY_PATH": "/l1:rel:/l2"}.lookup)
	want := []string{"/h/.local/lib/go-xla", "/h/.local/lib/go-xla/nvidia", "/h/.local/lib/gomlx/pjrt",
		"/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia", "/usr/local/lib/gomlx/pjrt", "/l1", "/l2"}
	if strings.Join(got, ":") != strings.Join(want, ":") {
		t.Errorf("default paths %v, want %v", got, want)
	}
	// PJRT_PLUGIN_LIBRARY_PATH replaces the defaults, as in go-xla.
	got = PluginSearchPaths(fakeEnv{"HOME": "/h", EnvPluginPath: "/p1::/p2"}.lookup)
	if strings.Join(got, ":") != "/p1:/p2" {
		t.Errorf("PJRT_PLUGIN_LIBRARY_PATH paths %v", got)
	}
	for _, bad := range []string{"", "..", "../x", "a/b"} {
		if _, ok := FindPlugin(bad, fakeEnv{EnvPluginPath: t.TempDir()}.lookup); ok {
			t.Errorf("FindPlugin(%q) found something", bad)
		}
	}
}

// XLACACHE_ENABLE_XLA_CACHES is passed on only when the user chose it:
// otherwise each backend keeps its own default subcaches.
func TestLaunchEnvSubcachesOnlyWhenChosen(t *testing.T) {
	sup := SupportForVersion(Version{0, 6, 0}, SourceVersion)
	has := func(l Launch) (string, bool) {
		for _, v := range l.Vars {
			if v.Name == config.EnvEnableXLA {
				return v.Value, true
			}
		}
		return "", false
	}
	o := config.Defaults()
	o.Dir = "/c"
	l, err := LaunchEnv(o, TargetGo, sup, "")
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := has(l); ok {
		t.Errorf("default subcaches exported as %s=%q", config.EnvEnableXLA, v)
	}
	o.Subcaches, o.SubcachesExplicit = []config.Subcache{config.SubcacheKernels}, true
	if l, err = LaunchEnv(o, TargetGo, sup, ""); err != nil {
		t.Fatal(err)
	}
	if v, ok := has(l); !ok || v != "kernels" {
		t.Errorf("chosen subcaches exported as %q (present %v), want kernels", v, ok)
	}
}

// TestLaunchEnvNeverBoundsJAX checks that XLACACHE_MAX_SIZE is passed on
// for xlacache's own prune but never to JAX as
// JAX_COMPILATION_CACHE_MAX_SIZE, for every target and role: a bound there
// needs the filelock package (else JAX's cache is off) and -atime files
// that unbounded entries lack.
func TestLaunchEnvNeverBoundsJAX(t *testing.T) {
	sup := SupportForVersion(Version{0, 6, 0}, SourceVersion)
	for _, target := range []Target{TargetAll, TargetJAX, TargetGo} {
		for _, index := range []int{0, 3} {
			o := opts(t.TempDir(), index, config.RoleAuto, config.SubcacheAutotune, config.SubcacheKernels)
			o.MaxSize = 10 << 30
			l, err := LaunchEnv(o, target, sup, "")
			if err != nil {
				t.Fatal(err)
			}
			var sawOwn bool
			for _, v := range l.Vars {
				switch v.Name {
				case EnvJAXMaxSize:
					t.Errorf("target %s index %d: sets %s=%s", target, index, v.Name, v.Value)
				case config.EnvMaxSize:
					sawOwn = v.Value == "10737418240"
				}
			}
			if !sawOwn {
				t.Errorf("target %s index %d: %s not set to the bound", target, index, config.EnvMaxSize)
			}
			for _, shell := range []string{ShellBash, ShellFish, ShellJSON} {
				text, err := FormatLaunch(l, shell, nil)
				if err != nil {
					t.Fatal(err)
				}
				// The name may appear in the explaining comment, never as a
				// variable the shell sets.
				for _, bad := range []string{"export " + EnvJAXMaxSize, "set -gx " + EnvJAXMaxSize, `"` + EnvJAXMaxSize + `":`, `"name": "` + EnvJAXMaxSize} {
					if strings.Contains(text, bad) {
						t.Errorf("target %s index %d shell %s: output sets %s:\n%s", target, index, shell, EnvJAXMaxSize, text)
					}
				}
			}
		}
	}
}

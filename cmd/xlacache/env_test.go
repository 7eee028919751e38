package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/xla"
)

// TestEnvEvalByBash has bash eval `xlacache env` for a writer and a reader
// of a JAX job and of a Go job, and checks what the launched program sees.
func TestEnvEvalByBash(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	dir := filepath.Join(t.TempDir(), "shared cache")
	t.Setenv("XLACACHE_DIR", dir)
	t.Setenv("XLACACHE_ENABLE_XLA_CACHES", "all")
	t.Setenv("XLA_FLAGS", "--xla_gpu_autotune_level=3")
	for _, tc := range []struct {
		args []string
		want map[string]string
	}{
		{[]string{"env", "--process-index", "0"}, map[string]string{
			"XLACACHE_PROCESS_INDEX": "0", "JAX_COMPILATION_CACHE_DIR": dir, "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "all",
			"XLA_FLAGS": "--xla_gpu_autotune_level=3"}},
		{[]string{"env", "--process-index", "5", "--target", "jax"}, map[string]string{
			"XLACACHE_PROCESS_INDEX": "5", "JAX_COMPILATION_CACHE_DIR": dir, "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES": "all", // as on process 0: JAX hashes the kernel cache file
			"XLA_FLAGS": "--xla_gpu_autotune_level=3"}},
		{[]string{"env", "--process-index", "0", "--target", "go", "--jaxlib-version", "0.5.0"}, map[string]string{
			"XLACACHE_DIR": dir, "JAX_COMPILATION_CACHE_DIR": "",
			"XLA_FLAGS": `--xla_gpu_per_fusion_autotune_cache_dir="` + dir + `/xla_gpu_per_fusion_autotune_cache_dir" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE --xla_gpu_kernel_cache_file="` + dir + `/xla_gpu_kernel_cache_file" --xla_gpu_enable_llvm_module_compilation_parallelism=true --xla_gpu_autotune_level=3`}},
		// A reader gets no kernel cache but the same compile option as the
		// writer: xlacache's key includes it.
		{[]string{"env", "--process-index", "1", "--target", "go", "--xla-version", "0.5.0"}, map[string]string{
			"XLA_FLAGS": `--xla_gpu_per_fusion_autotune_cache_dir="` + dir + `/xla_gpu_per_fusion_autotune_cache_dir" --xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_READ --xla_gpu_enable_llvm_module_compilation_parallelism=true --xla_gpu_autotune_level=3`}},
		{[]string{"env", "--process-index", "0", "--target", "go", "--jaxlib-version", "0.4.30"}, map[string]string{
			"XLA_FLAGS": "--xla_gpu_autotune_level=3"}},
	} {
		out, err := runCLI(t, tc.args...)
		if err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		cmd := exec.Command(bash, "-c", `eval "$1"; for v in XLACACHE_DIR XLACACHE_PROCESS_INDEX JAX_COMPILATION_CACHE_DIR JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES XLA_FLAGS; do printf '%s=%s\0' "$v" "${!v}"; done`, "bash", out)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "XLA_FLAGS=--xla_gpu_autotune_level=3"}
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: bash: %v\n%s", tc.args, err, out)
		}
		vals := map[string]string{}
		for _, kv := range strings.Split(strings.TrimSuffix(string(got), "\x00"), "\x00") {
			k, v, _ := strings.Cut(kv, "=")
			vals[k] = v
		}
		for k, v := range tc.want {
			if vals[k] != v {
				t.Errorf("%v: %s = %q, want %q\n%s", tc.args, k, vals[k], v, out)
			}
		}
		if strings.Contains(tc.args[len(tc.args)-1], "0.4.30") && !strings.Contains(out, "not set: --xla_gpu_per_fusion_autotune_cache_dir") {
			t.Errorf("old XLA: skipped flags not explained:\n%s", out)
		}
	}
	// The writer of a Go job gets the autotune directory XLA requires.
	if st, err := os.Stat(xla.AutotuneDir(dir)); err != nil || !st.IsDir() {
		t.Errorf("autotune dir not created: %v", err)
	}
}

func TestEnvShowsSettingsAndRejectsBadFlags(t *testing.T) {
	t.Setenv("XLACACHE_DIR", t.TempDir())
	out, err := runCLI(t, "env")
	if err != nil || !strings.Contains(out, "# XLACACHE_DIR=") || !strings.Contains(out, "(env)") {
		t.Errorf("env: %v\n%s", err, out)
	}
	for _, args := range [][]string{
		{"env", "--target", "perl"},
		{"env", "--shell", "tcsh", "--process-index", "1"},
		{"env", "--process-index", "-1"},
		{"env", "--target", "go", "--jaxlib-version", "latest"},
	} {
		_, err := runCLI(t, args...)
		if cli.ExitCode("xlacache", err, &bytes.Buffer{}) != cli.ExitUsage {
			t.Errorf("%v: err %v, want a usage error", args, err)
		}
	}
}

// TestEnvDoesNotHandMaxSizeToJAX has bash eval `xlacache env` with
// XLACACHE_MAX_SIZE set and checks that the launched JAX process sees no
// JAX_COMPILATION_CACHE_MAX_SIZE (which needs the filelock package, else
// JAX's cache is off), while xlacache's own bound is passed on for prune.
func TestEnvDoesNotHandMaxSizeToJAX(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("bash not installed")
	}
	t.Setenv("XLACACHE_DIR", t.TempDir())
	t.Setenv("XLACACHE_MAX_SIZE", "2GiB")
	for _, args := range [][]string{
		{"env", "--process-index", "0"},
		{"env", "--process-index", "4"},
		{"env", "--process-index", "0", "--target", "jax"},
		{"env", "--process-index", "0", "--target", "go", "--jaxlib-version", "0.6.0"},
	} {
		out, err := runCLI(t, args...)
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		cmd := exec.Command(bash, "-c", `eval "$1"; printf '%s|%s|%s' "${JAX_COMPILATION_CACHE_MAX_SIZE-unset}" "$XLACACHE_MAX_SIZE" "${JAX_COMPILATION_CACHE_DIR-unset}"`, "bash", out)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		got, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: bash: %v\n%s", args, err, out)
		}
		parts := strings.Split(string(got), "|")
		if parts[0] != "unset" {
			t.Errorf("%v: JAX_COMPILATION_CACHE_MAX_SIZE=%q, want unset\n%s", args, parts[0], out)
		}
		if parts[1] != "2147483648" {
			t.Errorf("%v: XLACACHE_MAX_SIZE=%q, want 2147483648\n%s", args, parts[1], out)
		}
	}
}

// TestEnvJAXVarsIdenticalAcrossProcesses runs `xlacache env --shell json`
// for a writer and readers of one job, for every subcache choice, and
// checks that every JAX_* variable is byte-identical: JAX hashes the
// kernel cache file it derives from them into its key, so a difference
// would split the key between processes (issue 13, item 1).
func TestEnvJAXVarsIdenticalAcrossProcesses(t *testing.T) {
	t.Setenv("XLACACHE_DIR", t.TempDir())
	for _, subs := range []string{"none", "autotune", "kernels", "all"} {
		t.Setenv("XLACACHE_ENABLE_XLA_CACHES", subs)
		for _, target := range []string{"all", "jax"} {
			var first map[string]string
			for _, idx := range []string{"0", "1", "9"} {
				out, err := runCLI(t, "env", "--process-index", idx, "--target", target, "--shell", "json")
				if err != nil {
					t.Fatalf("%s %s %s: %v", subs, target, idx, err)
				}
				var got struct{ Env map[string]string }
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatalf("%s: %v", out, err)
				}
				jax := map[string]string{}
				for k, v := range got.Env {
					if strings.HasPrefix(k, "JAX_") || k == "XLA_FLAGS" {
						jax[k] = v
					}
				}
				if jax["JAX_COMPILATION_CACHE_DIR"] == "" {
					t.Fatalf("%s %s: no JAX_COMPILATION_CACHE_DIR:\n%s", subs, target, out)
				}
				if first == nil {
					first = jax
					continue
				}
				if !reflect.DeepEqual(jax, first) {
					t.Errorf("subcaches %s target %s: process %s gets %v, process 0 %v", subs, target, idx, jax, first)
				}
			}
		}
	}
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `xlacache pjrt env` builds the wrapper, lays it out under the plugin's
// names and prints the environment; JSON gives the same values.
func TestPJRTEnv(t *testing.T) {
	dir := t.TempDir()
	plugin := filepath.Join(dir, "xla_cpu_pjrt.so") // not loaded: only laid out
	os.WriteFile(plugin, []byte("not really a plugin"), 0o644)
	build := filepath.Join(dir, "build")
	t.Setenv("XLACACHE_DIR", filepath.Join(dir, "cache"))
	out, err := runCLI(t, "pjrt", "env", "--plugin", plugin, "--build-dir", build, "--shell", "json")
	if err != nil {
		t.Fatal(err)
	}
	var env map[string]string
	if err := json.Unmarshal([]byte(out), &env); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	lib := env["PJRT_PLUGIN_LIBRARY_PATH"]
	for _, name := range []string{"pjrt_c_api_cpu_plugin.so", "xla_cpu_pjrt.so"} {
		target, err := os.Readlink(filepath.Join(lib, name))
		if err != nil || !strings.HasPrefix(target, build) {
			t.Errorf("%s in %s: %q %v, want the built wrapper", name, lib, target, err)
		}
	}
	if env["XLACACHE_PJRT_INNER"] != plugin || env["PJRT_NAMES_AND_LIBRARY_PATHS"] != "cpu:"+filepath.Join(lib, "pjrt_c_api_cpu_plugin.so") ||
		env["XLACACHE_PJRT_SOCKET"] == "" || env["XLACACHE_PJRT_HELPER"] == "" || env["XLACACHE_DIR"] != filepath.Join(dir, "cache") {
		t.Errorf("environment: %v", env)
	}
	sh, err := runCLI(t, "pjrt", "env", "--plugin", plugin, "--build-dir", build, "--no-helper")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sh, "export PJRT_PLUGIN_LIBRARY_PATH='"+lib+"'\n") || strings.Contains(sh, "XLACACHE_PJRT_HELPER") {
		t.Errorf("shell output:\n%s", sh)
	}
	if _, err := runCLI(t, "pjrt", "env"); err == nil {
		t.Error("no --plugin accepted")
	}
}

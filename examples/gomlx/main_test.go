package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
)

// TestExampleRunsWithoutPlugin runs the example as CI does, where no PJRT
// plugin is installed: it must train on the pure-Go backend and say that
// XLA's caches are inactive.
func TestExampleRunsWithoutPlugin(t *testing.T) {
	empty := t.TempDir()
	env := map[string]string{
		"XLACACHE_DIR":             filepath.Join(t.TempDir(), "cache"),
		"PJRT_PLUGIN_LIBRARY_PATH": empty, // go-xla searches only here
		"HOME":                     empty,
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	if _, err := os.Stat(filepath.Join(empty, "pjrt_c_api_cpu_plugin.so")); err == nil {
		t.Fatal("unexpected plugin")
	}
	var out bytes.Buffer
	// The xla backend reads PJRT_PLUGIN_LIBRARY_PATH from the process
	// environment at init; the test process has none set in CI, and this
	// check makes the assumption explicit.
	if v := os.Getenv("PJRT_PLUGIN_LIBRARY_PATH"); v != "" {
		t.Skipf("PJRT_PLUGIN_LIBRARY_PATH=%s is set: a plugin may be installed, not the CI case", v)
	}
	if err := run(context.Background(), &out, lookup); err != nil {
		t.Fatal(err)
	}
	s := out.String()
	if strings.Contains(s, "XLA plugin") {
		t.Skipf("a PJRT plugin is installed on this machine; ran on XLA:\n%s", s)
	}
	if !strings.Contains(s, "XLA's caches are inactive") || !strings.Contains(s, "trained on SimpleGo") {
		t.Errorf("output:\n%s", s)
	}
}

func TestTrainConverges(t *testing.T) {
	b, _, err := newBackend(context.Background(), &bytes.Buffer{}, config.Defaults(), func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	r, err := train(b)
	if err != nil {
		t.Fatal(err)
	}
	if r.final >= r.first/100 || r.w < 2.9 || r.w > 3.1 || r.b < 0.9 || r.b > 1.1 {
		t.Errorf("did not converge: %+v", r)
	}
}

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// runRealJAX runs `xlacache -v exec -- <python> jit.py` (xla/jaxtest's
// one jit) on a host with dir, sharing srv's bucket, and returns exec's
// and the program's output.
func runRealJAX(t *testing.T, srv *s3test.Server, dir, python string, extra ...string) string {
	t.Helper()
	jit, err := filepath.Abs("../../xla/jaxtest/testdata/jit.py")
	if err != nil {
		t.Fatal(err)
	}
	env := execEnv(srv, dir, append([]string{"XLACACHE_MIN_COMPILE_TIME_SECS=0", "XLACACHE_MIN_ENTRY_SIZE_BYTES=0",
		"XLACACHE_PROCESS_INDEX=0", "JAX_PLATFORMS=cpu"}, extra...)...)
	cmd := exec.Command(os.Args[0], "-v", "exec", "--", python, jit)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "JAXTEST ") {
		t.Fatalf("exec %s: %v\n%s", python, err, out)
	}
	return string(out)
}

// jaxKeys returns the JAX entries in dir, by key.
func jaxKeys(t *testing.T, dir string) map[string]bool {
	t.Helper()
	d, err := jaxcache.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for _, e := range d.Entries {
		keys[e.Key] = true
	}
	return keys
}

// explainIn runs `xlacache explain query` on dir.
func explainIn(t *testing.T, dir, query string) string {
	t.Helper()
	t.Setenv("XLACACHE_DIR", dir)
	out, stderr, err := execCLI(t, "explain", query)
	if err != nil {
		t.Fatalf("explain %s: %v\n%s%s", query, err, out, stderr)
	}
	return out
}

// TestExecRealJAXScopedAndExplained is issue 24's two-host cases with
// real JAX (the peers' jax 0.12.0.1 and 0.4.36) under `xlacache exec` and
// versitygw: host B, on the other jaxlib, fills nothing of host A's pack
// and says so, JAX compiles what A had published, and exec's report and
// `xlacache explain` name "jaxlib 0.12.0.1 vs 0.4.36"; host C, on A's
// jaxlib with one more XLA flag, fills A's pack, misses, and both name
// the flag.
func TestExecRealJAXScopedAndExplained(t *testing.T) {
	py12 := testneed.PeerPython(t, "jax-0.12.0.1")
	py436 := testneed.PeerPython(t, "jax-0.4.36")
	srv := s3test.Start(t, "bkt")
	hostA, hostB, hostC := t.TempDir(), t.TempDir(), t.TempDir()

	outA := runRealJAX(t, srv, hostA, py12)
	keysA := jaxKeys(t, hostA)
	if len(keysA) == 0 {
		t.Fatalf("host A stored no JAX entry\n%s", outA)
	}

	outB := runRealJAX(t, srv, hostB, py436)
	for _, want := range []string{
		"skipped 1 pack",
		"of runtime jaxlib 0.12.0.1, JAX_PLATFORMS cpu (this host: jaxlib 0.4.36, JAX_PLATFORMS cpu)",
		"differs=\"jaxlib 0.12.0.1 vs 0.4.36\"",
	} {
		if !strings.Contains(outB, want) {
			t.Errorf("host B's report lacks %q:\n%s", want, outB)
		}
	}
	for k := range keysA {
		if _, err := os.Stat(filepath.Join(hostB, k+"-cache")); err == nil {
			t.Errorf("host B has host A's %s", k)
		}
	}
	// jit_iota is a module both releases compile.
	var iotaB string
	for k := range jaxKeys(t, hostB) {
		if strings.HasPrefix(k, "jit_iota-") {
			iotaB = k
		}
	}
	if iotaB == "" {
		t.Fatalf("host B compiled no jit_iota\n%s", outB)
	}
	if !strings.Contains(outB, "JAX compiled "+iotaB+" here;") || !strings.Contains(outB, "jaxlib 0.12.0.1 vs 0.4.36") {
		t.Errorf("host B's report does not name jaxlib for jit_iota:\n%s", outB)
	}
	ex := explainIn(t, hostB, iotaB)
	t.Logf("explain on host B:\n%s", ex)
	if !strings.Contains(ex, "differs: jaxlib 0.12.0.1 vs 0.4.36") {
		t.Errorf("explain on host B does not name jaxlib")
	}

	const flag = "--xla_backend_optimization_level=1"
	outC := runRealJAX(t, srv, hostC, py12, "XLA_FLAGS="+flag)
	// C skips B's pack (jaxlib 0.4.36) and fills A's.
	if !strings.Contains(outC, "skipped 1 pack") || !strings.Contains(outC, "of runtime jaxlib 0.4.36") {
		t.Errorf("host C did not skip host B's pack alone:\n%s", outC)
	}
	for k := range keysA {
		if _, err := os.Stat(filepath.Join(hostC, k+"-cache")); err != nil {
			t.Errorf("host C lacks host A's %s", k)
		}
	}
	var fresh string
	for k := range jaxKeys(t, hostC) {
		if strings.HasPrefix(k, "jit_iota-") && !keysA[k] {
			fresh = k
		}
	}
	if fresh == "" {
		t.Fatalf("host C compiled no jit_iota of its own\n%s", outC)
	}
	wantFlag := "XLA_FLAGS differ in --xla_backend_optimization_level (unset vs 1)"
	if !strings.Contains(outC, wantFlag) {
		t.Errorf("host C's report does not say %q:\n%s", wantFlag, outC)
	}
	ex = explainIn(t, hostC, fresh)
	t.Logf("explain on host C:\n%s", ex)
	if !strings.Contains(ex, "differs: "+wantFlag) {
		t.Errorf("explain on host C does not say %q", wantFlag)
	}

	// stats counts each host's JAX entries, and those never loaded, by
	// the runtime they are for.
	for _, h := range []struct {
		dir, runtime string
	}{{hostB, "jaxlib 0.4.36, JAX_PLATFORMS cpu"}, {hostC, "jaxlib 0.12.0.1, JAX_PLATFORMS cpu"}} {
		t.Setenv("XLACACHE_DIR", h.dir)
		out, stderr, err := execCLI(t, "stats")
		if err != nil {
			t.Fatalf("stats: %v\n%s%s", err, out, stderr)
		}
		want := fmt.Sprintf("runtime %s: %d entries, ", h.runtime, len(jaxKeys(t, h.dir)))
		if !strings.Contains(out, want) {
			t.Errorf("stats on %s lacks %q:\n%s", h.dir, want, out)
		}
	}
}

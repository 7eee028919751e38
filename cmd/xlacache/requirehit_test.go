package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
)

// xlacacheProc runs this test binary as xlacache (TestMain) in a new
// process with env added, and returns its stdout, stderr and exit code.
func xlacacheProc(t *testing.T, env []string, args ...string) (string, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), testMainEnv+"=1", config.EnvSigningKey+"=", config.EnvRole+"=", config.EnvProcessIndex+"=",
		config.EnvRequireHit+"=", config.EnvMinCompileTime+"=0")
	cmd.Env = append(cmd.Env, env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("xlacache %s: %v", strings.Join(args, " "), err)
	}
	return stdout.String(), stderr.String(), code
}

// requireHitLines are the lines of out that XLACACHE_REQUIRE_HIT=warn
// logged.
func requireHitLines(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "compiled without a cache hit") {
			lines = append(lines, l)
		}
	}
	return lines
}

// TestRequireHitProcesses (issue 24 item 2): in real xlacache processes,
// require-hit fail stops a warm job that would compile (exit 3, each
// program named with why it missed, nothing stored) and passes one that
// does not; warn logs one line per miss and goes on; run behaves alike.
func TestRequireHitProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles programs with cc")
	}
	root := t.TempDir()
	progs := filepath.Join(root, "progs")
	a, b := filepath.Join(progs, "a.mlir"), filepath.Join(progs, "b.mlir")
	for p, text := range map[string]string{a: warmProgram(3), b: warmProgram(5)} {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "cache")
	withDir := func(mode string) []string {
		return []string{config.EnvDir + "=" + dir, config.EnvRequireHit + "=" + mode}
	}

	// Cold, fail: the check fails with exit 3 and names both programs;
	// nothing is compiled or stored.
	out, stderr, code := xlacacheProc(t, withDir("fail"), "warm", "--jobs", "1", progs)
	if code != cli.ExitMiss {
		t.Fatalf("cold warm under fail: exit %d, want %d\n%s%s", code, cli.ExitMiss, out, stderr)
	}
	for _, p := range []string{a, b} {
		if !lineHas(out, p, "missed") || !strings.Contains(out, "error: "+p+": program ") {
			t.Errorf("%s is not reported as missed:\n%s", p, out)
		}
	}
	if !strings.Contains(out, "no entry for this program") || !strings.Contains(out, "0 compiled (0 stored), 0 failed, 2 missed") {
		t.Errorf("the reason or the totals are missing:\n%s", out)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "executables", "*", "*")); len(m) != 0 {
		t.Errorf("a refused warm stored %v", m)
	}
	out, stderr, code = xlacacheProc(t, withDir("fail"), "run", a)
	if code != cli.ExitMiss || !strings.Contains(stderr, a+": program a ") || !strings.Contains(stderr, config.EnvRequireHit+"=fail") {
		t.Fatalf("cold run under fail: exit %d, want %d\n%s%s", code, cli.ExitMiss, out, stderr)
	}

	// Warn: both compile (and are stored), one line each, exit 0.
	out, stderr, code = xlacacheProc(t, withDir("warn"), "warm", "--jobs", "1", progs)
	if code != 0 {
		t.Fatalf("warm under warn: exit %d\n%s%s", code, out, stderr)
	}
	lines := requireHitLines(stderr)
	if len(lines) != 2 || !strings.Contains(stderr, "module=a") || !strings.Contains(stderr, "module=b") || !strings.Contains(lines[0], "no entry for this program") {
		t.Fatalf("warn lines: want one per program, naming it and why:\n%s", stderr)
	}

	// Warm, fail: every program hits, exit 0, no line.
	out, stderr, code = xlacacheProc(t, withDir("fail"), "warm", progs)
	if code != 0 || !strings.Contains(out, "2 already cached") || len(requireHitLines(stderr)) != 0 {
		t.Fatalf("warm check of a full cache: exit %d\n%s%s", code, out, stderr)
	}
	out, stderr, code = xlacacheProc(t, withDir("fail"), "run", b)
	if code != 0 || !strings.Contains(out, "executable hit") {
		t.Fatalf("run of a cached program under fail: exit %d\n%s%s", code, out, stderr)
	}

	// A changed program misses with the component that differs.
	if err := os.WriteFile(a, []byte(strings.Replace(warmProgram(3), "tanh", "exponential", 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, code = xlacacheProc(t, withDir("fail"), "warm", progs)
	if code != cli.ExitMiss || !lineHas(out, a, "missed") || !lineHas(out, b, "hit") || !strings.Contains(out, "differs in: program") {
		t.Fatalf("warm check with a changed program: exit %d\n%s%s", code, out, stderr)
	}
}

package main

import (
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/sysmem"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
	"github.com/xlacache/xlacache/npy"
)

// hugeProgram is issue 10 item 14's program: two 16 GiB arguments.
const hugeProgram = `func.func @main(%a: tensor<2147483648xf64>, %b: tensor<2147483648xf64>) -> tensor<2147483648xf64> {
  %0 = stablehlo.add %a, %b : tensor<2147483648xf64>
  return %0 : tensor<2147483648xf64>
}
`

// fakeMemory makes `run` see a machine with n bytes available.
func fakeMemory(t *testing.T, n int64) {
	t.Helper()
	old := availableMemory
	availableMemory = func() (sysmem.Limit, bool) { return sysmem.Limit{Bytes: n, Source: "test limit"}, true }
	t.Cleanup(func() { availableMemory = old })
}

func writeProgram(t *testing.T, dir, src string) string {
	t.Helper()
	p := filepath.Join(dir, "p.mlir")
	if err := os.WriteFile(p, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func clearCacheEnv(t *testing.T, dir string) {
	t.Helper()
	for _, k := range []string{config.EnvMaxSize, config.EnvSigningKey, config.EnvRole, config.EnvProcessIndex} {
		t.Setenv(k, "")
	}
	t.Setenv(config.EnvDir, filepath.Join(dir, "cache"))
	t.Setenv(config.EnvMinCompileTime, "0")
}

// TestRunRefusesProgramBeyondMemory: the program is refused before any
// tensor is allocated, with an error naming the argument and the sizes.
// The inputs come from a directory holding one 100-byte .npy whose header
// declares the 16 GiB argument: should the memory check ever be skipped,
// loading it fails without allocating (and with a different error), so a
// regression fails this test instead of exhausting the machine.
func TestRunRefusesProgramBeyondMemory(t *testing.T) {
	dir := t.TempDir()
	clearCacheEnv(t, dir)
	prog := writeProgram(t, dir, hugeProgram)
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o700)
	small := &npy.Array{DType: npy.Float64, Shape: []int64{8}, Data: make([]byte, 64)}
	if err := npy.WriteFile(filepath.Join(in, "a.npy"), small); err != nil {
		t.Fatal(err)
	}
	data, _ := os.ReadFile(filepath.Join(in, "a.npy"))
	// Rewrite the shape in place: "(8,)" becomes a 16 GiB declaration.
	data = []byte(strings.Replace(string(data), "(8,), }", "(2147483648,), }", 1))
	os.WriteFile(filepath.Join(in, "a.npy"), data, 0o600)
	os.WriteFile(filepath.Join(in, "b.npy"), data, 0o600)

	fakeMemory(t, 4<<30)
	for _, backend := range []string{"cpu", "interp"} {
		var err error
		var stdout string
		alloc := memtest.Allocated(func() { stdout, _, err = execCLI(t, "run", prog, "--backend", backend, "--inputs", in) })
		if err == nil {
			t.Fatalf("%s: a program needing 64 GiB ran with 4 GiB available:\n%s", backend, stdout)
		}
		msg := err.Error()
		for _, want := range []string{prog, "@main needs", "4.0 GiB is available (test limit)", "inputs 32.0 GiB", "outputs 16.0 GiB",
			"largest tensor: argument #0 of @main %a: tensor<2147483648xf64>, 16.0 GiB"} {
			if !strings.Contains(msg, want) {
				t.Errorf("%s: error %q lacks %q", backend, msg, want)
			}
		}
		if alloc > 256<<20 {
			t.Errorf("%s: allocated %d bytes before refusing", backend, alloc)
		}
	}
}

// TestRunRefusesUnderRlimit reproduces the report on Linux: the
// address space is limited (as `ulimit -v` does) and the program runs
// with the default random inputs and the real memory reader. Before the
// check, this run died with "fatal error: out of memory" (the limit turns
// a regression into a crash of this test binary, not of the machine).
func TestRunRefusesUnderRlimit(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("RLIMIT_AS headroom is read from /proc/self/status")
	}
	dir := t.TempDir()
	clearCacheEnv(t, dir)
	prog := writeProgram(t, dir, hugeProgram)

	var old unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_AS, &old); err != nil {
		t.Skip(err)
	}
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Skip(err)
	}
	var vmKB uint64
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmSize:"); ok {
			for _, f := range strings.Fields(v) {
				if n, err := strconv.ParseUint(f, 10, 64); err == nil {
					vmKB = n
					break
				}
			}
		}
	}
	if vmKB == 0 {
		t.Skip("no VmSize")
	}
	limit := vmKB*1024 + 4<<30
	if old.Cur != unix.RLIM_INFINITY && old.Cur < limit {
		t.Skipf("RLIMIT_AS already %d", old.Cur)
	}
	if err := unix.Setrlimit(unix.RLIMIT_AS, &unix.Rlimit{Cur: limit, Max: old.Max}); err != nil {
		t.Skip(err)
	}
	defer unix.Setrlimit(unix.RLIMIT_AS, &old)
	for _, backend := range []string{"cpu", "interp"} {
		_, _, err := execCLI(t, "run", prog, "--backend", backend)
		if err == nil || !strings.Contains(err.Error(), "(RLIMIT_AS)") || !strings.Contains(err.Error(), "argument #0 of @main %a") {
			t.Errorf("%s: got %v, want a refusal under RLIMIT_AS naming %%a", backend, err)
		}
	}
}

// TestRunWithinMemory: a program that fits still runs on both backends,
// and Go's soft memory limit is restored afterwards; the same program is
// refused when the machine is smaller than it.
func TestRunWithinMemory(t *testing.T) {
	dir := t.TempDir()
	clearCacheEnv(t, dir)
	t.Setenv("GOMEMLIMIT", "")
	prog := writeProgram(t, dir, runTestProgram)
	fakeMemory(t, 1<<30)
	before := debug.SetMemoryLimit(-1)
	for _, backend := range []string{"cpu", "interp"} {
		out, _, err := execCLI(t, "run", prog, "--backend", backend, "--output", filepath.Join(dir, backend+".npz"))
		if err != nil || !strings.Contains(out, "output 0  tensor<4x3xf32>") {
			t.Fatalf("%s: %v\n%s", backend, err, out)
		}
		if got := debug.SetMemoryLimit(-1); got != before {
			t.Errorf("%s: memory limit left at %d, was %d", backend, got, before)
		}
	}
	fakeMemory(t, 100)
	_, _, err := execCLI(t, "run", prog, "--backend", "interp")
	if err == nil || !strings.Contains(err.Error(), "100 B is available") || !strings.Contains(err.Error(), "largest tensor: argument #0 of @main %x: tensor<4x8xf32>, 128 B") {
		t.Fatalf("tiny machine: %v", err)
	}
	// No readable limit: nothing to check against, the program runs.
	availableMemory = func() (sysmem.Limit, bool) { return sysmem.Limit{}, false }
	if _, _, err := execCLI(t, "run", prog, "--backend", "interp"); err != nil {
		t.Fatalf("unknown memory: %v", err)
	}
}

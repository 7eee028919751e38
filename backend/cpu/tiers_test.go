package cpu

import (
	"bytes"
	"context"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

const tierProgram = `func.func @main(%a: tensor<64x96xf32>, %b: tensor<96x80xf32>) -> tensor<64xf32> {
  %0 = stablehlo.dot_general %a, %b, contracting_dims = [1] x [0] : (tensor<64x96xf32>, tensor<96x80xf32>) -> tensor<64x80xf32>
  %1 = stablehlo.tanh %0 : tensor<64x80xf32>
  %2 = stablehlo.constant dense<0.0> : tensor<f32>
  %3 = stablehlo.reduce(%1 init: %2) applies stablehlo.add across dimensions = [1] : (tensor<64x80xf32>, tensor<f32>) -> tensor<64xf32>
  return %3 : tensor<64xf32>
}
`

// TestTiersSaveWork checks what each tier skips: after a cold compile, a
// compile with the executable removed takes its autotuning result and
// kernel objects from the subcaches, and a second compile hits the
// executable outright. A reader never writes.
func TestTiersSaveWork(t *testing.T) {
	dir := t.TempDir()
	compile := func(role config.Role) (*cache.Report, *Executable) {
		opts := config.Defaults()
		opts.Dir, opts.Role = dir, role
		c := openCache(t, opts, nil)
		defer c.Close()
		b := New()
		b.TuneBudget = 100e6
		return compileIn(t, c, b, "tiers", tierProgram)
	}
	rep, exe := compile(config.RoleWriter)
	finals := map[string]bool{}
	reused := map[string]bool{} // tuned kernels, made from candidates (reuse.go)
	for _, k := range exe.Kernels() {
		finals[k.Name] = true
		if k.Tuned {
			reused[k.Name] = true
		}
	}
	exe.Close()
	if rep.Hit || rep.Tiers["cpu/autotune"].Misses == 0 || rep.Tiers["cpu/kernels"].Misses == 0 || !rep.Stored {
		t.Fatalf("cold compile: %+v", rep)
	}
	// Cold, every kernel-tier miss is a compile whose output was stored
	// (final objects and autotune candidate libraries), and asking which
	// candidate's object is cached counts nothing; the tuned kernels'
	// final objects, made from their candidates' object, are stored
	// without a lookup.
	stored := countEntries(t, filepath.Join(dir, "cpu", "kernels"))
	if kt := rep.Tiers["cpu/kernels"]; kt.Misses+len(reused) != stored || kt.Hits != 0 || stored <= len(finals) || len(reused) == 0 {
		t.Fatalf("cold compile: cpu/kernels %+v, want %d misses (%d stored, %d of them tuned kernels made from candidates; %d final kernels)",
			kt, stored-len(reused), stored, len(reused), len(finals))
	}
	m := parseText(t, tierProgram)
	args := randomArgs(m, 5)

	rep, exe = compile(config.RoleWriter)
	if !rep.Hit {
		t.Fatalf("second compile missed the executable: %+v", rep)
	}
	want, err := exe.Run(context.Background(), args)
	exe.Close()
	if err != nil {
		t.Fatal(err)
	}

	if err := os.RemoveAll(filepath.Join(dir, "executables")); err != nil {
		t.Fatal(err)
	}
	rep, exe = compile(config.RoleWriter)
	if rep.Hit || rep.Tiers["cpu/autotune"].Misses != 0 || rep.Tiers["cpu/autotune"].Hits == 0 ||
		rep.Tiers["cpu/kernels"].Misses != 0 || rep.Tiers["cpu/kernels"].Hits == 0 {
		t.Fatalf("subcaches did not serve the recompile: %+v", rep.Tiers)
	}
	for _, k := range exe.Kernels() {
		if !k.ObjectHit {
			t.Errorf("kernel %s was compiled again", k.Name)
		}
	}
	got, err := exe.Run(context.Background(), args)
	exe.Close()
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, got, want, 0)

	// A reader on an empty directory compiles and writes nothing.
	dir = t.TempDir()
	_, exe = compile(config.RoleReader)
	exe.Close()
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() == "executables" || e.Name() == "cpu" {
			t.Errorf("reader wrote %s", e.Name())
		}
	}
}

// TestSubcacheSelection checks that XLACACHE_ENABLE_XLA_CACHES (here: the
// autotune subcache only) turns the kernel tier off for this backend.
func TestSubcacheSelection(t *testing.T) {
	dir := t.TempDir()
	opts := config.Defaults()
	opts.Dir = dir
	opts.Subcaches, opts.SubcachesExplicit = []config.Subcache{config.SubcacheAutotune}, true
	c := openCache(t, opts, nil)
	defer c.Close()
	b := New()
	b.TuneBudget = 100e6
	rep, exe := compileIn(t, c, b, "tiers", tierProgram)
	exe.Close()
	if r, ok := rep.Tiers["cpu/kernels"]; ok {
		t.Errorf("kernel tier used although not selected: %+v", r)
	}
	if rep.Tiers["cpu/autotune"].Misses == 0 {
		t.Errorf("autotune tier not used: %+v", rep.Tiers)
	}
	if _, err := os.Stat(filepath.Join(dir, "cpu", "kernels")); err == nil {
		t.Error("cpu/kernels directory created")
	}
}

// TestTierWriteFailuresLogOnce makes the cpu/kernels and cpu/autotune tiers
// unwritable (their directories are regular files, which fails even for
// root) and checks that the compile still succeeds with correct results,
// that the core counts the failures, and that the log has at most one WARN
// line per failure kind rather than one per kernel.
func TestTierWriteFailuresLogOnce(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "cpu"), 0o700); err != nil {
		t.Fatal(err)
	}
	for _, sub := range []string{"kernels", "autotune"} {
		if err := os.WriteFile(filepath.Join(dir, "cpu", sub), []byte("not a directory"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	var buf bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts := config.Defaults()
	opts.Dir = dir
	c := openCache(t, opts, logger)
	defer c.Close()
	b := New()
	b.TuneBudget = 20e6
	// A failure here is a compile with unwritable subcaches failing.
	rep, exe := compileIn(t, c, b, "failing-tiers", tierProgram)
	defer exe.Close()
	m := parseText(t, tierProgram)
	got, want := runBoth(t, exe, m, randomArgs(m, 7))
	assertClose(t, got, want, 1e-4)

	var errs int64
	for _, n := range c.Stats().Errors {
		errs += n
	}
	if errs == 0 {
		t.Errorf("store failures not counted: %+v (report %+v)", c.Stats().Errors, rep)
	}
	log := buf.String()
	// Several kernels' stores failed: the per-kernel detail is at Debug.
	if n := strings.Count(log, `msg="storing a compiled kernel failed"`); n == 0 {
		t.Errorf("kernel store failures not recorded at Debug:\n%s", log)
	}
	warns := map[string]int{}
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, "level=WARN") {
			continue
		}
		// One failure kind: the message and the tier it is about.
		kind := warnMsg.FindString(line) + " " + warnTier.FindString(line)
		if warns[kind]++; warns[kind] > 1 {
			t.Errorf("WARN repeated for %s:\n%s", kind, line)
		}
	}
	if len(warns) > 4 { // at most: read and write failures of two tiers
		t.Errorf("%d kinds of WARN lines for one compile:\n%s", len(warns), log)
	}
	t.Logf("WARN kinds: %v", warns)
}

var (
	warnMsg  = regexp.MustCompile(`msg=("[^"]*"|\S+)`)
	warnTier = regexp.MustCompile(`tier=\S+`)
)

// countEntries counts the entry files under a tier directory.
func countEntries(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/warm"
)

// warmProgram is a small program whose shape n makes its key distinct.
func warmProgram(n int) string {
	return strings.NewReplacer("8x3", "8x"+strconv.Itoa(n), "4x3", "4x"+strconv.Itoa(n)).Replace(runTestProgram)
}

// writeWarmTree writes good programs (one in a subdirectory), a file that
// is not a program, and a broken program.
func writeWarmTree(t *testing.T) (root, bad string) {
	t.Helper()
	root = t.TempDir()
	bad = filepath.Join(root, "broken.mlir")
	files := map[string]string{
		filepath.Join(root, "a.mlir"):        warmProgram(3),
		filepath.Join(root, "sub", "b.mlir"): warmProgram(5),
		filepath.Join(root, "notes.txt"):     "not a program",
		bad:                                  "func.func @main(%x: tensor<4xf32> -> {",
	}
	for p, text := range files {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return root, bad
}

// TestCLIWarm: warm compiles every .mlir under a directory, names a
// broken program and still compiles the rest (exit 1); a second warm
// hits; --export packs a bundle that import turns into a warm cache.
func TestCLIWarm(t *testing.T) {
	root, bad := writeWarmTree(t)
	work := t.TempDir()
	env := map[string]string{config.EnvDir: filepath.Join(work, "cache"), config.EnvMinCompileTime: "0"}

	out, code := runAdminCLI(t, env, "warm", "--jobs", "2", root)
	if code != 1 {
		t.Fatalf("warm with a broken program: exit %d, want 1\n%s", code, out)
	}
	if !strings.Contains(out, "error: "+bad+":") {
		t.Errorf("the broken program is not named:\n%s", out)
	}
	for _, p := range []string{filepath.Join(root, "a.mlir"), filepath.Join(root, "sub", "b.mlir")} {
		if !lineHas(out, p, "compiled", "yes") {
			t.Errorf("%s not compiled and stored:\n%s", p, out)
		}
	}
	if strings.Contains(out, "notes.txt") || !strings.Contains(out, "3 programs: 0 already cached, 2 compiled (2 stored), 1 failed") {
		t.Errorf("totals:\n%s", out)
	}

	bundle := filepath.Join(work, "bundle.tar.zst")
	out, code = runAdminCLI(t, env, "warm", filepath.Join(root, "a.mlir"), filepath.Join(root, "sub"), "--export", bundle)
	if code != 0 || !lineHas(out, filepath.Join(root, "a.mlir"), "hit (local)") || !strings.Contains(out, "2 already cached") || !strings.Contains(out, "exported ") {
		t.Fatalf("second warm: exit %d\n%s", code, out)
	}

	// The bundle warms a fresh directory: run hits there.
	env2 := map[string]string{config.EnvDir: filepath.Join(work, "cache2"), config.EnvMinCompileTime: "0"}
	if out, code := runAdminCLI(t, env2, "import", bundle); code != 0 {
		t.Fatalf("import: exit %d\n%s", code, out)
	}
	if out, code := runAdminCLI(t, env2, "run", filepath.Join(root, "sub", "b.mlir")); code != 0 || !strings.Contains(out, "executable hit") {
		t.Fatalf("run after import: exit %d\n%s", code, out)
	}

	// Bad invocations are usage errors; a missing file is named.
	if _, code := runAdminCLI(t, env, "warm", "--jobs", "0", root); code != 2 {
		t.Errorf("--jobs 0: exit %d, want 2", code)
	}
	missing := filepath.Join(work, "missing.mlir")
	if out, code := runAdminCLI(t, env, "warm", missing, filepath.Join(root, "a.mlir")); code != 1 || !strings.Contains(out, "error: "+missing) || !lineHas(out, filepath.Join(root, "a.mlir"), "hit") {
		t.Errorf("missing program: exit %d\n%s", code, out)
	}
}

// lineHas reports whether a line of out starts with path and contains
// every one of words.
func lineHas(out, path string, words ...string) bool {
	for _, l := range strings.Split(out, "\n") {
		f := strings.Fields(l)
		if len(f) == 0 || f[0] != path {
			continue
		}
		ok := true
		for _, w := range words {
			ok = ok && strings.Contains(l, w)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestCLIWarmJSONAndMetrics: warm --json reports every program with
// snake_case keys; with XLACACHE_METRICS_FILE a writer's and then a
// reader's warm each leave a metrics file whose hit counts are theirs;
// stats --format prometheus prints the writers' persisted totals.
func TestCLIWarmJSONAndMetrics(t *testing.T) {
	root, _ := writeWarmTree(t)
	good := []string{filepath.Join(root, "a.mlir"), filepath.Join(root, "sub", "b.mlir")}
	work := t.TempDir()
	dir := filepath.Join(work, "cache")
	wfile := filepath.Join(work, "writer.prom")
	env := map[string]string{config.EnvDir: dir, config.EnvMinCompileTime: "0", config.EnvMetricsFile: wfile}

	out, code := runAdminCLI(t, env, "warm", "--json", good[0], good[1])
	if code != 0 {
		t.Fatalf("warm --json: exit %d\n%s", code, out)
	}
	checkJSONKeys(t, out, "programs", "path", "hit", "stored", "time_ns", "compiled", "wall_ns")
	var rep warm.Report
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Compiled != 2 || rep.Stored != 2 || !rep.Writer {
		t.Fatalf("report %+v, %v", rep, err)
	}
	fams := parsePrometheus(t, readFile(t, wfile))
	if v := promValue(fams, "xlacache_misses_total", "tier", "executables", "backend", "cpu", "role", "writer"); v != 2 {
		t.Errorf("writer misses %v, want 2", v)
	}
	if v := promValue(fams, "xlacache_compiles_total", "backend", "cpu", "role", "writer"); v != 2 {
		t.Errorf("writer compiles %v, want 2", v)
	}

	// A reader reports its hits in its own file, though it writes nothing
	// to the cache directory.
	rfile := filepath.Join(work, "reader.prom")
	renv := map[string]string{config.EnvDir: dir, config.EnvRole: "reader", config.EnvMetricsFile: rfile}
	if out, code := runAdminCLI(t, renv, "warm", good[0], good[1]); code != 0 {
		t.Fatalf("reader warm: exit %d\n%s", code, out)
	}
	fams = parsePrometheus(t, readFile(t, rfile))
	if v := promValue(fams, "xlacache_hits_total", "tier", "executables", "backend", "cpu", "role", "reader"); v != 2 {
		t.Errorf("reader hits %v, want 2\n%s", v, readFile(t, rfile))
	}

	// A metrics file inside the cache directory is refused, clearly.
	_, stderr, err := func() (string, string, error) {
		t.Setenv(config.EnvDir, dir)
		t.Setenv(config.EnvMetricsFile, filepath.Join(dir, "m.prom"))
		return execCLI(t, "warm", good[0])
	}()
	if err == nil || !strings.Contains(err.Error()+stderr, "inside the cache directory") {
		t.Errorf("metrics file inside the cache: %v %s", err, stderr)
	}

	// stats --format prometheus: the persisted totals (writers only).
	senv := map[string]string{config.EnvDir: dir, config.EnvMetricsFile: ""}
	out, code = runAdminCLI(t, senv, "stats", "--format", "prometheus")
	if code != 0 {
		t.Fatalf("stats --format prometheus: exit %d\n%s", code, out)
	}
	persisted, err := cache.ReadPersistedStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	fams = parsePrometheus(t, out)
	ex := persisted.Backends["cpu"].Tiers[cache.ExecutablesTier]
	if v := promValue(fams, "xlacache_misses_total", "tier", "executables", "backend", "cpu", "role", "writer"); v != float64(ex.Misses) || v != 2 {
		t.Errorf("persisted misses %v, stats file says %d", v, ex.Misses)
	}
	if v := promValue(fams, "xlacache_stored_entries", "area", "executables"); v != 2 {
		t.Errorf("stored executables %v, want 2\n%s", v, out)
	}
	if _, code := runAdminCLI(t, senv, "stats", "--format", "yaml"); code != 2 {
		t.Errorf("--format yaml: exit %d, want 2", code)
	}
	if out, code := runAdminCLI(t, senv, "stats", "--format", "json"); code != 0 || !strings.Contains(out, `"counters"`) {
		t.Errorf("--format json: exit %d\n%s", code, out)
	}
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// parsePrometheus parses text with the Prometheus text parser.
func parsePrometheus(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatalf("not the Prometheus text format: %v\n%s", err, text)
	}
	return fams
}

// promValue returns the value of the series of family name with exactly
// the label pairs kv, or -1 when there is none.
func promValue(fams map[string]*dto.MetricFamily, name string, kv ...string) float64 {
	mf := fams[name]
	if mf == nil {
		return -1
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel())*2 != len(kv) {
			continue
		}
		match := true
		for _, lp := range m.GetLabel() {
			found := false
			for j := 0; j < len(kv); j += 2 {
				found = found || (kv[j] == lp.GetName() && kv[j+1] == lp.GetValue())
			}
			match = match && found
		}
		if !match {
			continue
		}
		if m.GetGauge() != nil {
			return m.GetGauge().GetValue()
		}
		return m.GetCounter().GetValue()
	}
	return -1
}

// TestCLIWarmExportImportAutotuned is the documented warm --export →
// import path with a program that really autotunes (the cnn
// example's convolutions): every cpu autotune entry is a few hundred bytes, and the
// import's streaming check used to refuse every one of them ("window size
// exceeded") and exit 1 while verify called the source clean.
func TestCLIWarmExportImportAutotuned(t *testing.T) {
	work := t.TempDir()
	src := filepath.Join(work, "cache")
	env := map[string]string{config.EnvDir: src, config.EnvMinCompileTime: "0"}
	bundle := filepath.Join(work, "bundle.tar.zst")
	cnn := filepath.Join("..", "..", "examples", "cnn", "cnn.mlir")
	if out, code := runAdminCLI(t, env, "warm", cnn, "--export", bundle); code != 0 {
		t.Fatalf("warm --export: exit %d\n%s", code, out)
	}
	tuned := func(dir string) []string {
		var names []string
		filepath.WalkDir(filepath.Join(dir, "cpu", "autotune"), func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() {
				names = append(names, strings.TrimPrefix(p, dir))
			}
			return nil
		})
		slices.Sort(names)
		return names
	}
	want := tuned(src)
	if len(want) == 0 {
		t.Fatal("warming the cnn example wrote no cpu autotune entry: the test no longer covers them")
	}
	if out, code := runAdminCLI(t, env, "verify"); code != 0 {
		t.Fatalf("verify of the source: exit %d\n%s", code, out)
	}
	dst := filepath.Join(work, "cache2")
	env2 := map[string]string{config.EnvDir: dst, config.EnvMinCompileTime: "0"}
	out, code := runAdminCLI(t, env2, "import", bundle)
	if code != 0 || strings.Contains(out, "refused") && !strings.Contains(out, "refused 0") {
		t.Fatalf("import of a bundle with %d autotune entries: exit %d\n%s", len(want), code, out)
	}
	if got := tuned(dst); !slices.Equal(got, want) {
		t.Fatalf("imported autotune entries %q, want %q", got, want)
	}
	if out, code := runAdminCLI(t, env2, "run", cnn); code != 0 || !strings.Contains(out, "executable hit") {
		t.Fatalf("run after import: exit %d\n%s", code, out)
	}
}

package stablehlo

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
)

// conformanceDir locates the JAX-generated StableHLO test programs:
// $XLACACHE_CONFORMANCE_DIR, else ../shared/conformance/stablehlo-testdata
// relative to the module root (the directory holding go.mod).
func conformanceDir(t *testing.T) string {
	return sharedConformanceDir(t, "XLACACHE_CONFORMANCE_DIR", "stablehlo-testdata")
}

// extConformanceDir locates the development set stablehlo-ext the same
// way ($XLACACHE_CONFORMANCE_EXT_DIR overrides it). The files are read in
// place, never copied into the repository.
func extConformanceDir(t *testing.T) string {
	return sharedConformanceDir(t, "XLACACHE_CONFORMANCE_EXT_DIR", "stablehlo-ext")
}

func sharedConformanceDir(t *testing.T, env, name string) string {
	t.Helper()
	return testneed.SharedData(t, env, "conformance/"+name)
}

// runInterpConformance runs every program of dir through the interpreter
// and returns the counts and the per-file report.
func runInterpConformance(t *testing.T, dir string) (passed, failed, skipped int, out *bytes.Buffer) {
	t.Helper()
	out = new(bytes.Buffer)
	passed, failed, skipped, err := RunConformance(context.Background(), dir, InterpRunner, out)
	if err != nil {
		t.Fatal(err)
	}
	return passed, failed, skipped, out
}

// TestConformanceInterp runs every conformance program through the
// reference interpreter; all must pass.
func TestConformanceInterp(t *testing.T) {
	dir := conformanceDir(t)
	passed, failed, skipped, out := runInterpConformance(t, dir)
	files, _ := ConformanceFiles(dir)
	if failed != 0 || skipped != 0 || passed != len(files) || passed < 128 {
		t.Fatalf("passed %d, failed %d, skipped %d of %d files:\n%s", passed, failed, skipped, len(files), out.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if got, want := lines[len(lines)-1], "128 passed, 0 failed"; len(files) == 128 && got != want {
		t.Fatalf("summary line %q, want %q", got, want)
	}
}

// TestConformanceInlinedMatches checks that Inline preserves behaviour:
// the flattened module evaluates (assertions included) like the original.
func TestConformanceInlinedMatches(t *testing.T) {
	dir := conformanceDir(t)
	files, err := ConformanceFiles(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		m, err := Parse(src, filepath.Base(f))
		if err != nil {
			t.Fatal(err)
		}
		flat, err := Inline(m)
		if err != nil {
			t.Fatalf("%s: inline: %v", f, err)
		}
		if len(flat.Funcs) != 1 {
			t.Fatalf("%s: inlined module has %d functions", f, len(flat.Funcs))
		}
		walkOps(flat.Funcs[0].Body, func(op *Op) {
			if op.Name == "call" {
				t.Fatalf("%s: call left after Inline", f)
			}
		})
		want, err := Eval(m, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Eval(flat, "", nil)
		if err != nil {
			t.Fatalf("%s: inlined eval: %v", f, err)
		}
		for i := range want {
			if !got[i].Equal(want[i]) {
				t.Fatalf("%s: result %d differs after Inline", f, i)
			}
		}
	}
}

// TestConformanceDetectsFailures corrupts expected values and unsupported
// ops in copies of programs and checks the runner's per-file lines and
// summary.
func TestConformanceDetectsFailures(t *testing.T) {
	src := conformanceDir(t)
	tmp := t.TempDir()
	copyWith := func(name, newName, old, repl string) {
		b, err := os.ReadFile(filepath.Join(src, name))
		if err != nil {
			t.Fatal(err)
		}
		s := string(b)
		if old != "" {
			if !strings.Contains(s, old) {
				t.Fatalf("%s does not contain %q", name, old)
			}
			s = strings.Replace(s, old, repl, 1)
		}
		if err := os.WriteFile(filepath.Join(tmp, newName), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	copyWith("add_any_int32_2_int32_2.mlir", "a_ok.mlir", "", "")
	// The expected tensor of reduce_sum is the last constant in the file;
	// change its first value.
	b, _ := os.ReadFile(filepath.Join(src, "reduce_sum_float32_2_3.mlir"))
	i := strings.LastIndex(string(b), "dense<[0.841330051")
	if i < 0 {
		t.Fatal("reduce_sum expected constant not found")
	}
	bad := string(b[:i]) + "dense<[0.851330051" + string(b[i+len("dense<[0.841330051"):])
	if err := os.WriteFile(filepath.Join(tmp, "b_wrong.mlir"), []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	copyWith("abs_float32_20_20.mlir", "c_unsupported.mlir", "stablehlo.abs", "stablehlo.cosine_squared")
	copyWith("abs_float32_20_20.mlir", "d_truncated.mlir", "return %2 : tensor<20x20xf32>\n  }", "return %2 : tensor<20x20xf32>\n")

	var out bytes.Buffer
	passed, failed, skipped, err := RunConformance(context.Background(), tmp, InterpRunner, &out)
	if err != nil {
		t.Fatal(err)
	}
	if passed != 1 || failed != 2 || skipped != 1 {
		t.Fatalf("passed %d failed %d skipped %d:\n%s", passed, failed, skipped, out.String())
	}
	text := out.String()
	for _, want := range []string{
		"pass a_ok.mlir\n",
		"fail b_wrong.mlir: b_wrong.mlir:",
		"check.expect_close failed at index [0]",
		"unsupported c_unsupported.mlir: c_unsupported.mlir:10:10: unknown op stablehlo.cosine_squared",
		"fail d_truncated.mlir: ",
		"1 passed, 2 failed, 1 skipped\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("output lacks %q:\n%s", want, text)
		}
	}
}

func TestRunOneUnsupportedFromBackend(t *testing.T) {
	dir := conformanceDir(t)
	r := RunOne(context.Background(), filepath.Join(dir, "abs_float32_20_20.mlir"), func(ctx context.Context, m *Module) error {
		return errors.Join(errors.New("cpu backend: op abs not implemented"), ErrUnsupported)
	})
	if r.Status != "unsupported" {
		t.Fatalf("status %q", r.Status)
	}
	r = RunOne(context.Background(), filepath.Join(dir, "abs_float32_20_20.mlir"), func(ctx context.Context, m *Module) error {
		var p []int
		_ = p[3] // a crashing backend
		return nil
	})
	if r.Status != "fail" || !strings.Contains(r.Detail, "panic") {
		t.Fatalf("crashing backend: %+v", r)
	}
}

// extPassInterp is the number of stablehlo-ext programs: the interpreter
// passes every one.
const extPassInterp = 226

// TestConformanceExtInterp runs the development set through the
// interpreter: no program may fail (a wrong result, an error that is not
// "unsupported", a crash) or be unsupported, and all extPassInterp must
// pass.
func TestConformanceExtInterp(t *testing.T) {
	dir := extConformanceDir(t)
	passed, failed, skipped, out := runInterpConformance(t, dir)
	reasons := map[string]int{}
	for _, line := range strings.Split(out.String(), "\n") {
		switch {
		case strings.HasPrefix(line, "fail "):
			t.Error(line)
		case strings.HasPrefix(line, "unsupported "):
			reasons[unsupportedReason(line)]++
		}
	}
	keys := slices.Collect(maps.Keys(reasons))
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(reasons[b]-reasons[a], strings.Compare(a, b)) })
	for _, r := range keys {
		t.Logf("unsupported %3d: %s", reasons[r], r)
	}
	t.Logf("stablehlo-ext on interp: %d passed, %d failed, %d unsupported", passed, failed, skipped)
	if failed > 0 || skipped > 0 || passed != extPassInterp {
		t.Errorf("stablehlo-ext on interp: %d passed (want %d), %d failed, %d unsupported", passed, extPassInterp, failed, skipped)
	}
}

// unsupportedReason strips the file name and position from an
// "unsupported NAME: FILE:L:C: reason" line, and shapes from type
// reasons, so that log lines group by cause.
func unsupportedReason(line string) string {
	_, r, _ := strings.Cut(line, ": ")
	if _, rest, ok := strings.Cut(r, ".mlir:"); ok {
		if i := strings.Index(rest, ": "); i >= 0 {
			r = rest[i+2:]
		}
	}
	if _, rest, ok := strings.Cut(r, ">: "); ok && strings.HasPrefix(r, "tensor<") {
		r = rest
	}
	return r
}

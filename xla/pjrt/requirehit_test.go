package pjrt

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
)

// TestRealRequireHitFail (issue 24 item 2): with XLACACHE_REQUIRE_HIT=fail
// a real PJRT client's compile of a program the cache cannot serve fails
// with an error naming the program and why, with no inner compile and
// nothing stored; once the cache holds it, the same client loads it; and
// a wrapper that cannot reach its helper fails rather than compile
// unseen.
func TestRealRequireHitFail(t *testing.T) {
	inner := plugin(t, "xla-cpu-pjrt")
	dir := t.TempDir()
	failing := func(o *config.Options) { o.RequireHit = config.RequireHitFail }
	failEnv := []string{config.EnvRequireHit + "=fail"}

	h := wrapped(t, inner, serve(t, &Server{Cache: openCache(t, dir, failing)}))
	h.extra, h.compileErrs = failEnv, true
	cold := h.run(t, addProgram)
	expect(t, "cold under fail", cold, 0, 0, 0, 0)
	msg := cold.Results[0].Err
	for _, s := range []string{"program add ", "key add-", config.EnvRequireHit + "=fail", "no entry for this program"} {
		if !strings.Contains(msg, s) {
			t.Errorf("compile error %q lacks %q\n%s", msg, s, cold.Stderr)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(dir, "executables", "*", "*")); len(m) != 0 {
		t.Errorf("a refused compile stored %v", m)
	}

	// Filled by a job without the requirement, the cache serves it.
	filler := wrapped(t, inner, serve(t, &Server{Cache: openCache(t, dir)}))
	filled := filler.run(t, addProgram)
	expect(t, "fill", filled, 1, 0, 0, 1)
	warm := h.run(t, addProgram)
	expect(t, "warm under fail", warm, 0, 1, 0, 0)
	if warm.Results[0].Err != "" || warm.Results[0].Outputs != filled.Results[0].Outputs {
		t.Errorf("warm under fail: err %q, outputs %s, want %s", warm.Results[0].Err, warm.Results[0].Outputs, filled.Results[0].Outputs)
	}

	// No helper: the wrapper would compile without the cache; under fail
	// it refuses.
	lost := wrapped(t, inner, filepath.Join(shortDir(t), "none.sock"))
	lost.extra, lost.compileErrs = failEnv, true
	r := lost.run(t, addProgram)
	expect(t, "no helper under fail", r, 0, 0, 0, 0)
	if e := r.Results[0].Err; !strings.Contains(e, "cache helper unreachable") || !strings.Contains(e, config.EnvRequireHit+"=fail") {
		t.Errorf("no helper under fail: error %q\n%s", e, r.Stderr)
	}
}

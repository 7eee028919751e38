package main

// Tests of a directory shared by xlacache and JAX (the layout `xlacache
// env` sets up): every admin command handles both parts.

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/shareddir"
)

func TestMixedDirStatsLs(t *testing.T) {
	dir, files := cachetest.MixedDir(t)
	env := map[string]string{config.EnvDir: dir}
	out, code := runAdminCLI(t, env, "stats")
	for _, want := range []string{"executables", "cpu/kernels", "JAX cache", "3 entries", jaxcache.AutotuneDirName, "directory total"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("stats (%d) lacks %q:\n%s", code, want, out)
		}
	}
	out, code = runAdminCLI(t, env, "stats", "--json")
	var sr shareddir.Stats
	if err := json.Unmarshal([]byte(out), &sr); code != 0 || err != nil {
		t.Fatalf("stats --json (%d, %v): %s", code, err, out)
	}
	var sum int64
	for _, f := range files {
		sum += f.Size
	}
	if sr.Areas["executables"].Entries != 2 || sr.Areas["cpu/kernels"].Entries != 1 || sr.JAX == nil || sr.JAX.Entries != 3 || sr.Total != sum || sr.Total != cachetest.DirTotal(t, dir) {
		t.Errorf("stats --json: total %d, want %d:\n%s", sr.Total, sum, out)
	}
	checkJSONKeys(t, out, "jax", "entry_bytes", "missing_atime", "orphan_atimes", "subcaches", "total_bytes")

	out, code = runAdminCLI(t, env, "ls")
	for _, f := range files[1:] {
		if code != 0 || !strings.Contains(out, f.Key) {
			t.Errorf("ls (%d) does not list %s (%s):\n%s", code, f.Name, f.Key, out)
		}
	}
	out, code = runAdminCLI(t, env, "ls", "--json")
	var ls []cache.EntryInfo
	if err := json.Unmarshal([]byte(out), &ls); code != 0 || err != nil {
		t.Fatalf("ls --json (%d, %v): %s", code, err, out)
	}
	jax := 0
	for _, e := range ls {
		if e.Tier == shareddir.JAXTier {
			jax++
			if e.CompileTime != 3*time.Second || e.Codec != "zlib" || e.Err != "" {
				t.Errorf("JAX row %+v", e)
			}
		}
	}
	if len(ls) != 6 || jax != 3 {
		t.Errorf("ls --json: %d rows, %d JAX:\n%s", len(ls), jax, out)
	}
}

func TestMixedDirVerify(t *testing.T) {
	dir, files := cachetest.MixedDir(t)
	env := map[string]string{config.EnvDir: dir}
	out, code := runAdminCLI(t, env, "verify", "--json")
	var vr verifyReport
	if err := json.Unmarshal([]byte(out), &vr); code != 0 || err != nil || vr.Checked != 3 || vr.JAX == nil || vr.JAX.Checked != 4 || len(vr.JAX.Bad) != 0 {
		t.Fatalf("verify clean (%d, %v): %s", code, err, out)
	}
	// A damaged xlacache entry fails verify although JAX's part is fine.
	x2 := files[5]
	data, _ := os.ReadFile(x2.Paths[0])
	data[len(data)-10] ^= 1
	os.WriteFile(x2.Paths[0], data, 0o600)
	out, code = runAdminCLI(t, env, "verify")
	if code != 1 || !strings.Contains(out, "BAD cpu/kernels") || !strings.Contains(out, "JAX cache:") || !strings.Contains(out, "0 bad") {
		t.Errorf("verify with a damaged xlacache entry (%d):\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, "verify", "--repair")
	if code != 1 || !strings.Contains(out, "moved to") {
		t.Errorf("verify --repair (%d):\n%s", code, out)
	}
	if _, code = runAdminCLI(t, env, "verify"); code != 0 {
		t.Errorf("verify after repair: exit %d", code)
	}
	// A damaged JAX entry fails it too, and the JSON names it.
	j1 := files[4]
	data, _ = os.ReadFile(j1.Paths[0])
	os.WriteFile(j1.Paths[0], data[:len(data)/2], 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(j1.Paths[0], old, old)
	out, code = runAdminCLI(t, env, "verify", "--json")
	if err := json.Unmarshal([]byte(out), &vr); code != 1 || err != nil || len(vr.Bad) != 0 || vr.JAX == nil || len(vr.JAX.Bad) != 1 || vr.JAX.Bad[0].Path != j1.Paths[0] {
		t.Errorf("verify with a damaged JAX entry (%d, %v): %s", code, err, out)
	}
	checkJSONKeys(t, out, "jax", "checked", "bad", "path", "error", "maybe_in_flight")
}

func TestMixedDirExplain(t *testing.T) {
	dir, files := cachetest.MixedDir(t)
	env := map[string]string{config.EnvDir: dir}
	x0, j0 := files[1], files[2]
	out, code := runAdminCLI(t, env, "explain", x0.Key)
	if code != 0 || !strings.Contains(out, x0.Key+" is stored") || !strings.Contains(out, "JAX cache:") || !strings.Contains(out, "3 other entries") {
		t.Errorf("explain xlacache key (%d):\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, "explain", j0.Key)
	if code != 0 || !strings.Contains(out, "hit: "+j0.Key) {
		t.Errorf("explain JAX key (%d):\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, "explain", "--json", j0.Key)
	var rep struct {
		Key     string
		Present bool
		JAX     *shareddir.JAXExplainReport
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Present || rep.Key != j0.Key || rep.JAX == nil || !rep.JAX.Found || len(rep.JAX.SameModule) != 2 {
		t.Errorf("explain --json (%d, %v): %s", code, err, out)
	}
	checkJSONKeys(t, out, "key", "present", "jax", "query", "found", "same_module", "lines")
	// A bare module name means something to JAX's part only.
	out, code = runAdminCLI(t, env, "explain", "jit_f")
	if code != 0 || !strings.Contains(out, "3 other entries for module \"jit_f\"") {
		t.Errorf("explain module (%d):\n%s", code, out)
	}
}

// TestMixedDirPrune: one bound over the whole directory, least recently
// used first across both parts, XLA's subcache file counted once.
func TestMixedDirPrune(t *testing.T) {
	dir, files := cachetest.MixedDir(t)
	env := map[string]string{config.EnvDir: dir}
	total := cachetest.DirTotal(t, dir)
	// Make room by exactly the four oldest units: sub, X0, J0, X1.
	bound := total
	for _, f := range files[:4] {
		bound -= f.Size
	}
	maxSize := []string{"prune", "--max-size", jsonInt(bound)}
	out, code := runAdminCLI(t, env, append(maxSize, "--dry-run")...)
	if code != 0 || !strings.Contains(out, "would remove") || cachetest.DirTotal(t, dir) != total {
		t.Fatalf("prune --dry-run (%d) changed the directory:\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, maxSize...)
	if code != 0 {
		t.Fatalf("prune (%d):\n%s", code, out)
	}
	if got := cachetest.DirTotal(t, dir); got > bound {
		t.Errorf("after prune %d bytes, bound %d:\n%s", got, bound, out)
	}
	var gone, kept []string
	for _, f := range files {
		if _, err := os.Lstat(f.Paths[0]); err == nil {
			kept = append(kept, f.Name)
		} else {
			gone = append(gone, f.Name)
		}
	}
	if !slices.Equal(gone, []string{"sub", "X0", "J0", "X1"}) {
		t.Errorf("removed %v, kept %v; want the four least recently used removed:\n%s", gone, kept, out)
	}
	// A bound below everything empties both parts.
	if out, code = runAdminCLI(t, env, "prune", "--max-size", "1"); code != 0 || cachetest.DirTotal(t, dir) != 0 {
		t.Errorf("prune to 1 byte (%d) left %d bytes:\n%s", code, cachetest.DirTotal(t, dir), out)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

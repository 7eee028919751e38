package main

// Tests of a directory shared by xlacache and JAX (the layout `xlacache
// env` sets up): every admin command handles both parts.

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/jaxcache"
)

// mixedFile is one evictable unit of the fixture, in last-use order.
type mixedFile struct {
	name  string   // "X0", "J0", "sub", ...
	paths []string // the files (a JAX entry has two)
	size  int64
	key   string // cache or JAX key ("" for the subcache file)
}

// mixedDir builds a directory holding three xlacache entries (two
// executables, one cpu kernel; written with cache.Open and Tier.Put), three
// JAX entries (jaxcache.Encode and WriteEntry) and an XLA autotune file,
// all of module jit_f, with last uses interleaved oldest first:
// sub, X0, J0, X1, J1, X2, J2. Payloads are random so that sizes do not
// depend on compression.
func mixedDir(t *testing.T) (string, []mixedFile) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	o := config.Defaults()
	o.Dir, o.MinCompileTime, o.Role = dir, 0, config.RoleWriter
	c, err := cache.Open(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	var ownKeys []string
	for i, tier := range []string{cache.ExecutablesTier, cache.ExecutablesTier, "cpu/kernels"} {
		k := cache.NewKey("jit_f", []cache.KeyPart{{Name: "program", Data: []byte{byte(i)}}})
		if err := c.Tier(tier).Put(ctx, k, random(2000+100*i), time.Second); err != nil {
			t.Fatal(err)
		}
		ownKeys = append(ownKeys, k.String())
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	listed, err := cache.List(ctx, dir)
	if err != nil || len(listed) != 3 {
		t.Fatalf("list: %v %+v", err, listed)
	}
	byKey := map[string]cache.EntryInfo{}
	for _, e := range listed {
		byKey[e.Key] = e
	}
	base := time.Now().Add(-10 * 24 * time.Hour).Truncate(time.Second)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Hour) }
	var files []mixedFile
	sub := filepath.Join(dir, jaxcache.AutotuneDirName, "QUJD.textproto")
	os.MkdirAll(filepath.Dir(sub), 0o700)
	if err := os.WriteFile(sub, []byte("version: 3\n"+strings.Repeat("result {}\n", 50)), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(sub, at(0), at(0))
	st, _ := os.Stat(sub)
	files = append(files, mixedFile{name: "sub", paths: []string{sub}, size: st.Size()})
	for i := range 3 {
		e := byKey[ownKeys[i]]
		if err := os.Chtimes(e.Path, at(1+2*i), at(1+2*i)); err != nil {
			t.Fatal(err)
		}
		files = append(files, mixedFile{name: "X" + string(rune('0'+i)), paths: []string{e.Path}, size: e.Size, key: e.Key})
		data, err := jaxcache.Encode(jaxcache.CodecZlib, 3*time.Second, random(1500+100*i))
		if err != nil {
			t.Fatal(err)
		}
		k := "jit_f-" + strings.Repeat(string("abc"[i]), 64)
		if err := jaxcache.WriteEntry(dir, k, data, at(2+2*i), 0); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, k+jaxcache.CacheSuffix)
		files = append(files, mixedFile{name: "J" + string(rune('0'+i)), paths: []string{p, filepath.Join(dir, k+jaxcache.AtimeSuffix)}, size: int64(len(data)) + 8, key: k})
	}
	return dir, files
}

// dirTotal is what the bound covers: xlacache's files plus JAX's entries,
// XLA's subcaches once.
func dirTotal(t *testing.T, dir string) int64 {
	t.Helper()
	u, err := cache.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := jaxcache.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return u.Bytes + jaxOwnBytes(d.Stats())
}

func TestMixedDirStatsLs(t *testing.T) {
	dir, files := mixedDir(t)
	env := map[string]string{config.EnvDir: dir}
	out, code := runAdminCLI(t, env, "stats")
	for _, want := range []string{"executables", "cpu/kernels", "JAX cache", "3 entries", jaxcache.AutotuneDirName, "directory total"} {
		if code != 0 || !strings.Contains(out, want) {
			t.Errorf("stats (%d) lacks %q:\n%s", code, want, out)
		}
	}
	out, code = runAdminCLI(t, env, "stats", "--json")
	var sr statsReport
	if err := json.Unmarshal([]byte(out), &sr); code != 0 || err != nil {
		t.Fatalf("stats --json (%d, %v): %s", code, err, out)
	}
	var sum int64
	for _, f := range files {
		sum += f.size
	}
	if sr.Areas["executables"].Entries != 2 || sr.Areas["cpu/kernels"].Entries != 1 || sr.JAX == nil || sr.JAX.Entries != 3 || sr.Total != sum || sr.Total != dirTotal(t, dir) {
		t.Errorf("stats --json: total %d, want %d:\n%s", sr.Total, sum, out)
	}

	out, code = runAdminCLI(t, env, "ls")
	for _, f := range files[1:] {
		if code != 0 || !strings.Contains(out, f.key) {
			t.Errorf("ls (%d) does not list %s (%s):\n%s", code, f.name, f.key, out)
		}
	}
	out, code = runAdminCLI(t, env, "ls", "--json")
	var ls []cache.EntryInfo
	if err := json.Unmarshal([]byte(out), &ls); code != 0 || err != nil {
		t.Fatalf("ls --json (%d, %v): %s", code, err, out)
	}
	jax := 0
	for _, e := range ls {
		if e.Tier == jaxTier {
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
	dir, files := mixedDir(t)
	env := map[string]string{config.EnvDir: dir}
	out, code := runAdminCLI(t, env, "verify", "--json")
	var vr verifyReport
	if err := json.Unmarshal([]byte(out), &vr); code != 0 || err != nil || vr.Checked != 3 || vr.JAX == nil || vr.JAX.Checked != 4 || len(vr.JAX.Bad) != 0 {
		t.Fatalf("verify clean (%d, %v): %s", code, err, out)
	}
	// A damaged xlacache entry fails verify although JAX's part is fine.
	x2 := files[5]
	data, _ := os.ReadFile(x2.paths[0])
	data[len(data)-10] ^= 1
	os.WriteFile(x2.paths[0], data, 0o600)
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
	data, _ = os.ReadFile(j1.paths[0])
	os.WriteFile(j1.paths[0], data[:len(data)/2], 0o600)
	old := time.Now().Add(-time.Hour)
	os.Chtimes(j1.paths[0], old, old)
	out, code = runAdminCLI(t, env, "verify", "--json")
	if err := json.Unmarshal([]byte(out), &vr); code != 1 || err != nil || len(vr.Bad) != 0 || vr.JAX == nil || len(vr.JAX.Bad) != 1 || vr.JAX.Bad[0].Path != j1.paths[0] {
		t.Errorf("verify with a damaged JAX entry (%d, %v): %s", code, err, out)
	}
}

func TestMixedDirExplain(t *testing.T) {
	dir, files := mixedDir(t)
	env := map[string]string{config.EnvDir: dir}
	x0, j0 := files[1], files[2]
	out, code := runAdminCLI(t, env, "explain", x0.key)
	if code != 0 || !strings.Contains(out, x0.key+" is stored") || !strings.Contains(out, "JAX cache:") || !strings.Contains(out, "3 other entries") {
		t.Errorf("explain xlacache key (%d):\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, "explain", j0.key)
	if code != 0 || !strings.Contains(out, "hit: "+j0.key) {
		t.Errorf("explain JAX key (%d):\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, "explain", "--json", j0.key)
	var rep struct {
		Key     string
		Present bool
		JAX     *jaxExplainReport
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil || rep.Present || rep.Key != j0.key || rep.JAX == nil || !rep.JAX.Found || len(rep.JAX.SameModule) != 2 {
		t.Errorf("explain --json (%d, %v): %s", code, err, out)
	}
	// A bare module name means something to JAX's part only.
	out, code = runAdminCLI(t, env, "explain", "jit_f")
	if code != 0 || !strings.Contains(out, "3 other entries for module \"jit_f\"") {
		t.Errorf("explain module (%d):\n%s", code, out)
	}
}

// TestMixedDirPrune: one bound over the whole directory, least recently
// used first across both parts, XLA's subcache file counted once.
func TestMixedDirPrune(t *testing.T) {
	dir, files := mixedDir(t)
	env := map[string]string{config.EnvDir: dir}
	total := dirTotal(t, dir)
	// Make room by exactly the four oldest units: sub, X0, J0, X1.
	bound := total
	for _, f := range files[:4] {
		bound -= f.size
	}
	maxSize := []string{"prune", "--max-size", jsonInt(bound)}
	out, code := runAdminCLI(t, env, append(maxSize, "--dry-run")...)
	if code != 0 || !strings.Contains(out, "would remove") || dirTotal(t, dir) != total {
		t.Fatalf("prune --dry-run (%d) changed the directory:\n%s", code, out)
	}
	out, code = runAdminCLI(t, env, maxSize...)
	if code != 0 {
		t.Fatalf("prune (%d):\n%s", code, out)
	}
	if got := dirTotal(t, dir); got > bound {
		t.Errorf("after prune %d bytes, bound %d:\n%s", got, bound, out)
	}
	var gone, kept []string
	for _, f := range files {
		if _, err := os.Lstat(f.paths[0]); err == nil {
			kept = append(kept, f.name)
		} else {
			gone = append(gone, f.name)
		}
	}
	if !slices.Equal(gone, []string{"sub", "X0", "J0", "X1"}) {
		t.Errorf("removed %v, kept %v; want the four least recently used removed:\n%s", gone, kept, out)
	}
	// A bound below everything empties both parts.
	if out, code = runAdminCLI(t, env, "prune", "--max-size", "1"); code != 0 || dirTotal(t, dir) != 0 {
		t.Errorf("prune to 1 byte (%d) left %d bytes:\n%s", code, dirTotal(t, dir), out)
	}
}

func jsonInt(n int64) string { b, _ := json.Marshal(n); return string(b) }

package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
)

func TestKey(t *testing.T) {
	parts := []KeyPart{{"program", []byte("module @f {}")}, {"options", []byte("o=1")}, {"backend", []byte("cpu 1")}, {"topology", []byte("1x")}}
	k := NewKey("jit_f", parts)
	if got := k.String(); !strings.HasPrefix(got, "jit_f-") || len(got) != len("jit_f-")+64 {
		t.Fatalf("key text %q", got)
	}
	m, d, err := ParseKey(k.String())
	if err != nil || m != "jit_f" || d != k.Digest {
		t.Fatalf("ParseKey round trip: %q %x %v", m, d, err)
	}
	// Order of parts does not matter; every component does.
	rev := []KeyPart{parts[3], parts[2], parts[1], parts[0]}
	if NewKey("jit_f", rev).Digest != k.Digest {
		t.Error("part order changes the key")
	}
	for i := range parts {
		mod := append([]KeyPart(nil), parts...)
		mod[i] = KeyPart{mod[i].Name, append(bytes.Clone(mod[i].Data), 'x')}
		if NewKey("jit_f", mod).Digest == k.Digest {
			t.Errorf("changing %s does not change the key", parts[i].Name)
		}
	}
	if NewKey("jit_g", parts).Digest == k.Digest {
		t.Error("module name not in the key")
	}
	// Domain separation: moving bytes between name and data, or between
	// parts, changes the key.
	a := NewKey("m", []KeyPart{{"ab", []byte("c")}})
	b := NewKey("m", []KeyPart{{"a", []byte("bc")}})
	c := NewKey("m", []KeyPart{{"ab", []byte("")}, {"c", nil}})
	if a.Digest == b.Digest || a.Digest == c.Digest {
		t.Error("key is not domain-separated")
	}
	if len(k.Parts) != 4 || k.Parts[0].Name != "backend" {
		t.Errorf("parts not sorted by name: %+v", k.Parts)
	}
}

func TestSanitizeAndParseKey(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"jit_train_step", "jit_train_step"}, {"../../etc/passwd", "_._.._etc_passwd"}, {"", "module"},
		{".hidden", "_hidden"}, {"a/b\\c\x00d", "a_b_c_d"}, {"ünï", "__n__"}, {strings.Repeat("x", 300), strings.Repeat("x", MaxModuleLen)},
	} {
		got := SanitizeModule(tc.in)
		if got != tc.want {
			t.Errorf("SanitizeModule(%q) = %q, want %q", tc.in, got, tc.want)
		}
		k := NewKey(tc.in, nil)
		if filepath.Base(k.String()) != k.String() || strings.Contains(k.String(), "..") && strings.HasPrefix(k.String(), "..") {
			t.Errorf("key %q is not a plain file name", k.String())
		}
		if _, _, err := ParseKey(k.String()); err != nil {
			t.Errorf("ParseKey(%q): %v", k.String(), err)
		}
	}
	hex := strings.Repeat("ab", 32)
	for _, bad := range []string{"", "nohyphen", "-" + hex, "m-" + hex[:63], "m-" + strings.ToUpper(hex), "m-" + strings.Repeat("zz", 32), "../x-" + hex, "a/b-" + hex} {
		if _, _, err := ParseKey(bad); err == nil {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

func TestCachePathOptionsDoNotChangeKey(t *testing.T) {
	b := &fakeBackend{version: "1"}
	c1 := mustOpen(t, testOptions(t.TempDir()), nil)
	c2 := mustOpen(t, testOptions(t.TempDir()), nil)
	p := Program{Name: "f", Text: []byte("add"), Options: []byte("opt=1\ncache_dir=/a\ndump_to=/tmp/d")}
	_, r1 := compileOK(t, c1, b, p)
	p.Options = []byte("opt=1\ncache_dir=/b")
	_, r2 := compileOK(t, c2, b, p)
	if r1.Key != r2.Key {
		t.Errorf("cache path changed the key: %s vs %s", r1.Key, r2.Key)
	}
	p.Options = []byte("opt=2\ncache_dir=/b")
	if _, r3 := compileOK(t, c2, b, p); r3.Key == r2.Key {
		t.Error("a real option did not change the key")
	}
}

func TestOpenLayout(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	o := testOptions(dir)
	o.Subcaches = []config.Subcache{config.SubcacheAutotune, config.SubcacheKernels}
	c := mustOpen(t, o, nil)
	for _, d := range []string{"", ExecutablesDir, string(config.SubcacheAutotune)} {
		st, err := os.Stat(filepath.Join(dir, d))
		if err != nil || !st.IsDir() || st.Mode().Perm() != 0o700 {
			t.Errorf("%q: %v %v", d, st.Mode(), err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, string(config.SubcacheKernels))); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("kernel cache file created: %v", err)
	}
	// A file written by an entry has owner-only permissions.
	tier := c.Tier("cpu/kernels")
	k := NewKey("k", nil)
	if err := tier.Put(context.Background(), k, []byte("obj"), 0); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(tier.path(k))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("entry mode %v %v", st.Mode(), err)
	}
	if !strings.HasPrefix(tier.path(k), filepath.Join(dir, "cpu", "kernels")+string(filepath.Separator)) {
		t.Errorf("tier path %s", tier.path(k))
	}

	// A reader creates nothing.
	rdir := filepath.Join(t.TempDir(), "r")
	ro := testOptions(rdir)
	ro.Role = config.RoleReader
	rc := mustOpen(t, ro, nil)
	compileOK(t, rc, &fakeBackend{}, Program{Name: "f", Text: []byte("x")})
	if _, err := os.Stat(rdir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("reader created its directory: %v", err)
	}
}

func TestTierNames(t *testing.T) {
	c := mustOpen(t, testOptions(t.TempDir()), nil)
	for _, n := range []string{"executables", "cpu/autotune", "xla/kernels", "my_backend/autotune"} {
		if c.Tier(n) == nil {
			t.Errorf("Tier(%q) = nil", n)
		}
	}
	for _, n := range []string{"", "cpu", "../x", "cpu/../../x", "CPU/autotune", "cpu/a/b", "quarantine/x", "executables/x", "/abs/x", "cpu//x"} {
		if c.Tier(n) != nil {
			t.Errorf("Tier(%q) accepted", n)
		}
	}
	var nilTier *Tier
	if _, ok := nilTier.Get(context.Background(), NewKey("x", nil)); ok {
		t.Error("nil tier hit")
	}
	if err := nilTier.Put(context.Background(), NewKey("x", nil), nil, 0); err != nil {
		t.Error(err)
	}
}

func TestCompileHitMiss(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, testOptions(dir), nil)
	b := &fakeBackend{version: "1", size: 1000}
	p := Program{Name: "jit_f", Text: []byte("module @f")}
	_, r := compileOK(t, c, b, p)
	if r.Hit || !r.Stored || r.Tiers["executables"].Misses != 1 || r.CompileTime <= 0 {
		t.Errorf("first compile report %+v", r)
	}
	_, r = compileOK(t, c, b, p)
	if !r.Hit || r.Source != "local" || r.Tiers["executables"].Hits != 1 {
		t.Errorf("second compile report %+v", r)
	}
	if b.compiles.Load() != 1 || b.loads.Load() != 1 {
		t.Errorf("compiles %d loads %d", b.compiles.Load(), b.loads.Load())
	}
	names := map[string]bool{}
	for _, ph := range r.Phases {
		names[ph.Name] = true
	}
	if !names["key"] || !names["lookup"] || !names["load"] {
		t.Errorf("phases %+v", r.Phases)
	}
	st := c.Stats()
	if st.Hits != 1 || st.Misses != 1 || st.BytesWritten == 0 || st.BytesRead == 0 || st.CompileTimeSaved <= 0 {
		t.Errorf("stats %+v", st)
	}
	// A new version of the backend misses.
	b2 := &fakeBackend{version: "2"}
	if _, r := compileOK(t, c, b2, p); r.Hit {
		t.Error("backend version change hit")
	}
	// Compile errors are returned as is; unkeyable programs still compile.
	if _, _, err := Compile(context.Background(), c, b, Program{Name: "bad", Text: []byte("syntax error")}); err == nil || !strings.Contains(err.Error(), "syntax error") {
		t.Errorf("compile error: %v", err)
	}
	if _, r := compileOK(t, c, b, Program{Name: "u", Text: []byte("unkeyable")}); r.Key != "" || r.Hit {
		t.Errorf("unkeyable report %+v", r)
	}
}

func TestDisabledAndNilCache(t *testing.T) {
	b := &fakeBackend{}
	for name, c := range map[string]*Cache{"nil": nil, "disabled": mustOpen(t, config.Defaults(), nil)} {
		p := Program{Name: "f", Text: []byte("t")}
		compileOK(t, c, b, p)
		if _, r := compileOK(t, c, b, p); r.Hit {
			t.Errorf("%s: hit", name)
		}
		if c.Tier("executables") != nil || c.Stats().Hits != 0 || c.Close() != nil {
			t.Errorf("%s: not inert", name)
		}
	}
}

func TestThresholds(t *testing.T) {
	o := testOptions(t.TempDir())
	o.MinCompileTime = time.Hour
	c := mustOpen(t, o, nil)
	b := &fakeBackend{useTier: config.SubcacheAutotune}
	p := Program{Name: "f", Text: []byte("fast")}
	if _, r := compileOK(t, c, b, p); r.Stored {
		t.Error("fast compile stored")
	}
	// Subcache tiers ignore the thresholds: the kernel entry was stored.
	if _, r := compileOK(t, c, b, p); r.Hit || r.Tiers["fake/autotune"].Hits != 1 {
		t.Errorf("subcache entry not stored under thresholds: %+v", r.Tiers)
	}

	o = testOptions(t.TempDir())
	o.MinEntrySize = 1 << 20
	c = mustOpen(t, o, nil)
	if _, r := compileOK(t, c, &fakeBackend{}, p); r.Stored {
		t.Error("small entry stored")
	}
	big := &fakeBackend{size: 2 << 20}
	if _, r := compileOK(t, c, big, p); !r.Stored {
		t.Error("large entry not stored")
	}
}

// snapshotDir records every path with its size and mtime.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, _ := d.Info()
		out[p] = info.ModTime().String() + "/" + info.Mode().String() + "/" + string(rune(info.Size()))
		return nil
	})
	return out
}

func TestReaderNeverWrites(t *testing.T) {
	dir := t.TempDir()
	w := mustOpen(t, testOptions(dir), nil)
	b := &fakeBackend{useTier: config.SubcacheAutotune}
	p := Program{Name: "f", Text: []byte("shared")}
	compileOK(t, w, b, p)
	w.Close()
	// Age every entry so a writer would refresh access times.
	old := time.Now().Add(-48 * time.Hour)
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			os.Chtimes(p, old, old)
		}
		return nil
	})
	// Corrupt one other entry: a reader must skip, not quarantine it.
	bad := NewKey("g", nil)
	os.MkdirAll(filepath.Dir(w.Tier("executables").path(bad)), 0o700)
	os.WriteFile(w.Tier("executables").path(bad), []byte("garbage"), 0o600)
	before := snapshotDir(t, dir)

	o := testOptions(dir)
	o.ProcessIndex = 3 // auto role: a reader
	r := mustOpen(t, o, nil)
	if r.Writer() {
		t.Fatal("index 3 is a writer")
	}
	_, rep := compileOK(t, r, b, p)
	if !rep.Hit {
		t.Error("reader missed an entry the writer stored")
	}
	compileOK(t, r, b, Program{Name: "new", Text: []byte("never stored")})
	if _, ok := r.Tier("executables").Get(context.Background(), bad); ok {
		t.Error("garbage entry hit")
	}
	r.Close()
	after := snapshotDir(t, dir)
	if len(before) != len(after) {
		t.Errorf("reader changed the directory: %d paths before, %d after", len(before), len(after))
	}
	for p, v := range before {
		if after[p] != v {
			t.Errorf("reader touched %s", p)
		}
	}
	if r.Stats().Errors["foreign"] != 1 {
		t.Errorf("errors %v", r.Stats().Errors)
	}
}

func TestGarbageEntryQuarantined(t *testing.T) {
	dir := t.TempDir()
	var logs logBuffer
	c := mustOpen(t, testOptions(dir), &logs)
	b := &fakeBackend{}
	p := Program{Name: "f", Text: []byte("prog")}
	_, r := compileOK(t, c, b, p)
	k, _ := keyFromText(r.Key)
	path := c.Tier("executables").path(k)
	for i, garbage := range [][]byte{[]byte("garbage"), nil} {
		if err := os.WriteFile(path, garbage, 0o600); err != nil {
			t.Fatal(err)
		}
		_, r = compileOK(t, c, b, p)
		if r.Hit || !r.Stored {
			t.Errorf("round %d: report %+v", i, r)
		}
	}
	// A well-formed entry the backend cannot load is quarantined too.
	b.failLoad.Store(true)
	if _, r = compileOK(t, c, b, p); r.Hit {
		t.Error("unloadable entry counted as a hit")
	}
	b.failLoad.Store(false)
	q, _ := os.ReadDir(filepath.Join(dir, QuarantineDir))
	if len(q) != 3 {
		t.Errorf("%d quarantined files, want 3", len(q))
	}
	if n := strings.Count(logs.String(), "quarantined damaged cache entry"); n < 1 || n > 3 {
		t.Errorf("logged %d quarantine lines:\n%s", n, logs.String())
	}
	if _, r = compileOK(t, c, b, p); !r.Hit {
		t.Error("good entry not stored after quarantine")
	}
	if e := c.Stats().Errors; e["foreign"] != 1 || e["corrupt"] != 1 || e["load"] != 1 {
		t.Errorf("errors %v", e)
	}
	// An entry moved to another key's name is refused.
	p2 := Program{Name: "f", Text: []byte("other")}
	_, r2 := compileOK(t, c, b, p2)
	k2, _ := keyFromText(r2.Key)
	data, _ := os.ReadFile(path)
	os.WriteFile(c.Tier("executables").path(k2), data, 0o600)
	if _, r2 = compileOK(t, c, b, p2); r2.Hit {
		t.Error("entry under the wrong name was loaded")
	}
}

func TestSigning(t *testing.T) {
	dir := t.TempDir()
	b := &fakeBackend{}
	p := Program{Name: "f", Text: []byte("p")}
	unsigned := mustOpen(t, testOptions(dir), nil)
	compileOK(t, unsigned, b, p)
	unsigned.Close()

	o := testOptions(dir)
	o.SigningKey = sign.NewHMAC([]byte("secret"))
	o.Role = config.RoleReader
	r := mustOpen(t, o, nil)
	if _, rep := compileOK(t, r, b, p); rep.Hit {
		t.Error("unsigned entry loaded with a signing key set")
	}
	if r.Stats().Errors["signature"] != 1 {
		t.Errorf("errors %v", r.Stats().Errors)
	}
	o.Role = config.RoleWriter
	w := mustOpen(t, o, nil)
	compileOK(t, w, b, p) // quarantines the unsigned entry, stores a signed one
	if _, rep := compileOK(t, w, b, p); !rep.Hit {
		t.Error("signed entry missed")
	}
	o.SigningKey = sign.NewHMAC([]byte("other"))
	x := mustOpen(t, o, nil)
	if _, rep := compileOK(t, x, b, p); rep.Hit {
		t.Error("entry signed with another key loaded")
	}
}

func TestEnvSubcaches(t *testing.T) {
	o := testOptions(t.TempDir())
	c := mustOpen(t, o, nil)
	env := c.ForBackend("cpu", false)
	if env.Tier(config.SubcacheAutotune) == nil || env.Tier(config.SubcacheKernels) != nil {
		t.Error("default subcaches: autotune only")
	}
	if env.Tier(config.SubcacheAutotune).Name() != "cpu/autotune" {
		t.Error(env.Tier(config.SubcacheAutotune).Name())
	}
	if c.ForBackend("cpu", true).Tier(config.SubcacheKernels) == nil {
		t.Error("content-addressed backend did not get the kernel tier by default")
	}
	o.Subcaches, o.SubcachesExplicit = []config.Subcache{}, true
	c2 := mustOpen(t, o, nil)
	if c2.ForBackend("cpu", true).Tier(config.SubcacheAutotune) != nil {
		t.Error("explicit none ignored")
	}
	ro := testOptions(c.Dir())
	ro.Role = config.RoleReader
	r := mustOpen(t, ro, nil)
	renv := r.ForBackend("xla", false)
	renv.TierResult(config.SubcacheAutotune, true)
	if renv.Report().Tiers["xla/autotune"].Hits != 1 {
		t.Errorf("tier result %+v", renv.Report().Tiers)
	}
	var nilSession *Session
	nilSession.Phase("x", 1)
	nilSession.TierResult(config.SubcacheKernels, false)
	if nilSession.Tier(config.SubcacheAutotune) != nil || nilSession.Logger() == nil {
		t.Error("nil env")
	}
}

func TestSizeBoundLRU(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(dir)
	o.MaxSize = 64 << 10
	c := mustOpen(t, o, nil)
	tier := c.Tier("executables")
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(7, 8))
	rnd := make([]byte, 4096)
	var keys []Key
	for i := 0; i < 10; i++ {
		k := NewKey("m", []KeyPart{{"i", []byte{byte(i)}}})
		for j := range rnd {
			rnd[j] = byte(rng.Uint32())
		}
		if err := tier.Put(ctx, k, rnd, time.Second); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k)
	}
	// Entry 0 is old but was used an hour ago... make 0..4 old, then use 0.
	for i, k := range keys {
		age := time.Now().Add(-time.Duration(100-i) * time.Hour)
		os.Chtimes(tier.path(k), age, age)
	}
	if _, ok := tier.Get(ctx, keys[0]); !ok { // a writer hit refreshes the old mtime
		t.Fatal("miss")
	}
	// Also put a big XLA subcache file that counts toward the bound.
	xfile := filepath.Join(dir, string(config.SubcacheKernels))
	os.WriteFile(xfile, bytes.Repeat([]byte{1}, 40<<10), 0o600)
	old := time.Now().Add(-200 * time.Hour)
	os.Chtimes(xfile, old, old)
	// Push past the bound.
	for i := 10; i < 20; i++ {
		k := NewKey("m", []KeyPart{{"i", []byte{byte(i)}}})
		for j := range rnd {
			rnd[j] = byte(rng.Uint32())
		}
		tier.Put(ctx, k, rnd, time.Second)
		keys = append(keys, k)
	}
	c.waitBackground()
	c.Close()
	if testing.Verbose() {
		fs0, _, _ := scanFilesAt(ctx, dir)
		for _, f := range fs0 {
			t.Log(f.rel, f.size, f.mtime)
		}
	}
	u, err := Scan(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes > o.MaxSize {
		t.Errorf("cache holds %d bytes, bound %d", u.Bytes, o.MaxSize)
	}
	if _, err := os.Stat(xfile); !errors.Is(err, fs.ErrNotExist) {
		t.Error("oldest file (the XLA kernel cache) survived the trim")
	}
	if _, err := os.Stat(tier.path(keys[0])); err != nil {
		t.Error("recently used entry 0 was evicted")
	}
	if _, err := os.Stat(tier.path(keys[1])); err == nil {
		t.Error("least recently used entry 1 survived")
	}
	if _, err := os.Stat(tier.path(keys[19])); err != nil {
		t.Error("newest entry evicted")
	}
	// The ledger agrees with a scan after the trim.
	total, scanned := ledgerTotal(t, dir)
	if total != u.Bytes || scanned.IsZero() {
		t.Errorf("ledger %d (scanned %v), scan %d", total, scanned, u.Bytes)
	}
}

// openWithEntries opens a test cache in dir and puts n entries of 1000
// bytes each into tier, for tests of size bounds.
func openWithEntries(t *testing.T, dir, tier string, n int) (*Cache, *Tier) {
	t.Helper()
	c := mustOpen(t, testOptions(dir), nil)
	tr := c.Tier(tier)
	for i := range n {
		if err := tr.Put(context.Background(), NewKey("k", []KeyPart{{"i", []byte{byte(i)}}}), bytes.Repeat([]byte{byte(i)}, 1000), 0); err != nil {
			t.Fatal(err)
		}
	}
	// Callers plant files next; Open's background trim must not race them.
	c.waitBackground()
	return c, tr
}

func TestPruneAndStaleTemps(t *testing.T) {
	dir := t.TempDir()
	c, tier := openWithEntries(t, dir, "cpu/kernels", 5)
	shard := filepath.Dir(tier.path(NewKey("k", nil)))
	os.MkdirAll(shard, 0o700)
	stale := filepath.Join(shard, layout.TempPrefix+"dead")
	fresh := filepath.Join(shard, layout.TempPrefix+"live")
	os.WriteFile(stale, []byte("partial"), 0o600)
	os.WriteFile(fresh, []byte("partial"), 0o600)
	old := time.Now().Add(-2 * staleTemp)
	os.Chtimes(stale, old, old)
	if res, err := c.Prune(context.Background(), 1, true); err != nil || res.Removed != 5 || res.StaleTemps != 1 {
		t.Errorf("dry run %+v %v", res, err)
	}
	res, err := c.Prune(context.Background(), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.StaleTemps != 1 || res.Removed != 5 {
		t.Errorf("prune %+v", res)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("in-progress temp removed")
	}
}

// Scans count and evict what layout.Classify calls an entry, a subcache
// file or a quarantined file, and clean up what it calls temporary; a file
// in a tier directory that is not an entry is left alone.
func TestScanFollowsLayout(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, testOptions(dir), nil)
	tier := c.Tier(ExecutablesTier)
	k := NewKey("k", nil)
	if err := tier.Put(context.Background(), k, bytes.Repeat([]byte{1}, 1000), time.Second); err != nil {
		t.Fatal(err)
	}
	// Open may start a background trim; planted only after it finishes, the
	// stale files are this Prune's to remove (not a race with that trim).
	c.waitBackground()
	d := layout.Dir(dir)
	old := time.Now().Add(-2 * staleTemp)
	write := func(p string) string {
		t.Helper()
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
		return p
	}
	stray := write(filepath.Join(filepath.Dir(tier.path(k)), "notes.txt"))
	badKey := write(d.Entry(ExecutablesTier, k.String()) + "x")
	xlaTemp := write(filepath.Join(d.XLAAutotuneTmp(), "tmp_per_fusion_cache_1.textproto"))
	rootTemp := write(d.Join(layout.TempPrefix + "killed"))
	u, err := Scan(context.Background(), dir)
	if err != nil || u.Files != 1 || u.Areas[ExecutablesDir].Entries != 1 {
		t.Fatalf("scan %+v %v", u, err)
	}
	res, err := c.Prune(context.Background(), 1, false)
	if err != nil || res.Removed != 1 || res.StaleTemps != 2 {
		t.Errorf("prune %+v %v", res, err)
	}
	for _, p := range []string{stray, badKey} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("prune removed %s, which is not an entry", p)
		}
	}
	for _, p := range []string{xlaTemp, rootTemp} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("stale temporary file %s survived", p)
		}
	}
}

func TestStatsPersisted(t *testing.T) {
	dir := t.TempDir()
	b := &fakeBackend{}
	for i := 0; i < 2; i++ {
		c := mustOpen(t, testOptions(dir), nil)
		compileOK(t, c, b, Program{Name: "f", Text: []byte("p")})
		c.Close()
	}
	st, err := ReadPersistedStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hits != 1 || st.Misses != 1 || st.Tiers["executables"].Hits != 1 || st.CompileTimeSaved <= 0 {
		t.Errorf("persisted %+v", st)
	}
}

func TestExplain(t *testing.T) {
	o := testOptions(t.TempDir())
	o.ExplainMisses = true
	c := mustOpen(t, o, nil)
	b := &fakeBackend{version: "1", topology: "1 cpu"}
	p := Program{Name: "jit_f", Text: []byte("module"), Options: []byte("a=1")}
	_, r := compileOK(t, c, b, p)
	if !strings.Contains(r.Explain, "no stored entry") {
		t.Errorf("explain %q", r.Explain)
	}
	b.topology = "2 cpu"
	_, r = compileOK(t, c, b, p)
	if !strings.Contains(r.Explain, "differs in: topology") {
		t.Errorf("explain %q", r.Explain)
	}
	p.Options = []byte("a=2")
	b.version = "2"
	b.topology = "1 cpu"
	_, r = compileOK(t, c, b, p)
	if !strings.HasSuffix(r.Explain, "differs in: backend, options") {
		t.Errorf("explain %q", r.Explain)
	}
	k, _ := keyFromText(r.Key)
	x, err := c.Explain(context.Background(), k)
	if err != nil || !x.Present || x.Candidates != 2 || len(x.Differs) == 0 {
		t.Errorf("explain by key text: %+v %v", x, err)
	}
}

func TestAdminListVerifyClear(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(dir)
	o.Subcaches = config.AllSubcaches()
	c := mustOpen(t, o, nil)
	b := &fakeBackend{useTier: config.SubcacheKernels, contentKey: true}
	for _, s := range []string{"a", "b", "c"} {
		compileOK(t, c, b, Program{Name: "f", Text: []byte(s)})
	}
	os.WriteFile(filepath.Join(dir, string(config.SubcacheAutotune), "x.textproto"), []byte("tuning"), 0o600)
	os.WriteFile(filepath.Join(dir, "keep.txt"), []byte("user file"), 0o600)
	ctx := context.Background()
	u, err := Scan(ctx, dir)
	if err != nil || u.Areas["executables"].Entries != 3 || u.Areas["fake/kernels"].Entries != 3 || u.Areas[string(config.SubcacheAutotune)].Entries != 1 || u.Areas["other"].Entries != 0 {
		t.Errorf("scan %+v %v", u, err)
	}
	ls, err := List(ctx, dir)
	if err != nil || len(ls) != 6 {
		t.Fatalf("list %d %v", len(ls), err)
	}
	// Damage one entry by flipping a byte.
	victim := ls[0].Path
	data, _ := os.ReadFile(victim)
	data[len(data)/2] ^= 0x40
	os.WriteFile(victim, data, 0o600)
	v, err := c.Verify(ctx, false)
	if err != nil || v.Checked != 6 || len(v.Bad) != 1 || v.Bad[0].Path != victim || v.Bad[0].Kind != "corrupt" {
		t.Errorf("verify %+v %v", v, err)
	}
	v, _ = c.Verify(ctx, true)
	if len(v.Bad) != 1 || v.Bad[0].Quarantined == "" {
		t.Errorf("repair %+v", v)
	}
	if v, _ = c.Verify(ctx, false); len(v.Bad) != 0 || v.Checked != 5 {
		t.Errorf("after repair %+v", v)
	}
	c.Close()
	if _, err := Clear(ctx, dir); err != nil {
		t.Fatal(err)
	}
	left, _ := os.ReadDir(dir)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "keep.txt" {
		t.Errorf("after clear: %v", names)
	}
}

func TestInjectedWriteFailure(t *testing.T) {
	for _, errno := range []error{syscall.ENOSPC, syscall.EIO} {
		var logs logBuffer
		c := mustOpen(t, testOptions(t.TempDir()), &logs)
		c.hooks.write = func(f *os.File, b []byte) (int, error) {
			n, _ := f.Write(b[:len(b)/2])
			return n, &fs.PathError{Op: "write", Path: f.Name(), Err: errno}
		}
		b := &fakeBackend{}
		for i := 0; i < 3; i++ {
			if _, r := compileOK(t, c, b, Program{Name: "f", Text: []byte("x")}); r.Hit || r.Stored {
				t.Errorf("%v: report %+v", errno, r)
			}
		}
		if n := strings.Count(logs.String(), "\n"); n != 1 {
			t.Errorf("%v: want one log line, got %d:\n%s", errno, n, logs.String())
		}
		kind := "io"
		if errno == syscall.ENOSPC {
			kind = "nospace"
		}
		if c.Stats().Errors[kind] != 3 {
			t.Errorf("%v: errors %v", errno, c.Stats().Errors)
		}
		files, _, _ := scanFilesAt(context.Background(), c.Dir())
		if len(files) != 0 {
			t.Errorf("%v: partial files left: %+v", errno, files)
		}
	}
}

func TestDirectoryRemovedMidRun(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "c")
	c := mustOpen(t, testOptions(dir), nil)
	b := &fakeBackend{}
	compileOK(t, c, b, Program{Name: "f", Text: []byte("1")})
	os.RemoveAll(dir)
	compileOK(t, c, b, Program{Name: "f", Text: []byte("1")})
	compileOK(t, c, b, Program{Name: "f", Text: []byte("2")})
	// A file where the directory should be: Open degrades, no error.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, nil, 0o600)
	var logs logBuffer
	c2 := mustOpen(t, testOptions(file), &logs)
	compileOK(t, c2, b, Program{Name: "f", Text: []byte("1")})
	if c2.Dir() != "" || !strings.Contains(logs.String(), "compiling without a cache") {
		t.Errorf("dir %q logs %q", c2.Dir(), logs.String())
	}
}

// TestConcurrentGoroutines compiles from many goroutines at once on one
// cache (run with -race): every result is right and the counters add up.
func TestConcurrentGoroutines(t *testing.T) {
	c := mustOpen(t, testOptions(t.TempDir()), nil)
	b := &fakeBackend{useTier: config.SubcacheAutotune, size: 3000}
	const workers, progs = 8, 10
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < progs; i++ {
				compileOK(t, c, b, Program{Name: "f", Text: []byte(fmt.Sprint("prog", i))})
				_ = c.Stats()
			}
		}()
	}
	wg.Wait()
	st := c.Stats()
	exe := st.Tiers[ExecutablesTier]
	// Every call either loaded (a hit) or compiled; a miss may be
	// followed by a hit once another goroutine published the entry.
	if got := b.compiles.Load(); got+exe.Hits != workers*progs || got < progs || got > exe.Misses {
		t.Errorf("%d compiles, executables tier %+v", got, exe)
	}
}

func TestHandBuiltKeyCannotEscape(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, testOptions(dir), nil)
	k := Key{Module: "../../../../tmp/evil", Digest: [32]byte{1}}
	tier := c.Tier("cpu/kernels")
	if err := tier.Put(context.Background(), k, []byte("x"), 0); err != nil {
		t.Fatal(err)
	}
	p := tier.path(k)
	if !strings.HasPrefix(p, filepath.Join(dir, "cpu", "kernels")+string(filepath.Separator)) || filepath.Base(p) != k.String() {
		t.Errorf("entry path %s escapes its tier", p)
	}
	if got, ok := tier.Get(context.Background(), k); !ok || string(got) != "x" {
		t.Error("hand-built key does not round-trip")
	}
}

// A size bound must never cost the user a file xlacache does not own: a
// stray file in the directory, or a JAX cache's entries sharing it.
func TestPruneLeavesForeignFilesAlone(t *testing.T) {
	dir := t.TempDir()
	c, _ := openWithEntries(t, dir, "executables", 5)
	foreign := []string{
		filepath.Join(dir, "mynotes.txt"),
		filepath.Join(dir, "jit_f-0123abcd-cache"),
		filepath.Join(dir, "other", "data.bin"),
		filepath.Join(dir, "other", "autotune", "x"),
	}
	old := time.Now().Add(-48 * time.Hour)
	for _, p := range foreign {
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, bytes.Repeat([]byte("x"), 4000), 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old) // older than every entry: first in LRU order if counted
	}
	res, err := c.Prune(context.Background(), 1, false)
	if err != nil {
		t.Fatal(err)
	}
	if res.Removed != 5 {
		t.Errorf("prune removed %d files, want the 5 entries: %+v", res.Removed, res)
	}
	for _, p := range foreign {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("prune removed a file xlacache does not own: %s", p)
		}
	}
	u, err := Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if u.Bytes != 0 {
		t.Errorf("scan counts %d bytes after pruning everything xlacache owns: %+v", u.Bytes, u.Areas)
	}
}

// A huge file at an entry's path (here sparse, 8 GiB) is rejected from a
// bounded prefix read; the cache never allocates its size.
func TestHugeFileAtEntryPathIsNotRead(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, testOptions(dir), nil)
	tier := c.Tier("executables")
	key := NewKey("k", []KeyPart{{"p", []byte("x")}})
	if err := tier.Put(context.Background(), key, []byte("payload"), time.Second); err != nil {
		t.Fatal(err)
	}
	p := tier.path(key)
	good, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	os.Remove(p)
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	f.Write(good[:len(good)/2]) // a real header, then a hole
	if err := f.Truncate(8 << 30); err != nil {
		f.Close()
		t.Skipf("filesystem cannot hold a sparse 8 GiB file: %v", err)
	}
	f.Close()
	var ok bool
	grew := memtest.Allocated(func() { _, ok = tier.Get(context.Background(), key) })
	if ok {
		t.Fatal("a damaged huge entry was returned")
	}
	if grew > 64<<20 {
		t.Errorf("reading the damaged entry allocated %d bytes", grew)
	}
	if c.Stats().Errors["corrupt"] == 0 {
		t.Errorf("damaged entry not counted: %v", c.Stats().Errors)
	}
}

// The storing threshold counts the work subcache hits spared: a program
// that recompiles quickly only thanks to its cached kernels is stored.
func TestThresholdCountsSubcacheSavings(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(dir)
	o.MinCompileTime = time.Hour
	o.Subcaches = config.AllSubcaches()
	c := mustOpen(t, o, nil)
	b := &fakeBackend{useTier: config.SubcacheKernels, kernelWork: 2 * time.Hour}
	p := Program{Name: "f", Text: []byte("prog")}
	_, r := compileOK(t, c, b, p)
	if r.Stored {
		t.Fatal("a fast compile with no subcache hits was stored below the threshold")
	}
	_, r = compileOK(t, c, b, p)
	if !r.Stored {
		t.Fatalf("a compile that hit 2h of cached kernel work was not stored: %+v", r)
	}
	if _, ok := c.Tier(ExecutablesTier).Get(context.Background(), NewKey(p.Name, mustParts(t, b, p))); !ok {
		t.Fatal("stored executable not found")
	}
}

func mustParts(t *testing.T, b Backend, p Program) []KeyPart {
	t.Helper()
	parts, err := b.KeyParts(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	return parts
}

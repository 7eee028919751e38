package cache

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
)

// checkBreakdown fails unless st's totals equal the sums of its per-tier
// counts and of its per-backend counts.
func checkBreakdown(t *testing.T, what string, st Stats) {
	t.Helper()
	var tiers, backends TierStats
	for _, v := range st.Tiers {
		tiers = tiers.Plus(v)
	}
	var compiles int64
	var compileTime time.Duration
	for _, b := range st.Backends {
		compiles += b.Compiles
		compileTime += b.CompileTime
		for _, v := range b.Tiers {
			backends = backends.Plus(v)
		}
	}
	total := TierStats{Hits: st.Hits, Misses: st.Misses, SharedHits: st.SharedHits,
		BytesRead: st.BytesRead, BytesWritten: st.BytesWritten, CompileTimeSaved: st.CompileTimeSaved}
	if tiers != total || backends != total || compiles != st.Compiles || compileTime != st.CompileTime {
		t.Errorf("%s: totals %+v (compiles %d, %v); per tier %+v; per backend %+v (compiles %d, %v)",
			what, total, st.Compiles, st.CompileTime, tiers, backends, compiles, compileTime)
	}
}

// TestStatsByBackend: a compile's lookups are counted per tier and per
// backend (the executables tier for the compiling backend, a subcache
// tier for its own backend), with bytes and saved time per tier; a
// writer persists the same breakdown, and a second writer adds to it.
func TestStatsByBackend(t *testing.T) {
	dir := t.TempDir()
	b := &fakeBackend{useTier: config.SubcacheKernels, contentKey: true, kernelWork: time.Second}
	other := &fakeBackend{name: "other"}
	c := mustOpen(t, testOptions(dir), nil)
	compileOK(t, c, b, Program{Name: "m", Text: []byte("one")})
	compileOK(t, c, b, Program{Name: "m", Text: []byte("one")})
	compileOK(t, c, other, Program{Name: "o", Text: []byte("two")})
	// A lookup outside Compile has no backend.
	c.Tier(ExecutablesTier).Get(t.Context(), NewKey("x", nil))

	st := c.Stats()
	checkBreakdown(t, "process", st)
	fe := st.Backends["fake"].Tiers[ExecutablesTier]
	if fe.Hits != 1 || fe.Misses != 1 || fe.BytesRead == 0 || fe.BytesWritten == 0 || fe.CompileTimeSaved <= 0 {
		t.Errorf("fake's executables: %+v", fe)
	}
	if k := st.Backends["fake"].Tiers["fake/kernels"]; k.Misses != 1 || k.BytesWritten == 0 {
		t.Errorf("fake's kernels: %+v", k)
	}
	if o := st.Backends["other"]; o.Compiles != 1 || o.Tiers[ExecutablesTier].Misses != 1 {
		t.Errorf("other: %+v", o)
	}
	if n := st.Backends[""].Tiers[ExecutablesTier].Misses; n != 1 {
		t.Errorf("lookup outside Compile: %d misses, want 1 under backend \"\"", n)
	}
	if st.Backends["fake"].Compiles != 1 || st.Compiles != 2 || st.CompileTime <= 0 {
		t.Errorf("compiles: %+v", st)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	persisted, err := ReadPersistedStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkBreakdown(t, "persisted", persisted)
	if persisted.Backends["fake"].Tiers[ExecutablesTier] != fe || persisted.Compiles != 2 {
		t.Errorf("persisted %+v, want fake's executables %+v", persisted, fe)
	}

	c2 := mustOpen(t, testOptions(dir), nil)
	compileOK(t, c2, b, Program{Name: "m", Text: []byte("one")})
	c2.Close()
	again, err := ReadPersistedStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	checkBreakdown(t, "two writers", again)
	if h := again.Backends["fake"].Tiers[ExecutablesTier].Hits; h != 2 {
		t.Errorf("after a second writer: %d fake executables hits, want 2", h)
	}
}

// FuzzReadPersistedStats: a stats file is read from the cache directory
// (untrusted): any content reads without panicking, and adding and then
// subtracting what it holds gives back what was there before.
func FuzzReadPersistedStats(f *testing.F) {
	f.Add([]byte(`{"hits":1,"tiers":{"executables":{"hits":1,"bytes_read":5}},"backends":{"cpu":{"compiles":1,"tiers":{"executables":{"hits":1}}}}}`))
	f.Add([]byte(`{"Hits": 3, "Tiers": {"executables": {"Hits": 3}}}`))
	f.Add([]byte(`{"backends":{"":{"tiers":{"":{"misses":-1}}}}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p := filepath.Join(t.TempDir(), "stats.json")
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		st, err := ReadPersistedStatsFile(p)
		if err != nil {
			return
		}
		base := Stats{Hits: 7, Compiles: 2, Errors: map[string]int64{}, Tiers: map[string]TierStats{ExecutablesTier: {Hits: 7}},
			Backends: map[string]BackendStats{"cpu": {Compiles: 2, Tiers: map[string]TierStats{ExecutablesTier: {Hits: 7}}}}}
		back := subStats(addStats(base, st), st)
		if back.Hits != base.Hits || back.Compiles != base.Compiles || back.Tiers[ExecutablesTier].Hits != 7 ||
			back.Backends["cpu"].Tiers[ExecutablesTier].Hits != 7 {
			t.Errorf("add then subtract %s: %+v", data, back)
		}
	})
}

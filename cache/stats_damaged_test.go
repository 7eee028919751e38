package cache

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/internal/layout"
)

// A stats file is read from the cache directory, so a damaged one can hold
// anything: negative counts, counts at the top of int64, tiers no release
// has. A writer adding its own counts to it must never persist a negative
// counter (nor wrap one around), whichever field it is in.
func TestDamagedStatsFileNeverGoesNegative(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, testOptions(dir), nil)
	c.waitBackground()
	const max = math.MaxInt64
	damaged := map[string]any{
		"hits": -7, "misses": max, "shared_hits": -1, "bytes_read": max, "bytes_written": -3,
		"shared_bytes_written": max, "compile_time_saved_ns": -5, "compiles": max, "compile_time_ns": -9,
		"errors": map[string]int64{"io": max, "corrupt": -5, "made-up": -1},
		"tier_errors": map[string]map[string]int64{
			ExecutablesTier: {"io": max, "corrupt": -5},
			"no such tier":  {"io": -2, "x": 3},
			"":              {"io": 1},
		},
		"tiers": map[string]map[string]int64{
			ExecutablesTier: {"hits": -4, "misses": max, "shared_bytes_written": max},
		},
	}
	b, err := json.Marshal(damaged)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(layout.StatsRel)), b, 0o600); err != nil {
		t.Fatal(err)
	}
	tier := c.Tier(ExecutablesTier)
	c.countError(tier.name, "io")
	c.countError(tier.name, "corrupt")
	c.countError("", "io")
	c.stats.hitTier(tier, 1, 0, false)
	c.stats.missTier(tier)
	c.stats.uploadedTier(tier, 10)
	c.stats.compiled("fake", 1)
	c.flushStats()
	c.Close()

	st, err := ReadPersistedStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, v int64) {
		t.Helper()
		if v < 0 {
			t.Errorf("%s = %d after a flush onto a damaged stats file", what, v)
		}
	}
	check("hits", st.Hits)
	check("misses", st.Misses)
	check("shared hits", st.SharedHits)
	check("bytes read", st.BytesRead)
	check("bytes written", st.BytesWritten)
	check("shared bytes written", st.SharedBytesWritten)
	check("saved", int64(st.CompileTimeSaved))
	check("compiles", st.Compiles)
	check("compile time", int64(st.CompileTime))
	for k, v := range st.Errors {
		check("errors["+k+"]", v)
	}
	for tier, kinds := range st.TierErrors {
		for k, v := range kinds {
			check("tier_errors["+tier+"]["+k+"]", v)
		}
	}
	for tier, v := range st.Tiers {
		for _, f := range []struct {
			n string
			v int64
		}{{"hits", v.Hits}, {"misses", v.Misses}, {"shared hits", v.SharedHits}, {"read", v.BytesRead},
			{"written", v.BytesWritten}, {"uploaded", v.SharedBytesWritten}, {"saved", int64(v.CompileTimeSaved)}} {
			check("tiers["+tier+"]."+f.n, f.v)
		}
	}
	// Saturated, not wrapped; and this process's counts are not lost.
	if st.Errors["io"] != max || st.TierErrors[ExecutablesTier]["io"] != max {
		t.Errorf("io errors %d, in %s %d: want them saturated at %d", st.Errors["io"], ExecutablesTier, st.TierErrors[ExecutablesTier]["io"], int64(max))
	}
	if st.Errors["corrupt"] != 1 || st.TierErrors[ExecutablesTier]["corrupt"] != 1 {
		t.Errorf("corrupt errors %d, in %s %d: want this process's 1 (the file's negative count dropped)", st.Errors["corrupt"], ExecutablesTier, st.TierErrors[ExecutablesTier]["corrupt"])
	}
	if st.Hits != 1 || st.Misses != max || st.SharedBytesWritten != max {
		t.Errorf("hits %d misses %d uploaded %d: want 1, %d, %d", st.Hits, st.Misses, st.SharedBytesWritten, int64(max), int64(max))
	}
}

package cache

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPersistedStatsLegacyKeys: a stats file written before the counters
// had snake_case JSON keys still reads in full, and the keys written now
// are the documented ones.
func TestPersistedStatsLegacyKeys(t *testing.T) {
	p := filepath.Join(t.TempDir(), "stats.json")
	legacy := `{"Hits": 3, "Misses": 2, "SharedHits": 1, "BytesRead": 40, "BytesWritten": 50,
		"CompileTimeSaved": 6000000000, "Errors": {"corrupt": 1}, "Tiers": {"executables": {"Hits": 3, "Misses": 2}}}`
	if err := os.WriteFile(p, []byte(legacy), 0o600); err != nil {
		t.Fatal(err)
	}
	st, err := ReadPersistedStatsFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Hits != 3 || st.Misses != 2 || st.SharedHits != 1 || st.BytesRead != 40 || st.BytesWritten != 50 ||
		st.CompileTimeSaved != 6*time.Second || st.Errors["corrupt"] != 1 || st.Tiers["executables"].Hits != 3 {
		t.Errorf("legacy stats file read as %+v", st)
	}
	current := `{"hits": 3, "shared_hits": 1, "bytes_read": 40, "bytes_written": 50, "compile_time_saved_ns": 6000000000}`
	os.WriteFile(p, []byte(current), 0o600)
	if st, err = ReadPersistedStatsFile(p); err != nil || st.SharedHits != 1 || st.BytesRead != 40 || st.CompileTimeSaved != 6*time.Second {
		t.Errorf("stats file read as %+v, %v", st, err)
	}
	b, err := json.Marshal(st)
	for _, want := range []string{`"shared_hits"`, `"compile_time_saved_ns"`, `"tiers"`} {
		if err != nil || !strings.Contains(string(b), want) {
			t.Errorf("Stats JSON lacks %s: %s", want, b)
		}
	}
}

package metrics_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/metrics"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestDirStatsJAXLoads: `stats --format prometheus` counts a directory's
// JAX entries by load state, and gives the three series as zeros where
// there are none.
func TestDirStatsJAXLoads(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	gauge := func(load string) (float64, bool) {
		var b bytes.Buffer
		if err := metrics.WriteDirStats(ctx, &b, dir, 0); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), "stats.prom")
		if err := os.WriteFile(p, b.Bytes(), 0o600); err != nil {
			t.Fatal(err)
		}
		return seriesValue(parseFile(t, p), "xlacache_jax_entries", map[string]string{"load": load})
	}
	for _, l := range []string{"loaded", "never_loaded", "unknown"} {
		if v, ok := gauge(l); !ok || v != 0 {
			t.Fatalf("empty directory: xlacache_jax_entries{load=%q} = %v (present %v), want 0", l, v, ok)
		}
	}
	past := time.Now().Add(-time.Hour)
	var paths []string
	for i, m := range []string{"jit_a", "jit_b", "jit_c"} {
		sum := sha256.Sum256([]byte{byte(i)})
		key := m + "-" + hex.EncodeToString(sum[:])
		data, err := jaxcache.Encode(jaxcache.CodecZlib, time.Second, []byte("exe"))
		if err != nil {
			t.Fatal(err)
		}
		if err := jaxcache.WriteEntry(dir, key, data, past, 0); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, filepath.Join(dir, key+jaxcache.CacheSuffix))
	}
	// JAX loads one; the scrape itself reads none of them.
	if _, err := os.ReadFile(paths[0]); err != nil {
		t.Fatal(err)
	}
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]float64{"loaded": 1, "never_loaded": 2, "unknown": 0}
	if !d.AtimeMode.Tells() {
		want = map[string]float64{"loaded": 0, "never_loaded": 0, "unknown": 3}
	}
	for l, w := range want {
		if v, ok := gauge(l); !ok || v != w {
			t.Errorf("xlacache_jax_entries{load=%q} = %v (present %v), want %v", l, v, ok, w)
		}
	}
}

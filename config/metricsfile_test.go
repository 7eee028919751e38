package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestMetricsFileOutsideDir: XLACACHE_METRICS_FILE is read from the
// environment, and a path inside the cache directory (directly, through
// "..", or through a symbolic link) is refused with an error naming the
// variable.
func TestMetricsFileOutsideDir(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "cache")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(dir, filepath.Join(base, "link")); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{EnvDir: dir, EnvMetricsFile: filepath.Join(base, "textfile", "xlacache.prom")}
	o, err := FromEnv(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
	if err != nil || o.MetricsFile != env[EnvMetricsFile] || o.Sources[EnvMetricsFile] != SourceEnv {
		t.Fatalf("FromEnv: %q %v", o.MetricsFile, err)
	}
	if err := o.Validate(); err != nil {
		t.Errorf("a file outside the cache refused: %v", err)
	}
	for _, bad := range []string{
		filepath.Join(dir, "xlacache.prom"),
		filepath.Join(dir, "state", "new", "m.prom"),
		filepath.Join(base, "textfile", "..", "cache", "m.prom"),
		filepath.Join(base, "link", "m.prom"),
		dir,
		base + "/textfile/",
	} {
		o.MetricsFile = bad
		err := o.Validate()
		if err == nil || !strings.Contains(err.Error(), "MetricsFile") {
			t.Errorf("MetricsFile %s accepted (%v)", bad, err)
		}
	}
	// Caching off: any file will do.
	o.Dir, o.MetricsFile = "", filepath.Join(dir, "m.prom")
	if err := o.Validate(); err != nil {
		t.Errorf("with caching off: %v", err)
	}
}

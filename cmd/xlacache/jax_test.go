package main

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/internal/cli"
)

// jaxFixture writes a JAX cache directory in the documented format: two
// zstd entries (one truncated, one without its -atime file) and XLA's
// autotune subcache.
func jaxFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	old := time.Now().Add(-24 * time.Hour)
	enc, _ := zstd.NewWriter(nil)
	entry := enc.EncodeAll(append(binary.BigEndian.AppendUint32(nil, 9), bytes.Repeat([]byte("exe"), 500)...), nil)
	write := func(name string, data []byte) {
		p := filepath.Join(dir, name)
		os.MkdirAll(filepath.Dir(p), 0o700)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
	}
	k1 := "jit_step-" + strings.Repeat("ab", 32)
	k2 := "jit_eval-" + strings.Repeat("cd", 32)
	write(k1+"-cache", entry)
	write(k1+"-atime", binary.LittleEndian.AppendUint64(nil, uint64(old.UnixNano())))
	write(k2+"-cache", entry[:len(entry)/2])
	write("xla_gpu_per_fusion_autotune_cache_dir/Qk9P.textproto", []byte("version: 3\n"))
	return dir
}

// TestJAXDirThroughCLI drives stats, ls, verify, explain and prune on a JAX
// cache directory through the command line.
func TestJAXDirThroughCLI(t *testing.T) {
	dir := jaxFixture(t)
	t.Setenv("XLACACHE_DIR", "")
	out, err := runCLI(t, "stats", "--dir", dir)
	if err != nil || !strings.Contains(out, "2 entries") || !strings.Contains(out, "xla_gpu_per_fusion_autotune_cache_dir") {
		t.Errorf("stats: %v\n%s", err, out)
	}
	out, err = runCLI(t, "ls", "--dir", dir)
	if err != nil || strings.Count(out, "\n") != 3 {
		t.Errorf("ls: %v\n%s", err, out)
	}
	out, err = runCLI(t, "verify", "--dir", dir)
	if err == nil || cli.ExitCode("xlacache", err, &bytes.Buffer{}) != cli.ExitFailure || !strings.Contains(out, "BAD jit_eval-") {
		t.Errorf("verify: %v\n%s", err, out)
	}
	out, err = runCLI(t, "explain", "--dir", dir, "jit_step-"+strings.Repeat("ef", 32))
	if err != nil || !strings.HasPrefix(out, "miss") || !strings.Contains(out, "1 other entry") {
		t.Errorf("explain: %v\n%s", err, out)
	}
	out, err = runCLI(t, "prune", "--dir", dir, "--max-size", "1", "--dry-run")
	if err != nil || !strings.Contains(out, "would remove") {
		t.Errorf("prune --dry-run: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "jit_step-"+strings.Repeat("ab", 32)+"-cache")); err != nil {
		t.Errorf("dry run removed an entry: %v", err)
	}
	out, err = runCLI(t, "prune", "--dir", dir, "--max-size", "1")
	if err != nil || !strings.Contains(out, "removed") {
		t.Errorf("prune: %v\n%s", err, out)
	}
	if out, _ := runCLI(t, "stats", "--dir", dir); strings.Contains(out, "-cache") {
		t.Errorf("entries left after prune:\n%s", out)
	}
}

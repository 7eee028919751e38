package main

// Tests of `xlacache sync`, `export` and `import` through the command line;
// packages archive and dirsync test the operations themselves.

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

func TestExportImportRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	t.Setenv("XLACACHE_SIGNING_KEY", "ship-key")
	keys := cachetest.Populate(t, src, []byte("ship-key"))
	// Noise that must not travel: state, temporaries, quarantine, locks.
	os.MkdirAll(filepath.Join(src, "locks"), 0o700)
	os.WriteFile(filepath.Join(src, "locks", "x.lease"), []byte("{}"), 0o600)
	os.MkdirAll(filepath.Join(src, layout.QuarantineDir), 0o700)
	os.WriteFile(filepath.Join(src, layout.QuarantineDir, "bad"), []byte("x"), 0o600)
	archive := filepath.Join(t.TempDir(), "cache.tar.zst")
	if _, stderr, err := execCLI(t, "export", "--dir", src, archive); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	if st, err := os.Stat(archive); err != nil || st.Size() == 0 {
		t.Fatalf("archive: %v", err)
	}
	if _, stderr, err := execCLI(t, "import", "--dir", dst, archive); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	if got := cachetest.Listed(t, dst); !slices.Equal(got, keys) {
		t.Fatalf("imported entries %q, want %q", got, keys)
	}
	for _, raw := range []string{filepath.Join(layout.XLAAutotuneDir, cachetest.AutotuneFile), layout.XLAKernelFile} {
		a, _ := os.ReadFile(filepath.Join(src, raw))
		b, err := os.ReadFile(filepath.Join(dst, raw))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("raw file %s not imported intact: %v", raw, err)
		}
		if st, _ := os.Stat(filepath.Join(dst, raw)); st.Mode().Perm() != 0o600 {
			t.Fatalf("%s imported with mode %v", raw, st.Mode().Perm())
		}
	}
	for _, absent := range []string{"locks", layout.QuarantineDir} {
		if _, err := os.Stat(filepath.Join(dst, absent)); err == nil {
			t.Fatalf("%s travelled in the archive", absent)
		}
	}
	// Importing again changes nothing.
	_, stderr, err := execCLI(t, "import", "--dir", dst, archive)
	if err != nil || !strings.Contains(stderr, "imported 0 files") {
		t.Fatalf("second import: %v\n%s", err, stderr)
	}
	// With another key, nothing verifies: every member is refused.
	t.Setenv("XLACACHE_SIGNING_KEY", "other-key")
	other := t.TempDir()
	_, stderr, err = execCLI(t, "import", "--dir", other, archive)
	if err == nil || strings.Count(stderr, "refused \"") != 5 {
		t.Fatalf("import with another key: %v\n%s", err, stderr)
	}
	if got := cachetest.Listed(t, other); len(got) != 0 {
		t.Fatalf("entries imported despite the wrong key: %q", got)
	}
}

func TestSyncPushPull(t *testing.T) {
	srv := s3test.Start(t, "xlacache")
	srv.Setenv(t)
	t.Setenv("XLACACHE_SIGNING_KEY", "sync-key")
	t.Setenv("XLACACHE_ENABLE_XLA_CACHES", "all")
	url := "s3://xlacache/sync"
	a, b := t.TempDir(), t.TempDir()
	keys := cachetest.Populate(t, a, []byte("sync-key"))
	out, stderr, err := execCLI(t, "sync", "push", "--dir", a, "--url", url)
	if err != nil || !strings.Contains(out, "3 entries copied") || !strings.Contains(out, "XLA subcache files: 2 copied") {
		t.Fatalf("push: %v\n%s%s", err, out, stderr)
	}
	out, _, err = execCLI(t, "sync", "push", "--dir", a, "--url", url)
	if err != nil || !strings.Contains(out, "0 entries copied, 3 already there") {
		t.Fatalf("second push: %v\n%s", err, out)
	}
	out, stderr, err = execCLI(t, "sync", "pull", "--dir", b, "--url", url)
	if err != nil || !strings.Contains(out, "3 entries copied") {
		t.Fatalf("pull: %v\n%s%s", err, out, stderr)
	}
	if got := cachetest.Listed(t, b); !slices.Equal(got, keys) {
		t.Fatalf("pulled %q, want %q", got, keys)
	}
	if data, err := os.ReadFile(filepath.Join(b, layout.XLAAutotuneDir, cachetest.AutotuneFile)); err != nil || string(data) != cachetest.AutotuneContent {
		t.Fatalf("autotune file not pulled: %q %v", data, err)
	}
	// A copy is not a lookup: pulling counts no hits and saves no time.
	if st, err := cache.ReadPersistedStats(b); err != nil || st.Hits != 0 || st.SharedHits != 0 || st.CompileTimeSaved != 0 {
		t.Errorf("pull counted lookups: %+v %v", st, err)
	}
	if out, _, err := execCLI(t, "verify", "--dir", b); err != nil {
		t.Errorf("pulled entries do not verify: %v\n%s", err, out)
	}
	out, _, err = execCLI(t, "sync", "pull", "--dir", b, "--url", url)
	if err != nil || !strings.Contains(out, "0 entries copied, 3 already there") {
		t.Fatalf("second pull: %v\n%s", err, out)
	}
	// A reader with another key refuses everything.
	t.Setenv("XLACACHE_SIGNING_KEY", "wrong-key")
	c := t.TempDir()
	out, _, err = execCLI(t, "sync", "pull", "--dir", c, "--url", url)
	if err == nil || !strings.Contains(out, "0 entries copied, 0 already there, 3 refused") {
		t.Fatalf("pull with the wrong key: %v\n%s", err, out)
	}
	// Usage errors exit 2.
	t.Setenv("XLACACHE_SHARED_URL", "")
	for _, args := range [][]string{{"sync", "sideways"}, {"sync", "pull", "--dir", c}, {"sync", "pull", "--dir", c, "--url", "gs://x"}, {"sync", "pull", "--dir", c, "--url", "ftp://bucket/p"}} {
		_, _, err := execCLI(t, args...)
		var ue cli.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

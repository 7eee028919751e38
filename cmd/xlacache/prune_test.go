package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

// TestPruneSharedUsage: the bucket's prune needs a rule and a bucket, and
// --older-than means nothing for the directory.
func TestPruneSharedUsage(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XLACACHE_SHARED_URL", "")
	for _, args := range [][]string{
		{"prune", "--dir", dir, "--shared"},
		{"prune", "--dir", dir, "--shared", "--older-than", "30d"},
		{"prune", "--dir", dir, "--older-than", "30d", "--max-size", "1GB"},
		{"prune", "--dir", dir, "--shared", "--older-than", "soon"},
	} {
		_, _, err := execCLI(t, args...)
		var ue cli.UsageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// TestPruneSharedCLI: `prune --shared --older-than` against a real S3
// server removes the entries unused for the age, reports a dry run
// without removing, and leaves XLA's mirrored files alone.
func TestPruneSharedCLI(t *testing.T) {
	srv := s3test.Start(t, "xlacache")
	srv.Setenv(t)
	t.Setenv("XLACACHE_ENABLE_XLA_CACHES", "all")
	url := "s3://xlacache/team"
	a := t.TempDir()
	cachetest.Populate(t, a, nil)
	if out, stderr, err := execCLI(t, "sync", "push", "--dir", a, "--url", url); err != nil {
		t.Fatalf("push: %v\n%s%s", err, out, stderr)
	}
	// Everything in the bucket was uploaded 40 days ago (versitygw reports
	// its files' modification times).
	old := time.Now().Add(-40 * 24 * time.Hour)
	var objects []string
	filepath.WalkDir(filepath.Join(srv.Root, "xlacache", "team"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			os.Chtimes(p, old, old)
			objects = append(objects, p)
		}
		return nil
	})
	t.Setenv("XLACACHE_SHARED_URL", url)
	out, _, err := execCLI(t, "prune", "--dir", a, "--shared", "--older-than", "30d", "--dry-run")
	if err != nil || !strings.Contains(out, "3 entries") || !strings.Contains(out, "would remove 3 entries") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	out, _, err = execCLI(t, "prune", "--dir", a, "--shared", "--older-than", "30d")
	if err != nil || !strings.Contains(out, "removed 3 entries") || !strings.Contains(out, "not used for 30d") {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	var left []string
	for _, p := range objects {
		if _, err := os.Stat(p); err == nil {
			left = append(left, filepath.ToSlash(p))
		}
	}
	if len(left) == 0 || len(left) != len(objects)-3 {
		t.Fatalf("left %d of %d objects, want all but the 3 entries", len(left), len(objects))
	}
	for _, p := range left {
		if !strings.Contains(p, layout.XLAAutotuneDir) && !strings.Contains(p, layout.XLAKernelFile) {
			t.Errorf("an xlacache entry survived: %s", p)
		}
	}
}

// TestPruneMaxSizeKeepsKernelCacheBeingWritten: `xlacache prune
// --max-size` never removes XLA's kernel cache file while a process holds
// it open for writing (this test's own process here; the jaxcache tests
// use separate processes), however old it looks.
func TestPruneMaxSizeKeepsKernelCacheBeingWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the open-for-write check reads /proc")
	}
	dir, _ := cachetest.MixedDir(t)
	kernel := layout.Dir(dir).XLAKernel()
	f, err := os.OpenFile(kernel, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	f.WriteString("kernels")
	old := time.Now().Add(-48 * time.Hour)
	os.Chtimes(kernel, old, old)
	out, _, err := execCLI(t, "prune", "--dir", dir, "--max-size", "1")
	if err != nil {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	if _, err := os.Stat(kernel); err != nil {
		t.Fatalf("prune removed the kernel cache file being written: %v\n%s", err, out)
	}
	f.Close()
	if out, _, err = execCLI(t, "prune", "--dir", dir, "--max-size", "1"); err != nil {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	if _, err := os.Stat(kernel); err == nil {
		t.Errorf("the kernel cache file stays once closed\n%s", out)
	}
}

// FuzzParseAge: any string either fails or gives a positive age, and a
// printed whole-day age parses back to itself.
func FuzzParseAge(f *testing.F) {
	for _, s := range []string{"30d", "1.5d", "36h", "90m", "0d", "-1d", "1e9d", "NaNd", "Infd", "d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := config.ParseAge(s)
		if err != nil {
			return
		}
		if d <= 0 {
			t.Fatalf("parseAge(%q) = %v, not positive", s, d)
		}
		if p := fmtAge(d); strings.HasSuffix(p, "d") {
			if back, err := config.ParseAge(p); err != nil || back != d {
				t.Fatalf("fmtAge(%v) = %q parses to %v, %v", d, p, back, err)
			}
		}
	})
}

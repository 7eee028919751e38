package shareddir_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/shareddir"
)

// holdEnv names the file TestHoldChild holds open for writing.
const holdEnv = "XLACACHE_TEST_HOLD_FOR_WRITE"

// TestHoldChild is not a test of its own: re-executed by holdOpen, it opens
// the file named by holdEnv for writing (as XLA holds its kernel cache file
// or an autotune temp file while it writes), writes to it, says "ready" and
// keeps the file open until its standard input closes.
func TestHoldChild(t *testing.T) {
	p := os.Getenv(holdEnv)
	if p == "" {
		t.Skip("helper process for the prune tests")
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte("w"), 4096)); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("ready\n")
	io.Copy(io.Discard, os.Stdin)
	f.Close()
}

// holdOpen starts a process that holds p open for writing and returns
// once it does; release (also run at cleanup) makes it close the file and
// exit.
func holdOpen(t *testing.T, p string) (release func()) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHoldChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), holdEnv+"="+p)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	release = func() {
		once.Do(func() {
			stdin.Close()
			io.Copy(io.Discard, stdout)
			if err := cmd.Wait(); err != nil {
				t.Errorf("holder of %s: %v", p, err)
			}
		})
	}
	t.Cleanup(release)
	sc := bufio.NewScanner(stdout)
	for sc.Scan() {
		if sc.Text() == "ready" {
			return release
		}
	}
	t.Fatalf("holder of %s exited before holding it: %v", p, sc.Err())
	return nil
}

// setAge sets a file's modification time to age ago.
func setAge(t *testing.T, p string, age time.Duration) {
	t.Helper()
	at := time.Now().Add(-age)
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

// writeAged writes a closed file of n bytes modified age ago.
func writeAged(t *testing.T, p string, n int, age time.Duration) string {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, bytes.Repeat([]byte("x"), n), 0o600); err != nil {
		t.Fatal(err)
	}
	setAge(t, p, age)
	return p
}

// xlaFiles are the files XLA may be writing in a directory, set up by
// writerFixture.
type xlaFiles struct {
	// keep must survive any prune: young temp files (held open or not), a
	// young autotune result, and old files held open for writing (the
	// kernel cache being rewritten in place, a kernel cache temp file).
	keep []string
	// kernel is the kernel cache file, held open by releaseKernel.
	kernel        string
	releaseKernel func()
	// stale are temp files crashed writers left, out of the grace period
	// and open nowhere: every prune removes them.
	stale []string
}

// writerFixture adds XLA's files to dir as the issue describes them, with
// real processes holding some open for writing.
func writerFixture(t *testing.T, dir string) xlaFiles {
	t.Helper()
	d := layout.Dir(dir)
	var x xlaFiles
	old := 2 * jaxcache.DefaultGrace
	// An autotune result waiting for its rename: young and open.
	heldTmp := filepath.Join(d.XLAAutotuneTmp(), "tmp_per_fusion_cache_4242.textproto")
	os.MkdirAll(filepath.Dir(heldTmp), 0o700)
	holdOpen(t, heldTmp)
	// One written a second ago and closed, about to be renamed: only the
	// grace period protects it.
	youngTmp := writeAged(t, filepath.Join(d.XLAAutotuneTmp(), "tmp_per_fusion_cache_4243.textproto"), 2048, time.Second)
	// A result renamed into place a second ago.
	youngResult := writeAged(t, filepath.Join(d.XLAAutotune(), "WW91bmc=.textproto"), 2048, time.Second)
	// The kernel cache file being rewritten in place by an older XLA:
	// open for writing, its modification time set back so that only the
	// open-for-write check protects it.
	x.kernel = d.XLAKernel()
	x.releaseKernel = holdOpen(t, x.kernel)
	setAge(t, x.kernel, 24*time.Hour)
	// A kernel cache temp file a newer XLA is writing, likewise.
	heldKTmp := d.Join(layout.XLAKernelFile + ".tmp.4242")
	holdOpen(t, heldKTmp)
	setAge(t, heldKTmp, 24*time.Hour)
	x.keep = []string{heldTmp, youngTmp, youngResult, x.kernel, heldKTmp}
	// Left by crashed writers.
	x.stale = []string{
		writeAged(t, d.Join(layout.XLAKernelFile+".tmp.1111"), 4096, old),
		writeAged(t, filepath.Join(d.XLAAutotuneTmp(), "tmp_per_fusion_cache_1111.textproto"), 4096, old),
	}
	return x
}

func (x xlaFiles) check(t *testing.T, path string) {
	t.Helper()
	for _, p := range x.keep {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: removed %s, which XLA may be writing: %v", path, p, err)
		}
	}
	for _, p := range x.stale {
		if _, err := os.Lstat(p); err == nil {
			t.Errorf("%s: kept %s, a stale temp file out of the grace period", path, p)
		}
	}
}

func quiet() *slog.Logger { return slog.New(slog.DiscardHandler) }

// TestPruneNeverRemovesFilesBeingWritten: every path that deletes in a
// directory shared with XLA and JAX (`xlacache prune --max-size` on a
// shared directory, the JAX-only prune, the cache's own trim, PruneDir
// that `exec` runs at exit, verify --repair) keeps young temp files, files
// other processes hold open for writing and the kernel cache being
// written, and removes stale kernel cache and autotune temp files. Bounds
// of one byte make each path remove everything else it may. After the
// holder of the kernel cache file closes it, the same prune removes it:
// the open-for-write check was what kept it.
func TestPruneNeverRemovesFilesBeingWritten(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the open-for-write check reads /proc")
	}
	ctx := context.Background()
	openWriter := func(t *testing.T, dir string) *cache.Cache {
		o := config.Defaults()
		o.Dir, o.Role = dir, config.RoleWriter
		c, err := cache.Open(ctx, o, quiet())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	for _, tc := range []struct {
		name string
		// jax: the directory holds JAX entries; own: xlacache's tiers.
		jax, own bool
		prune    func(t *testing.T, dir string) error
	}{
		{"PruneShared", true, true, func(t *testing.T, dir string) error {
			_, err := shareddir.Prune(ctx, openWriter(t, dir), dir, 1, false, quiet())
			return err
		}},
		{"PruneDir", true, true, func(t *testing.T, dir string) error {
			o := config.Defaults()
			o.Dir, o.MaxSize = dir, 1
			_, err := shareddir.PruneDir(ctx, nil, o, quiet())
			return err
		}},
		{"JAX-only Prune", true, false, func(t *testing.T, dir string) error {
			_, err := jaxcache.Prune(ctx, dir, jaxcache.PruneOptions{MaxSize: 1, Logger: quiet()})
			return err
		}},
		{"cache trim", false, true, func(t *testing.T, dir string) error {
			_, err := openWriter(t, dir).Prune(ctx, 1, false)
			return err
		}},
		{"verify --repair", false, true, func(t *testing.T, dir string) error {
			_, err := openWriter(t, dir).Verify(ctx, true)
			return err
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dir string
			switch {
			case tc.jax && tc.own:
				dir, _ = cachetest.MixedDir(t)
			case tc.own:
				dir = t.TempDir()
				cachetest.Populate(t, dir, nil)
				os.Remove(layout.Dir(dir).XLAKernel())
				setAge(t, filepath.Join(layout.Dir(dir).XLAAutotune(), cachetest.AutotuneFile), time.Hour)
			default:
				dir, _ = cachetest.MixedDir(t)
				// JAX's entries and XLA's files only.
				for _, p := range []string{layout.ExecutablesDir, "cpu", layout.StateDir, layout.LocksDir} {
					os.RemoveAll(filepath.Join(dir, p))
				}
			}
			x := writerFixture(t, dir)
			if err := tc.prune(t, dir); err != nil {
				t.Fatal(err)
			}
			x.check(t, tc.name)
			if tc.name == "verify --repair" {
				return // it removes only stale temp files
			}
			// Everything not protected went.
			var left []string
			filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return nil
				}
				rel, _ := filepath.Rel(dir, p)
				rel = filepath.ToSlash(rel)
				if c := layout.Classify(rel); (c.Counted() || strings.HasSuffix(rel, jaxcache.CacheSuffix)) && !contains(x.keep, p) {
					left = append(left, rel)
				}
				return nil
			})
			if len(left) > 0 {
				t.Errorf("a 1-byte bound left unprotected files: %v", left)
			}
			x.releaseKernel()
			if err := tc.prune(t, dir); err != nil {
				t.Fatal(err)
			}
			if _, err := os.Lstat(x.kernel); err == nil {
				t.Errorf("the kernel cache file stays after its writer closed it: the open-for-write check did not decide")
			}
		})
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// TestPruneDir: the helper `exec` runs at exit bounds any directory: with
// no bound it removes only garbage, with one it evicts; it uses the
// caller's writer cache when given one and opens its own otherwise (here
// beside a reader's).
func TestPruneDir(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cachetest.Populate(t, dir, nil)
	d := layout.Dir(dir)
	setAge(t, filepath.Join(d.XLAAutotune(), cachetest.AutotuneFile), time.Hour)
	setAge(t, d.XLAKernel(), time.Hour)
	stale := writeAged(t, d.Join(layout.XLAKernelFile+".tmp.9"), 100, 2*jaxcache.DefaultGrace)
	before := cachetest.DirTotal(t, dir)
	o := config.Defaults()
	o.Dir = dir
	res, err := shareddir.PruneDir(ctx, nil, o, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(stale); err == nil || res.Own.Removed != 0 || res.Own.StaleTemps != 1 || cachetest.DirTotal(t, dir) != before {
		t.Errorf("no bound: %+v; want only the stale temp file removed", res)
	}
	r := o
	r.Role = config.RoleReader
	reader, err := cache.Open(ctx, r, quiet())
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Close()
	o.MaxSize = 1
	res, err = shareddir.PruneDir(ctx, reader, o, quiet())
	if err != nil {
		t.Fatal(err)
	}
	if res.Own.Removed != 5 || res.After() != 0 || cachetest.DirTotal(t, dir) != 0 {
		t.Errorf("bound of 1 byte: %+v, %d bytes left", res, cachetest.DirTotal(t, dir))
	}
}

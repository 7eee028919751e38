//go:build unix

package cache

import (
	"bytes"
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/hangtest"
)

// entryRelOf returns where p's executable entry lives (relative to a cache
// directory), learnt by compiling p in a scratch cache.
func entryRelOf(t *testing.T, b *fakeBackend, p Program) (string, Key) {
	t.Helper()
	c := mustOpen(t, testOptions(t.TempDir()), nil)
	_, r := compileOK(t, c, b, p)
	c.Close()
	k, err := keyFromText(r.Key)
	if err != nil {
		t.Fatal(err)
	}
	return layout.EntryRel(ExecutablesTier, k.String()), k
}

// listTree returns every path under dir, relative, with a marker of what
// it is, for "nothing was created here" assertions.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		out = append(out, rel)
		return nil
	})
	return out
}

// Item 1 of the hardening issue: a symlink planted where the layout expects
// a file or a directory is never written through, and the compile still
// succeeds.
func TestPlantedSymlinksNeverWrittenThrough(t *testing.T) {
	b := &fakeBackend{size: 500}
	p := Program{Name: "f", Text: []byte("planted")}
	rel, _ := entryRelOf(t, b, p)
	shard := filepath.Dir(filepath.FromSlash(rel))
	const outsideBytes = "0123456789abcdefOUTSIDE-FILE"
	// linkToVictim plants state/<file> as a symbolic link to a file
	// outside the cache directory.
	linkToVictim := func(file string) func(t *testing.T, dir, outside string) {
		return func(t *testing.T, dir, outside string) {
			os.MkdirAll(filepath.Join(dir, layout.StateDir), 0o700)
			target := filepath.Join(outside, "victim")
			os.WriteFile(target, []byte(outsideBytes), 0o600)
			if err := os.Symlink(target, filepath.Join(dir, layout.StateDir, file)); err != nil {
				t.Fatal(err)
			}
		}
	}

	cases := []struct {
		name string
		// plant prepares dir (which exists, empty) and returns what must
		// stay untouched outside it.
		plant func(t *testing.T, dir, outside string)
		// after runs extra operations that write the planted path.
		after func(t *testing.T, c *Cache)
	}{
		{"ledger", linkToVictim(layout.LedgerFile), nil},
		{"trim.lock", func(t *testing.T, dir, outside string) {
			os.MkdirAll(filepath.Join(dir, layout.StateDir), 0o700)
			if err := os.Symlink(filepath.Join(outside, "created"), filepath.Join(dir, layout.StateDir, layout.TrimLockFile)); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, c *Cache) {
			c.Prune(context.Background(), 1, false)
		}},
		{"stats.json", linkToVictim(layout.StatsFile), nil},
		{"quarantine", func(t *testing.T, dir, outside string) {
			if err := os.Symlink(outside, filepath.Join(dir, layout.QuarantineDir)); err != nil {
				t.Fatal(err)
			}
			// A damaged entry that a writer's lookup quarantines.
			os.MkdirAll(filepath.Join(dir, shard), 0o700)
			os.WriteFile(filepath.Join(dir, filepath.FromSlash(rel)), []byte("attacker-chosen content"), 0o600)
		}, nil},
		{"shard", func(t *testing.T, dir, outside string) {
			os.MkdirAll(filepath.Join(dir, ExecutablesDir), 0o700)
			if err := os.Symlink(outside, filepath.Join(dir, shard)); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"executables", func(t *testing.T, dir, outside string) {
			if err := os.Symlink(outside, filepath.Join(dir, ExecutablesDir)); err != nil {
				t.Fatal(err)
			}
		}, nil},
		{"state dir", func(t *testing.T, dir, outside string) {
			if err := os.Symlink(outside, filepath.Join(dir, layout.StateDir)); err != nil {
				t.Fatal(err)
			}
		}, func(t *testing.T, c *Cache) {
			c.Prune(context.Background(), 1, false)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			dir := filepath.Join(base, "cache")
			outside := filepath.Join(base, "outside")
			os.Mkdir(dir, 0o700)
			os.Mkdir(outside, 0o700)
			tc.plant(t, dir, outside)
			before := listTree(t, outside)
			var logs logBuffer
			o := testOptions(dir)
			c := mustOpen(t, o, &logs)
			compileOK(t, c, b, p)
			compileOK(t, c, b, p)
			c.Tier("cpu/kernels").Put(context.Background(), NewKey("k", nil), []byte("kernel"), 0)
			if tc.after != nil {
				tc.after(t, c)
			}
			c.Close()
			if after := listTree(t, outside); strings.Join(after, ",") != strings.Join(before, ",") {
				t.Errorf("files outside the cache directory changed: before %v, after %v", before, after)
			}
			if got, err := os.ReadFile(filepath.Join(outside, "victim")); err == nil && string(got) != outsideBytes {
				t.Errorf("file outside the cache directory overwritten: %q", got)
			}
			if got, err := os.ReadFile(filepath.Join(outside, filepath.Base(rel))); err == nil {
				t.Errorf("entry written outside the cache directory (%d bytes)", len(got))
			}
		})
	}
}

// Item 1: the whole cache directory itself may be a symlink (item 6), but
// a symlink that points a tier outside stays damage even through it.
func TestSymlinkedDirIsResolved(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	link := filepath.Join(base, "link")
	os.Mkdir(real, 0o700)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	c := mustOpen(t, testOptions(link), nil)
	if c.Dir() != real {
		t.Errorf("Dir() = %q, want the resolved %q", c.Dir(), real)
	}
	b := &fakeBackend{size: 500}
	for _, s := range []string{"a", "b", "c"} {
		compileOK(t, c, b, Program{Name: "f", Text: []byte(s)})
	}
	ctx := context.Background()
	if u, err := Scan(ctx, link); err != nil || u.Areas[ExecutablesTier].Entries != 3 {
		t.Errorf("Scan through a symlinked dir: %+v %v", u, err)
	}
	if fs, err := Files(ctx, link); err != nil || len(fs) != 3 {
		t.Errorf("Files through a symlinked dir: %d %v", len(fs), err)
	}
	if ls, err := List(ctx, link); err != nil || len(ls) != 3 {
		t.Errorf("List through a symlinked dir: %d %v", len(ls), err)
	}
	if v, err := c.Verify(ctx, false); err != nil || v.Checked != 3 {
		t.Errorf("Verify through a symlinked dir: %+v %v", v, err)
	}
	if res, err := c.Prune(ctx, 1, false); err != nil || res.Removed != 3 {
		t.Errorf("Prune through a symlinked dir: %+v %v", res, err)
	}
}

// Item 2: a directory another user owns, or that others can write, is not
// used (readers and writers), unless the user opts in or signs entries.
func TestSharedDirRefused(t *testing.T) {
	b := &fakeBackend{size: 500}
	p := Program{Name: "f", Text: []byte("forged")}
	// forge plants a (validly encoded, unsigned) entry for p in dir, as
	// another local user could.
	forge := func(t *testing.T, dir string) {
		c := mustOpen(t, testOptions(dir), nil)
		compileOK(t, c, b, p)
		c.Close()
	}
	type setup struct {
		name string
		prep func(t *testing.T, dir string)
		root bool
	}
	setups := []setup{
		{"world-writable", func(t *testing.T, dir string) { os.Chmod(dir, 0o777) }, false},
		{"group-writable", func(t *testing.T, dir string) { os.Chmod(dir, 0o770) }, false},
		{"other owner", func(t *testing.T, dir string) {
			if err := os.Chown(dir, 65534, 65534); err != nil {
				t.Fatal(err)
			}
		}, true},
	}
	for _, s := range setups {
		for _, role := range []config.Role{config.RoleWriter, config.RoleReader} {
			t.Run(s.name+"/"+role.String(), func(t *testing.T) {
				if s.root && os.Geteuid() != 0 {
					t.Skip("needs root to chown")
				}
				dir := filepath.Join(t.TempDir(), "cache")
				forge(t, dir)
				s.prep(t, dir)
				var logs logBuffer
				o := testOptions(dir)
				o.Role = role
				c := mustOpen(t, o, &logs)
				b.compiles.Store(0)
				_, r := compileOK(t, c, b, p)
				if r.Hit || b.compiles.Load() != 1 {
					t.Errorf("entry of a shared directory loaded: report %+v", r)
				}
				if c.Dir() != "" {
					t.Errorf("Dir() = %q for a refused directory", c.Dir())
				}
				if n := strings.Count(logs.String(), `msg="refusing cache directory`); n != 1 {
					t.Errorf("%d refusal lines, want 1:\n%s", n, logs.String())
				}
				// The explicit opt-in, and a signing key, allow it.
				o.AllowSharedDir = true
				c2 := mustOpen(t, o, nil)
				if c2.Dir() == "" {
					t.Error("XLACACHE_ALLOW_SHARED_DIR did not allow the directory")
				}
				o.AllowSharedDir = false
				o.SigningKey = sign.NewHMAC([]byte("k"))
				c3 := mustOpen(t, o, nil)
				if c3.Dir() == "" {
					t.Error("a signing key did not allow the shared directory")
				}
				b.compiles.Store(0)
				if _, r := compileOK(t, c3, b, p); r.Hit {
					t.Error("unsigned forged entry loaded with a signing key")
				}
			})
		}
	}
	t.Run("group-writable by choice", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "cache")
		o := testOptions(dir)
		o.DirMode = 0o770
		c := mustOpen(t, o, nil)
		os.Chmod(dir, 0o770) // whatever the umask did
		c.Close()
		c = mustOpen(t, o, nil)
		if c.Dir() == "" {
			t.Error("a group-writable directory refused although XLACACHE_DIR_MODE asks for it")
		}
	})
	t.Run("created under a writable parent", func(t *testing.T) {
		base := t.TempDir()
		open := filepath.Join(base, "open")
		os.Mkdir(open, 0o777)
		os.Chmod(open, 0o777)
		var logs logBuffer
		c := mustOpen(t, testOptions(filepath.Join(open, "cache")), &logs)
		if c.Dir() != "" {
			t.Error("cache created under a world-writable, non-sticky parent")
		}
		// Sticky and owned by us (like /tmp): fine.
		os.Chmod(open, 0o777|os.ModeSticky)
		c = mustOpen(t, testOptions(filepath.Join(open, "cache2")), nil)
		if c.Dir() == "" {
			t.Error("cache refused under a sticky parent we own")
		}
	})
}

// Item 3: a FIFO at an entry path hangs neither readers nor writers, and
// verify reports it as damaged.
func TestFIFOAtEntryPath(t *testing.T) {
	b := &fakeBackend{size: 500}
	p := Program{Name: "f", Text: []byte("fifo")}
	rel, _ := entryRelOf(t, b, p)
	for _, role := range []config.Role{config.RoleReader, config.RoleWriter} {
		t.Run(role.String(), func(t *testing.T) {
			dir := t.TempDir()
			w := mustOpen(t, testOptions(dir), nil)
			w.Close()
			fifo := filepath.Join(dir, filepath.FromSlash(rel))
			os.MkdirAll(filepath.Dir(fifo), 0o700)
			if err := syscall.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			o := testOptions(dir)
			o.Role = role
			c := mustOpen(t, o, nil)
			hangtest.NoHang(t, fifo, 20*time.Second, "a FIFO at an entry path hung the process", func() {
				if v, err := c.Verify(context.Background(), false); err != nil || len(v.Bad) != 1 || v.Bad[0].Kind != "foreign" {
					t.Errorf("verify with a FIFO at an entry path: %+v %v", v, err)
				}
				compileOK(t, c, b, p)
				if role == config.RoleWriter {
					// The writer quarantined it and stored the entry.
					if _, r := compileOK(t, c, b, p); !r.Hit {
						t.Error("no entry stored in place of the FIFO")
					}
				}
			})
		})
	}
}

// Item 13: stale temporary files are removed by writers also when the
// cache is unbounded, and count toward the bound while they exist.
func TestStaleTempsRemovedAndCounted(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, testOptions(dir), nil)
	b := &fakeBackend{size: 500}
	compileOK(t, c, b, Program{Name: "f", Text: []byte("a")})
	c.Close()
	shard := filepath.Join(dir, ExecutablesDir, "00")
	os.MkdirAll(shard, 0o700)
	stale := filepath.Join(shard, layout.TempPrefix+"dead")
	fresh := filepath.Join(shard, layout.TempPrefix+"live")
	os.WriteFile(stale, bytes.Repeat([]byte("x"), 5000), 0o600)
	os.WriteFile(fresh, bytes.Repeat([]byte("y"), 7000), 0o600)
	old := time.Now().Add(-2 * staleTemp)
	os.Chtimes(stale, old, old)
	// Make the ledger's last recount old, as after a long idle period.
	c = mustOpen(t, testOptions(dir), nil)
	c.ledger.locked(func() error { return c.ledger.writeLocked(0, old) })
	c.Close()

	// An unbounded writer cleans up in the background.
	c = mustOpen(t, testOptions(dir), nil)
	c.waitBackground()
	if _, err := os.Lstat(stale); err == nil {
		t.Error("stale temporary file survived a writer's open of an unbounded cache")
	}
	if _, err := os.Lstat(fresh); err != nil {
		t.Error("in-progress temporary file removed")
	}
	// A stale temporary file counts toward the total while it exists.
	res0, err := c.Prune(context.Background(), 0, true)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(stale, bytes.Repeat([]byte("x"), 5000), 0o600)
	os.Chtimes(stale, old, old)
	res, err := c.Prune(context.Background(), 0, true)
	if err != nil || res.Bytes != res0.Bytes+5000 || res.StaleTemps != 1 {
		t.Errorf("prune total %+v %v does not count the 5000-byte stale temporary file (without: %+v)", res, err, res0)
	}
	// verify --repair removes stale temps too.
	v, err := c.Verify(context.Background(), true)
	if err != nil || v.StaleTemps != 1 {
		t.Errorf("verify --repair %+v %v", v, err)
	}
	if _, err := os.Lstat(stale); err == nil {
		t.Error("verify --repair left a stale temporary file")
	}
}

// scanFilesAt is scanFiles for a directory path, in the shape tests use:
// counted files and the paths of stale temporary files.
func scanFilesAt(ctx context.Context, dir string) ([]fileInfo, []string, error) {
	sc, root, err := scanDir(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	root.Close()
	var stale []string
	for _, f := range sc.temps {
		if f.stale {
			stale = append(stale, f.path)
		}
	}
	return sc.files, stale, nil
}

// openLedgerAt opens the ledger of the cache directory dir.
// ledgerTotal reads the size ledger of dir: its running total and when it
// was last reconciled with a scan.
func ledgerTotal(t testing.TB, dir string) (int64, time.Time) {
	t.Helper()
	l := openLedgerAt(t, dir)
	defer l.close()
	total, scanned, err := l.read()
	if err != nil {
		t.Fatal(err)
	}
	return total, scanned
}

func openLedgerAt(t testing.TB, dir string) *ledger {
	t.Helper()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	l, err := openLedger(root, layout.LedgerRel, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

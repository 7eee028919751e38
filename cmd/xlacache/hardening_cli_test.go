//go:build unix

package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/hangtest"
	"github.com/xlacache/xlacache/xla/shareddir"
)

// A symlinked XLACACHE_DIR is a normal setup: every command sees the
// entries behind it (hardening issue, item 6).
func TestCLISymlinkedDir(t *testing.T) {
	base := t.TempDir()
	real, link := filepath.Join(base, "real"), filepath.Join(base, "link")
	populateAdmin(t, real)
	if err := os.Symlink(real, link); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{config.EnvDir: link}
	out, code := runAdminCLI(t, env, "stats", "--json")
	var sr shareddir.Stats
	if code != 0 || json.Unmarshal([]byte(out), &sr) != nil || sr.Areas["executables"].Entries != 2 || sr.Areas["cpu/kernels"].Entries != 1 {
		t.Errorf("stats through a symlinked dir (%d): %s", code, out)
	}
	out, code = runAdminCLI(t, env, "ls", "--json")
	var ls []cache.EntryInfo
	if code != 0 || json.Unmarshal([]byte(out), &ls) != nil || len(ls) != 3 {
		t.Errorf("ls through a symlinked dir (%d): %s", code, out)
	}
	out, code = runAdminCLI(t, env, "verify", "--json")
	var vr verifyReport
	if code != 0 || json.Unmarshal([]byte(out), &vr) != nil || vr.Checked != 3 {
		t.Errorf("verify through a symlinked dir (%d): %s", code, out)
	}
	archive := filepath.Join(base, "a.tar.zst")
	if _, stderr, err := execCLI(t, "export", "--dir", link, archive); err != nil || !strings.Contains(stderr, "3") {
		t.Errorf("export through a symlinked dir: %v\n%s", err, stderr)
	}
	out, code = runAdminCLI(t, env, "prune", "--max-size", "1")
	if code != 0 || !strings.Contains(out, "removed 3 files") {
		t.Errorf("prune through a symlinked dir (%d): %s", code, out)
	}
}

// A FIFO at an entry path neither hangs verify nor passes it (item 3).
func TestCLIVerifyFIFO(t *testing.T) {
	dir := t.TempDir()
	keys := populateAdmin(t, dir)
	fifo := filepath.Join(dir, filepath.FromSlash(layout.EntryRel("executables", keys[0])))
	os.Remove(fifo)
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	hangtest.NoHang(t, fifo, 30*time.Second, "verify hung on a FIFO", func() {
		out, code := runAdminCLI(t, map[string]string{config.EnvDir: dir}, "verify", "--json")
		var vr verifyReport
		if code != 1 || json.Unmarshal([]byte(out), &vr) != nil || len(vr.Bad) != 1 || vr.Bad[0].Kind != "foreign" {
			t.Errorf("verify with a FIFO at an entry path (%d): %s", code, out)
		}
	})
}

//go:build linux

package cache

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/xlacache/xlacache/internal/layout"
)

// mountTmpfs mounts a small tmpfs at a new directory, or returns "" when
// this process may not mount (not root, or no CAP_SYS_ADMIN), or when
// XLACACHE_TEST_NO_MOUNT=1 asks for the fallbacks.
func mountTmpfs(t *testing.T, size string) string {
	t.Helper()
	if os.Geteuid() != 0 || os.Getenv("XLACACHE_TEST_NO_MOUNT") == "1" {
		return ""
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size="+size+",mode=0700", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Logf("cannot mount tmpfs (%v: %s)", err, strings.TrimSpace(string(out)))
		return ""
	}
	t.Cleanup(func() { exec.Command("umount", "-l", dir).Run() })
	return dir
}

// makeReadOnly makes dir read-only for this process: a read-only remount
// of its tmpfs when root (root ignores permission bits), else chmod.
func makeReadOnly(t *testing.T, dir string, tmpfs bool) {
	t.Helper()
	if tmpfs {
		if out, err := exec.Command("mount", "-o", "remount,ro", dir).CombinedOutput(); err != nil {
			t.Fatalf("remount read-only: %v: %s", err, out)
		}
		return
	}
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			os.Chmod(p, 0o500)
		}
		return nil
	})
	t.Cleanup(func() {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				os.Chmod(p, 0o700)
			}
			return nil
		})
	})
}

func TestReadOnlyMidRun(t *testing.T) {
	base := mountTmpfs(t, "4m")
	tmpfs := base != ""
	// Root without mount rights ignores permission bits: the directory is
	// then made read-only by injecting EROFS into file creation.
	inject := !tmpfs && os.Geteuid() == 0
	if !tmpfs {
		base = t.TempDir()
	}
	dir := filepath.Join(base, "cache")
	var logs logBuffer
	c := mustOpen(t, testOptions(dir), &logs)
	b := &fakeBackend{size: 2000}
	a := Program{Name: "f", Text: []byte("a")}
	compileOK(t, c, b, a)
	// The recount a writer starts at Open would otherwise race the faults
	// below and could take the one log line of this failure kind first.
	c.waitBackground()

	if inject {
		c.hooks.createTemp = func(dir, pattern string) (*os.File, error) {
			return nil, &os.PathError{Op: "open", Path: dir, Err: syscall.EROFS}
		}
	} else {
		makeReadOnly(t, base, tmpfs)
	}

	if _, r := compileOK(t, c, b, a); !r.Hit {
		t.Error("stored entry not readable after the directory turned read-only")
	}
	for i := 0; i < 3; i++ {
		if _, r := compileOK(t, c, b, Program{Name: "f", Text: []byte(fmt.Sprint("new", i))}); r.Stored || r.Hit {
			t.Errorf("report %+v", r)
		}
	}
	c.Close()
	if got := c.Stats().Errors; got["permission"]+got["io"] < 3 {
		t.Errorf("errors %v", got)
	}
	if n := strings.Count(logs.String(), "storing a cache entry failed"); n != 1 {
		t.Errorf("want one log line for the failing writes, got %d:\n%s", n, logs.String())
	}
	if inject {
		return // a new process would not see the injected fault
	}
	// A new process on the read-only directory degrades to reading.
	var logs2 logBuffer
	c2 := mustOpen(t, testOptions(dir), &logs2)
	if _, r := compileOK(t, c2, b, a); !r.Hit {
		t.Error("read-only directory not readable by a new writer")
	}
	compileOK(t, c2, b, Program{Name: "f", Text: []byte("other")})
	if !strings.Contains(logs2.String(), "not writable; reading only") {
		t.Errorf("logs: %s", logs2.String())
	}
}

func TestDiskFull(t *testing.T) {
	base := mountTmpfs(t, "1m")
	if base == "" {
		t.Skip("cannot mount a small tmpfs here; TestInjectedWriteFailure injects ENOSPC instead")
	}
	var logs logBuffer
	c := mustOpen(t, testOptions(base), &logs)
	b := &fakeBackend{size: 200 << 10, noise: true}
	var stored []Program
	for i := 0; i < 10; i++ {
		p := Program{Name: "f", Text: []byte(fmt.Sprint("p", i))}
		if _, r := compileOK(t, c, b, p); r.Stored {
			stored = append(stored, p)
		}
	}
	if len(stored) == 0 || len(stored) == 10 {
		t.Fatalf("%d of 10 stored on a 1 MiB disk", len(stored))
	}
	if c.Stats().Errors["nospace"] == 0 {
		t.Errorf("errors %v", c.Stats().Errors)
	}
	for _, p := range stored {
		if _, r := compileOK(t, c, b, p); !r.Hit {
			t.Errorf("entry stored before the disk filled is gone: %s", p.Text)
		}
	}
	files, temps, _ := scanFilesAt(context.Background(), base)
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f.path), layout.TempPrefix) {
			t.Errorf("temporary file left: %s", f.rel)
		}
	}
	_ = temps
	if n := strings.Count(logs.String(), "\n"); n != 1 {
		t.Errorf("want one log line, got %d:\n%s", n, logs.String())
	}
}

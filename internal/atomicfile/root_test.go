//go:build unix

package atomicfile

import (
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testsupport/hangtest"
)

// rootWithOutside returns a root on a fresh directory and a sibling
// directory outside it.
func rootWithOutside(t *testing.T) (*os.Root, string, string) {
	t.Helper()
	base := t.TempDir()
	dir, outside := filepath.Join(base, "dir"), filepath.Join(base, "outside")
	os.Mkdir(dir, 0o700)
	os.Mkdir(outside, 0o700)
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir, outside
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		t.Errorf("file created outside the root: %s", e.Name())
	}
}

func TestRootPublishRefusesSymlinkedParent(t *testing.T) {
	for _, target := range []string{"outside", "inside"} {
		t.Run(target, func(t *testing.T) {
			r, dir, outside := rootWithOutside(t)
			os.Mkdir(filepath.Join(dir, "tier"), 0o700)
			link := outside
			if target == "inside" {
				os.Mkdir(filepath.Join(dir, "other"), 0o700)
				link = "../other"
			}
			if err := os.Symlink(link, filepath.Join(dir, "tier", "94")); err != nil {
				t.Fatal(err)
			}
			for _, dirPerm := range []os.FileMode{0, 0o700} {
				_, err := Publish("tier/94/key", []byte("x"), Options{Root: r, DirPerm: dirPerm})
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("Publish through a symlinked directory (DirPerm %v): %v", dirPerm, err)
				}
			}
			assertEmpty(t, outside)
			assertEmpty(t, filepath.Join(dir, "other"))
		})
	}
}

func TestRootReplaceRefusesSymlinkTarget(t *testing.T) {
	r, dir, outside := rootWithOutside(t)
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	os.Symlink(victim, filepath.Join(dir, "stats.json"))
	if err := Replace("stats.json", []byte("new"), Options{Root: r}); !errors.Is(err, ErrNotRegular) {
		t.Errorf("Replace onto a symlink: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("file outside changed to %q", b)
	}
	// A symlink at a Publish target is an existing name: nothing written.
	if created, err := Publish("stats.json", []byte("new"), Options{Root: r}); created || err != nil {
		t.Errorf("Publish onto a symlink: %v %v", created, err)
	}
}

func TestRootPublishAndReplace(t *testing.T) {
	r, dir, _ := rootWithOutside(t)
	created, err := Publish("a/b/c", []byte("one"), Options{Root: r, DirPerm: 0o700, Perm: 0o640})
	if err != nil || !created {
		t.Fatalf("Publish: %v %v", created, err)
	}
	if created, err := Publish("a/b/c", []byte("two"), Options{Root: r}); err != nil || created {
		t.Fatalf("second Publish: %v %v", created, err)
	}
	if err := Replace("a/b/c", []byte("three"), Options{Root: r}); err != nil {
		t.Fatal(err)
	}
	b, err := ReadRegular(r, "a/b/c", 100)
	if err != nil || string(b) != "three" {
		t.Fatalf("read back %q %v", b, err)
	}
	if _, err := ReadRegular(r, "a/b/c", 2); err == nil {
		t.Error("ReadRegular over its limit succeeded")
	}
	assertNoTemps(t, filepath.Join(dir, "a", "b"))
}

func TestOpenRegularRefusesFIFO(t *testing.T) {
	r, dir, _ := rootWithOutside(t)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	hangtest.NoHang(t, fifo, 10*time.Second, "OpenRegular blocked on a FIFO", func() {
		if _, _, err := OpenRegular(r, "fifo"); !errors.Is(err, ErrNotRegular) {
			t.Errorf("OpenRegular of a FIFO: %v", err)
		}
	})
	hangtest.NoHang(t, fifo, 10*time.Second, "ReadRegularPath blocked on a FIFO", func() {
		if _, err := ReadRegularPath(fifo, 0); !errors.Is(err, ErrNotRegular) {
			t.Errorf("ReadRegularPath of a FIFO: %v", err)
		}
	})
}

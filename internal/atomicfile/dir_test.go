//go:build unix

package atomicfile

import (
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testsupport/hangtest"
)

// dirFixture is a root on dir (beside a directory outside it) holding
// "tier/ab/entry" (a regular file), "other/entry" (the same name in
// another in-tree directory), "outside/secret" next to the root, and a
// Dir on the root for each way of opening: the fast path and the
// fallback.
func dirFixture(t *testing.T) (*os.Root, string, string) {
	t.Helper()
	r, dir, outside := rootWithOutside(t)
	for _, p := range []string{"tier/ab", "other"} {
		if err := os.MkdirAll(filepath.Join(dir, p), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{filepath.Join(dir, "tier/ab/entry"), filepath.Join(dir, "other/entry"), filepath.Join(outside, "secret")} {
		if err := os.WriteFile(p, []byte("data of "+filepath.Base(p)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return r, dir, outside
}

// dirModes returns a fast Dir (skipped where the kernel has no openat2)
// and a Dir forced onto the os.Root fallback.
func dirModes(t *testing.T, r *os.Root) map[string]*Dir {
	t.Helper()
	fast := NewDir(r)
	t.Cleanup(func() { fast.Close() })
	slow := NewDir(r)
	slow.slow.Store(true)
	t.Cleanup(func() { slow.Close() })
	modes := map[string]*Dir{"fallback": slow}
	if f, _, err := fast.OpenRegular("tier/ab/entry"); err == nil {
		f.Close()
		if fast.f != nil && !fast.slow.Load() {
			modes["openat2"] = fast
		}
	}
	if runtime.GOOS == "linux" && modes["openat2"] == nil {
		t.Log("openat2 unavailable here: only the fallback is tested")
	}
	return modes
}

func TestDirOpenRegular(t *testing.T) {
	r, _, _ := dirFixture(t)
	for mode, d := range dirModes(t, r) {
		t.Run(mode, func(t *testing.T) {
			f, st, err := d.OpenRegular("tier/ab/entry")
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			b, err := io.ReadAll(f)
			if err != nil || string(b) != "data of entry" || st.Size() != int64(len(b)) || !st.Mode().IsRegular() {
				t.Fatalf("read %q, %v, size %d", b, err, st.Size())
			}
			if _, _, err := d.OpenRegular("tier/ab/missing"); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("missing file: %v, want ErrNotExist", err)
			}
		})
	}
}

// A symbolic link is refused wherever it is: at the end (ErrNotRegular),
// and, on the openat2 path, on the way too, pointing inside the tree or
// out of it; and nothing behind it is opened.
func TestDirOpenRegularRefusesSymlinks(t *testing.T) {
	cases := []struct {
		name, link, target, open string
		// endOnly: the fallback (os.Root) refuses a link at the end
		// only; one on the way that stays inside the tree it follows.
		endOnly bool
	}{
		{"end, inside", "tier/ab/entry2", "entry", "tier/ab/entry2", false},
		{"end, outside", "tier/ab/entry3", "../../../outside/secret", "tier/ab/entry3", false},
		{"shard, inside", "tier/cd", "../other", "tier/cd/entry", true},
		{"shard, outside", "tier/ef", "../../outside", "tier/ef/secret", false},
		{"tier, inside", "tier2", "other", "tier2/entry", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, dir, _ := dirFixture(t)
			if err := os.Symlink(c.target, filepath.Join(dir, c.link)); err != nil {
				t.Fatal(err)
			}
			for mode, d := range dirModes(t, r) {
				if mode == "fallback" && c.endOnly {
					continue
				}
				f, _, err := d.OpenRegular(c.open)
				if err == nil {
					b, _ := io.ReadAll(f)
					f.Close()
					t.Fatalf("%s: opened %s through a symbolic link: %q", mode, c.open, b)
				}
				if c.link == c.open && !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s: link at the end: %v, want ErrNotRegular", mode, err)
				}
				if c.link != c.open && errors.Is(err, ErrNotRegular) && mode == "openat2" {
					// A link on the way is not the entry's own damage.
					t.Errorf("%s: link on the way reported as ErrNotRegular: %v", mode, err)
				}
			}
		})
	}
}

// Paths that leave the directory are refused, whatever is there.
func TestDirOpenRegularRefusesEscapes(t *testing.T) {
	r, dir, outside := dirFixture(t)
	for mode, d := range dirModes(t, r) {
		for _, rel := range []string{"../outside/secret", "tier/../../outside/secret", filepath.Join(outside, "secret"), "tier/ab/../../../outside/secret"} {
			if f, _, err := d.OpenRegular(rel); err == nil {
				f.Close()
				t.Errorf("%s: opened %s outside %s", mode, rel, dir)
			}
		}
	}
}

// A FIFO, a socket or a directory where a file belongs is refused with
// ErrNotRegular, and a FIFO never blocks the open (nobody writes to it).
func TestDirOpenRegularRefusesSpecialFiles(t *testing.T) {
	r, dir, _ := dirFixture(t)
	if err := syscall.Mkfifo(filepath.Join(dir, "tier/ab/fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A socket path must be short: make it relative to the directory.
	wd, _ := os.Getwd()
	if err := os.Chdir(filepath.Join(dir, "tier/ab")); err != nil {
		t.Fatal(err)
	}
	l, lerr := net.Listen("unix", "sock")
	os.Chdir(wd)
	if lerr != nil {
		t.Fatal(lerr)
	}
	defer l.Close()
	for mode, d := range dirModes(t, r) {
		for _, rel := range []string{"tier/ab/fifo", "tier/ab/sock", "tier/ab"} {
			hangtest.NoHang(t, filepath.Join(dir, "tier/ab/fifo"), 10*time.Second, mode+": opening "+rel+" blocked", func() {
				f, st, err := d.OpenRegular(rel)
				if err == nil {
					f.Close()
					t.Errorf("%s: opened %s (%v)", mode, rel, st.Mode())
					return
				}
				if !errors.Is(err, ErrNotRegular) {
					t.Errorf("%s: %s: %v, want ErrNotRegular", mode, rel, err)
				}
			})
		}
	}
}

// After Close the Dir never uses a descriptor number that may since name
// another file: opens fail (or go through the root, if still open).
func TestDirClosed(t *testing.T) {
	r, _, _ := dirFixture(t)
	d := NewDir(r)
	d.Close()
	if f, _, err := d.OpenRegular("tier/ab/entry"); err == nil {
		// Through the root, which is still open: fine.
		f.Close()
	}
	r.Close()
	if _, _, err := d.OpenRegular("tier/ab/entry"); err == nil {
		t.Fatal("opened a file after both the Dir and its root were closed")
	}
}

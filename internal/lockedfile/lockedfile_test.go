//go:build unix

package lockedfile

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testsupport/hangtest"
)

// TestMain lets the test binary act as a second process holding a lock.
func TestMain(m *testing.M) {
	if p := os.Getenv("LOCKEDFILE_TEST_HOLD"); p != "" {
		f, err := Lock(p, Options{})
		if err != nil {
			os.Stderr.WriteString(err.Error())
			os.Exit(2)
		}
		os.Stdout.WriteString("locked\n")
		// Hold until stdin closes: the parent decides when we let go.
		buf := make([]byte, 1)
		os.Stdin.Read(buf)
		f.Unlock()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func TestTryLockAcrossProcesses(t *testing.T) {
	p := filepath.Join(t.TempDir(), "trim.lock")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "LOCKEDFILE_TEST_HOLD="+p)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 7)
	if _, err := out.Read(buf); err != nil || string(buf) != "locked\n" {
		t.Fatalf("child did not lock: %q %v", buf, err)
	}
	if _, err := TryLock(p, Options{}); !errors.Is(err, ErrLocked) {
		t.Fatalf("TryLock while another process holds it = %v, want ErrLocked", err)
	}
	ctx := context.Background()
	start := time.Now()
	if _, err := LockWait(ctx, p, Options{}, 200*time.Millisecond); !errors.Is(err, ErrLocked) {
		t.Fatalf("LockWait past its timeout = %v, want ErrLocked", err)
	}
	if time.Since(start) < 200*time.Millisecond {
		t.Fatalf("LockWait gave up before its timeout")
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatal(err)
	}
	f, err := LockWait(ctx, p, Options{}, 5*time.Second)
	if err != nil {
		t.Fatalf("LockWait after the holder exited: %v", err)
	}
	if err := f.Unlock(); err != nil {
		t.Fatal(err)
	}
}

func TestLockRefusesSymlinkAndFIFO(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "outside")
	link := filepath.Join(dir, "ledger")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(link, Options{}); err == nil {
		t.Fatal("Lock followed a symlink")
	}
	if _, err := os.Lstat(target); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Lock created the symlink's target: %v", err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("mkfifo:", err)
	}
	hangtest.NoHang(t, fifo, 10*time.Second, "TryLock on a FIFO hung", func() {
		if _, err := TryLock(fifo, Options{}); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("TryLock on a FIFO = %v", err)
		}
	})
}

func TestNoCreate(t *testing.T) {
	p := filepath.Join(t.TempDir(), ".lockfile")
	if _, err := TryLock(p, Options{NoCreate: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("TryLock NoCreate on a missing file = %v", err)
	}
	f, err := Lock(p, Options{Perm: 0o644})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Unlock()
	st, _ := os.Stat(p)
	if st.Mode().Perm() != 0o644&^currentUmask() {
		t.Errorf("mode %v", st.Mode().Perm())
	}
}

func TestLockWaitHonoursContext(t *testing.T) {
	p := filepath.Join(t.TempDir(), "l")
	held, err := Lock(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer held.Unlock()
	// flock locks belong to the open file description: a second open in
	// the same process conflicts like another process would.
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := LockWait(ctx, p, Options{}, time.Hour); !errors.Is(err, context.Canceled) {
		t.Fatalf("LockWait with a cancelled context = %v", err)
	}
}

func currentUmask() os.FileMode {
	m := syscall.Umask(0)
	syscall.Umask(m)
	return os.FileMode(m)
}

// With a Root, a symbolic link anywhere on the lock path is refused, even
// one pointing inside the tree, and nothing is created outside it.
func TestRootRefusesSymlinks(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "dir"), filepath.Join(base, "outside")
	os.Mkdir(dir, 0o700)
	os.Mkdir(outside, 0o700)
	os.Mkdir(filepath.Join(dir, "real"), 0o700)
	os.Symlink(outside, filepath.Join(dir, "state"))
	os.Symlink("real", filepath.Join(dir, "inside"))
	os.Symlink(filepath.Join(outside, "created"), filepath.Join(dir, "real", "trim.lock"))
	os.Symlink("other", filepath.Join(dir, "real", "in.lock"))
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, p := range []string{"state/trim.lock", "inside/x.lock", "real/trim.lock", "real/in.lock"} {
		if f, err := TryLock(p, Options{Root: r}); err == nil {
			f.Unlock()
			t.Errorf("%s: locked through a symbolic link", p)
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("created outside the root: %v", ents)
	}
	if _, err := os.Lstat(filepath.Join(dir, "real", "other")); err == nil {
		t.Error("created the target of an in-tree symlink")
	}
	f, err := TryLock("real/ok.lock", Options{Root: r})
	if err != nil {
		t.Fatal(err)
	}
	f.Unlock()
}

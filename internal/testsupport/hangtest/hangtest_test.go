//go:build unix

package hangtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

func TestNoHang(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ran := false
	NoHang(t, fifo, 10*time.Second, "quick call hung", func() { ran = true })
	if !ran {
		t.Fatal("f did not run")
	}

	// A reader blocked on the FIFO is reported, then released.
	released := make(chan error, 1)
	blocked := func() {
		f, err := os.Open(fifo)
		if err == nil {
			f.Close()
		}
		released <- err
	}
	if returns(fifo, 50*time.Millisecond, blocked) {
		t.Fatal("an open blocked on a FIFO was not reported")
	}
	select {
	case err := <-released:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the blocked open was not released")
	}
}

func TestStartHolder(t *testing.T) {
	// The child marks that it holds, then holds until its stdin closes.
	mark := filepath.Join(t.TempDir(), "held")
	cmd := exec.Command("sh", "-c", `touch "$0" && cat >/dev/null`, mark)
	held := func() bool { _, err := os.Stat(mark); return err == nil }
	stdin := StartHolder(t, cmd, 30*time.Second, held, "the child never held")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the child did not let go when its stdin closed: %v", err)
	}
}

func TestPollGivesUp(t *testing.T) {
	calls := 0
	start := time.Now()
	if poll(50*time.Millisecond, func() bool { calls++; return false }) {
		t.Fatal("poll reported a condition that never held")
	}
	if took := time.Since(start); took < 50*time.Millisecond || calls < 2 {
		t.Fatalf("poll gave up after %v and %d checks", took, calls)
	}
	if !poll(time.Minute, func() bool { return true }) {
		t.Fatal("poll missed a condition that held")
	}
}

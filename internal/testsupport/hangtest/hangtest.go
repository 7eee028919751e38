// Package hangtest keeps tests of blocking situations from hanging: a
// named pipe (FIFO) planted where a file belongs, which must be refused
// rather than block an open(2) forever, and a child process that holds a
// claim until the test lets it go or kills it. When the code under test
// does block, such a test must fail, not hang.
package hangtest

import (
	"io"
	"os"
	"os/exec"
	"testing"
	"time"
)

// NoHang runs f in a goroutine and fails the test with message what unless
// f returns within limit. On timeout it first opens the FIFO at fifo for
// reading and writing, which releases an open(2) blocked on it, so that
// the goroutine can finish and the test binary ends. f reports its own
// failures with t.Error (not t.Fatal, which must not be called from
// another goroutine).
func NoHang(t testing.TB, fifo string, limit time.Duration, what string, f func()) {
	t.Helper()
	if !returns(fifo, limit, f) {
		t.Fatal(what)
	}
}

// returns reports whether f, run in a goroutine, returned within limit,
// releasing an open(2) blocked on fifo if not.
func returns(fifo string, limit time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
		return true
	case <-time.After(limit):
		if p, err := os.OpenFile(fifo, os.O_RDWR, 0); err == nil {
			p.Close()
		}
		return false
	}
}

// StartHolder starts cmd, a child that holds something (a claim, a lock)
// until its standard input closes, and polls ready until the child has
// taken it. If ready is still false after limit, it kills the child and
// fails the test with message what. It returns the child's standard
// input: closing it lets the child go, and a test that kills the child
// instead closes it when done.
func StartHolder(t testing.TB, cmd *exec.Cmd, limit time.Duration, ready func() bool, what string) io.WriteCloser {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !poll(limit, ready) {
		cmd.Process.Kill()
		t.Fatal(what)
	}
	return stdin
}

// poll reports whether ready became true within limit.
func poll(limit time.Duration, ready func() bool) bool {
	guard := time.Now().Add(limit)
	for !ready() {
		if time.Now().After(guard) {
			return false
		}
		// Polling: a child's progress shows only in the files it writes.
		time.Sleep(5 * time.Millisecond)
	}
	return true
}

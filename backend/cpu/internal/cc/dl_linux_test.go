//go:build cgo

package cc

import (
	"testing"

	"golang.org/x/sys/unix"
)

// TestMapsExec checks the probe that decides for memory files: it passes
// for the flags OpenBytes chose, and fails for a descriptor that cannot be
// mapped at all (a pipe).
func TestMapsExec(t *testing.T) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	if mapsExec(p[0]) {
		t.Error("a pipe passed the probe")
	}
	if !useMemfd() {
		t.Skip("no memory files here")
	}
	fd, err := unix.MemfdCreate("xlacache-test", memfdFlags())
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	if !mapsExec(fd) {
		t.Errorf("memory files with flags %#x were chosen but do not map executable", memfdFlags())
	}
}

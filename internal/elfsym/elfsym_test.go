package elfsym

import (
	"os"
	"path/filepath"
	"testing"
)

// The running test binary defines main.main-like functions but no
// GetPjrtApi; a file that is not ELF defines nothing. (Real plugins are
// covered by internal/testneed's and xla's tests against the installed
// ones.)
func TestDefinesFunc(t *testing.T) {
	if DefinesFunc(os.Args[0], "GetPjrtApi") {
		t.Error("the test binary claims to define GetPjrtApi")
	}
	p := filepath.Join(t.TempDir(), "not-elf.so")
	os.WriteFile(p, []byte("not an ELF file"), 0o600)
	if DefinesFunc(p, "GetPjrtApi") {
		t.Error("a text file claims to define GetPjrtApi")
	}
	if DefinesFunc(filepath.Join(t.TempDir(), "absent.so"), "GetPjrtApi") {
		t.Error("an absent file claims to define GetPjrtApi")
	}
	libc, _ := filepath.Glob("/lib/x86_64-linux-gnu/libc.so.6")
	if len(libc) == 1 && !DefinesFunc(libc[0], "malloc") {
		t.Errorf("%s does not define malloc", libc[0])
	}
}

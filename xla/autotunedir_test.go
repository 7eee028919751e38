package xla

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/xlacache/xlacache/internal/layout"
)

// XLA creates its autotune tmp directory 0755 itself; the writer makes it
// first, with exactly the configured mode, so that a group-shared cache
// stays writable for the group whatever the umask.
func TestCreateAutotuneDirModes(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	dir := filepath.Join(t.TempDir(), "cache")
	if err := CreateAutotuneDir(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{layout.Dir(dir).XLAAutotune(), layout.Dir(dir).XLAAutotuneTmp()} {
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != 0o770 {
			t.Errorf("%s: mode %v, want 0770", p, st.Mode().Perm())
		}
	}
	// Idempotent, and a symlink planted at tmp is refused, not followed.
	if err := CreateAutotuneDir(dir, 0o770); err != nil {
		t.Fatal(err)
	}
	tmp := layout.Dir(dir).XLAAutotuneTmp()
	if err := os.Remove(tmp); err != nil {
		t.Fatal(err)
	}
	outside := t.TempDir()
	if err := os.Symlink(outside, tmp); err != nil {
		t.Fatal(err)
	}
	if err := CreateAutotuneDir(dir, 0o770); err == nil {
		t.Fatal("a symlink at the autotune tmp directory was accepted")
	}
}

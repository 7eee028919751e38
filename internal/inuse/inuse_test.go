package inuse

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestVeto: each protection vetoes on its own, and a file none applies to
// may go.
func TestVeto(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, age time.Duration) os.FileInfo {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("data"), 0o600); err != nil {
			t.Fatal(err)
		}
		at := time.Now().Add(-age)
		os.Chtimes(p, at, at)
		st, _ := os.Lstat(p)
		return st
	}
	old := write("old", time.Hour)
	write("young", time.Second)
	seen := write("changed", time.Hour)
	at := time.Now().Add(-2 * time.Hour)
	os.Chtimes(filepath.Join(dir, "changed"), at, at)
	write("busy", time.Hour)
	g := New(dir, nil, 0, nil)
	walks := 0
	g.openForWrite = func(string) map[string]bool { walks++; return map[string]bool{"busy": true} }
	for name, want := range map[string]string{"old": "", "young": "grace", "changed": "modified since", "busy": "open for writing", "gone": ""} {
		var s os.FileInfo
		switch name {
		case "old":
			s = old
		case "changed":
			s = seen
		}
		if got := g.Veto(name, s); (want == "") != (got == "") || !strings.Contains(got, want) {
			t.Errorf("Veto(%s) = %q, want %q", name, got, want)
		}
	}
	if walks != 1 {
		t.Errorf("%d /proc walks for one pass, want 1 (the snapshot is reused)", walks)
	}
}

// TestOpenForWrite: a file this process holds open for writing is seen,
// one open only for reading is not.
func TestOpenForWrite(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads /proc")
	}
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "sub"), 0o700)
	w, err := os.OpenFile(filepath.Join(dir, "sub", "w"), os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	os.WriteFile(filepath.Join(dir, "r"), nil, 0o600)
	r, err := os.Open(filepath.Join(dir, "r"))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	got := OpenForWrite(dir)
	if !got["sub/w"] || got["r"] {
		t.Errorf("OpenForWrite = %v; want sub/w only", got)
	}
}

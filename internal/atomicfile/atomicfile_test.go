package atomicfile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/internal/layout"
)

func TestPublishFirstWriterWins(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "entry")
	const writers = 16
	var wg sync.WaitGroup
	created := make([]bool, writers)
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() {
			created[i], errs[i] = Publish(p, bytes.Repeat([]byte{byte('a' + i)}, 4096), Options{DirPerm: 0o700})
		})
	}
	wg.Wait()
	winners := 0
	var winner int
	for i := range writers {
		if errs[i] != nil {
			t.Fatalf("writer %d: %v", i, errs[i])
		}
		if created[i] {
			winners++
			winner = i
		}
	}
	if winners != 1 {
		t.Fatalf("%d writers report creating the file, want 1", winners)
	}
	got, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, bytes.Repeat([]byte{byte('a' + winner)}, 4096)) {
		t.Fatalf("file holds another writer's bytes than the winner's")
	}
	assertNoTemps(t, filepath.Dir(p))
}

func TestReplace(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "stats.json")
	for _, s := range []string{"one", "two, longer", "3"} {
		if err := Replace(p, []byte(s), Options{Perm: 0o640}); err != nil {
			t.Fatal(err)
		}
		got, _ := os.ReadFile(p)
		if string(got) != s {
			t.Fatalf("after Replace(%q) the file holds %q", s, got)
		}
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o640 {
		t.Errorf("mode %v, want 0640", st.Mode().Perm())
	}
	assertNoTemps(t, dir)
}

func TestDefaultPermIsOwnerOnly(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if _, err := Publish(p, []byte("x"), Options{}); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("mode %v, want 0600", st.Mode().Perm())
	}
}

func TestFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "f")
	boom := errors.New("disk full")
	o := Options{Write: func(f *os.File, b []byte) (int, error) {
		f.Write(b[:len(b)/2])
		return len(b) / 2, boom
	}}
	if _, err := Publish(p, []byte("0123456789"), o); !errors.Is(err, boom) {
		t.Fatalf("Publish err = %v, want %v", err, boom)
	}
	if err := Replace(p, []byte("0123456789"), o); !errors.Is(err, boom) {
		t.Fatalf("Replace err = %v, want %v", err, boom)
	}
	if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a failed write left the final file: %v", err)
	}
	// A failing fill keeps the old content.
	if err := Replace(p, []byte("old"), Options{}); err != nil {
		t.Fatal(err)
	}
	err := ReplaceFrom(p, func(w io.Writer) error {
		io.WriteString(w, "new, partial")
		return boom
	}, Options{})
	if !errors.Is(err, boom) {
		t.Fatalf("ReplaceFrom err = %v", err)
	}
	if got, _ := os.ReadFile(p); string(got) != "old" {
		t.Fatalf("failed ReplaceFrom changed the file to %q", got)
	}
	assertNoTemps(t, dir)
}

func TestPublishKeepsExisting(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(p, []byte("first"), 0o600); err != nil {
		t.Fatal(err)
	}
	created, err := PublishFrom(p, func(w io.Writer) error {
		_, err := io.Copy(w, strings.NewReader("second"))
		return err
	}, Options{})
	if err != nil || created {
		t.Fatalf("Publish over an existing file = %v, %v", created, err)
	}
	if got, _ := os.ReadFile(p); string(got) != "first" {
		t.Fatalf("existing file changed to %q", got)
	}
}

func TestMissingDirWithoutDirPerm(t *testing.T) {
	p := filepath.Join(t.TempDir(), "missing", "f")
	if _, err := Publish(p, []byte("x"), Options{}); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("Publish into a missing directory without DirPerm = %v", err)
	}
}

func assertNoTemps(t *testing.T, dir string) {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), layout.TempPrefix) {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}

func BenchmarkPublish(b *testing.B) {
	dir := b.TempDir()
	data := bytes.Repeat([]byte("x"), 64<<10)
	for i := 0; b.Loop(); i++ {
		if _, err := Publish(filepath.Join(dir, fmt.Sprint(i)), data, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

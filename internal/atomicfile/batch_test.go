//go:build unix

package atomicfile

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/internal/layout"
)

// batchContent is the content the batch tests give file i: long enough
// that a torn file would show.
func batchContent(i int) []byte {
	return bytes.Repeat([]byte(fmt.Sprintf("file %d;", i)), 200)
}

func batchRoot(t *testing.T) (*os.Root, string) {
	t.Helper()
	dir := t.TempDir()
	r, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, dir
}

// finalNames lists the files under dir that are not temporary files.
func finalNames(t *testing.T, dir string) (finals, temps []string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		if layout.IsTemp(d.Name()) {
			temps = append(temps, rel)
		} else {
			finals = append(finals, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return finals, temps
}

func TestBatchInstallsKeepsExistingAndCleansUp(t *testing.T) {
	r, dir := batchRoot(t)
	if err := os.WriteFile(filepath.Join(dir, "keep"), []byte("local"), 0o600); err != nil {
		t.Fatal(err)
	}
	b, err := NewBatch(Options{Root: r, Perm: 0o640, DirPerm: 0o750})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if added, err := b.Add(fmt.Sprintf("d%d/f%d", i%3, i), batchContent(i)); err != nil || !added {
				t.Errorf("Add %d = %v, %v", i, added, err)
			}
		}()
	}
	wg.Wait()
	if added, err := b.Add("keep", []byte("remote")); err != nil || added {
		t.Fatalf("Add of a present file = %v, %v; want false, nil", added, err)
	}
	// A file that appears between Add and Commit is kept too: first
	// writer wins.
	if added, err := b.Add("late", []byte("remote")); err != nil || !added {
		t.Fatal(added, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "late"), []byte("local"), 0o600); err != nil {
		t.Fatal(err)
	}
	res, err := b.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 41 {
		t.Fatalf("%d results, want 41", len(res))
	}
	for _, r := range res {
		if r.Err != nil || r.Created != (r.Path != "late") {
			t.Errorf("%+v", r)
		}
	}
	for i := range 40 {
		p := filepath.Join(dir, fmt.Sprintf("d%d/f%d", i%3, i))
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, batchContent(i)) {
			t.Fatalf("%s: %v", p, err)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o640 {
			t.Errorf("%s mode %v, want 0640", p, st.Mode().Perm())
		}
	}
	for _, name := range []string{"keep", "late"} {
		if got, _ := os.ReadFile(filepath.Join(dir, name)); string(got) != "local" {
			t.Errorf("%s replaced: %q", name, got)
		}
	}
	if st, _ := os.Stat(filepath.Join(dir, "d1")); st.Mode().Perm() != 0o750 {
		t.Errorf("directory mode %v, want 0750", st.Mode().Perm())
	}
	if _, temps := finalNames(t, dir); len(temps) != 0 {
		t.Errorf("temporary files left: %v", temps)
	}
	if _, err := b.Add("after", nil); err == nil {
		t.Error("Add after Commit succeeded")
	}
}

// TestBatchFlushesBeforeNaming checks the order that makes a batch crash
// safe: when the flush runs, every file's bytes are in temporary files and
// no final name exists yet.
func TestBatchFlushesBeforeNaming(t *testing.T) {
	r, dir := batchRoot(t)
	b, err := NewBatch(Options{Root: r, DirPerm: 0o700})
	if err != nil {
		t.Fatal(err)
	}
	b.perFile = false
	for i := range 10 {
		if _, err := b.Add(fmt.Sprintf("a/f%d", i), batchContent(i)); err != nil {
			t.Fatal(err)
		}
	}
	flushes := 0
	b.syncFS = func(f *os.File) error {
		flushes++
		finals, temps := finalNames(t, dir)
		if len(finals) != 0 || len(temps) != 10 {
			t.Errorf("at the flush: final names %v, %d temporary files; want none and 10", finals, len(temps))
		}
		return syncfs(f)
	}
	if _, err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	if flushes != 1 {
		t.Errorf("%d flushes for one filesystem, want 1", flushes)
	}
	if finals, _ := finalNames(t, dir); len(finals) != 10 {
		t.Errorf("installed %v", finals)
	}
}

// TestBatchFailedFlushInstallsNothing: when the flush fails, no name is
// given and no temporary file stays.
func TestBatchFailedFlushInstallsNothing(t *testing.T) {
	r, dir := batchRoot(t)
	b, err := NewBatch(Options{Root: r})
	if err != nil {
		t.Fatal(err)
	}
	b.perFile = false
	for i := range 5 {
		if _, err := b.Add(fmt.Sprintf("f%d", i), batchContent(i)); err != nil {
			t.Fatal(err)
		}
	}
	boom := errors.New("EIO")
	b.syncFS = func(*os.File) error { return boom }
	res, err := b.Commit(context.Background())
	if !errors.Is(err, boom) {
		t.Fatalf("Commit = %v, want the flush's error", err)
	}
	for _, r := range res {
		if r.Created || r.Err == nil {
			t.Errorf("%+v", r)
		}
	}
	if finals, temps := finalNames(t, dir); len(finals)+len(temps) != 0 {
		t.Errorf("left %v and %v", finals, temps)
	}
}

// TestBatchFailedWriteLeavesNothing: a write that fails mid-batch leaves
// neither its file nor a temporary one; the rest are installed; Abort
// removes every temporary file.
func TestBatchFailedWriteLeavesNothing(t *testing.T) {
	r, dir := batchRoot(t)
	boom := errors.New("ENOSPC")
	o := Options{Root: r, Write: func(f *os.File, b []byte) (int, error) {
		if bytes.HasPrefix(b, []byte("file 3;")) {
			n, _ := f.Write(b[:len(b)/2])
			return n, boom
		}
		return f.Write(b)
	}}
	b, err := NewBatch(o)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		_, err := b.Add(fmt.Sprintf("f%d", i), batchContent(i))
		if (i == 3) != errors.Is(err, boom) {
			t.Fatalf("Add %d: %v", i, err)
		}
	}
	if _, err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	finals, temps := finalNames(t, dir)
	if strings.Join(finals, ",") != "f0,f1,f2,f4,f5" || len(temps) != 0 {
		t.Errorf("finals %v temps %v", finals, temps)
	}

	r2, dir2 := batchRoot(t)
	b, _ = NewBatch(Options{Root: r2})
	for i := range 3 {
		if _, err := b.Add(fmt.Sprintf("f%d", i), batchContent(i)); err != nil {
			t.Fatal(err)
		}
	}
	b.Abort()
	if finals, temps := finalNames(t, dir2); len(finals)+len(temps) != 0 {
		t.Errorf("after Abort: %v and %v", finals, temps)
	}
}

// TestBatchRefusesSymlinkedDirectory: a symbolic link where a directory
// belongs is refused, even one pointing inside the root, and nothing is
// written through it.
func TestBatchRefusesSymlinkedDirectory(t *testing.T) {
	r, _, outside := rootWithOutside(t)
	if err := os.Symlink(outside, filepath.Join(r.Name(), "sub")); err != nil {
		t.Fatal(err)
	}
	b, err := NewBatch(Options{Root: r, DirPerm: 0o700})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Add("sub/f", []byte("x")); !errors.Is(err, ErrNotRegular) {
		t.Fatalf("Add through a symlink = %v, want ErrNotRegular", err)
	}
	if _, err := b.Add("../escape", []byte("x")); err == nil {
		t.Fatal("Add of ../escape succeeded")
	}
	if _, err := b.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	assertEmpty(t, outside)
	if _, err := NewBatch(Options{}); err == nil {
		t.Error("NewBatch without a Root succeeded")
	}
}

// batchChildEnv makes the test binary a batch writer that is killed by
// its parent: before Commit ("added") or after some files are named
// ("linked").
const batchChildEnv = "ATOMICFILE_TEST_BATCH_CHILD"

// TestMain lets the test binary act as a batch writer killed mid-batch.
func TestMain(m *testing.M) {
	if spec := os.Getenv(batchChildEnv); spec != "" {
		batchChild(spec)
	}
	os.Exit(m.Run())
}

func batchChild(spec string) {
	dir, stage, _ := strings.Cut(spec, ":")
	r, err := os.OpenRoot(dir)
	if err != nil {
		os.Exit(2)
	}
	b, err := NewBatch(Options{Root: r, DirPerm: 0o700})
	if err != nil {
		os.Exit(2)
	}
	for i := range 50 {
		if _, err := b.Add(fmt.Sprintf("a/f%d", i), batchContent(i)); err != nil {
			os.Exit(2)
		}
	}
	block := func(msg string) {
		os.Stdout.WriteString(msg + "\n")
		select {} // until killed
	}
	if stage == "added" {
		block("added")
	}
	b.afterLink = func(i int) {
		if i == 9 {
			block("linked")
		}
	}
	b.Commit(context.Background())
	os.Exit(3)
}

// TestBatchKilledMidway kills a real writer process before its Commit and
// in the middle of naming its files: no file ever appears under its final
// name partially written, and before Commit none appears at all.
func TestBatchKilledMidway(t *testing.T) {
	for _, stage := range []string{"added", "linked"} {
		t.Run(stage, func(t *testing.T) {
			dir := t.TempDir()
			cmd := exec.Command(os.Args[0], "-test.run=^$")
			cmd.Env = append(os.Environ(), batchChildEnv+"="+dir+":"+stage)
			out, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			line, err := bufio.NewReader(out).ReadString('\n')
			if err != nil || line != stage+"\n" {
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("child said %q, %v", line, err)
			}
			cmd.Process.Kill()
			cmd.Wait()
			finals, temps := finalNames(t, dir)
			want := 0
			if stage == "linked" {
				want = 10
			}
			if len(finals) != want {
				t.Errorf("%d final names after a kill at %s, want %d: %v", len(finals), stage, want, finals)
			}
			if len(finals)+len(temps) < 50 {
				t.Errorf("%d files in all, want at least 50", len(finals)+len(temps))
			}
			for _, rel := range finals {
				i, err := strconv.Atoi(strings.TrimPrefix(rel, "a/f"))
				if err != nil {
					t.Fatalf("unexpected file %s", rel)
				}
				if got, _ := os.ReadFile(filepath.Join(dir, rel)); !bytes.Equal(got, batchContent(i)) {
					t.Errorf("%s is %d bytes, not its whole content", rel, len(got))
				}
			}
		})
	}
}

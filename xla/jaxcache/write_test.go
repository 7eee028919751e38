package jaxcache

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestEncodeRoundTrip(t *testing.T) {
	exe := bytes.Repeat([]byte("executable"), 50)
	for _, c := range []Codec{CodecZstd, CodecZlib} {
		data, err := Encode(c, 12*time.Second, exe)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		d, err := Decode(data)
		if err != nil || d.Codec != c || d.CompileTime != 12*time.Second || !bytes.Equal(d.Executable, exe) {
			t.Errorf("%s: decoded %v %v %v, err %v", c, d.Codec, d.CompileTime, len(d.Executable), err)
		}
	}
	for _, bad := range []struct {
		c   Codec
		ct  time.Duration
		exe []byte
	}{{CodecUnknown, 0, exe}, {CodecZstd, 0, nil}, {CodecZlib, -time.Second, exe}, {CodecZlib, 1 << 62, exe}} {
		if _, err := Encode(bad.c, bad.ct, bad.exe); err == nil {
			t.Errorf("Encode(%q, %v, %d bytes) accepted", bad.c, bad.ct, len(bad.exe))
		}
	}
}

func TestWriteEntry(t *testing.T) {
	dir := t.TempDir()
	data, err := Encode(CodecZstd, time.Second, []byte("exe"))
	if err != nil {
		t.Fatal(err)
	}
	use := time.Now().Add(-time.Hour).Truncate(time.Second)
	k := key("jit_f", 1)
	if err := WriteEntry(dir, k, data, use, 0); err != nil {
		t.Fatal(err)
	}
	d, err := Scan(context.Background(), dir)
	if err != nil || len(d.Entries) != 1 {
		t.Fatalf("scan: %v %+v", err, d)
	}
	e := d.Entries[0]
	if e.Key != k || !e.HasAtime || !e.LastUse.Equal(use) || !e.ModTime.Equal(use) {
		t.Errorf("entry %+v", e)
	}
	// Rewriting replaces both files whole, with the mode asked for, and
	// leaves no temporary file behind.
	if err := WriteEntry(dir, k, data, use, 0o640); err != nil {
		t.Fatal(err)
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 2 {
		t.Errorf("directory holds %d files after a rewrite, want 2", len(ents))
	}
	for _, e := range ents {
		fi, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if fi.Mode().Perm() != 0o640 {
			t.Errorf("%s: mode %v, want 0640", e.Name(), fi.Mode())
		}
	}
	for _, bad := range []string{"nohash", "../" + k, filepath.Join("sub", k)} {
		if err := WriteEntry(dir, bad, data, use, 0); err == nil {
			t.Errorf("WriteEntry accepted key %q", bad)
		}
	}
}

// With SkipSubcaches, XLA's subcache files are neither counted nor removed:
// another pruner (xlacache's, in a shared directory) owns them.
func TestPruneSkipSubcaches(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-24 * time.Hour)
	data, err := Encode(CodecZlib, time.Second, bytes.Repeat([]byte{7}, 100))
	if err != nil {
		t.Fatal(err)
	}
	k := key("jit_f", 2)
	if err := WriteEntry(dir, k, data, old, 0); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(dir, AutotuneDirName, "A.textproto")
	writeFile(t, sub, bytes.Repeat([]byte("t"), 1000), old.Add(-time.Hour))
	res, err := Prune(context.Background(), dir, PruneOptions{MaxSize: 1, SkipSubcaches: true})
	if err != nil {
		t.Fatal(err)
	}
	if want := int64(len(data) + 8); res.Before != want || res.After != 0 {
		t.Errorf("before %d after %d, want %d and 0", res.Before, res.After, want)
	}
	if !exists(sub) {
		t.Error("subcache file removed despite SkipSubcaches")
	}
	if exists(filepath.Join(dir, k+CacheSuffix)) {
		t.Error("entry survived a prune to 1 byte")
	}
}

// Verify judges XLA's subcache files by xla/subcache's rules: autotune
// file names and content, kernel cache wire format; temporary files of an
// atomic write in progress are not judged.
func TestVerifySubcacheRules(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-time.Hour)
	auto := filepath.Join(dir, AutotuneDirName)
	writeFile(t, filepath.Join(auto, "QUJD.textproto"), []byte("version: 3\n"), old)
	writeFile(t, filepath.Join(auto, "bad name.textproto"), []byte("version: 3\n"), old)
	writeFile(t, filepath.Join(auto, "empty.textproto"), nil, old)
	writeFile(t, filepath.Join(auto, ".tmp-123"), nil, old)
	writeFile(t, filepath.Join(dir, KernelFileName), []byte{0x0b}, old) // a group
	r := verifyDir(t, dir)
	var bad []string
	for _, p := range r.Problems {
		bad = append(bad, filepath.Base(p.Path))
	}
	if r.Checked != 4 || len(bad) != 3 || bad[0] != KernelFileName || bad[1] != "bad name.textproto" || bad[2] != "empty.textproto" {
		t.Errorf("checked %d, problems %q", r.Checked, bad)
	}
}

// WriteEntry never writes through a symbolic link planted at an entry's
// name (hardening issue, item 1).
func TestWriteEntryRefusesSymlink(t *testing.T) {
	base := t.TempDir()
	dir := filepath.Join(base, "jax")
	os.Mkdir(dir, 0o700)
	victim := filepath.Join(base, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	key := "jit_f-" + strings.Repeat("ab", 32)
	if err := os.Symlink(victim, filepath.Join(dir, key+CacheSuffix)); err != nil {
		t.Fatal(err)
	}
	data, err := Encode(CodecZstd, time.Second, []byte("exe"))
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteEntry(dir, key, data, time.Now(), 0); err == nil || !strings.Contains(err.Error(), "symbolic link") {
		t.Errorf("WriteEntry through a planted symlink: %v", err)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("file outside the directory changed to %q", b)
	}
}

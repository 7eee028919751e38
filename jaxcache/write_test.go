package jaxcache

import (
	"bytes"
	"context"
	"path/filepath"
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

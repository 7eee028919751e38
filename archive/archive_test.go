package archive

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
)

func TestExportImport(t *testing.T) {
	ctx := context.Background()
	key := []byte("ship-key")
	src, dst := t.TempDir(), t.TempDir()
	keys := cachetest.Populate(t, src, key)
	// Noise that must not travel, and a damaged entry that is left out.
	os.MkdirAll(filepath.Join(src, layout.LocksDir), 0o700)
	os.WriteFile(filepath.Join(src, layout.LocksDir, "x.lease"), []byte("{}"), 0o600)
	os.MkdirAll(filepath.Join(src, layout.QuarantineDir), 0o700)
	os.WriteFile(filepath.Join(src, layout.QuarantineDir, "bad"), []byte("x"), 0o600)
	damaged := layout.Dir(src).Entry("cpu/kernels", cache.NewKey("modz", nil).String())
	os.MkdirAll(filepath.Dir(damaged), 0o700)
	os.WriteFile(damaged, []byte("XLCE not really"), 0o600)

	var buf bytes.Buffer
	st, err := Export(ctx, src, &buf, Options{SigningKey: sign.NewHMAC(key)})
	if err != nil || st.Files != 5 || st.Skipped != 1 || st.Bytes == 0 {
		t.Fatalf("export: %+v %v", st, err)
	}
	ist, err := Import(ctx, bytes.NewReader(buf.Bytes()), dst, Options{SigningKey: sign.NewHMAC(key), FileMode: 0o640})
	if err != nil || ist.Files != 5 || len(ist.Refused) != 0 {
		t.Fatalf("import: %+v %v", ist, err)
	}
	if got := cachetest.Listed(t, dst); !slices.Equal(got, keys) {
		t.Fatalf("imported entries %q, want %q", got, keys)
	}
	for _, raw := range []string{layout.XLAAutotuneDir + "/QUJD.textproto", layout.XLAKernelFile} {
		a, _ := os.ReadFile(layout.Dir(src).Join(raw))
		b, err := os.ReadFile(layout.Dir(dst).Join(raw))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("raw file %s not imported intact: %v", raw, err)
		}
		if st, _ := os.Stat(layout.Dir(dst).Join(raw)); st.Mode().Perm() != 0o640 {
			t.Errorf("%s imported with mode %v", raw, st.Mode().Perm())
		}
	}
	for _, absent := range []string{layout.LocksDir, layout.QuarantineDir} {
		if _, err := os.Stat(filepath.Join(dst, absent)); err == nil {
			t.Errorf("%s travelled in the archive", absent)
		}
	}
	// Importing again changes nothing.
	ist, err = Import(ctx, bytes.NewReader(buf.Bytes()), dst, Options{SigningKey: sign.NewHMAC(key)})
	if err != nil || ist.Files != 0 || ist.Skipped != 5 {
		t.Errorf("second import: %+v %v", ist, err)
	}
	// The kernel cache file is merged with a local one, not replaced.
	merged := t.TempDir()
	os.WriteFile(layout.Dir(merged).XLAKernel(), []byte{0x0a, 0x01, 'm'}, 0o600)
	if _, err := Import(ctx, bytes.NewReader(buf.Bytes()), merged, Options{SigningKey: sign.NewHMAC(key)}); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(layout.Dir(merged).XLAKernel()); !bytes.Contains(b, []byte{0x0a, 0x01, 'm'}) || !bytes.Contains(b, []byte{0x0a, 0x01, 'k'}) {
		t.Errorf("kernel cache file after merge: %x", b)
	}
	// With another key nothing verifies: every member is refused.
	other := t.TempDir()
	ist, err = Import(ctx, bytes.NewReader(buf.Bytes()), other, Options{SigningKey: sign.NewHMAC([]byte("other-key"))})
	if err != nil || len(ist.Refused) != 5 || ist.Files != 0 {
		t.Errorf("import with another key: %+v %v", ist, err)
	}
}

// member describes one tar member of a hand-made archive.
type member struct {
	name string
	typ  byte
	data []byte
	link string
}

func makeArchive(t testing.TB, ms []member) []byte {
	var buf bytes.Buffer
	zw, err := zstd.NewWriter(&buf)
	if err != nil {
		t.Fatal(err)
	}
	tw := tar.NewWriter(zw)
	for _, m := range ms {
		typ := m.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		hdr := &tar.Header{Name: m.name, Typeflag: typ, Mode: 0o600, Linkname: m.link, Format: tar.FormatPAX}
		if typ == tar.TypeReg {
			hdr.Size = int64(len(m.data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if typ == tar.TypeReg {
			tw.Write(m.data)
		}
	}
	tw.Close()
	zw.Close()
	return buf.Bytes()
}

// filesUnder lists the files (not directories) under dir.
func filesUnder(dir string) []string {
	var found []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			found = append(found, p)
		}
		return nil
	})
	return found
}

func TestImportRefusesHostileMembers(t *testing.T) {
	src := t.TempDir()
	cachetest.Populate(t, src, nil)
	var good member
	ents, err := cache.List(context.Background(), src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Tier == cache.ExecutablesTier {
			data, _ := os.ReadFile(e.Path)
			rel, _ := filepath.Rel(src, e.Path)
			good = member{name: filepath.ToSlash(rel), data: data}
		}
	}
	tampered := bytes.Clone(good.data)
	tampered[len(tampered)-2] ^= 1
	wrongShard := strings.Replace(good.name, "/"+strings.Split(good.name, "/")[1]+"/", "/zz/", 1)
	mf := func(raw map[string]string) member {
		b, _ := json.Marshal(manifest{Version: 1, Raw: raw})
		return member{name: ManifestName, data: b}
	}
	autotune := layout.XLAAutotuneDir + "/a.textproto"
	tests := []struct {
		name string
		ms   []member
	}{
		{"parent escape", []member{{name: "../evil", data: []byte("x")}}},
		{"nested escape", []member{{name: "executables/../../evil", data: []byte("x")}}},
		{"absolute path", []member{{name: "/tmp/evil", data: []byte("x")}}},
		{"symlink", []member{{name: "executables/ab/link", typ: tar.TypeSymlink, link: "/etc/passwd"}}},
		{"hard link", []member{{name: "executables/ab/hl", typ: tar.TypeLink, link: "/etc/passwd"}}},
		{"char device", []member{{name: "executables/ab/dev", typ: tar.TypeChar}}},
		{"fifo", []member{{name: "executables/ab/fifo", typ: tar.TypeFifo}}},
		{"outside any tier", []member{{name: "notatier/file", data: []byte("x")}}},
		{"state file", []member{{name: layout.StateDir + "/" + layout.LedgerFile, data: []byte("x")}}},
		{"autotune temporary", []member{{name: layout.XLAAutotuneDir + "/tmp/a.textproto", data: []byte("x")}}},
		{"tampered entry", []member{{name: good.name, data: tampered}}},
		{"entry in the wrong shard", []member{{name: wrongShard, data: good.data}}},
		{"raw file without manifest", []member{{name: layout.XLAKernelFile, data: []byte{0x0a, 0x00}}}},
		{"raw file not in manifest", []member{mf(map[string]string{}), {name: autotune, data: []byte("x")}}},
		{"raw file not matching manifest", []member{mf(map[string]string{autotune: strings.Repeat("0", 64)}), {name: autotune, data: []byte("x")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			st, err := Import(context.Background(), bytes.NewReader(makeArchive(t, tt.ms)), filepath.Join(parent, "cache"), Options{})
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Refused) != 1 || st.Files != 0 {
				t.Fatalf("stats %+v, want the member refused", st)
			}
			// Nothing but the (empty) cache directory exists.
			if found := filesUnder(parent); len(found) != 0 {
				t.Fatalf("files written: %q", found)
			}
		})
	}
	// A signed manifest that does not verify with the importer's key
	// vouches for nothing.
	t.Run("manifest signed with another key", func(t *testing.T) {
		data := []byte("x")
		m := manifest{Version: 1, Raw: map[string]string{autotune: sha256Hex(data)}}
		m.MAC, _ = m.sign(sign.NewHMAC([]byte("their-key")))
		b, _ := json.Marshal(m)
		st, err := Import(context.Background(), bytes.NewReader(makeArchive(t, []member{{name: ManifestName, data: b}, {name: autotune, data: data}})), t.TempDir(), Options{SigningKey: sign.NewHMAC([]byte("our-key"))})
		if err != nil || len(st.Refused) != 1 || !strings.Contains(st.Refused[0], "does not verify") {
			t.Errorf("stats %+v %v", st, err)
		}
	})
	// The good entry alone imports fine (so the table above is not
	// refusing everything).
	st, err := Import(context.Background(), bytes.NewReader(makeArchive(t, []member{good})), t.TempDir(), Options{})
	if err != nil || st.Files != 1 || len(st.Refused) != 0 {
		t.Fatalf("good entry: %+v %v", st, err)
	}
}

// TestImportDoesNotFollowSymlinks: a symlink planted in the destination
// tree does not redirect a write outside the directory.
func TestImportDoesNotFollowSymlinks(t *testing.T) {
	src := t.TempDir()
	cachetest.Populate(t, src, nil)
	var buf bytes.Buffer
	if _, err := Export(context.Background(), src, &buf, Options{}); err != nil {
		t.Fatal(err)
	}
	parent := t.TempDir()
	dst, outside := filepath.Join(parent, "cache"), filepath.Join(parent, "outside")
	os.MkdirAll(dst, 0o700)
	os.MkdirAll(outside, 0o700)
	if err := os.Symlink(outside, filepath.Join(dst, cache.ExecutablesTier)); err != nil {
		t.Skip("no symlinks:", err)
	}
	_, err := Import(context.Background(), bytes.NewReader(buf.Bytes()), dst, Options{})
	if err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Errorf("import through a planted symlink: %v", err)
	}
	if found := filesUnder(outside); len(found) != 0 {
		t.Errorf("files written through the symlink: %q", found)
	}
}

func FuzzImportArchive(f *testing.F) {
	f.Add(makeArchive(f, []member{{name: "../evil", data: []byte("x")}}))
	f.Add(makeArchive(f, []member{{name: ManifestName, data: []byte(`{"version":1,"raw":{}}`)}, {name: layout.XLAKernelFile, data: []byte{0x0a}}}))
	f.Add([]byte("not an archive"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		dir := filepath.Join(parent, "cache")
		Import(context.Background(), bytes.NewReader(data), dir, Options{})
		filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(dir, p)
			if p != parent && strings.HasPrefix(rel, "..") {
				t.Fatalf("import wrote outside the cache directory: %s", p)
			}
			if d.Type()&os.ModeSymlink != 0 {
				t.Fatalf("import created a symlink: %s", p)
			}
			return nil
		})
	})
}

package main

// Tests of `xlacache sync`, `export` and `import` (multi-host helper).

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/s3test"
	"github.com/xlacache/xlacache/s3store"
)

// populateHosts fills dir with entries in two tiers and XLA's raw files.
func populateHosts(t *testing.T, dir string, key []byte) []string {
	t.Helper()
	o := config.Defaults()
	o.Dir = dir
	o.MinCompileTime = 0
	o.Role = config.RoleWriter
	o.SigningKey = key
	c, err := cache.Open(context.Background(), o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var keys []string
	for i, tier := range []string{cache.ExecutablesTier, "cpu/autotune", "cpu/kernels"} {
		k := cache.NewKey("mod"+string(rune('a'+i)), []cache.KeyPart{{Name: "program", Data: []byte(tier)}})
		if err := c.Tier(tier).Put(context.Background(), k, []byte("payload of "+tier), time.Second); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tier+"/"+k.String())
	}
	if err := os.MkdirAll(filepath.Join(dir, s3store.AutotuneDir), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(dir, s3store.AutotuneDir, "QUJD.textproto"), []byte("tuned"), 0o600)
	os.WriteFile(filepath.Join(dir, s3store.KernelFile), []byte{0x0a, 0x01, 'k'}, 0o600)
	return keys
}

func listed(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := cache.List(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Err != "" {
			t.Fatalf("damaged entry %s: %s", e.Path, e.Err)
		}
		out = append(out, e.Tier+"/"+e.Key)
	}
	slices.Sort(out)
	return out
}

func TestExportImportRoundTrip(t *testing.T) {
	src, dst := t.TempDir(), t.TempDir()
	t.Setenv("XLACACHE_SIGNING_KEY", "ship-key")
	keys := populateHosts(t, src, []byte("ship-key"))
	// Noise that must not travel: state, temporaries, quarantine, locks.
	os.MkdirAll(filepath.Join(src, "locks"), 0o700)
	os.WriteFile(filepath.Join(src, "locks", "x.lease"), []byte("{}"), 0o600)
	os.MkdirAll(filepath.Join(src, cache.QuarantineDir), 0o700)
	os.WriteFile(filepath.Join(src, cache.QuarantineDir, "bad"), []byte("x"), 0o600)
	archive := filepath.Join(t.TempDir(), "cache.tar.zst")
	if _, stderr, err := execCLI(t, "export", "--dir", src, archive); err != nil {
		t.Fatalf("export: %v\n%s", err, stderr)
	}
	if st, err := os.Stat(archive); err != nil || st.Size() == 0 {
		t.Fatalf("archive: %v", err)
	}
	if _, stderr, err := execCLI(t, "import", "--dir", dst, archive); err != nil {
		t.Fatalf("import: %v\n%s", err, stderr)
	}
	slices.Sort(keys)
	if got := listed(t, dst); !slices.Equal(got, keys) {
		t.Fatalf("imported entries %q, want %q", got, keys)
	}
	for _, raw := range []string{filepath.Join(s3store.AutotuneDir, "QUJD.textproto"), s3store.KernelFile} {
		a, _ := os.ReadFile(filepath.Join(src, raw))
		b, err := os.ReadFile(filepath.Join(dst, raw))
		if err != nil || !bytes.Equal(a, b) {
			t.Fatalf("raw file %s not imported intact: %v", raw, err)
		}
		if st, _ := os.Stat(filepath.Join(dst, raw)); st.Mode().Perm() != 0o600 {
			t.Fatalf("%s imported with mode %v", raw, st.Mode().Perm())
		}
	}
	for _, absent := range []string{"locks", cache.QuarantineDir} {
		if _, err := os.Stat(filepath.Join(dst, absent)); err == nil {
			t.Fatalf("%s travelled in the archive", absent)
		}
	}
	// Importing again changes nothing.
	_, stderr, err := execCLI(t, "import", "--dir", dst, archive)
	if err != nil || !strings.Contains(stderr, "imported 0 files") {
		t.Fatalf("second import: %v\n%s", err, stderr)
	}
	// With another key, nothing verifies: every member is refused.
	t.Setenv("XLACACHE_SIGNING_KEY", "other-key")
	other := t.TempDir()
	_, stderr, err = execCLI(t, "import", "--dir", other, archive)
	if err == nil || strings.Count(stderr, "refused \"") != 5 {
		t.Fatalf("import with another key: %v\n%s", err, stderr)
	}
	if got := listed(t, other); len(got) != 0 {
		t.Fatalf("entries imported despite the wrong key: %q", got)
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

func TestImportRefusesHostileMembers(t *testing.T) {
	src := t.TempDir()
	populateHosts(t, src, nil)
	var good archiveEntry
	for _, e := range mustList(t, src) {
		if e.Tier == cache.ExecutablesTier {
			data, _ := os.ReadFile(e.Path)
			rel, _ := filepath.Rel(src, e.Path)
			good = archiveEntry{filepath.ToSlash(rel), data}
		}
	}
	tampered := bytes.Clone(good.data)
	tampered[len(tampered)-2] ^= 1
	wrongShard := strings.Replace(good.name, "/"+strings.Split(good.name, "/")[1]+"/", "/zz/", 1)
	mf := func(raw map[string]string) member {
		b, _ := json.Marshal(manifest{Version: 1, Raw: raw})
		return member{name: manifestName, data: b}
	}
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
		{"tampered entry", []member{{name: good.name, data: tampered}}},
		{"entry in the wrong shard", []member{{name: wrongShard, data: good.data}}},
		{"raw file without manifest", []member{{name: s3store.KernelFile, data: []byte{0x0a, 0x00}}}},
		{"raw file not in manifest", []member{mf(map[string]string{}), {name: s3store.AutotuneDir + "/a.textproto", data: []byte("x")}}},
		{"raw file not matching manifest", []member{mf(map[string]string{s3store.AutotuneDir + "/a.textproto": strings.Repeat("0", 64)}), {name: s3store.AutotuneDir + "/a.textproto", data: []byte("x")}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			parent := t.TempDir()
			dir := filepath.Join(parent, "cache")
			o := config.Defaults()
			o.Dir = dir
			st, err := importArchive(context.Background(), o, bytes.NewReader(makeArchive(t, tt.ms)))
			if err != nil {
				t.Fatal(err)
			}
			if len(st.Refused) != 1 || st.Files != 0 {
				t.Fatalf("stats %+v, want the member refused", st)
			}
			// Nothing but the (empty) cache directory exists.
			var found []string
			filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
				if err == nil && !d.IsDir() {
					found = append(found, p)
				}
				return nil
			})
			if len(found) != 0 {
				t.Fatalf("files written: %q", found)
			}
		})
	}
	// The good entry alone imports fine (so the table above is not
	// refusing everything).
	o := config.Defaults()
	o.Dir = t.TempDir()
	st, err := importArchive(context.Background(), o, bytes.NewReader(makeArchive(t, []member{{name: good.name, data: good.data}})))
	if err != nil || st.Files != 1 || len(st.Refused) != 0 {
		t.Fatalf("good entry: %+v %v", st, err)
	}
}

type archiveEntry struct {
	name string
	data []byte
}

func mustList(t *testing.T, dir string) []cache.EntryInfo {
	t.Helper()
	ents, err := cache.List(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return ents
}

func FuzzImportArchive(f *testing.F) {
	f.Add(makeArchive(f, []member{{name: "../evil", data: []byte("x")}}))
	f.Add(makeArchive(f, []member{{name: manifestName, data: []byte(`{"version":1,"raw":{}}`)}, {name: s3store.KernelFile, data: []byte{0x0a}}}))
	f.Add([]byte("not an archive"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parent := t.TempDir()
		o := config.Defaults()
		o.Dir = filepath.Join(parent, "cache")
		importArchive(context.Background(), o, bytes.NewReader(data))
		filepath.WalkDir(parent, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(o.Dir, p)
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

func TestSyncPushPull(t *testing.T) {
	srv := s3test.Start(t, "xlacache")
	srv.Setenv(t)
	t.Setenv("XLACACHE_SIGNING_KEY", "sync-key")
	t.Setenv("XLACACHE_ENABLE_XLA_CACHES", "all")
	url := "s3://xlacache/sync"
	a, b := t.TempDir(), t.TempDir()
	keys := populateHosts(t, a, []byte("sync-key"))
	out, stderr, err := execCLI(t, "sync", "push", "--dir", a, "--url", url)
	if err != nil || !strings.Contains(out, "3 entries copied") || !strings.Contains(out, "XLA subcache files: 2 copied") {
		t.Fatalf("push: %v\n%s%s", err, out, stderr)
	}
	out, _, err = execCLI(t, "sync", "push", "--dir", a, "--url", url)
	if err != nil || !strings.Contains(out, "0 entries copied, 3 already there") {
		t.Fatalf("second push: %v\n%s", err, out)
	}
	out, stderr, err = execCLI(t, "sync", "pull", "--dir", b, "--url", url)
	if err != nil || !strings.Contains(out, "3 entries copied") {
		t.Fatalf("pull: %v\n%s%s", err, out, stderr)
	}
	slices.Sort(keys)
	if got := listed(t, b); !slices.Equal(got, keys) {
		t.Fatalf("pulled %q, want %q", got, keys)
	}
	if data, err := os.ReadFile(filepath.Join(b, s3store.AutotuneDir, "QUJD.textproto")); err != nil || string(data) != "tuned" {
		t.Fatalf("autotune file not pulled: %q %v", data, err)
	}
	// A copy is not a lookup: pulling counts no hits and saves no time.
	if st, err := cache.ReadPersistedStats(b); err != nil || st.Hits != 0 || st.SharedHits != 0 || st.CompileTimeSaved != 0 {
		t.Errorf("pull counted lookups: %+v %v", st, err)
	}
	if out, _, err := execCLI(t, "verify", "--dir", b); err != nil {
		t.Errorf("pulled entries do not verify: %v\n%s", err, out)
	}
	out, _, err = execCLI(t, "sync", "pull", "--dir", b, "--url", url)
	if err != nil || !strings.Contains(out, "0 entries copied, 3 already there") {
		t.Fatalf("second pull: %v\n%s", err, out)
	}
	// A reader with another key refuses everything.
	t.Setenv("XLACACHE_SIGNING_KEY", "wrong-key")
	c := t.TempDir()
	out, _, err = execCLI(t, "sync", "pull", "--dir", c, "--url", url)
	if err == nil || !strings.Contains(out, "0 entries copied, 0 already there, 3 refused") {
		t.Fatalf("pull with the wrong key: %v\n%s", err, out)
	}
	// Usage errors exit 2.
	t.Setenv("XLACACHE_SHARED_URL", "")
	for _, args := range [][]string{{"sync", "sideways"}, {"sync", "pull", "--dir", c}, {"sync", "pull", "--dir", c, "--url", "gs://x"}} {
		_, _, err := execCLI(t, args...)
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

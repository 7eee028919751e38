package jaxcache

import (
	"bytes"
	"compress/zlib"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/klauspost/compress/zstd"
	"golang.org/x/sys/unix"
)

// encodeEntry builds an entry exactly as JAX's compilation_cache.py does:
// compile time as 4 big-endian bytes, the executable, then compression.
func encodeEntry(t testing.TB, c Codec, compileSecs uint32, exe []byte) []byte {
	t.Helper()
	raw := binary.BigEndian.AppendUint32(nil, compileSecs)
	raw = append(raw, exe...)
	var b bytes.Buffer
	switch c {
	case CodecZstd:
		w, err := zstd.NewWriter(&b)
		if err != nil {
			t.Fatal(err)
		}
		w.Write(raw)
		w.Close()
	case CodecZlib:
		w := zlib.NewWriter(&b)
		w.Write(raw)
		w.Close()
	}
	return b.Bytes()
}

func key(module string, seed int) string {
	h := sha256.Sum256([]byte{byte(seed), byte(seed >> 8)})
	return module + "-" + hex.EncodeToString(h[:])
}

type entrySpec struct {
	key      string
	codec    Codec
	exe      []byte
	truncate int // bytes cut off the end
	lastUse  time.Time
	noAtime  bool
	modTime  time.Time
}

// writeEntry writes "<key>-cache" and, unless noAtime, "<key>-atime" as
// JAX's LRUCache does (8 little-endian bytes of nanoseconds).
func writeEntry(t testing.TB, dir string, s entrySpec) string {
	t.Helper()
	data := encodeEntry(t, s.codec, 7, s.exe)
	data = data[:len(data)-s.truncate]
	p := filepath.Join(dir, s.key+CacheSuffix)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if !s.noAtime {
		if err := os.WriteFile(filepath.Join(dir, s.key+AtimeSuffix), binary.LittleEndian.AppendUint64(nil, uint64(s.lastUse.UnixNano())), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if !s.modTime.IsZero() {
		setTimes(t, p, s.modTime)
	}
	return p
}

func setTimes(t testing.TB, p string, at time.Time) {
	t.Helper()
	if err := os.Chtimes(p, at, at); err != nil {
		t.Fatal(err)
	}
}

func writeFile(t testing.TB, p string, data []byte, at time.Time) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	setTimes(t, p, at)
}

// kernelCache is a well-formed CompilationCacheProto-shaped message: one
// map entry "k1" with a binary.
var kernelCache = []byte{0x0a, 0x0c, 0x0a, 0x02, 'k', '1', 0x12, 0x06, 0x0a, 0x04, 0x01, 0x02, 0x03, 0x04}

// fixture builds a directory with the documented format: zstd and zlib
// entries, a truncated entry, an entry with no atime file, an orphaned
// atime file, XLA's autotune directory (results and a temp file), the
// kernel cache file, xlacache's own tier, and a symlink to outside.
func fixture(t *testing.T) (string, map[string]string) {
	t.Helper()
	dir := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	at := func(h int) time.Time { return old.Add(time.Duration(h) * time.Hour) }
	paths := map[string]string{}
	exe := bytes.Repeat([]byte("executable"), 300)
	paths["zstdOld"] = writeEntry(t, dir, entrySpec{key: key("jit_f", 1), codec: CodecZstd, exe: exe, lastUse: at(1), modTime: old})
	paths["zlibMid"] = writeEntry(t, dir, entrySpec{key: key("jit_f", 2), codec: CodecZlib, exe: exe, lastUse: at(10), modTime: old})
	paths["zstdNew"] = writeEntry(t, dir, entrySpec{key: key("jit_g", 3), codec: CodecZstd, exe: exe, lastUse: at(30), modTime: old})
	paths["truncated"] = writeEntry(t, dir, entrySpec{key: key("jit_h", 4), codec: CodecZstd, exe: exe, truncate: 9, lastUse: at(20), modTime: old})
	paths["noAtime"] = writeEntry(t, dir, entrySpec{key: key("jit_k", 5), codec: CodecZlib, exe: exe, noAtime: true, modTime: at(5)})
	orphan := filepath.Join(dir, key("jit_gone", 6)+AtimeSuffix)
	writeFile(t, orphan, make([]byte, 8), old)
	paths["orphan"] = orphan
	paths["autotuneOld"] = filepath.Join(dir, AutotuneDirName, "AbC+def=.textproto")
	writeFile(t, paths["autotuneOld"], []byte("version: 3\nresults { }\n"), at(2))
	paths["autotuneNew"] = filepath.Join(dir, AutotuneDirName, "XyZ.textproto")
	writeFile(t, paths["autotuneNew"], []byte("version: 3\n"), at(40))
	paths["autotuneTmp"] = filepath.Join(dir, AutotuneDirName, "tmp", "tmp_per_fusion_cache_XyZ_123.textproto")
	writeFile(t, paths["autotuneTmp"], []byte("vers"), old)
	paths["kernels"] = filepath.Join(dir, KernelFileName)
	writeFile(t, paths["kernels"], kernelCache, at(3))
	// Not JAX's: xlacache's own tier, and a link to a file outside.
	writeFile(t, filepath.Join(dir, "executables", "x"), []byte("mine"), old)
	outside := filepath.Join(t.TempDir(), "precious-cache")
	writeFile(t, outside, []byte("outside"), old)
	if err := os.Symlink(outside, filepath.Join(dir, key("jit_link", 7)+CacheSuffix)); err != nil {
		t.Fatal(err)
	}
	paths["outside"] = outside
	return dir, paths
}

func TestDecode(t *testing.T) {
	exe := []byte("serialized executable bytes")
	for _, c := range []Codec{CodecZstd, CodecZlib} {
		data := encodeEntry(t, c, 42, exe)
		d, err := Decode(data)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if d.Codec != c || d.CompileTime != 42*time.Second || !bytes.Equal(d.Executable, exe) {
			t.Errorf("%s: got %v %v %q", c, d.Codec, d.CompileTime, d.Executable)
		}
		h, err := ReadHeader(bytes.NewReader(data))
		if err != nil || h.CompileTime != 42*time.Second || h.Codec != c {
			t.Errorf("%s header: %+v %v", c, h, err)
		}
		for _, cut := range []int{1, 5, len(data) / 2} {
			if _, err := Decode(data[:len(data)-cut]); !errors.Is(err, ErrCorrupt) {
				t.Errorf("%s truncated by %d: err = %v", c, cut, err)
			}
		}
		if _, err := Decode(append(append([]byte{}, data...), 0, 1, 2)); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s with trailing bytes: err = %v", c, err)
		}
	}
	if _, err := Decode([]byte("plain text")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("unknown codec: %v", err)
	}
	if _, err := Decode(encodeEntry(t, CodecZlib, 1, nil)); !errors.Is(err, ErrCorrupt) {
		t.Errorf("empty executable: %v", err)
	}
}

func TestScanAndStats(t *testing.T) {
	dir, _ := fixture(t)
	if ok, err := IsJAXDir(dir); !ok || err != nil {
		t.Fatalf("IsJAXDir = %v %v", ok, err)
	}
	if ok, _ := IsJAXDir(t.TempDir()); ok {
		t.Error("empty dir claimed as JAX's")
	}
	d, err := Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	s := d.Stats()
	if s.Entries != 5 || s.MissingAtime != 1 || s.OrphanAtimes != 1 {
		t.Errorf("stats %+v", s)
	}
	if a := s.Subcaches[AutotuneDirName]; a.Files != 3 || a.TempFiles != 1 {
		t.Errorf("autotune %+v", a)
	}
	if k := s.Subcaches[KernelFileName]; k.Files != 1 || k.Bytes != int64(len(kernelCache)) {
		t.Errorf("kernels %+v", k)
	}
	var want int64
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && info.Mode().IsRegular() && !strings.Contains(p, "executables") {
			want += info.Size()
		}
		return nil
	})
	if s.TotalBytes != want {
		t.Errorf("TotalBytes = %d, want %d (every JAX and XLA file, nothing else)", s.TotalBytes, want)
	}
	for _, e := range d.Entries {
		if strings.HasPrefix(e.Key, "jit_link") {
			t.Error("symlink counted as an entry")
		}
	}
}

// verifyDir scans and verifies dir.
func verifyDir(t *testing.T, dir string) VerifyResult {
	t.Helper()
	d, err := Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Verify(context.Background(), d, VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestVerify(t *testing.T) {
	dir, paths := fixture(t)
	// A kernel cache with a truncated field, and a truncated entry written
	// just now (it may be in flight).
	writeFile(t, paths["kernels"], kernelCache[:len(kernelCache)-2], time.Now().Add(-time.Hour))
	young := writeEntry(t, dir, entrySpec{key: key("jit_young", 8), codec: CodecZstd, exe: []byte("abcdefgh"), truncate: 3, lastUse: time.Now()})
	r := verifyDir(t, dir)
	got := map[string]Problem{}
	for _, p := range r.Problems {
		got[p.Path] = p
	}
	if p, ok := got[paths["truncated"]]; !ok || p.MaybeInFlight || !errors.Is(p.Err, ErrCorrupt) {
		t.Errorf("truncated entry: %+v", p)
	}
	if p, ok := got[young]; !ok || !p.MaybeInFlight {
		t.Errorf("young truncated entry: %+v", p)
	}
	if _, ok := got[paths["kernels"]]; !ok {
		t.Error("malformed kernel cache not reported")
	}
	if len(r.Problems) != 3 {
		t.Errorf("problems: %+v", r.Problems)
	}
	if r.Checked != 6+3 { // 6 entries, 2 autotune results, kernel file
		t.Errorf("checked %d", r.Checked)
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func TestPrune(t *testing.T) {
	ctx := context.Background()
	t.Run("LRU across entries and XLA subcaches", func(t *testing.T) {
		dir, paths := fixture(t)
		d, _ := Scan(ctx, dir)
		total := d.Stats().TotalBytes
		eOld, _ := os.Stat(paths["zstdOld"])
		aOld, _ := os.Stat(paths["autotuneOld"])
		kern, _ := os.Stat(paths["kernels"])
		// Room for everything but the three least recently used units:
		// zstdOld (t+1), autotuneOld (t+2), kernels (t+3); garbage goes too.
		limit := total - eOld.Size() - 8 - aOld.Size() - kern.Size() - 8 - 4
		r, err := Prune(ctx, dir, PruneOptions{MaxSize: limit})
		if err != nil {
			t.Fatal(err)
		}
		for _, gone := range []string{"zstdOld", "autotuneOld", "kernels", "orphan", "autotuneTmp"} {
			if exists(paths[gone]) {
				t.Errorf("%s not removed; result %+v", gone, r)
			}
		}
		for _, kept := range []string{"zlibMid", "noAtime", "zstdNew", "truncated", "autotuneNew", "outside"} {
			if !exists(paths[kept]) {
				t.Errorf("%s removed", kept)
			}
		}
		if exists(strings.TrimSuffix(paths["zstdOld"], CacheSuffix) + AtimeSuffix) {
			t.Error("atime file of an evicted entry left behind")
		}
		if !exists(filepath.Join(dir, "executables", "x")) {
			t.Error("xlacache's own tier touched")
		}
		if r.After > limit || !r.Locked {
			t.Errorf("after %d > limit %d, locked %v", r.After, limit, r.Locked)
		}
	})
	t.Run("never removes files being written", func(t *testing.T) {
		dir, paths := fixture(t)
		young := writeEntry(t, dir, entrySpec{key: key("jit_young", 9), codec: CodecZstd, exe: []byte("abcdefgh"), noAtime: true})
		f, err := os.OpenFile(paths["zstdOld"], os.O_WRONLY|os.O_APPEND, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r, err := Prune(ctx, dir, PruneOptions{MaxSize: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !exists(young) || !exists(paths["zstdOld"]) {
			t.Errorf("in-flight file removed: kept %+v", r.Kept)
		}
		reasons := map[string]string{}
		for _, k := range r.Kept {
			reasons[k.Path] = k.Reason
		}
		if !strings.Contains(reasons[young], "grace") || !strings.Contains(reasons[paths["zstdOld"]], "open for writing") {
			t.Errorf("reasons %v", reasons)
		}
		if exists(paths["zlibMid"]) {
			t.Error("an idle entry survived a 1-byte bound")
		}
	})
	t.Run("waits for JAX's lock", func(t *testing.T) {
		dir, paths := fixture(t)
		lf, err := os.OpenFile(filepath.Join(dir, LockName), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			t.Fatal(err)
		}
		defer lf.Close()
		if err := unix.Flock(int(lf.Fd()), unix.LOCK_EX); err != nil {
			t.Fatal(err)
		}
		_, err = Prune(ctx, dir, PruneOptions{MaxSize: 1, LockTimeout: 200 * time.Millisecond})
		if err == nil || !strings.Contains(err.Error(), "held by a JAX process") {
			t.Fatalf("err = %v", err)
		}
		if !exists(paths["zstdOld"]) {
			t.Error("removed a file while JAX held its lock")
		}
	})
	t.Run("dry run", func(t *testing.T) {
		dir, paths := fixture(t)
		r, err := Prune(ctx, dir, PruneOptions{MaxSize: 1, DryRun: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Removed) == 0 || !exists(paths["zstdOld"]) || exists(filepath.Join(dir, LockName)) {
			t.Errorf("dry run: %+v", r)
		}
	})
	t.Run("no bound removes garbage only", func(t *testing.T) {
		dir, paths := fixture(t)
		if _, err := Prune(ctx, dir, PruneOptions{}); err != nil {
			t.Fatal(err)
		}
		if exists(paths["orphan"]) || exists(paths["autotuneTmp"]) || !exists(paths["zstdOld"]) {
			t.Error("garbage-only prune did the wrong thing")
		}
	})
}

func TestExplainAndList(t *testing.T) {
	dir, _ := fixture(t)
	ctx := context.Background()
	d, _ := Scan(ctx, dir)
	ls, err := List(ctx, d)
	if err != nil {
		t.Fatal(err)
	}
	if len(ls) != 5 || !sort.SliceIsSorted(ls, func(i, j int) bool { return ls[i].LastUse.After(ls[j].LastUse) }) {
		t.Errorf("list: %d entries", len(ls))
	}
	ex, _ := Explain(ctx, d, key("jit_f", 1))
	if ex.Found == nil || ex.Found.Header.CompileTime != 7*time.Second || len(ex.SameModule) != 1 || !strings.HasPrefix(ex.Lines[0], "hit") {
		t.Errorf("hit: %+v", ex)
	}
	ex, _ = Explain(ctx, d, key("jit_f", 99))
	if ex.Found != nil || len(ex.SameModule) != 2 || !strings.HasPrefix(ex.Lines[0], "miss") {
		t.Errorf("miss: %+v", ex.Lines)
	}
	ex, _ = Explain(ctx, d, "jit_nothing")
	if len(ex.Lines) != 1 || !strings.Contains(ex.Lines[0], "never stored") {
		t.Errorf("unknown module: %+v", ex.Lines)
	}
	ex, _ = Explain(ctx, d, key("jit_h", 4))
	if ex.Found == nil || !strings.HasPrefix(ex.Lines[0], "present but unreadable") {
		// zstd decodes whole blocks: the cut-off block hides the header too.
		t.Errorf("truncated: %+v", ex.Lines)
	}
}

func FuzzDecode(f *testing.F) {
	f.Add(encodeEntry(f, CodecZstd, 3, []byte("exe")))
	f.Add(encodeEntry(f, CodecZlib, 3, []byte("exe")))
	f.Add([]byte{0x28, 0xb5, 0x2f, 0xfd, 0x00})
	f.Add([]byte{0x78, 0x9c})
	f.Fuzz(func(t *testing.T, b []byte) {
		d, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		if len(d.Executable) == 0 || d.Codec == CodecUnknown {
			t.Fatalf("accepted %+v", d)
		}
		if h, err := ReadHeader(bytes.NewReader(b)); err != nil || h.CompileTime != d.CompileTime {
			t.Fatalf("header %v %v disagrees with %v", h, err, d.CompileTime)
		}
	})
}

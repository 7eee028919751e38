package rawfiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/sign"
)

func TestSealUnseal(t *testing.T) {
	payload := []byte("autotune result\n")
	signed := Seal("a/x.textproto", payload, sign.NewHMAC([]byte("k1")))
	unsigned := Seal("a/x.textproto", payload, nil)
	flip := func(b []byte, i int) []byte {
		c := bytes.Clone(b)
		c[i] ^= 1
		return c
	}
	tests := []struct {
		name    string
		obj     []byte
		objName string
		key     string
		wantErr string
	}{
		{"signed, right key", signed, "a/x.textproto", "k1", ""},
		{"signed, no key: checksum only", signed, "a/x.textproto", "", ""},
		{"unsigned, no key", unsigned, "a/x.textproto", "", ""},
		{"signed, other key", signed, "a/x.textproto", "k2", "does not verify"},
		{"unsigned, key set", unsigned, "a/x.textproto", "k1", "unsigned"},
		{"replayed under another name", signed, "a/y.textproto", "k1", "does not verify"},
		{"payload flipped", flip(signed, len(signed)-1), "a/x.textproto", "k1", "checksum"},
		{"mac flipped", flip(signed, rawHeaderLen+3), "a/x.textproto", "k1", "does not verify"},
		{"unknown version", flip(signed, 6), "a/x.textproto", "k1", "version"},
		{"signed flag forged on an unsigned object", flip(unsigned, 7), "a/x.textproto", "", "truncated signature"},
		{"unknown flags", func() []byte { c := bytes.Clone(unsigned); c[7] = 0x80; return c }(), "a/x.textproto", "", "unknown flags"},
		{"raw file, not sealed", payload, "a/x.textproto", "", "not a sealed"},
		{"truncated", signed[:rawHeaderLen+10], "a/x.textproto", "k1", "truncated"},
		{"empty", nil, "a/x.textproto", "", "not a sealed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unseal(tt.objName, tt.obj, sign.NewHMAC([]byte(tt.key)))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !errors.Is(err, ErrBadObject) {
					t.Fatalf("Unseal = %v, want error containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !bytes.Equal(got, payload) {
				t.Fatalf("Unseal = %q, %v", got, err)
			}
		})
	}
}

func FuzzUnseal(f *testing.F) {
	f.Add(Seal("n", []byte("payload"), sign.NewHMAC([]byte("k"))), []byte("k"))
	f.Add(Seal("n", []byte(""), nil), []byte(""))
	f.Add([]byte("XLCRAW\x01\x01"), []byte("k"))
	f.Fuzz(func(t *testing.T, obj, key []byte) {
		p, err := Unseal("n", obj, sign.NewHMAC(key))
		if err != nil {
			return
		}
		// Whatever verifies must re-seal to the same object when the
		// signing state matches.
		if len(key) > 0 && !bytes.Equal(Seal("n", p, sign.NewHMAC(key)), obj) {
			t.Fatalf("accepted an object that does not re-seal identically")
		}
	})
}

func rec(field protowire.Number, s string) []byte {
	b := protowire.AppendTag(nil, field, protowire.BytesType)
	return protowire.AppendBytes(b, []byte(s))
}

func cat(bs ...[]byte) []byte { return bytes.Join(bs, nil) }

func TestMergeKernelCaches(t *testing.T) {
	a, b, c := rec(1, "kernel-a"), rec(1, "kernel-b"), rec(1, "kernel-c")
	tests := []struct {
		name     string
		local    []byte
		parts    [][]byte
		want     []byte
		wantUsed []bool
		wantErr  bool
	}{
		{"empty local takes the part", nil, [][]byte{cat(a, b)}, cat(a, b), []bool{true}, false},
		{"duplicates dropped", cat(a), [][]byte{cat(a, b), cat(b, c)}, cat(a, b, c), []bool{true, true}, false},
		{"same part twice is idempotent", cat(a, b), [][]byte{cat(a, b)}, cat(a, b), []bool{true}, false},
		{"garbage part skipped", cat(a), [][]byte{{0xff, 0xff, 0xff}, cat(c)}, cat(a, c), []bool{false, true}, true},
		{"garbage local left alone", []byte{0x0a, 0xff}, [][]byte{cat(a)}, []byte{0x0a, 0xff}, []bool{false}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, used, err := MergeKernelCaches(tt.local, tt.parts)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !bytes.Equal(got, tt.want) || fmt.Sprint(used) != fmt.Sprint(tt.wantUsed) {
				t.Fatalf("got %x used %v, want %x used %v", got, used, tt.want, tt.wantUsed)
			}
		})
	}
}

func FuzzMergeKernelCaches(f *testing.F) {
	f.Add(rec(1, "a"), rec(1, "b"))
	f.Add([]byte{}, []byte{0x0a, 0x80})
	f.Fuzz(func(t *testing.T, local, part []byte) {
		got, used, err := MergeKernelCaches(local, [][]byte{part})
		if !bytes.HasPrefix(got, local) {
			t.Fatal("merge rewrote the local file instead of extending it")
		}
		if err == nil && used[0] {
			if _, perr := protoRecords(got); perr != nil {
				t.Fatalf("merge produced unparseable output: %v", perr)
			}
		}
	})
}

func newMem() *memblob.Store { return memblob.New(memblob.Options{}) }

func TestMirrorPushPull(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	key := sign.NewHMAC([]byte("team"))
	dirA, dirB := t.TempDir(), t.TempDir()
	a := NewMirror(store, MirrorOptions{Dir: dirA, Autotune: true, Kernels: true, SigningKey: key})
	b := NewMirror(store, MirrorOptions{Dir: dirB, Autotune: true, Kernels: true, SigningKey: key})

	write := func(p string, data []byte) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(dirA, AutotuneDir, "QUJD-_=.textproto"), []byte("tuned: 1"))
	write(filepath.Join(dirA, AutotuneDir, ".tmp-123"), []byte("partial"))
	write(filepath.Join(dirA, KernelFile), cat(rec(1, "ka"), rec(1, "kb")))
	st, err := a.Push(ctx)
	if err != nil || st.Pushed != 2 {
		t.Fatalf("push: %+v %v", st, err)
	}
	if st, err := a.Push(ctx); err != nil || st.Pushed != 0 {
		t.Fatalf("second push re-published: %+v %v", st, err)
	}
	// Host B has a kernel of its own; the pull merges.
	write(filepath.Join(dirB, KernelFile), rec(1, "kc"))
	st, err = b.Pull(ctx)
	if err != nil || st.Pulled != 2 {
		t.Fatalf("pull: %+v %v", st, err)
	}
	got, err := os.ReadFile(filepath.Join(dirB, AutotuneDir, "QUJD-_=.textproto"))
	if err != nil || string(got) != "tuned: 1" {
		t.Fatalf("autotune file on B: %q %v", got, err)
	}
	if _, err := os.Stat(filepath.Join(dirB, AutotuneDir, ".tmp-123")); err == nil {
		t.Fatal("a temporary file was mirrored")
	}
	kf, _ := os.ReadFile(filepath.Join(dirB, KernelFile))
	if want := cat(rec(1, "kc"), rec(1, "ka"), rec(1, "kb")); !bytes.Equal(kf, want) {
		t.Fatalf("merged kernel file %x, want %x", kf, want)
	}
	if fi, _ := os.Stat(filepath.Join(dirB, KernelFile)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("kernel file mode %v", fi.Mode().Perm())
	}
	// A second pull finds nothing new and does not grow the file.
	if st, err := b.Pull(ctx); err != nil || st.Pulled != 0 {
		t.Fatalf("second pull: %+v %v", st, err)
	}
	kf2, _ := os.ReadFile(filepath.Join(dirB, KernelFile))
	if !bytes.Equal(kf, kf2) {
		t.Fatal("second pull changed the kernel file")
	}
	// B pushes its merged file; A pulls it and gains kc only once.
	if _, err := b.Push(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Pull(ctx); err != nil {
		t.Fatal(err)
	}
	ka, _ := os.ReadFile(filepath.Join(dirA, KernelFile))
	if want := cat(rec(1, "ka"), rec(1, "kb"), rec(1, "kc")); !bytes.Equal(ka, want) {
		t.Fatalf("A's kernel file %x, want %x", ka, want)
	}
}

func TestMirrorRefusesBadObjects(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	key := sign.NewHMAC([]byte("team"))
	good := AutotuneDir + "/good.textproto"
	store.PutRaw(good, Seal(good, []byte("ok"), key))
	store.PutRaw(AutotuneDir+"/../../escape.textproto", Seal(AutotuneDir+"/../../escape.textproto", []byte("x"), key))
	store.PutRaw(AutotuneDir+"/sub/dir.textproto", Seal(AutotuneDir+"/sub/dir.textproto", []byte("x"), key))
	store.PutRaw(AutotuneDir+"/notproto", Seal(AutotuneDir+"/notproto", []byte("x"), key))
	store.PutRaw(AutotuneDir+"/unsigned.textproto", Seal(AutotuneDir+"/unsigned.textproto", []byte("x"), nil))
	store.PutRaw(AutotuneDir+"/otherkey.textproto", Seal(AutotuneDir+"/otherkey.textproto", []byte("x"), sign.NewHMAC([]byte("evil"))))
	tampered := Seal(AutotuneDir+"/tampered.textproto", []byte("x"), key)
	tampered[len(tampered)-1] ^= 1
	store.PutRaw(AutotuneDir+"/tampered.textproto", tampered)
	store.PutRaw(KernelParts+"/bad", Seal(KernelParts+"/bad", rec(1, "evil"), sign.NewHMAC([]byte("evil"))))

	dir := t.TempDir()
	m := NewMirror(store, MirrorOptions{Dir: dir, Autotune: true, Kernels: true, SigningKey: key})
	st, err := m.Pull(ctx)
	if !errors.Is(err, ErrBadObject) {
		t.Fatalf("pull error = %v, want ErrBadObject", err)
	}
	if st.Pulled != 1 || st.Refused != 7 {
		t.Fatalf("stats %+v, want 1 pulled and 7 refused", st)
	}
	var files []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			files = append(files, rel)
		}
		return nil
	})
	if want := []string{filepath.Join(AutotuneDir, "good.textproto")}; fmt.Sprint(files) != fmt.Sprint(want) {
		t.Fatalf("files written: %q, want %q", files, want)
	}
}

func TestMirrorStoreDown(t *testing.T) {
	store := newMem()
	store.SetUnavailable(true, nil)
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, AutotuneDir), 0o700)
	os.WriteFile(filepath.Join(dir, AutotuneDir, "a.textproto"), []byte("x"), 0o600)
	m := NewMirror(store, MirrorOptions{Dir: dir, Autotune: true, Kernels: true})
	if _, err := m.Pull(context.Background()); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("pull with the store down: %v", err)
	}
	if _, err := m.Push(context.Background()); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("push with the store down: %v", err)
	}
}

// The mirror's local writes are confined: a
// symlinked autotune directory or kernel cache file is not written through.
func TestMirrorPullConfined(t *testing.T) {
	base := t.TempDir()
	dir, outside := filepath.Join(base, "cache"), filepath.Join(base, "outside")
	os.Mkdir(dir, 0o700)
	os.Mkdir(outside, 0o700)
	victim := filepath.Join(outside, "victim")
	os.WriteFile(victim, []byte("keep"), 0o600)
	os.Symlink(outside, filepath.Join(dir, AutotuneDir))
	os.Symlink(victim, filepath.Join(dir, KernelFile))

	store := memblob.New(memblob.Options{})
	ctx := context.Background()
	at := AutotuneDir + "/QUJD.textproto"
	store.PutIfAbsent(ctx, at, Seal(at, []byte("tuned"), nil))
	part := []byte{0x0a, 0x01, 'k'}
	sum := sha256.Sum256(part)
	kp := KernelParts + "/" + hex.EncodeToString(sum[:])
	store.PutIfAbsent(ctx, kp, Seal(kp, part, nil))

	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	for _, r := range []*os.Root{root, nil} {
		m := NewMirror(store, MirrorOptions{Dir: dir, Root: r, Autotune: true, Kernels: true})
		if _, err := m.Pull(ctx); err == nil {
			t.Error("pull through planted symbolic links reported no error")
		}
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 1 {
		t.Errorf("files outside the cache directory: %v", ents)
	}
	if b, _ := os.ReadFile(victim); string(b) != "keep" {
		t.Errorf("file outside the cache directory overwritten: %q", b)
	}
}

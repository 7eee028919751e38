package rawfiles

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
)

func writeLocal(t *testing.T, p string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// Issue 10 item 4: an object over the bound is refused from its size,
// without being read.
func TestMirrorObjectSizeBound(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	const bound = 1 << 20
	obj := AutotuneDir + "/planted.textproto"
	store.PutRaw(obj, bytes.Repeat([]byte{'x'}, 32*bound))
	m := NewMirror(store, MirrorOptions{Dir: t.TempDir(), Autotune: true, MaxObjectSize: bound})
	var st MirrorStats
	var err error
	n := memtest.Allocated(func() { st, err = m.Pull(ctx) })
	if err == nil || st.Refused != 1 || st.Pulled != 0 {
		t.Fatalf("pull of an oversize object: %+v %v", st, err)
	}
	if n > 4*bound {
		t.Errorf("refusing a %d-byte object allocated %d bytes: it was read", 32*bound, n)
	}
}

// Issue 10 item 8: a damaged autotune object or kernel part is replaced,
// conditionally on its ETag, by a host that has the file, instead of being
// refused by every host forever.
func TestMirrorReplacesDamagedObjects(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	key := sign.NewHMAC([]byte("team"))
	dirA, dirB := t.TempDir(), t.TempDir()
	tuned := []byte("tuned: 1")
	kernels := cat(rec(1, "ka"), rec(1, "kb"))
	for _, dir := range []string{dirA, dirB} {
		writeLocal(t, filepath.Join(dir, AutotuneDir, "x.textproto"), tuned)
		writeLocal(t, filepath.Join(dir, KernelFile), kernels)
	}
	a := NewMirror(store, MirrorOptions{Dir: dirA, Autotune: true, Kernels: true, SigningKey: key})
	if st, err := a.Push(ctx); err != nil || st.Pushed != 2 {
		t.Fatalf("push: %+v %v", st, err)
	}
	infos, err := store.List(ctx, "")
	if err != nil || len(infos) != 2 {
		t.Fatalf("objects %v %v", infos, err)
	}
	for _, in := range infos {
		data, _ := store.Get(ctx, in.Name)
		data[len(data)-1] ^= 0xFF
		store.PutRaw(in.Name, data)
	}
	// Host B, which has the same files, pushes: both objects are checked
	// and replaced.
	b := NewMirror(store, MirrorOptions{Dir: dirB, Autotune: true, Kernels: true, SigningKey: key})
	st, err := b.Push(ctx)
	if err != nil || st.Replaced != 2 {
		t.Fatalf("push over damaged objects: %+v %v", st, err)
	}
	// A fresh host pulls both.
	c := NewMirror(store, MirrorOptions{Dir: t.TempDir(), Autotune: true, Kernels: true, SigningKey: key})
	if st, err := c.Pull(ctx); err != nil || st.Pulled != 2 || st.Refused != 0 {
		t.Fatalf("pull after the repair: %+v %v", st, err)
	}
	// Sound objects are left alone, and not downloaded to find out.
	gets := store.Calls("get")
	d := NewMirror(store, MirrorOptions{Dir: dirB, Autotune: true, Kernels: true, SigningKey: key})
	if st, err := d.Push(ctx); err != nil || st.Replaced != 0 || st.Pushed != 0 {
		t.Fatalf("push over sound objects: %+v %v", st, err)
	}
	if n := store.Calls("get") - gets; n != 0 {
		t.Errorf("a push over sound objects downloaded %d of them", n)
	}
}

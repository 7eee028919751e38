package rawfiles

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/internal/sign"
)

func edRawKeys(t testing.TB, seed byte) (writer, reader *sign.Keys) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	w, err := sign.NewEd25519(priv)
	if err != nil {
		t.Fatal(err)
	}
	r, _ := sign.NewEd25519(nil, priv.Public().(ed25519.PublicKey))
	return w, r
}

// TestSealHMACUnchanged: an HMAC-sealed object is what it always was
// (flags 1, the HMAC over the tagged name and payload), so that mirrors
// written before Ed25519 existed still verify.
func TestSealHMACUnchanged(t *testing.T) {
	payload := []byte("results { a: 1 }\n")
	obj := Seal("n", payload, sign.NewHMAC([]byte("k")))
	m := hmac.New(sha256.New, []byte("k"))
	m.Write([]byte("xlacache-raw-v1\x00\x00\x00\x00\x00\x00\x00\x00\x01n"))
	m.Write(payload)
	sum := sha256.Sum256(payload)
	want := append(append(append(append([]byte("XLCRAW"), rawVersion, rawFlagSigned), sum[:]...), m.Sum(nil)...), payload...)
	if !bytes.Equal(obj, want) {
		t.Fatalf("HMAC-sealed object changed:\n got %x\nwant %x", obj, want)
	}
}

func TestSealUnsealEd25519(t *testing.T) {
	payload := []byte("autotune result\n")
	writer, reader := edRawKeys(t, 1)
	_, otherReader := edRawKeys(t, 2)
	signed := Seal("a/x.textproto", payload, writer)
	if signed[7] != rawFlagEd25519 {
		t.Fatalf("flags %#x", signed[7])
	}
	// A verify-only process seals nothing signed (and Push refuses).
	if b := Seal("a/x.textproto", payload, reader); b[7] != 0 {
		t.Fatalf("verify-only keys sealed a signed object")
	}
	tampered := bytes.Clone(signed)
	tampered[rawHeaderLen+sign.KeyIDSize+2] ^= 1
	tests := []struct {
		name      string
		obj       []byte
		objName   string
		keys      *sign.Keys
		otherKey  bool // wants ErrOtherKey (left in place)
		wantError bool
	}{
		{"reader verifies", signed, "a/x.textproto", reader, false, false},
		{"writer verifies", signed, "a/x.textproto", writer, false, false},
		{"no keys: checksum only", signed, "a/x.textproto", nil, false, false},
		{"another public key", signed, "a/x.textproto", otherReader, true, true},
		{"hmac process", signed, "a/x.textproto", sign.NewHMAC([]byte("k")), true, true},
		{"replayed under another name", signed, "a/y.textproto", reader, false, true},
		{"signature altered", tampered, "a/x.textproto", reader, false, true},
		{"unsigned refused", Seal("a/x.textproto", payload, nil), "a/x.textproto", reader, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Unseal(tt.objName, tt.obj, tt.keys)
			if !tt.wantError {
				if err != nil || !bytes.Equal(got, payload) {
					t.Fatalf("Unseal = %q, %v", got, err)
				}
				return
			}
			if err == nil || !errors.Is(err, ErrBadObject) || errors.Is(err, ErrOtherKey) != tt.otherKey {
				t.Fatalf("Unseal = %v (other key: want %v)", err, tt.otherKey)
			}
		})
	}
}

// TestMirrorEd25519: a writer's pushed autotune files and kernel parts
// are pulled by a reader holding only the public key; the reader cannot
// push.
func TestMirrorEd25519(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	writer, reader := edRawKeys(t, 1)
	dirA, dirB := t.TempDir(), t.TempDir()
	writeLocal(t, filepath.Join(dirA, AutotuneDir, "x.textproto"), []byte("tuned: 1"))
	writeLocal(t, filepath.Join(dirA, KernelFile), cat(rec(1, "ka"), rec(1, "kb")))
	a := NewMirror(store, MirrorOptions{Dir: dirA, Autotune: true, Kernels: true, SigningKey: writer})
	if st, err := a.Push(ctx); err != nil || st.Pushed == 0 {
		t.Fatalf("push: %+v %v", st, err)
	}
	b := NewMirror(store, MirrorOptions{Dir: dirB, Autotune: true, Kernels: true, SigningKey: reader})
	if st, err := b.Pull(ctx); err != nil || st.Pulled != 2 || st.Refused != 0 {
		t.Fatalf("pull: %+v %v", st, err)
	}
	if got, err := os.ReadFile(filepath.Join(dirB, AutotuneDir, "x.textproto")); err != nil || string(got) != "tuned: 1" {
		t.Fatalf("autotune file on the reader: %q %v", got, err)
	}
	// Another public key: everything refused, nothing written.
	_, other := edRawKeys(t, 2)
	dirC := t.TempDir()
	c := NewMirror(store, MirrorOptions{Dir: dirC, Autotune: true, Kernels: true, SigningKey: other})
	if st, _ := c.Pull(ctx); st.Pulled != 0 || st.Refused == 0 {
		t.Fatalf("pull with another key: %+v", st)
	}
	if _, err := os.Stat(filepath.Join(dirC, AutotuneDir, "x.textproto")); err == nil {
		t.Fatal("a file signed with another key was installed")
	}
	writeLocal(t, filepath.Join(dirB, AutotuneDir, "y.textproto"), []byte("tuned: 2"))
	if _, err := b.Push(ctx); !errors.Is(err, sign.ErrCannotSign) {
		t.Fatalf("a verify-only mirror pushed: %v", err)
	}
}

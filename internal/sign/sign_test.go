package sign

import (
	"bytes"
	"crypto/ed25519"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"strings"
	"testing"
)

func mustKey(t testing.TB, seed byte) ed25519.PrivateKey {
	t.Helper()
	return ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
}

func pubOf(k ed25519.PrivateKey) ed25519.PublicKey { return k.Public().(ed25519.PublicKey) }

func TestHMACIsTheBareHMAC(t *testing.T) {
	// Existing users' signatures must stay byte for byte what they were.
	k := NewHMAC([]byte("k"))
	msg := []byte("hello")
	sig, err := k.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	m := hmac.New(sha256.New, []byte("k"))
	m.Write(msg)
	if !bytes.Equal(sig, m.Sum(nil)) {
		t.Fatalf("HMAC signature changed")
	}
	if err := k.Verify(HMAC, msg, sig); err != nil {
		t.Fatal(err)
	}
	if err := NewHMAC([]byte("other")).Verify(HMAC, msg, sig); !errors.Is(err, ErrOtherKey) {
		t.Fatalf("other HMAC key: %v", err)
	}
	text, _ := k.SignText(msg)
	if text != hex.EncodeToString(m.Sum(nil)) {
		t.Fatalf("text %q", text)
	}
}

func TestEd25519(t *testing.T) {
	old, cur := mustKey(t, 1), mustKey(t, 2)
	writer, err := NewEd25519(cur)
	if err != nil {
		t.Fatal(err)
	}
	oldWriter, _ := NewEd25519(old)
	reader, _ := NewEd25519(nil, pubOf(old), pubOf(cur))
	onlyOld, _ := NewEd25519(nil, pubOf(old))
	hm := NewHMAC([]byte("s3kr1t"))
	msg := []byte("payload")
	sig, err := writer.Sign(msg)
	if err != nil {
		t.Fatal(err)
	}
	oldSig, _ := oldWriter.Sign(msg)
	if id, ok := SignerOf(Ed25519, sig); !ok || id != IDOf(pubOf(cur)) {
		t.Fatalf("signature names %v", id)
	}
	tampered := bytes.Clone(sig)
	tampered[len(tampered)-1] ^= 1
	tests := []struct {
		name string
		k    *Keys
		s    Scheme
		msg  []byte
		sig  []byte
		want error
	}{
		{"writer verifies its own", writer, Ed25519, msg, sig, nil},
		{"reader, new key", reader, Ed25519, msg, sig, nil},
		{"reader, old key (rotation)", reader, Ed25519, msg, oldSig, nil},
		{"reader without the new key", onlyOld, Ed25519, msg, sig, ErrOtherKey},
		{"tampered signature", reader, Ed25519, msg, tampered, ErrBadSignature},
		{"tampered message", reader, Ed25519, []byte("payloaD"), sig, ErrBadSignature},
		{"truncated", reader, Ed25519, msg, sig[:40], ErrBadSignature},
		{"hmac keys, ed25519 signature", hm, Ed25519, msg, sig, ErrOtherKey},
		{"ed25519 keys, hmac signature", reader, HMAC, msg, make([]byte, 32), ErrOtherKey},
		{"unsigned process", nil, Ed25519, msg, sig, ErrOtherKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.k.Verify(tc.s, tc.msg, tc.sig)
			if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
		})
	}
	if reader.CanSign() {
		t.Fatal("a reader with public keys only can sign")
	}
	if _, err := reader.Sign(msg); !errors.Is(err, ErrCannotSign) {
		t.Fatalf("reader signed: %v", err)
	}
	if _, err := reader.SignText(msg); !errors.Is(err, ErrCannotSign) {
		t.Fatalf("reader signed text: %v", err)
	}
	text, err := writer.SignText(msg)
	if err != nil || !strings.HasPrefix(text, "ed25519:") {
		t.Fatalf("text %q %v", text, err)
	}
	if err := reader.VerifyText(msg, text); err != nil {
		t.Fatal(err)
	}
	if err := reader.VerifyText([]byte("x"), text); !errors.Is(err, ErrBadSignature) {
		t.Fatal(err)
	}
	if s := reader.String(); !strings.Contains(s, "verify-only") || !strings.Contains(s, IDOf(pubOf(old)).String()) {
		t.Fatalf("String %q", s)
	}
	if s := hm.String(); strings.Contains(s, "s3kr1t") {
		t.Fatalf("String leaks the secret: %q", s)
	}
}

func TestStreamedEqualsWhole(t *testing.T) {
	w, _ := NewEd25519(mustKey(t, 3))
	h, err := w.Signer()
	if err != nil {
		t.Fatal(err)
	}
	h.Write([]byte("pay"))
	h.Write([]byte("load"))
	sig, _ := h.Sign()
	if err := w.Verify(Ed25519, []byte("payload"), sig); err != nil {
		t.Fatal(err)
	}
}

func TestNilKeys(t *testing.T) {
	var k *Keys
	if k.Enabled() || k.CanSign() || k.Scheme() != None || k.String() != "unsigned" || len(k.VerifyIDs()) != 0 {
		t.Fatal("nil keys are not unsigned")
	}
	if NewHMAC(nil) != nil {
		t.Fatal("empty HMAC key is not unsigned")
	}
	if k, err := NewEd25519(nil); k != nil || err != nil {
		t.Fatal("no ed25519 key is not unsigned")
	}
}

func TestParse(t *testing.T) {
	priv := mustKey(t, 7)
	pub := pubOf(priv)
	pemPriv, err := MarshalPrivateKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	seed := priv.Seed()
	for _, text := range [][]byte{
		pemPriv,
		append([]byte("\n  "), pemPriv...),
		[]byte(base64.StdEncoding.EncodeToString(seed) + "\n"),
		[]byte(hex.EncodeToString(seed)),
		[]byte(base64.StdEncoding.EncodeToString(priv)),
	} {
		got, err := ParsePrivateKey(text)
		if err != nil || !got.Equal(priv) {
			t.Errorf("ParsePrivateKey(%.30q): %v", text, err)
		}
	}
	for _, text := range []string{"", "zz", base64.StdEncoding.EncodeToString([]byte("short")),
		"-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n",
		base64.StdEncoding.EncodeToString(append(seed, make([]byte, 32)...))} {
		if _, err := ParsePrivateKey([]byte(text)); err == nil {
			t.Errorf("ParsePrivateKey(%q) accepted", text)
		}
	}
	other := pubOf(mustKey(t, 8))
	list := EncodePublicKey(pub) + ", " + hex.EncodeToString(other) + "\n# retired\n"
	keys, err := ParsePublicKeys(list)
	if err != nil || len(keys) != 2 || !keys[0].Equal(pub) || !keys[1].Equal(other) {
		t.Fatalf("ParsePublicKeys: %v %v", keys, err)
	}
	for _, text := range []string{"", "# only a comment", EncodePublicKey(pub) + ",nothex", base64.StdEncoding.EncodeToString(seed[:31])} {
		if _, err := ParsePublicKeys(text); err == nil {
			t.Errorf("ParsePublicKeys(%q) accepted", text)
		}
	}
}

func FuzzParsePublicKeys(f *testing.F) {
	f.Add(EncodePublicKey(pubOf(mustKey(f, 1))))
	f.Add("-----BEGIN PUBLIC KEY-----\nMCowBQYDK2VwAyEA\n-----END PUBLIC KEY-----")
	f.Add("a,b\n#c\n")
	f.Fuzz(func(t *testing.T, s string) {
		keys, err := ParsePublicKeys(s)
		if err == nil {
			for _, k := range keys {
				if len(k) != ed25519.PublicKeySize {
					t.Fatalf("key of %d bytes", len(k))
				}
			}
		}
	})
}

func FuzzParsePrivateKey(f *testing.F) {
	pemPriv, _ := MarshalPrivateKey(mustKey(f, 1))
	f.Add(pemPriv)
	f.Add([]byte(hex.EncodeToString(make([]byte, 32))))
	f.Fuzz(func(t *testing.T, b []byte) {
		priv, err := ParsePrivateKey(b)
		if err == nil && len(priv) != ed25519.PrivateKeySize {
			t.Fatalf("key of %d bytes", len(priv))
		}
	})
}

func FuzzVerify(f *testing.F) {
	w, _ := NewEd25519(mustKey(f, 1))
	sig, _ := w.Sign([]byte("m"))
	f.Add([]byte("m"), sig)
	f.Add([]byte("m"), []byte{})
	f.Fuzz(func(t *testing.T, msg, sig []byte) {
		// Whatever the bytes, verification answers (no panic), and only
		// the one genuine signature verifies.
		if err := w.Verify(Ed25519, msg, sig); err == nil && string(msg) != "m" {
			t.Fatalf("forged signature verifies for %q", msg)
		}
		_ = w.VerifyText(msg, string(sig))
	})
}

// TestEd25519WireFormat pins a signature's bytes (Ed25519 is
// deterministic): key id, then Ed25519ctx("xlacache-v1") over "sha256\0"
// and the message's SHA-256. Entries in caches and buckets hold such
// signatures; changing the construction orphans all of them.
func TestEd25519WireFormat(t *testing.T) {
	priv := mustKey(t, 1)
	w, _ := NewEd25519(priv)
	sig, err := w.Sign([]byte("xlacache"))
	if err != nil {
		t.Fatal(err)
	}
	const want = "34750f98bd59fcfcc8b2c2673c952ba59440fcb9a685a1cbcf233c2809d1e2c7d220216bb567157fe0d5c7a20c1b081c8d956ac47fd89d884674edfdf727e07c5e3faceb5b68c90f"
	if got := hex.EncodeToString(sig); got != want {
		t.Fatalf("signature changed:\n got %s\nwant %s", got, want)
	}
	sum := sha256.Sum256([]byte("xlacache"))
	if err := ed25519.VerifyWithOptions(pubOf(priv), append([]byte("sha256\x00"), sum[:]...), sig[KeyIDSize:], &ed25519.Options{Context: "xlacache-v1"}); err != nil {
		t.Fatalf("not an Ed25519ctx signature of the tagged SHA-256: %v", err)
	}
	if id := IDOf(pubOf(priv)); !bytes.Equal(sig[:KeyIDSize], id[:]) {
		t.Fatal("the signature does not start with the key id")
	}
}

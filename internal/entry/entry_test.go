package entry

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/sign"
)

// edKeys returns Ed25519 keys made from a fixed seed byte: a writer's
// (private key) and a reader's (its public key alone).
func edKeys(t testing.TB, seed byte) (writer, reader *sign.Keys) {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{seed}, ed25519.SeedSize))
	w, err := sign.NewEd25519(priv)
	if err != nil {
		t.Fatal(err)
	}
	r, err := sign.NewEd25519(nil, priv.Public().(ed25519.PublicKey))
	if err != nil {
		t.Fatal(err)
	}
	return w, r
}

func sampleHeader() Header {
	return Header{
		Key:         "jit_f-" + string(bytes.Repeat([]byte("ab"), 32)),
		Parts:       []PartDigest{{Name: "program", Digest: [32]byte{1}}, {Name: "options", Digest: [32]byte{2}}},
		CompileTime: 1500 * time.Millisecond,
		Created:     time.Unix(1700000000, 42),
	}
}

func payloads() map[string][]byte {
	r := rand.New(rand.NewPCG(1, 2))
	random := make([]byte, 3000)
	for i := range random {
		random[i] = byte(r.Uint32())
	}
	return map[string][]byte{
		"empty":        {},
		"tiny":         []byte("hi"),
		"compressible": bytes.Repeat([]byte("xla executable "), 500),
		"random":       random,
	}
}

// sample is one sample payload encoded with sampleHeader.
type sample struct {
	name    string // the payload's name in payloads
	payload []byte
	key     *sign.Keys // the signing keys; nil for an unsigned entry
	b       []byte     // the encoded entry
}

// samples encodes every payload of payloads unsigned, signed with HMAC
// and signed with Ed25519.
func samples(t *testing.T) []sample {
	t.Helper()
	var out []sample
	ed, _ := edKeys(t, 1)
	for name, p := range payloads() {
		for _, key := range []*sign.Keys{nil, sign.NewHMAC([]byte("k")), ed} {
			b, err := Encode(sampleHeader(), p, key)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, sample{name, p, key, b})
		}
	}
	return out
}

func TestRoundTrip(t *testing.T) {
	for _, s := range samples(t) {
		e, err := Decode(s.b, s.key)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		h := sampleHeader()
		if !bytes.Equal(e.Payload, s.payload) || e.Key != h.Key || e.CompileTime != h.CompileTime ||
			!e.Created.Equal(h.Created) || len(e.Parts) != 2 || e.Parts[1] != h.Parts[1] ||
			e.RawSize != int64(len(s.payload)) || e.Signed != (s.key != nil) || e.Scheme != s.key.Scheme() {
			t.Errorf("%s: round trip mismatch: %+v", s.name, e.Header)
		}
		if s.name == "compressible" && e.Codec != CodecZstd {
			t.Errorf("compressible payload stored as %v", e.Codec)
		}
		if s.name == "random" && e.Codec != CodecRaw {
			t.Errorf("random payload stored as %v", e.Codec)
		}
		h2, off, err := ParseHeader(s.b)
		if err != nil || h2.Size(off) != int64(len(s.b)) {
			t.Errorf("%s: ParseHeader size %d vs %d, %v", s.name, h2.Size(off), len(s.b), err)
		}
	}
}

// TestEveryByteFlip changes each byte of an entry in turn (flipping all
// bits, and adding one): every change must be detected.
func TestEveryByteFlip(t *testing.T) {
	for _, s := range samples(t) {
		for i := range s.b {
			for _, mut := range []func(byte) byte{func(x byte) byte { return ^x }, func(x byte) byte { return x + 1 }} {
				c := bytes.Clone(s.b)
				c[i] = mut(c[i])
				if e, err := Decode(c, s.key); err == nil {
					t.Fatalf("%s signed=%v: change at byte %d/%d not detected (payload %d bytes)", s.name, s.key != nil, i, len(s.b), len(e.Payload))
				}
			}
		}
	}
}

func TestEveryTruncation(t *testing.T) {
	for name, p := range payloads() {
		b, err := Encode(sampleHeader(), p, sign.NewHMAC([]byte("k")))
		if err != nil {
			t.Fatal(err)
		}
		for n := 0; n < len(b); n++ {
			if _, err := Decode(b[:n], nil); err == nil {
				t.Fatalf("%s: truncation to %d/%d bytes not detected", name, n, len(b))
			}
		}
		if _, err := Decode(append(bytes.Clone(b), 0), nil); err == nil {
			t.Fatalf("%s: trailing byte not detected", name)
		}
	}
}

func TestSignature(t *testing.T) {
	p := []byte("payload payload payload")
	unsigned, _ := Encode(sampleHeader(), p, nil)
	right, wrong := sign.NewHMAC([]byte("right")), sign.NewHMAC([]byte("wrong"))
	signed, _ := Encode(sampleHeader(), p, right)
	edWriter, edReader := edKeys(t, 1)
	otherWriter, otherReader := edKeys(t, 2)
	edSigned, err := Encode(sampleHeader(), p, edWriter)
	if err != nil {
		t.Fatal(err)
	}
	rotated, _ := sign.NewEd25519(nil, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, 32)).Public().(ed25519.PublicKey),
		ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey))
	// An attacker who can write the store but holds no private key: the
	// same header and payload, a signature by its own key.
	forged, _ := Encode(sampleHeader(), p, otherWriter)
	tests := []struct {
		name string
		b    []byte
		key  *sign.Keys
		want error
	}{
		{"unsigned refused", unsigned, right, ErrUnsigned},
		{"wrong key", signed, wrong, ErrSignature},
		{"right key", signed, right, nil},
		{"no key accepts signed", signed, nil, nil},
		{"ed25519 reader verifies", edSigned, edReader, nil},
		{"ed25519 writer verifies", edSigned, edWriter, nil},
		{"ed25519 rotation: either key", edSigned, rotated, nil},
		{"ed25519 by another key", edSigned, otherReader, ErrSignature},
		{"ed25519 forged by another key", forged, edReader, ErrSignature},
		{"ed25519 unsigned refused", unsigned, edReader, ErrUnsigned},
		{"hmac entry, ed25519 reader", signed, edReader, ErrSignature},
		{"ed25519 entry, hmac reader", edSigned, right, ErrSignature},
		{"no key accepts ed25519", edSigned, nil, nil},
		{"foreign", []byte("#!/bin/sh\necho pwned\n"), nil, ErrForeign},
		{"empty", nil, nil, ErrCorrupt},
	}
	for _, tc := range tests {
		_, err := Decode(tc.b, tc.key)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// A forged HMAC entry (recomputed CRC, another key) must not pass.
	forgedHMAC, _ := Encode(sampleHeader(), []byte("evil"), sign.NewHMAC([]byte("attacker")))
	if _, err := Decode(forgedHMAC, right); !errors.Is(err, ErrSignature) {
		t.Errorf("forged entry: %v", err)
	}
	e, err := Decode(edSigned, rotated)
	if err != nil || !e.HasSigner || e.Signer != sign.IDOf(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, 32)).Public().(ed25519.PublicKey)) {
		t.Errorf("signer of an ed25519 entry: %v %v", e, err)
	}
	// A reader holding only the public key cannot write an entry.
	if _, err := Encode(sampleHeader(), p, edReader); !errors.Is(err, sign.ErrCannotSign) {
		t.Errorf("verify-only keys encoded an entry: %v", err)
	}
}

// TestHMACFormatUnchanged pins the bytes of an HMAC-signed and an
// unsigned entry as the build before Ed25519 wrote them: existing caches
// and their users must not notice the new scheme.
func TestHMACFormatUnchanged(t *testing.T) {
	h := Header{Key: "jit_f-abab", Parts: []PartDigest{{Name: "program", Digest: [32]byte{1}}}, CompileTime: 1500 * time.Millisecond, Created: time.Unix(1700000000, 42)}
	const (
		golden         = "584c434501000100560000000a006a69745f662d6162616201000770726f6772616d0100000000000000000000000000000000000000000000000000000000000000002f6859000000002a002a36fe9c97171300000000000000130000000000000068656c6c6f2c20676f6c64656e20656e747279cfc321509f8b2cd9fa2deafab95c39df8979f650b42455ca28625f121f7074be8134c0da"
		goldenUnsigned = "584c434501000000560000000a006a69745f662d6162616201000770726f6772616d0100000000000000000000000000000000000000000000000000000000000000002f6859000000002a002a36fe9c97171300000000000000130000000000000068656c6c6f2c20676f6c64656e20656e747279d1202fdc"
	)
	for _, tc := range []struct {
		keys *sign.Keys
		want string
	}{{sign.NewHMAC([]byte("k")), golden}, {nil, goldenUnsigned}} {
		b, err := Encode(h, []byte("hello, golden entry"), tc.keys)
		if err != nil {
			t.Fatal(err)
		}
		if got := hex.EncodeToString(b); got != tc.want {
			t.Errorf("%v entry changed:\n got %s\nwant %s", tc.keys, got, tc.want)
		}
	}
}

func TestEncodeLimits(t *testing.T) {
	h := sampleHeader()
	h.Key = ""
	if _, err := Encode(h, nil, nil); err == nil {
		t.Error("empty key accepted")
	}
	h = sampleHeader()
	h.Parts = []PartDigest{{Name: string(bytes.Repeat([]byte("n"), 300))}}
	if _, err := Encode(h, nil, nil); err == nil {
		t.Error("long part name accepted")
	}
	b := []byte{'X', 'L', 'C', 'E', 3, 0, 0, 0, 0, 0, 0, 0}
	if _, _, err := ParseHeader(b); !errors.Is(err, ErrVersion) {
		t.Errorf("future version: %v", err)
	}
}

// addSeeds seeds f with the encoding of every sample payload, the empty
// input and extra.
func addSeeds(f *testing.F, extra ...[]byte) {
	ed, _ := edKeys(f, 1)
	for _, p := range payloads() {
		b, _ := Encode(sampleHeader(), p, nil)
		f.Add(b)
		b, _ = Encode(sampleHeader(), p, ed)
		f.Add(b)
	}
	f.Add([]byte{})
	for _, b := range extra {
		f.Add(b)
	}
}

// FuzzDecode: Decode must never panic, and whatever it accepts must
// re-encode to an entry that decodes to the same payload.
func FuzzDecode(f *testing.F) {
	addSeeds(f, []byte("XLCE"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b, nil)
		if err != nil {
			if _, _, herr := ParseHeader(b); herr == nil {
				_ = herr
			}
			return
		}
		again, err := Encode(e.Header, e.Payload, nil)
		if err != nil {
			t.Fatalf("accepted entry does not re-encode: %v", err)
		}
		e2, err := Decode(again, nil)
		if err != nil || !bytes.Equal(e2.Payload, e.Payload) {
			t.Fatalf("re-encoded entry does not decode: %v", err)
		}
	})
}

// FuzzDecodeSigned: with an Ed25519 reader's keys, Decode never panics
// and accepts only entries signed by the one accepted key.
func FuzzDecodeSigned(f *testing.F) {
	addSeeds(f)
	_, reader := edKeys(f, 1)
	want := reader.VerifyIDs()[0]
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := Decode(b, reader)
		if err == nil && (!e.HasSigner || e.Signer != want || e.Scheme != sign.Ed25519) {
			t.Fatalf("accepted an entry signed by %v (scheme %v)", e.Signer, e.Scheme)
		}
	})
}

// Read returns a whole entry unchanged, including one whose header is
// longer than its first probe, and rejects every truncation (a file whose
// size disagrees with its header) before allocating the declared size.
func TestRead(t *testing.T) {
	h := sampleHeader()
	long := h
	for i := 0; i < 200; i++ { // a header longer than probeSize
		long.Parts = append(long.Parts, PartDigest{Name: "p", Digest: [32]byte{byte(i)}})
	}
	for _, hdr := range []Header{h, long} {
		for name, p := range payloads() {
			b, err := Encode(hdr, p, nil)
			if err != nil {
				t.Fatal(err)
			}
			got, err := Read(bytes.NewReader(b), int64(len(b)), 0)
			if err != nil || !bytes.Equal(got, b) {
				t.Fatalf("%s: Read = %d bytes, %v", name, len(got), err)
			}
			for n := 0; n < len(b); n++ {
				if _, err := Read(bytes.NewReader(b[:n]), int64(n), 0); err == nil {
					t.Fatalf("%s: truncation to %d/%d bytes not detected", name, n, len(b))
				}
			}
			if _, err := Read(bytes.NewReader(b), int64(len(b)), int64(len(b)-1)); err == nil {
				t.Fatalf("%s: entry over the bound accepted", name)
			}
		}
	}
	// A real header in front of a claimed 1 TiB: rejected from the prefix.
	b, _ := Encode(h, []byte("x"), nil)
	if _, err := Read(bytes.NewReader(b), 1<<40, 0); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("huge size: %v", err)
	}
}

// FuzzRead: Read never panics, and what it returns is exactly its input.
func FuzzRead(f *testing.F) {
	addSeeds(f, []byte("XLCE\x01\x01\x00\x00\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		got, err := Read(bytes.NewReader(b), int64(len(b)), 0)
		if err == nil && !bytes.Equal(got, b) {
			t.Fatalf("Read returned %d bytes for a %d-byte input", len(got), len(b))
		}
	})
}

// OtherKey tells an entry signed by a key this process does not hold
// (left in place) from one altered after signing under a key it accepts
// (damage, which a writer replaces).
func TestOtherKey(t *testing.T) {
	p := []byte("payload")
	edWriter, edReader := edKeys(t, 1)
	otherWriter, _ := edKeys(t, 2)
	byOther, _ := Encode(sampleHeader(), p, otherWriter)
	signed, _ := Encode(sampleHeader(), p, edWriter)
	// Alter the signature and recompute the checksum: whole, but forged.
	altered := bytes.Clone(signed)
	altered[len(altered)-crcSize-1] ^= 1
	altered = binary.LittleEndian.AppendUint32(altered[:len(altered)-crcSize], crc32.Checksum(altered[:len(altered)-crcSize], castagnoli))
	hmacSigned, _ := Encode(sampleHeader(), p, sign.NewHMAC([]byte("a")))
	for _, tc := range []struct {
		name  string
		b     []byte
		keys  *sign.Keys
		other bool
	}{
		{"ed25519, key not accepted", byOther, edReader, true},
		{"ed25519, altered under an accepted key", altered, edReader, false},
		{"hmac, another key", hmacSigned, sign.NewHMAC([]byte("b")), true},
		{"hmac entry, ed25519 process", hmacSigned, edReader, true},
	} {
		_, err := Decode(tc.b, tc.keys)
		if err == nil || !errors.Is(err, ErrSignature) || OtherKey(err) != tc.other {
			t.Errorf("%s: %v (OtherKey %v)", tc.name, err, OtherKey(err))
		}
	}
}

// BenchmarkDecodeSigned compares verifying an HMAC and an Ed25519
// signature on a 1 MiB incompressible payload (the signature's share of a
// hit's cost).
func BenchmarkDecodeSigned(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	p := make([]byte, 1<<20)
	for i := range p {
		p[i] = byte(r.Uint32())
	}
	edWriter, edReader := edKeys(b, 1)
	for _, tc := range []struct {
		name           string
		writer, reader *sign.Keys
	}{
		{"unsigned", nil, nil},
		{"hmac", sign.NewHMAC([]byte("k")), sign.NewHMAC([]byte("k"))},
		{"ed25519", edWriter, edReader},
	} {
		data, err := Encode(sampleHeader(), p, tc.writer)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(tc.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := Decode(data, tc.reader); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

package entry

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

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
	key     []byte // the signing key; nil for an unsigned entry
	b       []byte // the encoded entry
}

// samples encodes every payload of payloads unsigned and signed.
func samples(t *testing.T) []sample {
	t.Helper()
	var out []sample
	for name, p := range payloads() {
		for _, key := range [][]byte{nil, []byte("k")} {
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
			e.RawSize != int64(len(s.payload)) || e.Signed != (s.key != nil) || e.Version != Version {
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
		b, err := Encode(sampleHeader(), p, []byte("k"))
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
	signed, _ := Encode(sampleHeader(), p, []byte("right"))
	tests := []struct {
		name string
		b    []byte
		key  []byte
		want error
	}{
		{"unsigned refused", unsigned, []byte("right"), ErrUnsigned},
		{"wrong key", signed, []byte("wrong"), ErrSignature},
		{"right key", signed, []byte("right"), nil},
		{"no key accepts signed", signed, nil, nil},
		{"foreign", []byte("#!/bin/sh\necho pwned\n"), nil, ErrForeign},
		{"empty", nil, nil, ErrCorrupt},
	}
	for _, tc := range tests {
		_, err := Decode(tc.b, tc.key)
		if (tc.want == nil) != (err == nil) || (tc.want != nil && !errors.Is(err, tc.want)) {
			t.Errorf("%s: got %v, want %v", tc.name, err, tc.want)
		}
	}
	// A forged entry (recomputed CRC, no key) must not pass a signing key.
	forged, _ := Encode(sampleHeader(), []byte("evil"), []byte("attacker"))
	if _, err := Decode(forged, []byte("right")); !errors.Is(err, ErrSignature) {
		t.Errorf("forged entry: %v", err)
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
	b := []byte{'X', 'L', 'C', 'E', 2, 0, 0, 0, 0, 0, 0, 0}
	if _, _, err := ParseHeader(b); !errors.Is(err, ErrVersion) {
		t.Errorf("future version: %v", err)
	}
}

// addSeeds seeds f with the encoding of every sample payload, the empty
// input and extra.
func addSeeds(f *testing.F, extra ...[]byte) {
	for _, p := range payloads() {
		b, _ := Encode(sampleHeader(), p, nil)
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

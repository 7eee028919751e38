// Package entry is xlacache's on-disk entry format: a small header (format
// version, key, component digests, compile time, sizes, codec), the payload
// (zstd-compressed unless compression does not help), a CRC-32C checksum
// over everything before it, and an optional signature (internal/sign):
// HMAC-SHA256 or Ed25519.
//
// Layout (integers little-endian):
//
//	0  magic "XLCE"
//	4  format version: 1 (unsigned or HMAC), 2 (Ed25519)
//	5  codec (0 raw, 1 zstd)
//	6  flags (bit 0: signed; always set in version 2)
//	7  version 1: reserved, 0; version 2: signature scheme (2, Ed25519)
//	8  header length H (uint32)
//	12 header: key (uint16 length + bytes), part count (uint16), per part
//	   name (uint8 length + bytes) and SHA-256 digest (32 bytes), compile
//	   time (int64 ns), creation time (int64 Unix ns), raw payload size
//	   (uint64), stored payload size (uint64)
//	12+H            stored payload
//	12+H+stored     if signed: the signature of bytes [0, 12+H+stored):
//	                version 1, the 32-byte HMAC-SHA256; version 2, the
//	                signer's 8-byte key id and the 64-byte Ed25519
//	                signature (sign.Keys)
//	end-4           CRC-32C (Castagnoli) of every byte before it
//
// HMAC-signed and unsigned entries are written as version 1, byte for byte
// as before Ed25519 existed; only Ed25519 entries are version 2, so that a
// build that predates them reports ErrVersion (left in place, missed)
// rather than a corrupt entry.
//
// The checksum catches accidental damage (every single-byte change and
// every truncation is detected: sizes are in the header and CRC-32C detects
// all bursts up to 32 bits); the signature is what defends against a
// malicious writer, since anybody can recompute a CRC.
package entry

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"time"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/internal/sign"
)

// Format constants.
const (
	// Version is the format version of unsigned and HMAC-signed entries.
	Version = 1
	// VersionEd25519 is the format version of Ed25519-signed entries.
	VersionEd25519 = 2
	// FixedSize is the size of the fixed prefix before the header.
	FixedSize = 12
	// MaxHeaderSize bounds the variable header; anything larger is foreign.
	MaxHeaderSize = 1 << 20
	// MaxKeyLen and MaxParts bound what a header may declare.
	MaxKeyLen = 1024
	// MaxParts bounds the number of component digests in a header.
	MaxParts = 256
	// MaxRawSize bounds the declared decompressed payload size (64 GiB),
	// so that a damaged or hostile header cannot make a reader allocate
	// without limit.
	MaxRawSize = 64 << 30
	crcSize    = 4
)

// Codec says how the payload is stored.
type Codec uint8

const (
	// CodecRaw stores the payload as is (used when zstd does not shrink it).
	CodecRaw Codec = 0
	// CodecZstd stores the payload zstd-compressed.
	CodecZstd Codec = 1
)

// String names the codec.
func (c Codec) String() string {
	switch c {
	case CodecRaw:
		return "raw"
	case CodecZstd:
		return "zstd"
	}
	return fmt.Sprintf("codec(%d)", uint8(c))
}

const flagSigned = 1

var magic = [4]byte{'X', 'L', 'C', 'E'}

// Errors returned (wrapped) by Decode and ParseHeader. Callers classify
// failures with errors.Is.
var (
	// ErrForeign: the bytes are not an xlacache entry at all.
	ErrForeign = errors.New("not an xlacache entry")
	// ErrVersion: an entry of a format version this build does not read.
	ErrVersion = errors.New("unsupported entry format version")
	// ErrCorrupt: truncated, damaged, or internally inconsistent.
	ErrCorrupt = errors.New("corrupt entry")
	// ErrUnsigned: a signing key is required but the entry is unsigned.
	ErrUnsigned = errors.New("entry is not signed")
	// ErrSignature: the entry's signature does not verify with this
	// process's keys (signed with another key or scheme, or altered
	// after signing; the wrapped sign error says which).
	ErrSignature = errors.New("entry signature does not verify")
)

// PartDigest is the SHA-256 digest of one named key component.
type PartDigest struct {
	Name   string
	Digest [32]byte
}

// Header describes an entry.
type Header struct {
	// Key is the full key text "<module>-<hex>".
	Key string
	// Parts are the digests of the key's components, for explaining misses.
	Parts []PartDigest
	// CompileTime is how long the compile that produced the payload took.
	CompileTime time.Duration
	// Created is when the entry was written.
	Created time.Time
	// RawSize is the payload size; StoredSize the size as stored.
	RawSize, StoredSize int64
	// Codec is how the payload is stored.
	Codec Codec
	// Signed reports whether the entry carries a signature; Scheme says
	// which kind (sign.None when unsigned).
	Signed bool
	// Scheme is the signature scheme.
	Scheme sign.Scheme
	// Version is the format version.
	Version uint8
}

// Entry is a decoded, verified entry.
type Entry struct {
	Header
	// Payload is the decompressed payload.
	Payload []byte
	// Signer is the key id an Ed25519 signature names, when Decode
	// verified one (HasSigner).
	Signer sign.KeyID
	// HasSigner reports whether Signer is set.
	HasSigner bool
}

var (
	// The fastest level: a cold compile stores its kernel-tier entries
	// while it links and waits for them before it returns, and the
	// default level's encoders each set up an 8 MB window on first use.
	// Sixteen 7 KB kernel objects in a new process, two goroutines:
	// 8-9.5 ms at the default level, 1.5 ms at the fastest (3034 against
	// 3069 bytes each); a 0.9 MB library 68 against 43 ms, 5% larger.
	encoderOnce = sync.OnceValues(func() (*zstd.Encoder, error) {
		return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderCRC(false))
	})
	decoderOnce = sync.OnceValues(func() (*zstd.Decoder, error) {
		return zstd.NewReader(nil, zstd.WithDecoderMaxMemory(MaxRawSize), zstd.WithDecoderConcurrency(0))
	})
	castagnoli = crc32.MakeTable(crc32.Castagnoli)
)

// PrepareDecode builds the shared zstd decoder now, rather than in the
// first Decode of a compressed entry (its tables take about 0.1 ms): see
// cache.Prepare.
func PrepareDecode() { _, _ = decoderOnce() }

// Encode builds the bytes of an entry for payload. h.Key and h.Parts,
// h.CompileTime and h.Created are taken from h; sizes, codec and version
// are filled in. Keys that can sign sign the entry; keys that can only
// verify (an Ed25519 reader) make Encode fail (sign.ErrCannotSign): such a
// process must not write what it and its peers would refuse.
func Encode(h Header, payload []byte, keys *sign.Keys) ([]byte, error) {
	if keys.Enabled() && !keys.CanSign() {
		return nil, fmt.Errorf("encoding entry %s: %w", h.Key, sign.ErrCannotSign)
	}
	if len(h.Key) == 0 || len(h.Key) > MaxKeyLen {
		return nil, fmt.Errorf("encoding entry: key length %d not in 1..%d", len(h.Key), MaxKeyLen)
	}
	if len(h.Parts) > MaxParts {
		return nil, fmt.Errorf("encoding entry %s: %d key parts (max %d)", h.Key, len(h.Parts), MaxParts)
	}
	if int64(len(payload)) > MaxRawSize {
		return nil, fmt.Errorf("encoding entry %s: payload of %d bytes exceeds %d", h.Key, len(payload), int64(MaxRawSize))
	}
	codec := CodecRaw
	stored := payload
	if len(payload) > 64 {
		enc, err := encoderOnce()
		if err != nil {
			return nil, fmt.Errorf("encoding entry %s: zstd: %w", h.Key, err)
		}
		z := enc.EncodeAll(payload, make([]byte, 0, len(payload)/2+64))
		if len(z) < len(payload) {
			codec, stored = CodecZstd, z
		}
	}
	var hdr bytes.Buffer
	hdr.Grow(64 + len(h.Key) + len(h.Parts)*48)
	put16 := func(v int) { hdr.Write(binary.LittleEndian.AppendUint16(nil, uint16(v))) }
	put64 := func(v uint64) { hdr.Write(binary.LittleEndian.AppendUint64(nil, v)) }
	put16(len(h.Key))
	hdr.WriteString(h.Key)
	put16(len(h.Parts))
	for _, p := range h.Parts {
		if len(p.Name) > 255 {
			return nil, fmt.Errorf("encoding entry %s: part name %.40q... longer than 255 bytes", h.Key, p.Name)
		}
		hdr.WriteByte(byte(len(p.Name)))
		hdr.WriteString(p.Name)
		hdr.Write(p.Digest[:])
	}
	created := h.Created
	if created.IsZero() {
		created = time.Now()
	}
	put64(uint64(h.CompileTime))
	put64(uint64(created.UnixNano()))
	put64(uint64(len(payload)))
	put64(uint64(len(stored)))

	scheme := keys.Scheme()
	total := FixedSize + hdr.Len() + len(stored) + crcSize + scheme.SigSize()
	out := make([]byte, 0, total)
	out = append(out, magic[:]...)
	version, flags, reserved := byte(Version), byte(0), byte(0)
	switch scheme {
	case sign.HMAC:
		flags |= flagSigned
	case sign.Ed25519:
		version, flags, reserved = VersionEd25519, flagSigned, byte(sign.Ed25519)
	}
	out = append(out, version, byte(codec), flags, reserved)
	out = binary.LittleEndian.AppendUint32(out, uint32(hdr.Len()))
	out = append(out, hdr.Bytes()...)
	out = append(out, stored...)
	if scheme != sign.None {
		sig, err := keys.Sign(out)
		if err != nil {
			return nil, fmt.Errorf("encoding entry %s: %w", h.Key, err)
		}
		out = append(out, sig...)
	}
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), nil
}

// ParseHeader parses the header at the start of b, which may be a prefix of
// an entry (at least FixedSize+H bytes). It returns the header and the
// offset of the payload. Nothing is verified beyond the header's own
// consistency: use it to list entries, never to trust them.
func ParseHeader(b []byte) (Header, int, error) {
	var h Header
	if len(b) < FixedSize {
		if len(b) >= 4 && !bytes.Equal(b[:4], magic[:]) {
			return h, 0, fmt.Errorf("%w: bad magic", ErrForeign)
		}
		return h, 0, fmt.Errorf("%w: %d bytes, shorter than the fixed prefix", ErrCorrupt, len(b))
	}
	if !bytes.Equal(b[:4], magic[:]) {
		return h, 0, fmt.Errorf("%w: bad magic %q", ErrForeign, b[:4])
	}
	h.Version = b[4]
	if h.Version != Version && h.Version != VersionEd25519 {
		return h, 0, fmt.Errorf("%w: %d (this build reads %d and %d)", ErrVersion, h.Version, Version, VersionEd25519)
	}
	h.Codec = Codec(b[5])
	if h.Codec != CodecRaw && h.Codec != CodecZstd {
		return h, 0, fmt.Errorf("%w: unknown codec %d", ErrCorrupt, b[5])
	}
	switch {
	case h.Version == Version && (b[6]&^flagSigned != 0 || b[7] != 0):
		return h, 0, fmt.Errorf("%w: unknown flags %#x/%#x", ErrCorrupt, b[6], b[7])
	case h.Version == VersionEd25519 && (b[6] != flagSigned || b[7] != byte(sign.Ed25519)):
		return h, 0, fmt.Errorf("%w: version %d with flags %#x and scheme %d", ErrCorrupt, h.Version, b[6], b[7])
	}
	h.Signed = b[6]&flagSigned != 0
	switch {
	case h.Version == VersionEd25519:
		h.Scheme = sign.Ed25519
	case h.Signed:
		h.Scheme = sign.HMAC
	}
	hlen := int(binary.LittleEndian.Uint32(b[8:12]))
	if hlen > MaxHeaderSize {
		return h, 0, fmt.Errorf("%w: header length %d", ErrCorrupt, hlen)
	}
	if len(b) < FixedSize+hlen {
		return h, 0, fmt.Errorf("%w: truncated header (%d of %d bytes)", ErrCorrupt, len(b)-FixedSize, hlen)
	}
	r := reader{b: b[FixedSize : FixedSize+hlen]}
	klen := int(r.u16())
	if klen == 0 || klen > MaxKeyLen {
		return h, 0, fmt.Errorf("%w: key length %d", ErrCorrupt, klen)
	}
	h.Key = string(r.bytes(klen))
	n := int(r.u16())
	if n > MaxParts {
		return h, 0, fmt.Errorf("%w: %d key parts", ErrCorrupt, n)
	}
	if n > 0 {
		h.Parts = make([]PartDigest, 0, n)
	}
	for i := 0; i < n && r.err == nil; i++ {
		var p PartDigest
		p.Name = string(r.bytes(int(r.u8())))
		copy(p.Digest[:], r.bytes(32))
		h.Parts = append(h.Parts, p)
	}
	h.CompileTime = time.Duration(r.u64())
	h.Created = time.Unix(0, int64(r.u64()))
	raw, stored := r.u64(), r.u64()
	if r.err != nil {
		return h, 0, fmt.Errorf("%w: header: %v", ErrCorrupt, r.err)
	}
	if len(r.b) != 0 {
		return h, 0, fmt.Errorf("%w: %d stray header bytes", ErrCorrupt, len(r.b))
	}
	if raw > MaxRawSize || stored > MaxRawSize {
		return h, 0, fmt.Errorf("%w: sizes %d/%d exceed %d", ErrCorrupt, raw, stored, int64(MaxRawSize))
	}
	if h.Codec == CodecRaw && raw != stored {
		return h, 0, fmt.Errorf("%w: raw codec with sizes %d != %d", ErrCorrupt, raw, stored)
	}
	if h.CompileTime < 0 {
		return h, 0, fmt.Errorf("%w: negative compile time", ErrCorrupt)
	}
	h.RawSize, h.StoredSize = int64(raw), int64(stored)
	return h, FixedSize + hlen, nil
}

// Size returns the total encoded size the header declares.
func (h Header) Size(payloadOffset int) int64 {
	return int64(payloadOffset) + h.StoredSize + crcSize + int64(h.Scheme.SigSize())
}

// Decode verifies b and returns the entry. The checksum is checked before
// anything else is trusted; when keys are set the entry must be signed
// with one of them (ErrUnsigned, ErrSignature). The returned payload does
// not alias b when compressed.
func Decode(b []byte, keys *sign.Keys) (*Entry, error) {
	h, off, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	size := h.Size(off)
	if int64(len(b)) != size {
		return nil, fmt.Errorf("%w: %d bytes, header declares %d", ErrCorrupt, len(b), size)
	}
	body := off + int(h.StoredSize)
	end := len(b) - crcSize
	if got, want := crc32.Checksum(b[:end], castagnoli), binary.LittleEndian.Uint32(b[end:]); got != want {
		return nil, fmt.Errorf("%w: checksum %08x, want %08x", ErrCorrupt, got, want)
	}
	e := &Entry{Header: h}
	if keys.Enabled() {
		if !h.Signed {
			return nil, ErrUnsigned
		}
		if err := keys.Verify(h.Scheme, b[:body], b[body:end]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSignature, err)
		}
		e.Signer, e.HasSigner = sign.SignerOf(h.Scheme, b[body:end])
	}
	stored := b[off:body]
	switch h.Codec {
	case CodecRaw:
		e.Payload = stored
	case CodecZstd:
		dec, err := decoderOnce()
		if err != nil {
			return nil, fmt.Errorf("zstd: %w", err)
		}
		capHint := h.RawSize
		if capHint > 1<<30 {
			capHint = 1 << 30
		}
		p, err := dec.DecodeAll(stored, make([]byte, 0, capHint))
		if err != nil {
			return nil, fmt.Errorf("%w: decompressing: %v", ErrCorrupt, err)
		}
		if int64(len(p)) != h.RawSize {
			return nil, fmt.Errorf("%w: payload is %d bytes, header declares %d", ErrCorrupt, len(p), h.RawSize)
		}
		e.Payload = p
	}
	return e, nil
}

type reader struct {
	b   []byte
	err error
}

func (r *reader) bytes(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = fmt.Errorf("need %d bytes, have %d", n, len(r.b))
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}

func (r *reader) u8() uint8 {
	if b := r.bytes(1); b != nil {
		return b[0]
	}
	return 0
}

func (r *reader) u16() uint16 {
	if b := r.bytes(2); b != nil {
		return binary.LittleEndian.Uint16(b)
	}
	return 0
}

func (r *reader) u64() uint64 {
	if b := r.bytes(8); b != nil {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}

// probeSize is how much of an entry file Read takes before it trusts the
// file's size: enough for any ordinary header.
const probeSize = 4096

// checkRead checks that the header at the start of b declares size bytes
// in all, no more than maxSize (> 0), and returns b.
func checkRead(b []byte, size, maxSize int64) ([]byte, error) {
	h, off, err := ParseHeader(b)
	if err != nil {
		return nil, err
	}
	if want := h.Size(off); want != size {
		return nil, fmt.Errorf("%w: header declares %d bytes, file has %d", ErrCorrupt, want, size)
	}
	if maxSize > 0 && size > maxSize {
		return nil, fmt.Errorf("%w: %d bytes, larger than the bound %d", ErrCorrupt, size, maxSize)
	}
	return b, nil
}

// Read reads an encoded entry of the given size from r without trusting
// that size: the header is parsed from a bounded prefix first, and the
// whole entry is allocated only when the sizes the header declares add up
// to size (and fit maxSize, when it is positive). A foreign or hostile
// file, such as a huge sparse file where an entry should be, costs a small
// read rather than an allocation of its size. The result is not verified:
// pass it to Decode.
func Read(r io.Reader, size, maxSize int64) ([]byte, error) {
	if size < FixedSize {
		b := make([]byte, max(size, 0))
		io.ReadFull(r, b)
		_, _, err := ParseHeader(b)
		return nil, err
	}
	if size <= probeSize {
		// Small enough to take whole at once: one buffer, one read.
		data := make([]byte, size)
		if _, err := io.ReadFull(r, data); err != nil {
			return nil, fmt.Errorf("%w: short read: %v", ErrCorrupt, err)
		}
		return checkRead(data, size, maxSize)
	}
	prefix := make([]byte, probeSize)
	if _, err := io.ReadFull(r, prefix); err != nil {
		// The file shrank under us (replaced or truncated).
		return nil, fmt.Errorf("%w: short read: %v", ErrCorrupt, err)
	}
	if hlen := int64(binary.LittleEndian.Uint32(prefix[8:12])); hlen <= MaxHeaderSize && FixedSize+hlen > int64(len(prefix)) && FixedSize+hlen <= size {
		more := make([]byte, FixedSize+hlen-int64(len(prefix)))
		if _, err := io.ReadFull(r, more); err != nil {
			return nil, fmt.Errorf("%w: short read: %v", ErrCorrupt, err)
		}
		prefix = append(prefix, more...)
	}
	if _, err := checkRead(prefix, size, maxSize); err != nil {
		return nil, err
	}
	data := make([]byte, size)
	n := copy(data, prefix)
	if _, err := io.ReadFull(r, data[n:]); err != nil {
		return nil, fmt.Errorf("%w: short read: %v", ErrCorrupt, err)
	}
	return data, nil
}

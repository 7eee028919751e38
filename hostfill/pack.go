// Package hostfill moves a node-local cache directory's files to and from
// the shared tier in packs: once per host, a fill copies into the
// directory everything the shared tier has and the directory lacks (JAX's
// "-cache" entries, XLA's autotune files and kernel cache, xlacache's own
// entries); a Publisher sends the directory's new complete files, and
// Watch does so whenever files appear; PrunePacks bounds the packs on the
// shared tier by age. It also decides which process leads its host (the
// one autotune writer and publisher). Package jobrun runs a job's command
// in front of it (`xlacache exec`).
//
// On the shared tier every file travels inside xlacache's entry format
// (internal/entry: checksum, and an HMAC with XLACACHE_SIGNING_KEY), many
// files to an object (a pack), so that a cold host fetches N files in far
// fewer than N requests. Only verified bytes are written into the local
// directory, through internal/atomicfile confined to it, and a local file
// is never replaced.
package hostfill

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
)

// Pack format, versions 1 and 2. A pack object holds sealed files; its
// index object is the same bytes without the bodies, so a host can learn
// what a pack holds for a few bytes per file. Integers are little-endian.
//
//	0   magic "XLCP"
//	4   format version: 1 (no origin) or 2
//	5   kind: 0 pack, 1 index
//	6   reserved, 0 (2 bytes)
//	8   file count N (uint32)
//	12  version 2 only: origin length M (uint32), then M bytes of origin
//	    (origin.go: the publisher's runtime and JAX settings, "key=value"
//	    lines)
//	..  N records: name length (uint16), name (a layout.ValidRel path
//	    relative to the cache directory), sealed length (uint64), SHA-256
//	    of the file's content (32 bytes)
//	..  pack only: the N sealed files (internal/entry format, key
//	    "hostfill:" + name) in record order
//	end-4 CRC-32C (Castagnoli) of every byte before it
//
// A pack without an origin is written as version 1, which every release
// reads; one with an origin as version 2, which releases before origins
// refuse (their fills count it as refused and carry on). The origin is in
// the head, so it is covered by the pack's name (its SHA-256) and, in a
// signed index, by the signature: a fill decides from it which packs to
// skip.
//
// The CRC only catches damage; what makes a file trusted is its sealed
// entry (checksum, and the HMAC when a signing key is set), checked before
// a byte of it is written.
const (
	// packVersion is the pack format version of a pack with an origin;
	// packVersionPlain that of one without (read and written as before
	// origins existed).
	packVersion      = 2
	packVersionPlain = 1
	packMagic        = "XLCP"
	kindPack         = 0
	kindIndex        = 1
	fixedSize        = 12
	crcSize          = 4
	// maxPackFiles bounds the records a pack may declare.
	maxPackFiles = 1 << 20
	// maxNameLen bounds a record's name (layout.ValidRel accepts longer
	// paths, but no cache file is named like that; the sealed entry key must fit entry.MaxKeyLen).
	maxNameLen = 1000
	// maxSealed bounds one sealed file (1 TiB; maxFileSize is far less).
	maxSealed = 1 << 40
)

// errBadPack is wrapped by every error about a pack's or index's bytes.
var errBadPack = errors.New("hostfill: malformed pack")

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Record describes one file in a pack.
type Record struct {
	// Name is the file's path relative to the cache directory.
	Name string
	// SealedSize is the length of the sealed file in the pack.
	SealedSize uint64
	// Digest is the SHA-256 of the file's content (unsealed).
	Digest [32]byte
}

// Member is one file of a pack to encode or decoded from one.
type Member struct {
	Record
	// Sealed is the file sealed in the entry format.
	Sealed []byte
}

// EncodePack builds a pack and its index from members (Sealed set; Name
// and Digest taken from the record, SealedSize filled in), without an
// origin.
func EncodePack(members []Member) (pack, index []byte, err error) {
	return encodePack(nil, members)
}

// EncodeTaggedPack is EncodePack with the publisher's origin recorded in
// the head (a version 1 pack when the origin is empty).
func EncodeTaggedPack(o Origin, members []Member) (pack, index []byte, err error) {
	meta, err := o.encode()
	if err != nil {
		return nil, nil, err
	}
	return encodePack(meta, members)
}

// encodePack builds a pack and its index with meta, an encoded origin.
func encodePack(meta []byte, members []Member) (pack, index []byte, err error) {
	if len(members) > maxPackFiles {
		return nil, nil, fmt.Errorf("pack of %d files: at most %d", len(members), maxPackFiles)
	}
	recs := make([]Record, len(members))
	bodies := 0
	for i, m := range members {
		recs[i] = Record{Name: m.Name, SealedSize: uint64(len(m.Sealed)), Digest: m.Digest}
		bodies += len(m.Sealed)
	}
	head, err := encodeHead(meta, recs, kindPack)
	if err != nil {
		return nil, nil, err
	}
	pack = make([]byte, 0, len(head)+bodies+crcSize)
	pack = append(pack, head...)
	pack[5] = kindPack
	for _, m := range members {
		pack = append(pack, m.Sealed...)
	}
	pack = binary.LittleEndian.AppendUint32(pack, crc32.Checksum(pack, castagnoli))
	index = append([]byte(nil), head...)
	index[5] = kindIndex
	index = binary.LittleEndian.AppendUint32(index, crc32.Checksum(index, castagnoli))
	return pack, index, nil
}

// encodeHead returns the head of a pack (or, by kind, of an index) of
// recs with meta (an encoded origin; version 1 when empty): everything
// before the bodies.
func encodeHead(meta []byte, recs []Record, kind byte) ([]byte, error) {
	if len(recs) > maxPackFiles {
		return nil, fmt.Errorf("pack of %d files: at most %d", len(recs), maxPackFiles)
	}
	if len(meta) > maxOrigin {
		return nil, fmt.Errorf("pack origin of %d bytes: at most %d", len(meta), maxOrigin)
	}
	head := make([]byte, fixedSize, fixedSize+4+len(meta)+len(recs)*64)
	copy(head, packMagic)
	head[4] = packVersionPlain
	head[5] = kind
	binary.LittleEndian.PutUint32(head[8:], uint32(len(recs)))
	if len(meta) > 0 {
		head[4] = packVersion
		head = binary.LittleEndian.AppendUint32(head, uint32(len(meta)))
		head = append(head, meta...)
	}
	for _, r := range recs {
		if err := validName(r.Name); err != nil {
			return nil, err
		}
		head = binary.LittleEndian.AppendUint16(head, uint16(len(r.Name)))
		head = append(head, r.Name...)
		head = binary.LittleEndian.AppendUint64(head, r.SealedSize)
		head = append(head, r.Digest[:]...)
	}
	return head, nil
}

func validName(name string) error {
	if len(name) == 0 || len(name) > maxNameLen {
		return fmt.Errorf("%w: name of %d bytes", errBadPack, len(name))
	}
	if err := layout.ValidRel(name); err != nil {
		return fmt.Errorf("%w: %v", errBadPack, err)
	}
	return nil
}

// DecodeIndex parses an index object: a plain index, or one sealed under
// a signing key (whose signature it does not check: a fill does, see
// openIndex).
func DecodeIndex(b []byte) ([]Record, error) {
	if !bytes.HasPrefix(b, []byte(packMagic)) {
		e, err := entry.Decode(b, nil)
		if err != nil {
			return nil, fmt.Errorf("%w: sealed index: %v", errBadPack, err)
		}
		if !strings.HasPrefix(e.Key, indexKeyPrefix) {
			return nil, fmt.Errorf("%w: sealed under %q, not an index", errBadPack, e.Key)
		}
		b = e.Payload
	}
	h, _, err := decode(b, kindIndex)
	return h.recs, err
}

// DecodeIndexOrigin is DecodeIndex that also returns the origin its
// publisher recorded (zero for a pack without one).
func DecodeIndexOrigin(b []byte) (Origin, []Record, error) {
	if !bytes.HasPrefix(b, []byte(packMagic)) {
		e, err := entry.Decode(b, nil)
		if err != nil {
			return Origin{}, nil, fmt.Errorf("%w: sealed index: %v", errBadPack, err)
		}
		if !strings.HasPrefix(e.Key, indexKeyPrefix) {
			return Origin{}, nil, fmt.Errorf("%w: sealed under %q, not an index", errBadPack, e.Key)
		}
		b = e.Payload
	}
	h, _, err := decode(b, kindIndex)
	return h.origin, h.recs, err
}

// indexKeyPrefix starts the entry key a signed index is sealed under; the
// pack's id follows, binding the index to its pack.
const indexKeyPrefix = "hostfill-index:"

// sealIndex returns the index object stored for pack id: the index as it
// is without a signing key, else sealed in the entry format (checksum and
// HMAC) under indexKeyPrefix+id, so that nobody without the key can list
// names that hosts would then take as already published.
func sealIndex(id string, index []byte, signingKey *sign.Keys, now time.Time) ([]byte, error) {
	if !signingKey.Enabled() {
		return index, nil
	}
	return entry.Encode(entry.Header{Key: indexKeyPrefix + id, Created: now}, index, signingKey)
}

// openIndex parses the index object of pack id. trusted says whether it
// may vouch for its names as published: with a signing key only an index
// signed with it does; without one, any well-formed index. An index that
// is not trusted still serves a fill, whose members are each verified.
func openIndex(b []byte, id string, signingKey *sign.Keys) (h head, trusted bool, err error) {
	if bytes.HasPrefix(b, []byte(packMagic)) {
		h, _, err = decode(b, kindIndex)
		return h, err == nil && !signingKey.Enabled(), err
	}
	e, err := entry.DecodeAs(b, indexKeyPrefix+id, signingKey)
	if err != nil {
		return head{}, false, fmt.Errorf("%w: sealed index %s: %v", errBadPack, id, err)
	}
	h, _, err = decode(e.Payload, kindIndex)
	return h, err == nil, err
}

// decodePack parses a pack object. The members' Sealed bytes alias b and
// are not yet verified: open each with Unseal.
func decodePack(b []byte) ([]Member, error) {
	_, members, err := decodePackHead(b)
	return members, err
}

// decodePackHead is decodePack that also returns the pack's head.
func decodePackHead(b []byte) (head, []Member, error) {
	h, off, err := decode(b, kindPack)
	if err != nil {
		return head{}, nil, err
	}
	members := make([]Member, len(h.recs))
	for i, r := range h.recs {
		// decode checked that the bodies fit exactly.
		end := off + int(r.SealedSize)
		members[i] = Member{Record: r, Sealed: b[off:end:end]}
		off = end
	}
	return h, members, nil
}

// head is what a pack's or index's head holds besides its frame.
type head struct {
	// meta is the encoded origin as it is in the head (nil in version
	// 1), kept as bytes so that the head can be rebuilt exactly;
	// origin is its decoded form.
	meta   []byte
	origin Origin
	recs   []Record
}

// decode checks b's frame (magic, version, kind, CRC, sizes) and returns
// its head and the offset of the first body.
func decode(b []byte, kind byte) (head, int, error) {
	var h head
	if len(b) < fixedSize+crcSize || string(b[:4]) != packMagic {
		return h, 0, fmt.Errorf("%w: no pack header", errBadPack)
	}
	if b[4] != packVersion && b[4] != packVersionPlain {
		return h, 0, fmt.Errorf("%w: format version %d, want %d or %d", errBadPack, b[4], packVersionPlain, packVersion)
	}
	if b[5] != kind || b[6] != 0 || b[7] != 0 {
		return h, 0, fmt.Errorf("%w: kind %d (want %d) or reserved bytes set", errBadPack, b[5], kind)
	}
	end := len(b) - crcSize
	if got, want := crc32.Checksum(b[:end], castagnoli), binary.LittleEndian.Uint32(b[end:]); got != want {
		return h, 0, fmt.Errorf("%w: checksum %08x, want %08x", errBadPack, got, want)
	}
	off := fixedSize
	if b[4] == packVersion {
		if end-off < 4 {
			return h, 0, fmt.Errorf("%w: origin truncated", errBadPack)
		}
		m := binary.LittleEndian.Uint32(b[off:])
		off += 4
		// An empty origin is written as version 1: version 2 always
		// has one, so that each head has one encoding.
		if m == 0 || m > maxOrigin || uint64(m) > uint64(end-off) {
			return h, 0, fmt.Errorf("%w: origin of %d bytes", errBadPack, m)
		}
		h.meta = b[off : off+int(m) : off+int(m)]
		off += int(m)
		o, err := decodeOrigin(h.meta)
		if err != nil {
			return h, 0, err
		}
		h.origin = o
	}
	n := binary.LittleEndian.Uint32(b[8:])
	// Every record takes at least 2+1+8+32 bytes: a count the bytes
	// cannot hold is refused before anything is allocated for it.
	if n > maxPackFiles || uint64(n)*43 > uint64(end-off) {
		return h, 0, fmt.Errorf("%w: %d records in %d bytes", errBadPack, n, len(b))
	}
	recs := make([]Record, 0, n)
	seen := make(map[string]bool, n)
	var bodies uint64
	for i := uint32(0); i < n; i++ {
		if end-off < 2 {
			return h, 0, fmt.Errorf("%w: record %d truncated", errBadPack, i)
		}
		l := int(binary.LittleEndian.Uint16(b[off:]))
		off += 2
		if end-off < l+8+32 {
			return h, 0, fmt.Errorf("%w: record %d truncated", errBadPack, i)
		}
		r := Record{Name: string(b[off : off+l])}
		off += l
		if err := validName(r.Name); err != nil {
			return h, 0, fmt.Errorf("record %d: %w", i, err)
		}
		if seen[r.Name] {
			return h, 0, fmt.Errorf("%w: %s listed twice", errBadPack, r.Name)
		}
		seen[r.Name] = true
		r.SealedSize = binary.LittleEndian.Uint64(b[off:])
		off += 8
		copy(r.Digest[:], b[off:off+32])
		off += 32
		// An index describes bodies it does not hold; bounding each one
		// keeps the sum from overflowing (maxPackFiles << 40 < 1<<63).
		if r.SealedSize > maxSealed || (kind == kindPack && r.SealedSize > uint64(len(b))) {
			return h, 0, fmt.Errorf("%w: %s: %d sealed bytes", errBadPack, r.Name, r.SealedSize)
		}
		bodies += r.SealedSize
		recs = append(recs, r)
	}
	want := uint64(0)
	if kind == kindPack {
		want = bodies
	}
	if uint64(end-off) != want {
		return h, 0, fmt.Errorf("%w: %d bytes of bodies, records declare %d", errBadPack, end-off, want)
	}
	h.recs = recs
	return h, off, nil
}

// packID names a pack by its bytes: the first 32 hex digits of their
// SHA-256. Nobody can publish other bytes under a pack's name ahead of its
// writer (first writer wins only between identical packs), and a fill
// checks the bytes it fetched against the name.
func packID(pack []byte) string {
	sum := sha256.Sum256(pack)
	return fmt.Sprintf("%x", sum[:16])
}

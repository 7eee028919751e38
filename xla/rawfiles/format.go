package rawfiles

import (
	"bufio"
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xlacache/xlacache/internal/layout"
)

// Names of XLA's raw subcaches, as files under the cache directory and as
// objects in the store.
const (
	// AutotuneDir is XLA's per-fusion autotune cache directory: one
	// immutable text-proto file per fused kernel.
	AutotuneDir = layout.XLAAutotuneDir
	// KernelFile is XLA's compiled-kernel cache: one binary file that XLA
	// extends over time.
	KernelFile = layout.XLAKernelFile
	// KernelParts is the object prefix holding published versions of the
	// kernel cache file, each named by its content hash
	// (layout.XLAKernelPartObject); pulls merge them.
	KernelParts = layout.XLAKernelParts
)

// MaxAutotuneFile bounds an autotune result file. They are small text
// protos, a few hundred bytes each; anything near this size is not one.
const MaxAutotuneFile = 16 << 20

// ErrBadObject: a raw subcache object failed its integrity or signature
// check and was refused.
var ErrBadObject = errors.New("subcache: raw subcache object failed verification")

// ErrOtherKey is wrapped, beside ErrBadObject, by Unseal's error about an
// object whose checksum holds but whose signature does not verify with
// the key: it was signed with another key. It is not damage, and is never
// replaced (a host with a mistyped key must not rewrite the bucket).
var ErrOtherKey = errors.New("signed with another key")

// autotuneNameRE accepts XLA's autotune file names (web-safe or standard
// base64 of a SHA-256, then ".textproto") and nothing that could be a path
// or a temporary file.
// It is compiled on first use: the counted repetition makes it the most
// expensive thing in the CLI's start-up otherwise, and most runs never
// mirror a subcache.
var autotuneNameRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[A-Za-z0-9_+=\-][A-Za-z0-9_+=\-.]{0,200}\.textproto$`)
})

// ValidAutotuneName reports whether name (a base name, no directory) can
// be an autotune cache file.
func ValidAutotuneName(name string) bool {
	return autotuneNameRE().MatchString(name) && !strings.Contains(name, "..")
}

// VerifyAutotuneFile checks the content of an autotune cache file: a
// non-empty UTF-8 text proto of at most MaxAutotuneFile bytes. XLA owns the
// schema (AutotuneResults), so the text is not parsed further.
func VerifyAutotuneFile(data []byte) error {
	switch {
	case len(data) > MaxAutotuneFile:
		return fmt.Errorf("autotune result of %d bytes, larger than %d", len(data), MaxAutotuneFile)
	case len(data) == 0 || !utf8.Valid(data):
		return errors.New("autotune result is empty or not text")
	}
	return nil
}

// VerifyKernelFile checks that r holds a well-formed kernel cache file:
// a sequence of protobuf fields in wire format (see walkKernelCache). It
// streams, since the file can be large.
func VerifyKernelFile(r io.Reader) error {
	return walkKernelCache(r, func(off, n int64) error { return nil })
}

// walkKernelCache reads the serialized protobuf message r (XLA's
// KernelCacheProto) and calls fn with the offset and length (tag included)
// of each top-level field record, in order. Values are skipped, never held
// in memory, and nested messages are not descended into (their type is
// XLA's business). Malformed wire format is an error: a bad tag or field
// number, a varint longer than 64 bits, a value cut short, or a group
// (XLA's protos use none). An error from fn stops the walk and is
// returned.
//
// This is the one parser of the kernel cache file: verification and
// MergeKernelCaches both use it.
func walkKernelCache(r io.Reader, fn func(off, n int64) error) error {
	return walkKernelCacheTo(r, nil, fn)
}

// walkRecords is walkKernelCache that also gives fn the SHA-256 of each
// record's bytes (tag and value), computed as the bytes stream past: the
// identity by which parts are compared and deduplicated, at no cost in
// memory.
func walkRecords(r io.Reader, fn func(off, n int64, sum [sha256.Size]byte) error) error {
	h := sha256.New()
	var sum [sha256.Size]byte
	return walkKernelCacheTo(r, h, func(off, n int64) error {
		h.Sum(sum[:0])
		h.Reset()
		return fn(off, n, sum)
	})
}

// teeByteReader is a ByteReader that copies every byte it reads to w.
type teeByteReader struct {
	r   *bufio.Reader
	w   io.Writer
	one [1]byte
}

func (t *teeByteReader) ReadByte() (byte, error) {
	b, err := t.r.ReadByte()
	if err == nil {
		t.one[0] = b
		t.w.Write(t.one[:])
	}
	return b, err
}

// walkKernelCacheTo is walkKernelCache that writes every byte it consumes
// to sink (when not nil) before calling fn for the record they belong to.
func walkKernelCacheTo(r io.Reader, sink io.Writer, fn func(off, n int64) error) error {
	br, ok := r.(*bufio.Reader)
	if !ok {
		br = bufio.NewReader(r)
	}
	var vr io.ByteReader = br
	if sink != nil {
		vr = &teeByteReader{r: br, w: sink}
	}
	var off int64
	for {
		if _, err := br.Peek(1); err == io.EOF {
			return nil
		}
		start := off
		tag, n, err := readUvarint(vr)
		off += int64(n)
		if err != nil {
			return fmt.Errorf("offset %d: bad field tag: %w", start, err)
		}
		num, typ := protowire.DecodeTag(tag)
		if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
			return fmt.Errorf("offset %d: invalid field number %d", start, tag>>3)
		}
		var skip int64
		switch typ {
		case protowire.VarintType:
			_, n, err := readUvarint(vr)
			off += int64(n)
			if err != nil {
				return fmt.Errorf("offset %d: field %d: %w", start, num, err)
			}
		case protowire.Fixed64Type:
			skip = 8
		case protowire.Fixed32Type:
			skip = 4
		case protowire.BytesType:
			l, n, err := readUvarint(vr)
			off += int64(n)
			if err != nil {
				return fmt.Errorf("offset %d: field %d length: %w", start, num, err)
			}
			if l > math.MaxInt64-uint64(off) {
				return fmt.Errorf("offset %d: field %d: length %d too large", start, num, l)
			}
			skip = int64(l)
		default:
			return fmt.Errorf("offset %d: field %d: unexpected wire type %d", start, num, typ)
		}
		got, err := discard(br, sink, skip)
		off += got
		if err != nil {
			return fmt.Errorf("offset %d: field %d: %d of %d bytes present: %w", start, num, got, skip, io.ErrUnexpectedEOF)
		}
		if err := fn(start, off-start); err != nil {
			return err
		}
	}
}

// discard skips n bytes of r (copying them to sink when not nil),
// returning how many it skipped.
func discard(r *bufio.Reader, sink io.Writer, n int64) (int64, error) {
	var done int64
	if sink != nil {
		// Through the reader's own buffer: io.CopyN would allocate a
		// buffer per record.
		for done < n {
			b, err := r.Peek(int(min(n-done, int64(r.Size()))))
			sink.Write(b)
			k, _ := r.Discard(len(b))
			done += int64(k)
			if err != nil {
				if err == io.EOF {
					err = io.ErrUnexpectedEOF
				}
				return done, err
			}
		}
		return done, nil
	}
	for done < n {
		step := int(min(n-done, 1<<30))
		k, err := r.Discard(step)
		done += int64(k)
		if err != nil {
			return done, err
		}
	}
	return done, nil
}

// readUvarint reads a protobuf varint and returns it with its length.
func readUvarint(r io.ByteReader) (uint64, int, error) {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		b, err := r.ReadByte()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return 0, i, err
		}
		if i == binary.MaxVarintLen64-1 && b > 1 {
			return 0, i + 1, errors.New("varint overflows 64 bits")
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, binary.MaxVarintLen64, errors.New("varint overflows 64 bits")
}

// protoRecords splits a serialized kernel cache into its top-level field
// records (tag and value bytes), which alias b.
func protoRecords(b []byte) ([][]byte, error) {
	var recs [][]byte
	err := walkKernelCache(bytes.NewReader(b), func(off, n int64) error {
		recs = append(recs, b[off:off+n:off+n])
		return nil
	})
	if err != nil {
		return nil, err
	}
	return recs, nil
}

// MergeKernelCaches merges serialized protobuf messages (XLA's
// KernelCacheProto: a map of kernel name to compiled kernel). Protobuf
// parses concatenated messages as their merge, so a merge is a
// concatenation; records already present are dropped so that the file
// does not grow when the same part is merged twice. A part that does not
// parse as protobuf is skipped (used[i] false) rather than risk corrupting
// the local file; an unparseable local file is replaced by nothing but
// itself (returned unchanged).
func MergeKernelCaches(local []byte, parts [][]byte) (merged []byte, used []bool, err error) {
	used = make([]bool, len(parts))
	seen := map[string]bool{}
	localRecs, lerr := protoRecords(local)
	if lerr != nil {
		return local, used, fmt.Errorf("local kernel cache is not protobuf: %w", lerr)
	}
	out := append([]byte(nil), local...)
	for _, r := range localRecs {
		seen[string(r)] = true
	}
	var errs []error
	for i, p := range parts {
		recs, err := protoRecords(p)
		if err != nil {
			errs = append(errs, fmt.Errorf("part %d: %w", i, err))
			continue
		}
		used[i] = true
		for _, r := range recs {
			if !seen[string(r)] {
				seen[string(r)] = true
				out = append(out, r...)
			}
		}
	}
	return out, used, errors.Join(errs...)
}

// rawMagic starts every raw subcache object; the version byte after it
// allows the envelope to change.
var rawMagic = []byte("XLCRAW")

const (
	rawVersion    = 1
	rawFlagSigned = 1
	rawHeaderLen  = 6 + 1 + 1 + 32 // magic, version, flags, sha256
)

// Seal wraps a raw subcache file for the store: a SHA-256 of the payload
// and, with a signing key, an HMAC-SHA256 over the object name and payload,
// so that a reader with the key loads only what a key holder published, and
// an object cannot be replayed under another name.
func Seal(name string, payload, key []byte) []byte {
	sum := sha256.Sum256(payload)
	out := make([]byte, 0, rawHeaderLen+32+len(payload))
	out = append(out, rawMagic...)
	out = append(out, rawVersion)
	flags := byte(0)
	if len(key) > 0 {
		flags |= rawFlagSigned
	}
	out = append(out, flags)
	out = append(out, sum[:]...)
	if len(key) > 0 {
		out = append(out, rawMAC(name, payload, key)...)
	}
	return append(out, payload...)
}

func rawMAC(name string, payload, key []byte) []byte {
	m := rawMACHash(name, key)
	m.Write(payload)
	return m.Sum(nil)
}

// rawMACHash returns the HMAC of an object named name with its name
// written, for the payload to be written to: rawMAC, streamed.
func rawMACHash(name string, key []byte) hash.Hash {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("xlacache-raw-v1\x00"))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	m.Write(n[:])
	m.Write([]byte(name))
	return m
}

// Unseal checks and unwraps an object made by Seal. With a key, unsigned
// objects and objects whose signature does not verify are refused.
func Unseal(name string, obj, key []byte) ([]byte, error) {
	if len(obj) < rawHeaderLen || !bytes.Equal(obj[:6], rawMagic) {
		return nil, fmt.Errorf("%w: %s: not a sealed subcache object", ErrBadObject, name)
	}
	if obj[6] != rawVersion {
		return nil, fmt.Errorf("%w: %s: envelope version %d unknown", ErrBadObject, name, obj[6])
	}
	flags := obj[7]
	if flags&^rawFlagSigned != 0 {
		return nil, fmt.Errorf("%w: %s: unknown flags %#x", ErrBadObject, name, flags)
	}
	sum := obj[8:rawHeaderLen]
	rest := obj[rawHeaderLen:]
	var mac []byte
	if flags&rawFlagSigned != 0 {
		if len(rest) < 32 {
			return nil, fmt.Errorf("%w: %s: truncated signature", ErrBadObject, name)
		}
		mac, rest = rest[:32], rest[32:]
	}
	got := sha256.Sum256(rest)
	if !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", ErrBadObject, name)
	}
	if len(key) > 0 {
		if mac == nil {
			return nil, fmt.Errorf("%w: %s: unsigned, and a signing key is set", ErrBadObject, name)
		}
		if !hmac.Equal(mac, rawMAC(name, rest, key)) {
			return nil, fmt.Errorf("%w: %s: %w: signature does not verify with this key", ErrBadObject, name, ErrOtherKey)
		}
	}
	return rest, nil
}

package rawfiles

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
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

// verifyRaw checks the signature mac (of scheme s) of the object named
// name over payload. A signature by a key or scheme this process does not
// hold wraps ErrOtherKey (left in place, never replaced); a signature by
// an accepted Ed25519 key that does not verify is damage or forgery.
func verifyRaw(name string, keys *sign.Keys, s sign.Scheme, payload, mac []byte) error {
	h, err := rawVerifier(name, keys, s)
	if err == nil {
		h.Write(payload)
		err = h.Verify(mac)
	}
	return rawSigError(err)
}

// rawSigError classifies a sign error for the mirror's callers.
func rawSigError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, sign.ErrOtherKey):
		return fmt.Errorf("%w: %v", ErrOtherKey, err)
	}
	return fmt.Errorf("signature does not verify: %w", err)
}

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
	rawFlagSigned = 1 // an HMAC-SHA256 follows the header
	// rawFlagEd25519 (with rawFlagSigned clear): an Ed25519 signature
	// (sign.Ed25519's wire form, key id first) follows the header.
	rawFlagEd25519 = 2
	rawHeaderLen   = 6 + 1 + 1 + 32 // magic, version, flags, sha256
)

// rawScheme is the signature scheme flags declare, and whether flags are
// known at all.
func rawScheme(flags byte) (sign.Scheme, bool) {
	switch flags {
	case 0:
		return sign.None, true
	case rawFlagSigned:
		return sign.HMAC, true
	case rawFlagEd25519:
		return sign.Ed25519, true
	}
	return sign.None, false
}

// Seal wraps a raw subcache file for the store: a SHA-256 of the payload
// and, with keys that can sign, a signature over the object name and
// payload (HMAC-SHA256, byte for byte as before Ed25519 existed, or
// Ed25519), so that a reader with the keys loads only what a key holder
// published, and an object cannot be replayed under another name. Keys
// that cannot sign (verify-only) seal unsigned, which every process with
// keys refuses: publishers check keys.CanSign first (Mirror.Push does).
func Seal(name string, payload []byte, keys *sign.Keys) []byte {
	sum := sha256.Sum256(payload)
	scheme := sign.None
	var sig []byte
	if keys.CanSign() {
		h, _ := keys.Signer() // CanSign: no error
		writeRawPrefix(h, name)
		h.Write(payload)
		var err error
		if sig, err = h.Sign(); err == nil {
			scheme = keys.Scheme()
		}
	}
	out := make([]byte, 0, rawHeaderLen+len(sig)+len(payload))
	out = append(out, rawMagic...)
	out = append(out, rawVersion)
	flags := byte(0)
	switch scheme {
	case sign.HMAC:
		flags = rawFlagSigned
	case sign.Ed25519:
		flags = rawFlagEd25519
	}
	out = append(out, flags)
	out = append(out, sum[:]...)
	out = append(out, sig...)
	return append(out, payload...)
}

// writeRawPrefix writes what precedes the payload in a raw object's
// signed message: a domain tag and the object's name, so that an object
// cannot be replayed under another name.
func writeRawPrefix(w io.Writer, name string) {
	w.Write([]byte("xlacache-raw-v1\x00"))
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(name)))
	w.Write(n[:])
	w.Write([]byte(name))
}

// rawVerifier returns the Hash that checks the signature (of scheme s) of
// an object named name, with its name written, for the payload to be
// written to.
func rawVerifier(name string, keys *sign.Keys, s sign.Scheme) (*sign.Hash, error) {
	h, err := keys.Verifier(s)
	if err != nil {
		return nil, err
	}
	writeRawPrefix(h, name)
	return h, nil
}

// Unseal checks and unwraps an object made by Seal. With keys, unsigned
// objects and objects whose signature does not verify are refused.
func Unseal(name string, obj []byte, keys *sign.Keys) ([]byte, error) {
	if len(obj) < rawHeaderLen || !bytes.Equal(obj[:6], rawMagic) {
		return nil, fmt.Errorf("%w: %s: not a sealed subcache object", ErrBadObject, name)
	}
	if obj[6] != rawVersion {
		return nil, fmt.Errorf("%w: %s: envelope version %d unknown", ErrBadObject, name, obj[6])
	}
	flags := obj[7]
	scheme, known := rawScheme(flags)
	if !known {
		return nil, fmt.Errorf("%w: %s: unknown flags %#x", ErrBadObject, name, flags)
	}
	sum := obj[8:rawHeaderLen]
	rest := obj[rawHeaderLen:]
	var mac []byte
	if n := scheme.SigSize(); n > 0 {
		if len(rest) < n {
			return nil, fmt.Errorf("%w: %s: truncated signature", ErrBadObject, name)
		}
		mac, rest = rest[:n], rest[n:]
	}
	got := sha256.Sum256(rest)
	if !bytes.Equal(got[:], sum) {
		return nil, fmt.Errorf("%w: %s: checksum mismatch", ErrBadObject, name)
	}
	if keys.Enabled() {
		if mac == nil {
			return nil, fmt.Errorf("%w: %s: unsigned, and a signing key is set", ErrBadObject, name)
		}
		if err := verifyRaw(name, keys, scheme, rest, mac); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrBadObject, name, err)
		}
	}
	return rest, nil
}

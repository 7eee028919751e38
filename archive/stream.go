package archive

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"

	"github.com/klauspost/compress/zstd"

	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/sign"
)

// Import reads members as streams and checks them as they pass: a member
// is never held in memory whole (except the kernel cache file, which is
// merged and is bounded by maxKernelFile), and a hostile archive is
// stopped by sizes and by its expansion, not by running out of memory or
// disk.

// Default bounds of an import (Options.MaxMemberSize, MaxImportSize).
const (
	// DefaultMaxMemberSize bounds one member's size: no entry or raw file
	// may exceed it.
	DefaultMaxMemberSize = entry.MaxHeaderSize + 4<<30
	// DefaultMaxImportSize bounds the sum of the members' sizes.
	DefaultMaxImportSize = 64 << 30
)

// maxMember is the default member bound, also used by Export.
const maxMember = DefaultMaxMemberSize

// maxKernelFile bounds XLA's kernel cache file, the one member read into
// memory (to merge it with the local one): XLA's are a few megabytes.
const maxKernelFile = 512 << 20

// Compression-bomb bounds: once an archive has expanded to bombFloor
// bytes, it may not be more than bombRatio times larger than the
// compressed bytes read so far; an entry's payload likewise may not
// declare more than bombRatio times its stored size beyond bombFloor.
// Compiled executables and XLA's text files compress tens of times, not
// thousands.
const (
	bombFloor = 64 << 20
	bombRatio = 1000
)

// zstdMaxWindow bounds the window a zstd frame in an archive (or in an
// entry's payload) may ask the decoder to allocate; xlacache's own
// encoders use 8 MiB.
const zstdMaxWindow = 64 << 20

// errRefused marks a member that failed a check: it is listed in
// ImportStats.Refused and the import goes on.
type errRefused struct{ err error }

func (e errRefused) Error() string { return e.err.Error() }
func (e errRefused) Unwrap() error { return e.err }

func refused(format string, args ...any) error {
	return errRefused{fmt.Errorf(format, args...)}
}

// countReader counts the bytes read through it.
type countReader struct {
	r io.Reader
	n int64
}

func (c *countReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// expansion watches an archive's expansion: compressed counts the bytes
// read from the archive, expanded the bytes of the tar stream.
type expansion struct {
	compressed, expanded *countReader
}

// check returns an error naming member when the archive has expanded
// like a compression bomb.
func (x expansion) check(member string) error {
	c, e := x.compressed.n, x.expanded.n
	if e > bombFloor && e > bombRatio*max(c, 1) {
		return fmt.Errorf("member %q: archive expands %d bytes of input to %d bytes (more than %d:1): refusing a compression bomb", member, c, e, bombRatio)
	}
	return nil
}

// readError wraps a failure to read the archive (or ctx's end): unlike a
// refused member, it stops the import.
type readError struct{ err error }

func (e readError) Error() string { return e.err.Error() }
func (e readError) Unwrap() error { return e.err }

// memberReader reads one member's data, checking ctx and the archive's
// expansion as it goes. Its errors other than io.EOF are readErrors.
type memberReader struct {
	ctx  context.Context
	r    io.Reader
	x    expansion
	name string
}

func (m *memberReader) Read(p []byte) (int, error) {
	if err := m.ctx.Err(); err != nil {
		return 0, readError{err}
	}
	if len(p) > 1<<20 {
		p = p[:1<<20] // check the expansion at least every MiB
	}
	n, err := m.r.Read(p)
	if xerr := m.x.check(m.name); xerr != nil {
		return n, readError{xerr}
	}
	if err != nil && err != io.EOF {
		return n, readError{fmt.Errorf("member %q: %w", m.name, err)}
	}
	return n, err
}

// maxMemberSize returns the bound of one member.
func (o Options) maxMemberSize() int64 {
	if o.MaxMemberSize > 0 {
		return o.MaxMemberSize
	}
	return DefaultMaxMemberSize
}

// maxImportSize returns the bound of the members' sum.
func (o Options) maxImportSize() int64 {
	if o.MaxImportSize > 0 {
		return o.MaxImportSize
	}
	return DefaultMaxImportSize
}

// checker verifies a member streamed through Write; finish reports the
// verdict once every byte was written.
type checker interface {
	io.Writer
	finish() error
	// abort releases what the checker holds when the member is abandoned.
	abort()
}

// rawCheck verifies an XLA raw file against the SHA-256 the manifest
// lists for it.
type rawCheck struct {
	h    hash.Hash
	want string
}

func newRawCheck(m *manifest, name string) (*rawCheck, error) {
	if m == nil {
		return nil, refused("archive has no manifest to check XLA's raw files against")
	}
	if m.MAC == macInvalid {
		return nil, refused("the archive's manifest is unsigned or does not verify with this signing key")
	}
	want, ok := m.Raw[name]
	if !ok {
		return nil, refused("not listed in the archive's manifest")
	}
	return &rawCheck{h: sha256.New(), want: want}, nil
}

func (c *rawCheck) Write(p []byte) (int, error) { return c.h.Write(p) }

func (c *rawCheck) finish() error {
	if hex.EncodeToString(c.h.Sum(nil)) != c.want {
		return refused("content does not match the archive's manifest")
	}
	return nil
}

func (c *rawCheck) abort() {}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// entryCheck verifies an xlacache entry streamed through it, as
// entry.DecodeAs does on the whole: its header (parsed from the first
// bytes: the key, the sizes adding up to the member's size, a payload not
// declaring a bomb), the CRC-32C, the signature when a key is set, and a
// compressed payload decompressing to exactly its declared size (counted,
// not kept).
type entryCheck struct {
	key        string
	signingKey *sign.Keys
	size       int64 // the member's size

	n      int64 // bytes written so far
	prefix []byte
	parsed bool
	h      entry.Header
	off    int64 // payload offset
	body   int64 // end of the payload: the signature or the CRC follows
	crc    uint32
	tail   []byte // the CRC bytes
	mac    *sign.Hash
	sig    []byte
	err    error

	// The payload's decompression runs in a goroutine reading pw's other
	// end; done delivers its verdict.
	pw   *io.PipeWriter
	done chan error
}

func newEntryCheck(key string, signingKey *sign.Keys, size int64) (*entryCheck, error) {
	if size < entry.FixedSize+4 {
		return nil, refused("%v: %d bytes", entry.ErrCorrupt, size)
	}
	return &entryCheck{key: key, signingKey: signingKey, size: size, body: -1}, nil
}

func (c *entryCheck) Write(p []byte) (int, error) {
	total := len(p)
	for c.err == nil && !c.parsed {
		need, complete := c.headerNeed()
		if c.err != nil {
			break
		}
		if complete {
			c.parse()
			break
		}
		if len(p) == 0 {
			break
		}
		k := min(len(p), need-len(c.prefix))
		c.prefix = append(c.prefix, p[:k]...)
		c.account(p[:k])
		p = p[k:]
	}
	if c.err == nil && c.parsed && len(p) > 0 {
		c.account(p)
	}
	if c.err != nil {
		return 0, c.err
	}
	return total, nil
}

// headerNeed returns how many bytes the header takes (as far as known)
// and whether c.prefix holds them all.
func (c *entryCheck) headerNeed() (need int, complete bool) {
	if len(c.prefix) < entry.FixedSize {
		return entry.FixedSize, false
	}
	hlen := int64(binary.LittleEndian.Uint32(c.prefix[8:12]))
	if hlen > entry.MaxHeaderSize || entry.FixedSize+hlen > c.size {
		// ParseHeader says which (magic, version or length).
		_, _, err := entry.ParseHeader(c.prefix)
		if err == nil || len(c.prefix) > entry.FixedSize {
			err = fmt.Errorf("%w: header length %d in a %d-byte entry", entry.ErrCorrupt, hlen, c.size)
		}
		c.err = refused("%v", err)
		return 0, false
	}
	need = entry.FixedSize + int(hlen)
	return need, len(c.prefix) == need
}

// parse checks the header in c.prefix.
func (c *entryCheck) parse() {
	h, off, err := entry.ParseHeader(c.prefix)
	switch {
	case err != nil:
		c.err = refused("%v", err)
		return
	case h.Key != c.key:
		c.err = refused("%v: holds key %q, named %q", entry.ErrCorrupt, h.Key, c.key)
		return
	case h.Size(off) != c.size:
		c.err = refused("%v: header declares %d bytes, member has %d", entry.ErrCorrupt, h.Size(off), c.size)
		return
	case h.RawSize > DefaultMaxMemberSize:
		c.err = refused("payload of %d bytes is larger than %d", h.RawSize, int64(DefaultMaxMemberSize))
		return
	case h.Codec == entry.CodecZstd && h.RawSize > bombFloor && h.RawSize > bombRatio*max(h.StoredSize, 1):
		c.err = refused("payload of %d bytes stored in %d (more than %d:1): refusing a compression bomb", h.RawSize, h.StoredSize, bombRatio)
		return
	case c.signingKey.Enabled() && !h.Signed:
		c.err = refused("%v", entry.ErrUnsigned)
		return
	}
	c.h, c.off, c.parsed = h, int64(off), true
	c.body = c.off + h.StoredSize
	if c.signingKey.Enabled() {
		mac, err := c.signingKey.Verifier(h.Scheme)
		if err != nil {
			c.err = refused("%v: %v", entry.ErrSignature, err)
			return
		}
		c.mac = mac
		c.mac.Write(c.prefix)
	}
	c.prefix = nil
	if h.Codec == entry.CodecZstd {
		pr, pw := io.Pipe()
		c.pw, c.done = pw, make(chan error, 1)
		go func() {
			err := decodedSize(pr, h.RawSize)
			// Unblock the writer whatever happened.
			pr.CloseWithError(errors.New("payload check ended"))
			c.done <- err
		}()
	}
}

// decodedSize checks that r decompresses to exactly want bytes.
func decodedSize(r io.Reader, want int64) error {
	// The memory cap must leave room for the frame's window as well as
	// its content: a zstd window is at least 1 KiB whatever the content
	// size, so a cap of want+1 alone refused every small payload ("window
	// size exceeded"). What the frame may produce is bounded below by
	// the LimitReader, not by this cap.
	dec, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxWindow(zstdMaxWindow), zstd.WithDecoderMaxMemory(max(uint64(want)+1, zstdMaxWindow)))
	if err != nil {
		return err
	}
	defer dec.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(dec, want+1))
	if err != nil {
		return fmt.Errorf("%w: decompressing: %v", entry.ErrCorrupt, err)
	}
	if n != want {
		return fmt.Errorf("%w: payload decompresses to more or fewer than the %d bytes its header declares", entry.ErrCorrupt, want)
	}
	return nil
}

// account feeds b, the bytes at offset c.n, to the checks whose ranges
// they fall in.
func (c *entryCheck) account(b []byte) {
	start := c.n
	c.n += int64(len(b))
	if c.n > c.size {
		c.err = refused("%v: more than %d bytes", entry.ErrCorrupt, c.size)
		return
	}
	crcEnd := c.size - 4
	c.crc = crc32.Update(c.crc, castagnoli, span(b, start, 0, crcEnd))
	c.tail = append(c.tail, span(b, start, crcEnd, c.size)...)
	if !c.parsed {
		return // header bytes: the MAC takes them at parse
	}
	if c.mac != nil {
		c.mac.Write(span(b, start, 0, c.body))
	}
	if c.h.Signed {
		c.sig = append(c.sig, span(b, start, c.body, c.body+int64(c.h.Scheme.SigSize()))...)
	}
	if c.pw != nil {
		if p := span(b, start, c.off, c.body); len(p) > 0 {
			if _, err := c.pw.Write(p); err != nil {
				c.err = refused("%v", c.wait())
			}
		}
	}
}

// span returns the part of b (which starts at offset start) inside
// [lo, hi).
func span(b []byte, start, lo, hi int64) []byte {
	end := start + int64(len(b))
	lo, hi = max(lo, start), min(hi, end)
	if lo >= hi {
		return nil
	}
	return b[lo-start : hi-start]
}

// wait ends the payload check and returns its verdict.
func (c *entryCheck) wait() error {
	if c.pw == nil {
		return nil
	}
	c.pw.Close()
	err := <-c.done
	c.pw = nil
	return err
}

func (c *entryCheck) finish() error {
	if c.err != nil {
		c.abort()
		return c.err
	}
	if !c.parsed || c.n != c.size {
		c.abort()
		return refused("%v: truncated at %d of %d bytes", entry.ErrCorrupt, c.n, c.size)
	}
	if got, want := c.crc, binary.LittleEndian.Uint32(c.tail); got != want {
		c.abort()
		return refused("%v: checksum %08x, want %08x", entry.ErrCorrupt, got, want)
	}
	if c.mac != nil {
		if err := c.mac.Verify(c.sig); err != nil {
			c.abort()
			return refused("%v: %v", entry.ErrSignature, err)
		}
	}
	if err := c.wait(); err != nil {
		return refused("%v", err)
	}
	return nil
}

func (c *entryCheck) abort() {
	if c.pw != nil {
		c.pw.CloseWithError(errors.New("member abandoned"))
		<-c.done
		c.pw = nil
	}
}

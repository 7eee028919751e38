// Package jaxcache reads, verifies, prunes and explains JAX persistent
// compilation cache directories, including the XLA subcaches JAX puts in
// them, which JAX itself never counts or evicts.
//
// The format, from jax/_src/compilation_cache.py and jax/_src/lru_cache.py:
// each entry is a file "<key>-cache" holding a compressed (zstd when the
// zstandard module is installed, else zlib) byte string made of a 4-byte
// big-endian compile time in whole seconds followed by the serialized
// executable; "<key>-atime" holds the last use as 8 little-endian bytes of
// nanoseconds since the epoch. The key is "<module name>-<64 hex digits>".
// JAX writes both files in place (no temporary file and rename), under
// the directory's ".lockfile" only when its size bound is set; XLA writes
// autotune results to "xla_gpu_per_fusion_autotune_cache_dir/tmp/" and
// renames them into place, and rewrites "xla_gpu_kernel_cache_file" in
// place.
package jaxcache

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/klauspost/compress/zstd"
)

// Codec is the compression of an entry.
type Codec string

// The codecs JAX uses: zstd when the zstandard module is installed, else
// zlib; CodecUnknown marks data that is neither.
const (
	CodecZstd    Codec = "zstd"
	CodecZlib    Codec = "zlib"
	CodecUnknown Codec = "unknown"
)

var zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}

// DetectCodec tells the compression from an entry's first bytes: the
// zstd frame magic, or a zlib header (deflate method, a window size
// deflate allows, and the header checksum RFC 1950 requires).
func DetectCodec(head []byte) Codec {
	if bytes.HasPrefix(head, zstdMagic) {
		return CodecZstd
	}
	if len(head) >= 2 && head[0]&0x0f == 8 && head[0]>>4 <= 7 && (uint16(head[0])<<8|uint16(head[1]))%31 == 0 {
		return CodecZlib
	}
	return CodecUnknown
}

// MaxExecutableSize bounds how many decompressed bytes Decode and Verify
// accept, so a hostile entry cannot exhaust memory or disk time. Real
// executables are at most a few gigabytes.
var MaxExecutableSize int64 = 16 << 30

// Header is what the start of an entry says.
type Header struct {
	Codec Codec
	// CompileTime is the time the compilation took, as JAX recorded it
	// (whole seconds).
	CompileTime time.Duration
}

// ErrCorrupt is wrapped by every error about an entry's content.
var ErrCorrupt = errors.New("corrupt JAX cache entry")

// newDecoder decompresses r as codec c; zopts add to (or override) the
// zstd decoder's options, as CheckComplete's bounded window does.
func newDecoder(c Codec, r io.Reader, zopts ...zstd.DOption) (io.ReadCloser, error) {
	switch c {
	case CodecZstd:
		opts := append([]zstd.DOption{zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(MaxExecutableSize))}, zopts...)
		d, err := zstd.NewReader(r, opts...)
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	case CodecZlib:
		return zlib.NewReader(r)
	}
	return nil, fmt.Errorf("%w: neither zstd nor zlib", ErrCorrupt)
}

// ReadHeader decompresses only as much of an entry as its header needs.
func ReadHeader(r io.Reader) (Header, error) {
	br := bufio.NewReader(r)
	head, _ := br.Peek(4)
	h := Header{Codec: DetectCodec(head)}
	dec, err := newDecoder(h.Codec, br)
	if err != nil {
		return h, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer dec.Close()
	var t [4]byte
	if _, err := io.ReadFull(dec, t[:]); err != nil {
		return h, fmt.Errorf("%w: compile time: %v", ErrCorrupt, err)
	}
	h.CompileTime = time.Duration(binary.BigEndian.Uint32(t[:])) * time.Second
	return h, nil
}

// Decoded is a fully decoded entry.
type Decoded struct {
	Header
	// Executable is the serialized executable (PJRT's format, opaque here).
	Executable []byte
}

// Decode decompresses a whole entry and checks it: the stream must end
// cleanly (zlib's Adler-32 and zstd's frame checks pass, nothing follows
// the stream), carry the 4-byte compile time and a non-empty executable,
// and stay under MaxExecutableSize.
func Decode(data []byte) (Decoded, error) {
	var out Decoded
	out.Codec = DetectCodec(data)
	var buf bytes.Buffer
	n, err := decodeTo(out.Codec, bufio.NewReader(bytes.NewReader(data)), &buf)
	if err != nil {
		return out, err
	}
	b := buf.Bytes()
	out.CompileTime = time.Duration(binary.BigEndian.Uint32(b[:4])) * time.Second
	out.Executable = b[4:n]
	return out, nil
}

// decodeTo decompresses r into w and returns the decompressed length.
// r is a bufio.Reader so that zlib reads it byte by byte without reading
// ahead, and what is left after the stream can be seen.
func decodeTo(c Codec, r *bufio.Reader, w io.Writer, zopts ...zstd.DOption) (int64, error) {
	dec, err := newDecoder(c, r, zopts...)
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrCorrupt, err)
	}
	defer dec.Close()
	n, err := io.Copy(w, io.LimitReader(dec, MaxExecutableSize+1))
	if err != nil {
		return n, fmt.Errorf("%w: after %d decompressed bytes: %v", ErrCorrupt, n, err)
	}
	if n > MaxExecutableSize {
		return n, fmt.Errorf("%w: decompresses to more than %d bytes", ErrCorrupt, MaxExecutableSize)
	}
	if n < 5 {
		return n, fmt.Errorf("%w: %d decompressed bytes, want a 4-byte compile time and an executable", ErrCorrupt, n)
	}
	if c == CodecZlib {
		// The zlib stream has ended; bytes after it mean the file is not
		// what JAX wrote.
		if rest, _ := io.Copy(io.Discard, r); rest > 0 {
			return n, fmt.Errorf("%w: %d bytes after the end of the zlib stream", ErrCorrupt, rest)
		}
	}
	return n, nil
}

// VerifyFile decodes the entry at path without keeping it in memory and
// returns its header and decompressed size. It reads as OpenEntryPath
// does, so a verification is not a load.
func VerifyFile(path string) (Header, int64, error) {
	f, _, err := OpenEntryPath(path)
	if err != nil {
		return Header{}, 0, err
	}
	defer f.Close()
	br := bufio.NewReader(f)
	head, _ := br.Peek(4)
	h := Header{Codec: DetectCodec(head)}
	var first [4]byte
	w := &headCapture{dst: first[:]}
	n, err := decodeTo(h.Codec, br, w)
	if err != nil {
		return h, n, err
	}
	h.CompileTime = time.Duration(binary.BigEndian.Uint32(first[:])) * time.Second
	return h, n, nil
}

// headCapture keeps the first len(dst) bytes written to it and discards
// the rest.
type headCapture struct {
	dst []byte
	n   int
}

func (h *headCapture) Write(p []byte) (int, error) {
	if h.n < len(h.dst) {
		h.n += copy(h.dst[h.n:], p)
	}
	return len(p), nil
}

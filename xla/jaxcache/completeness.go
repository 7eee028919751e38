package jaxcache

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"fmt"
	"io"

	"github.com/klauspost/compress/zstd"
)

// maxCheckWindow bounds the zstd window CheckComplete accepts. JAX
// compresses with zstandard's default levels (windows of at most 8 MiB;
// 128 MiB even at the "ultra" levels), so a larger window is not JAX's,
// and refusing it keeps the decoder's history buffer bounded.
const maxCheckWindow = 128 << 20

// CheckComplete reports whether data is a whole JAX cache entry (a zstd
// or zlib stream that decodes to its end, holding the 4-byte compile time
// and an executable, with nothing after it) without holding what it
// decompresses to: the output goes to io.Discard through a reader bounded
// by MaxExecutableSize, so a small entry that decompresses to gigabytes
// costs CPU time, never memory. The error wraps ErrCorrupt.
func CheckComplete(data []byte) error {
	codec := DetectCodec(data)
	br := bufio.NewReader(bytes.NewReader(data))
	var dec io.ReadCloser
	switch codec {
	case CodecZstd:
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true),
			zstd.WithDecoderMaxWindow(maxCheckWindow), zstd.WithDecoderMaxMemory(uint64(MaxExecutableSize)))
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		dec = d.IOReadCloser()
	case CodecZlib:
		z, err := zlib.NewReader(br)
		if err != nil {
			return fmt.Errorf("%w: %v", ErrCorrupt, err)
		}
		dec = z
	default:
		return fmt.Errorf("%w: neither zstd nor zlib", ErrCorrupt)
	}
	defer dec.Close()
	n, err := io.Copy(io.Discard, io.LimitReader(dec, MaxExecutableSize+1))
	if err != nil {
		return fmt.Errorf("%w: after %d decompressed bytes: %v", ErrCorrupt, n, err)
	}
	if n > MaxExecutableSize {
		return fmt.Errorf("%w: decompresses to more than %d bytes", ErrCorrupt, MaxExecutableSize)
	}
	if n < 5 {
		return fmt.Errorf("%w: %d decompressed bytes, want a 4-byte compile time and an executable", ErrCorrupt, n)
	}
	if codec == CodecZlib {
		// The zlib stream has ended; bytes after it mean the file is not
		// what JAX wrote.
		if rest, _ := io.Copy(io.Discard, br); rest > 0 {
			return fmt.Errorf("%w: %d bytes after the end of the zlib stream", ErrCorrupt, rest)
		}
	}
	return nil
}

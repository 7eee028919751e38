package jaxcache

import (
	"bufio"
	"bytes"
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
	_, err := decodeTo(DetectCodec(data), bufio.NewReader(bytes.NewReader(data)), io.Discard,
		zstd.WithDecoderLowmem(true), zstd.WithDecoderMaxWindow(maxCheckWindow))
	return err
}

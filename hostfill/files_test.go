package hostfill

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"

	"github.com/klauspost/compress/zstd"
)

// TestCheckContentRefusesEveryTruncation: JAX writes an entry in place, so
// a publish can read any prefix of it. No prefix may pass as a whole
// entry, for the streams JAX's writers make: python-zstandard's default
// frame (content size in the header, no checksum), a frame with neither
// (a streaming writer), one with a checksum, and zlib (Adler-32 trailer).
// The payload is incompressible and spans several 128 KiB zstd blocks, so
// prefixes that end exactly on a block boundary are among those tried.
func TestCheckContentRefusesEveryTruncation(t *testing.T) {
	raw := binary.BigEndian.AppendUint32(nil, 7)
	rng := rand.New(rand.NewPCG(1, 2))
	exe := make([]byte, 300<<10)
	for i := range exe {
		exe[i] = byte(rng.Uint32())
	}
	raw = append(raw, exe...)

	zstdAll := func(opts ...zstd.EOption) []byte {
		enc, err := zstd.NewWriter(nil, opts...)
		if err != nil {
			t.Fatal(err)
		}
		defer enc.Close()
		return enc.EncodeAll(raw, nil)
	}
	zstdStream := func(opts ...zstd.EOption) []byte {
		var b bytes.Buffer
		enc, err := zstd.NewWriter(&b, opts...)
		if err != nil {
			t.Fatal(err)
		}
		// Written in pieces, so the frame header carries no content size.
		for i := 0; i < len(raw); i += 50_000 {
			if _, err := enc.Write(raw[i:min(i+50_000, len(raw))]); err != nil {
				t.Fatal(err)
			}
		}
		if err := enc.Close(); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	var zl bytes.Buffer
	zw := zlib.NewWriter(&zl)
	zw.Write(raw)
	zw.Close()

	rel := jaxKey("jit_f", 1) + "-cache"
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"zstd-content-size-no-checksum", zstdAll(zstd.WithEncoderCRC(false))},
		{"zstd-stream-no-size-no-checksum", zstdStream(zstd.WithEncoderCRC(false), zstd.WithEncoderConcurrency(1))},
		{"zstd-checksum", zstdAll()},
		{"zlib", zl.Bytes()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := checkContent(fileJAX, rel, tc.data, nil); err != nil {
				t.Fatalf("whole entry refused: %v", err)
			}
			n := len(tc.data)
			var cuts []int
			for i := 0; i < 64 && i < n; i++ {
				cuts = append(cuts, i, n-1-i)
			}
			for i := 64; i < n; i += 2039 {
				cuts = append(cuts, i)
			}
			// Around each block boundary: an incompressible block is
			// stored raw (3-byte header + 128 KiB), after a frame header
			// of at most 18 bytes.
			for k := 1; k*(131072+3) < n; k++ {
				for d := 0; d < 24; d++ {
					if c := k*(131072+3) + d; c < n {
						cuts = append(cuts, c)
					}
				}
			}
			for _, c := range cuts {
				err := checkContent(fileJAX, rel, tc.data[:c], nil)
				if !errors.Is(err, errIncomplete) {
					t.Fatalf("prefix of %d of %d bytes passes as a whole entry (err %v)", c, n, err)
				}
			}
		})
	}
}

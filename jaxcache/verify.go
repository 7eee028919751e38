package jaxcache

import (
	"bufio"
	"context"
	"encoding/binary"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"
	"unicode/utf8"

	"google.golang.org/protobuf/encoding/protowire"
)

// Problem is one file that failed verification.
type Problem struct {
	Path string
	Err  error
	// MaybeInFlight says the file was modified within the grace period:
	// it may be complete in a moment (JAX writes entries in place).
	MaybeInFlight bool
}

// VerifyResult reports a verification.
type VerifyResult struct {
	Checked  int
	Problems []Problem
	// Compressed and Decompressed sum the entries checked.
	Compressed, Decompressed int64
}

// VerifyOptions configures Verify.
type VerifyOptions struct {
	// Grace marks problems in recently modified files as possibly in
	// flight; zero means DefaultGrace.
	Grace time.Duration
	Now   func() time.Time
}

// maxAutotuneFile bounds an autotune result file; they are small text
// protos, a few hundred bytes each.
const maxAutotuneFile = 16 << 20

// Verify reads every entry and subcache file of a scanned directory:
// entries must decompress cleanly (see Decode), atime files must be 8
// bytes, autotune results must be UTF-8 text, and the kernel cache file
// must be well-formed protobuf wire format.
func Verify(ctx context.Context, d *Dir, vo VerifyOptions) (VerifyResult, error) {
	var r VerifyResult
	now := time.Now
	if vo.Now != nil {
		now = vo.Now
	}
	grace := vo.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	t0 := now()
	problem := func(p string, modTime time.Time, err error) {
		r.Problems = append(r.Problems, Problem{Path: p, Err: err, MaybeInFlight: t0.Sub(modTime) < grace})
	}
	for _, e := range d.Entries {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		r.Checked++
		_, n, err := VerifyFile(e.Path)
		if err != nil {
			problem(e.Path, e.ModTime, err)
			continue
		}
		r.Compressed += e.Size
		r.Decompressed += n
		if e.AtimeSize > 0 && !e.HasAtime {
			problem(e.Path[:len(e.Path)-len(CacheSuffix)]+AtimeSuffix, e.ModTime, fmt.Errorf("%w: atime file is %d bytes, want 8", ErrCorrupt, e.AtimeSize))
		}
	}
	for _, f := range d.Subcaches {
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if f.Temp {
			continue // XLA's files in progress; Prune clears stale ones
		}
		r.Checked++
		if err := verifySubcacheFile(f); err != nil {
			problem(f.Path, f.ModTime, err)
		}
	}
	return r, nil
}

func verifySubcacheFile(f SubcacheFile) error {
	switch f.Subcache {
	case AutotuneDirName:
		if !strings.HasSuffix(f.Rel, ".textproto") {
			return fmt.Errorf("unexpected file in XLA's autotune cache (want *.textproto)")
		}
		if f.Size > maxAutotuneFile {
			return fmt.Errorf("autotune result of %d bytes, larger than %d", f.Size, maxAutotuneFile)
		}
		b, err := os.ReadFile(f.Path)
		if err != nil {
			return err
		}
		if len(b) == 0 || !utf8.Valid(b) {
			return fmt.Errorf("autotune result is empty or not text")
		}
	case KernelFileName:
		fh, err := os.Open(f.Path)
		if err != nil {
			return err
		}
		defer fh.Close()
		if err := checkWire(bufio.NewReader(fh)); err != nil {
			return fmt.Errorf("XLA kernel cache: %w", err)
		}
	}
	return nil
}

// checkWire checks that r holds a sequence of well-formed protobuf fields,
// streaming, since XLA's kernel cache file can be large. Nested messages
// are not descended into (their type is not known here), and groups,
// which XLA's protos do not use, are rejected.
func checkWire(r *bufio.Reader) error {
	var off int64
	for {
		if _, err := r.Peek(1); err == io.EOF {
			return nil
		}
		tag, n, err := readUvarint(r)
		if err != nil {
			return fmt.Errorf("offset %d: bad field tag: %w", off, err)
		}
		start := off
		off += int64(n)
		num, typ := protowire.DecodeTag(tag)
		if num < protowire.MinValidNumber || num > protowire.MaxValidNumber {
			return fmt.Errorf("offset %d: invalid field number %d", start, num)
		}
		var skip int64
		switch typ {
		case protowire.VarintType:
			_, n, err := readUvarint(r)
			if err != nil {
				return fmt.Errorf("offset %d: field %d: %w", start, num, err)
			}
			off += int64(n)
			continue
		case protowire.Fixed64Type:
			skip = 8
		case protowire.Fixed32Type:
			skip = 4
		case protowire.BytesType:
			l, n, err := readUvarint(r)
			if err != nil {
				return fmt.Errorf("offset %d: field %d length: %w", start, num, err)
			}
			off += int64(n)
			if l > math.MaxInt64-uint64(off) {
				return fmt.Errorf("offset %d: field %d: length %d too large", start, num, l)
			}
			skip = int64(l)
		default:
			return fmt.Errorf("offset %d: field %d: unexpected wire type %d", start, num, typ)
		}
		got, err := io.CopyN(io.Discard, r, skip)
		off += got
		if err != nil {
			return fmt.Errorf("offset %d: field %d: %d of %d bytes present: %w", start, num, got, skip, io.ErrUnexpectedEOF)
		}
	}
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
			return 0, i + 1, fmt.Errorf("varint overflows 64 bits")
		}
		v |= uint64(b&0x7f) << (7 * i)
		if b < 0x80 {
			return v, i + 1, nil
		}
	}
	return 0, binary.MaxVarintLen64, fmt.Errorf("varint overflows 64 bits")
}

// relTo returns p relative to dir for display.
func relTo(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil {
		return r
	}
	return p
}

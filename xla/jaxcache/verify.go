package jaxcache

import (
	"context"
	"fmt"
	"path/filepath"
	"time"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/xla/rawfiles"
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

// Verify reads every entry and subcache file of a scanned directory:
// entries must decompress cleanly (see Decode), atime files must be 8
// bytes, and XLA's subcache files must pass xla/subcache's checks
// (autotune results: a valid name and UTF-8 text; the kernel cache file:
// well-formed protobuf wire format).
func Verify(ctx context.Context, d *Dir, vo VerifyOptions) (VerifyResult, error) {
	var r VerifyResult
	now, grace := clockAndGrace(vo.Now, vo.Grace)
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
		if !rawfiles.ValidAutotuneName(filepath.Base(f.Path)) {
			return fmt.Errorf("unexpected file in XLA's autotune cache (want <base64 name>.textproto)")
		}
		if f.Size > rawfiles.MaxAutotuneFile {
			return fmt.Errorf("autotune result of %d bytes, larger than %d", f.Size, rawfiles.MaxAutotuneFile)
		}
		b, err := atomicfile.ReadRegularPath(f.Path, rawfiles.MaxAutotuneFile)
		if err != nil {
			return err
		}
		return rawfiles.VerifyAutotuneFile(b)
	case KernelFileName:
		fh, _, err := atomicfile.OpenRegularPath(f.Path)
		if err != nil {
			return err
		}
		defer fh.Close()
		if err := rawfiles.VerifyKernelFile(fh); err != nil {
			return fmt.Errorf("XLA kernel cache: %w", err)
		}
	}
	return nil
}

// relTo returns p relative to dir for display.
func relTo(dir, p string) string {
	if r, err := filepath.Rel(dir, p); err == nil {
		return r
	}
	return p
}

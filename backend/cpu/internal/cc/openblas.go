package cc

/*
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

typedef void (*xk_sgemm_fn)(int, int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
typedef void (*xk_setthreads_fn)(int);
typedef char* (*xk_corename_fn)(void);

static const char* xk_corename(void* fn) { return fn ? ((xk_corename_fn)fn)() : "unknown"; }

// CblasRowMajor = 101, CblasNoTrans = 111 (cblas.h).
static void xk_sgemm(void* fn, int m, int n, int k, const float* a, const float* b, float* c) {
	((xk_sgemm_fn)fn)(101, 111, 111, m, n, k, 1.0f, a, k, b, n, 0.0f, c, n);
}

static void xk_setthreads(void* fn, int n) { ((xk_setthreads_fn)fn)(n); }

// xk_im2col_nhwc copies image x (h x w x c, row-major) into the rows of
// col ((h*w) x (kh*kw*c)) for a stride-1 convolution with "same" padding:
// row (y, x) holds the kh x kw x c window at (y, x), zeros off the image.
static void xk_im2col_nhwc(const float* x, float* col, int h, int w, int c, int kh, int kw) {
	const int ph = (kh - 1) / 2, pw = (kw - 1) / 2;
	for (int y = 0; y < h; y++)
	for (int xx = 0; xx < w; xx++) {
		float* row = col + ((int64_t)y * w + xx) * kh * kw * c;
		for (int i = 0; i < kh; i++)
		for (int j = 0; j < kw; j++) {
			const int sy = y + i - ph, sx = xx + j - pw;
			float* dst = row + (i * kw + j) * c;
			if (sy < 0 || sy >= h || sx < 0 || sx >= w) {
				for (int q = 0; q < c; q++) dst[q] = 0;
			} else {
				const float* src = x + ((int64_t)sy * w + sx) * c;
				for (int q = 0; q < c; q++) dst[q] = src[q];
			}
		}
	}
}
*/
import "C"

import (
	"errors"
	"fmt"
	"unsafe"
)

// OpenBLAS is the system OpenBLAS library, loaded at run time so that
// nothing links against it: benchmarks compare the generated kernels with
// it where it is installed (libopenblas0 / libopenblas-dev) and skip
// where it is not.
type OpenBLAS struct {
	lib        *Library
	sgemm      unsafe.Pointer
	setThreads unsafe.Pointer
	coreName   unsafe.Pointer // optional
}

// ErrNoOpenBLAS is returned by LoadOpenBLAS when no OpenBLAS library
// loads.
var ErrNoOpenBLAS = errors.New("cc: OpenBLAS is not installed (libopenblas.so.0 did not load; install libopenblas-dev)")

// LoadOpenBLAS dlopens libopenblas.so.0 (then libopenblas.so) and
// resolves cblas_sgemm and openblas_set_num_threads.
func LoadOpenBLAS() (*OpenBLAS, error) {
	var lib *Library
	var errs []error
	for _, name := range []string{"libopenblas.so.0", "libopenblas.so"} {
		l, err := Open(name)
		if err == nil {
			lib = l
			break
		}
		errs = append(errs, err)
	}
	if lib == nil {
		return nil, fmt.Errorf("%w: %w", ErrNoOpenBLAS, errors.Join(errs...))
	}
	b := &OpenBLAS{lib: lib}
	var err error
	if b.sgemm, err = lib.Sym("cblas_sgemm"); err != nil {
		lib.Close()
		return nil, fmt.Errorf("cc: OpenBLAS without cblas_sgemm: %w", err)
	}
	if b.setThreads, err = lib.Sym("openblas_set_num_threads"); err != nil {
		lib.Close()
		return nil, fmt.Errorf("cc: OpenBLAS without openblas_set_num_threads: %w", err)
	}
	b.coreName, _ = lib.Sym("openblas_get_corename")
	return b, nil
}

// CoreName is the kernel family OpenBLAS chose for this CPU.
func (b *OpenBLAS) CoreName() string { return C.GoString(C.xk_corename(b.coreName)) }

// SetThreads sets how many threads OpenBLAS uses.
func (b *OpenBLAS) SetThreads(n int) { C.xk_setthreads(b.setThreads, C.int(n)) }

// Sgemm computes c = a·b for row-major f32 matrices a (m×k), b (k×n) and
// c (m×n), all C memory (see Alloc).
func (b *OpenBLAS) Sgemm(m, n, k int, a, bm, c unsafe.Pointer) {
	C.xk_sgemm(b.sgemm, C.int(m), C.int(n), C.int(k), (*C.float)(a), (*C.float)(bm), (*C.float)(c))
}

// Im2colNHWC writes the stride-1, "same"-padded im2col matrix of one
// h×w×c image x into col ((h·w)×(kh·kw·c) f32, C memory): the baseline
// lowering of a convolution to one sgemm per image.
func Im2colNHWC(x, col unsafe.Pointer, h, w, c, kh, kw int) {
	C.xk_im2col_nhwc((*C.float)(x), (*C.float)(col), C.int(h), C.int(w), C.int(c), C.int(kh), C.int(kw))
}

// Close unloads the library.
func (b *OpenBLAS) Close() error { return b.lib.Close() }

// gemm.c instantiates gemm_tmpl.h for float and double, once for any
// x86-64 (or other) CPU and, on x86-64, once more for AVX2 with FMA,
// picked at run time: the binary is built once for machines it has not
// seen, unlike the generated kernels (-march=native).
#include <stdlib.h>
#include "rt.h"

int xk_rt_force_naive = 0;
int xk_rt_force_generic = 0;

// Blocking: RT_MR x (2 vectors) registers, RT_KC steps of k per packed
// panel (a B panel of 256 x 16 floats is 16 KiB, in L1), RT_MC rows of A
// per packed block (72 KiB, in L2), RT_NC columns of B per packed block.
#define RT_MR 6
#define RT_KC 256
#define RT_MC 72
#define RT_NC 512

// Scratch (the packed panels) is kept per thread between calls, up to
// RT_KEEP bytes a block: allocating and freeing it on every call (B's
// block alone is 512 KiB for f32, past malloc's mmap threshold) made
// the routine's calls on small products 10-30% slower, and a call split
// over two threads slower than one thread. The pool's threads live as
// long as the process, so this holds at most 2 x RT_KEEP per thread;
// bigger blocks are allocated and freed per call. A call never nests
// another on the same thread.
#define RT_KEEP ((size_t)8 << 20)
static __thread void* rt_kept[2];
static __thread size_t rt_kept_size[2];

// rt_scratch returns a 64-byte aligned block of at least n bytes for
// slot (0: B's panels, 1: A's), or NULL when none can be allocated;
// rt_scratch_done releases it.
static void* rt_scratch(int slot, size_t n) {
	n = (n + 63) / 64 * 64;
	if (n > RT_KEEP) return aligned_alloc(64, n);
	if (rt_kept_size[slot] < n) {
		free(rt_kept[slot]);
		rt_kept[slot] = aligned_alloc(64, n);
		rt_kept_size[slot] = rt_kept[slot] ? n : 0;
	}
	return rt_kept[slot];
}

static void rt_scratch_done(int slot, void* p) {
	if (p != rt_kept[slot]) free(p);
}

#define T float
#define VW 8
#define SUF f32_generic
#include "gemm_tmpl.h"
#undef T
#undef VW
#undef SUF

#define T double
#define VW 4
#define SUF f64_generic
#include "gemm_tmpl.h"
#undef T
#undef VW
#undef SUF

#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2,fma")
#define T float
#define VW 8
#define SUF f32_avx2
#include "gemm_tmpl.h"
#undef T
#undef VW
#undef SUF

#define T double
#define VW 4
#define SUF f64_avx2
#include "gemm_tmpl.h"
#undef T
#undef VW
#undef SUF
#pragma GCC pop_options

static int rt_avx2(void) {
	// Computed once per process; threads that race to compute it store
	// the same value (atomically, so that the race is not undefined).
	static int have = -1;
	if (xk_rt_force_generic) return 0;
	int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
	if (h < 0) {
		__builtin_cpu_init();
		h = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
		__atomic_store_n(&have, h, __ATOMIC_RELAXED);
	}
	return h;
}
#else
static int rt_avx2(void) { return 0; }
#define part_f32_avx2 part_f32_generic
#define part_f64_avx2 part_f64_generic
#define conv_part_f32_avx2 conv_part_f32_generic
#define conv_part_f64_avx2 conv_part_f64_generic
#define wino_part_f32_avx2 wino_part_f32_generic
#define wino_part_f64_avx2 wino_part_f64_generic
#endif

const char* xk_rt_gemm_variant(void) { return rt_avx2() ? "avx2" : "generic"; }

int xk_rt_avx2(void) { return rt_avx2(); }

void xk_rt_gemm_f32_par(void** bufs, int64_t t, int64_t n) {
	if (rt_avx2()) part_f32_avx2(bufs, t, n); else part_f32_generic(bufs, t, n);
}
void xk_rt_gemm_f32(void** bufs) { xk_rt_gemm_f32_par(bufs, 0, 1); }
void xk_rt_gemm_f64_par(void** bufs, int64_t t, int64_t n) {
	if (rt_avx2()) part_f64_avx2(bufs, t, n); else part_f64_generic(bufs, t, n);
}
void xk_rt_gemm_f64(void** bufs) { xk_rt_gemm_f64_par(bufs, 0, 1); }

void xk_rt_conv_f32_par(void** bufs, int64_t t, int64_t n) {
	if (rt_avx2()) conv_part_f32_avx2(bufs, t, n); else conv_part_f32_generic(bufs, t, n);
}
void xk_rt_conv_f32(void** bufs) { xk_rt_conv_f32_par(bufs, 0, 1); }
void xk_rt_conv_f64_par(void** bufs, int64_t t, int64_t n) {
	if (rt_avx2()) conv_part_f64_avx2(bufs, t, n); else conv_part_f64_generic(bufs, t, n);
}
void xk_rt_conv_f64(void** bufs) { xk_rt_conv_f64_par(bufs, 0, 1); }

void xk_rt_wino_f32_par(void** bufs, int64_t t, int64_t n) {
	if (rt_avx2()) wino_part_f32_avx2(bufs, t, n); else wino_part_f32_generic(bufs, t, n);
}
void xk_rt_wino_f32(void** bufs) { xk_rt_wino_f32_par(bufs, 0, 1); }
void xk_rt_wino_f64_par(void** bufs, int64_t t, int64_t n) {
	if (rt_avx2()) wino_part_f64_avx2(bufs, t, n); else wino_part_f64_generic(bufs, t, n);
}
void xk_rt_wino_f64(void** bufs) { xk_rt_wino_f64_par(bufs, 0, 1); }

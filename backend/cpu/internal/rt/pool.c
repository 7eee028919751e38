// pool.c is reduce_window by maximum or minimum over windows the
// innermost dimension passes through (size, stride and dilations 1, no
// padding): pooling over NHWC images. It is package cpu's
// genReduceWindowRows compiled once into the binary, instead of being
// generated and compiled with every program (a 2x2 max-pool cost the C
// compiler about 20 ms). It combines the same values in the same order
// with the same branch-free maximum and minimum, so its results are the
// generated kernel's bits: per output row (every dimension but the
// innermost) the row starts at the init value, and each window position,
// in row-major order, folds its input row into it, or the init value
// where the position is padding or a dilation hole.
#include <stdlib.h>
#include <string.h>
#include "rt.h"


// The prelude's xk_maxf_sel, xk_minf_sel, xk_max_sel and xk_min_sel
// (package cpu, prelude.go): NaN-propagating (the first operand's NaN
// first), +0 over -0 for the maximum and -0 for the minimum, on the bits,
// so that the loops vectorize.
static inline float rt_maxf_sel(float a, float b) { uint32_t u, v; memcpy(&u, &a, 4); memcpy(&v, &b, 4); uint32_t m = -(uint32_t)(a > b), r = (u & m) | (v & ~m); m = -(uint32_t)(a == b); r = (r & ~m) | (u & v & m); m = -(uint32_t)(b != b); r = (r & ~m) | (v & m); m = -(uint32_t)(a != a); r = (r & ~m) | (u & m); float f; memcpy(&f, &r, 4); return f; }
static inline float rt_minf_sel(float a, float b) { uint32_t u, v; memcpy(&u, &a, 4); memcpy(&v, &b, 4); uint32_t m = -(uint32_t)(a < b), r = (u & m) | (v & ~m); m = -(uint32_t)(a == b); r = (r & ~m) | ((u | v) & m); m = -(uint32_t)(b != b); r = (r & ~m) | (v & m); m = -(uint32_t)(a != a); r = (r & ~m) | (u & m); float f; memcpy(&f, &r, 4); return f; }
static inline double rt_max_sel(double a, double b) { uint64_t u, v; memcpy(&u, &a, 8); memcpy(&v, &b, 8); uint64_t m = -(uint64_t)(a > b), r = (u & m) | (v & ~m); m = -(uint64_t)(a == b); r = (r & ~m) | (u & v & m); m = -(uint64_t)(b != b); r = (r & ~m) | (v & m); m = -(uint64_t)(a != a); r = (r & ~m) | (u & m); double f; memcpy(&f, &r, 8); return f; }
static inline double rt_min_sel(double a, double b) { uint64_t u, v; memcpy(&u, &a, 8); memcpy(&v, &b, 8); uint64_t m = -(uint64_t)(a < b), r = (u & m) | (v & ~m); m = -(uint64_t)(a == b); r = (r & ~m) | ((u | v) & m); m = -(uint64_t)(b != b); r = (r & ~m) | (v & m); m = -(uint64_t)(a != a); r = (r & ~m) | (u & m); double f; memcpy(&f, &r, 8); return f; }

// RT_POOL_FOLD defines rt_pool_fold_T, which folds n values from src
// into row, and rt_pool_fill_T, which folds the value v n times, by the
// op and operand order of mode (op*2 + swap).
#define RT_POOL_FOLD(T, MAX, MIN)                                                                  \
	static void rt_pool_fold_##T(T* restrict row, const T* restrict src, int64_t n, int mode) {   \
		switch (mode) {                                                                            \
		case 0:                                                                                    \
			for (int64_t c = 0; c < n; c++) row[c] = MAX(row[c], src[c]);                         \
			break;                                                                                 \
		case 1:                                                                                    \
			for (int64_t c = 0; c < n; c++) row[c] = MAX(src[c], row[c]);                         \
			break;                                                                                 \
		case 2:                                                                                    \
			for (int64_t c = 0; c < n; c++) row[c] = MIN(row[c], src[c]);                         \
			break;                                                                                 \
		default:                                                                                   \
			for (int64_t c = 0; c < n; c++) row[c] = MIN(src[c], row[c]);                         \
		}                                                                                          \
	}                                                                                              \
	static void rt_pool_fill_##T(T* restrict row, T v, int64_t n, int mode) {                     \
		switch (mode) {                                                                            \
		case 0:                                                                                    \
			for (int64_t c = 0; c < n; c++) row[c] = MAX(row[c], v);                              \
			break;                                                                                 \
		case 1:                                                                                    \
			for (int64_t c = 0; c < n; c++) row[c] = MAX(v, row[c]);                              \
			break;                                                                                 \
		case 2:                                                                                    \
			for (int64_t c = 0; c < n; c++) row[c] = MIN(row[c], v);                              \
			break;                                                                                 \
		default:                                                                                   \
			for (int64_t c = 0; c < n; c++) row[c] = MIN(v, row[c]);                              \
		}                                                                                          \
	}
RT_POOL_FOLD(float, rt_maxf_sel, rt_minf_sel)
RT_POOL_FOLD(double, rt_max_sel, rt_min_sel)

// The same four on 32-byte vectors (GCC's vector extensions: a
// comparison gives each lane all ones or zeros), so that the row loops
// below are vector code whatever the optimizer makes of the scalar ones.
typedef float rt_vf __attribute__((vector_size(32)));
typedef int32_t rt_vfi __attribute__((vector_size(32)));
typedef double rt_vd __attribute__((vector_size(32)));
typedef int64_t rt_vdi __attribute__((vector_size(32)));
// (By pointer: a 32-byte vector argument of a function built without
// AVX is an ABI the compiler warns about.)
#define RT_VSEL(NAME, V, VI, CMP, EQ)                                                              \
	static inline __attribute__((always_inline)) void NAME(V* out, const V* pa, const V* pb) {     \
		const V a = *pa, b = *pb;                                                                  \
		VI u = (VI)a, v = (VI)b;                                                                   \
		VI m = (VI)(a CMP b), r = (u & m) | (v & ~m);                                              \
		m = (VI)(a == b);                                                                          \
		r = (r & ~m) | ((u EQ v) & m);                                                             \
		m = (VI)(b != b);                                                                          \
		r = (r & ~m) | (v & m);                                                                    \
		m = (VI)(a != a);                                                                          \
		r = (r & ~m) | (u & m);                                                                    \
		*out = (V)r;                                                                               \
	}

// RT_POOL_ROW defines rt_pool_row_T_V: count output rows (C apart) of
// windows that stay inside the input, xb being the input at the first
// row's first window position (the next row's is step further) and woff
// the offsets of the others (row-major). A vector of
// outputs stays in a register while every window position folds into
// it, in order, so each output is written once; the remainder goes one
// element at a time. Instantiated once for any CPU and once for AVX2.
#define RT_POOL_ROW_LOOP(T, VEC, VF, SF, SWAP)                                                     \
	{                                                                                              \
		const int vw = (int)(sizeof(VEC) / sizeof(T));                                             \
		VEC vinit;                                                                                 \
		for (int j = 0; j < vw; j++) vinit[j] = init;                                              \
		int64_t c0 = 0;                                                                            \
		/* Two vectors at a time: two independent chains of folds. */                              \
		for (; c0 + 2 * vw <= C; c0 += 2 * vw) {                                                   \
			VEC acc0 = vinit, acc1 = vinit;                                                        \
			for (int64_t w = 0; w < wins; w++) {                                                   \
				VEC e0, e1;                                                                        \
				memcpy(&e0, xb + woff[w] + c0, sizeof e0);                                         \
				memcpy(&e1, xb + woff[w] + c0 + vw, sizeof e1);                                    \
				if (SWAP) {                                                                        \
					VF(&acc0, &e0, &acc0);                                                         \
					VF(&acc1, &e1, &acc1);                                                         \
				} else {                                                                           \
					VF(&acc0, &acc0, &e0);                                                         \
					VF(&acc1, &acc1, &e1);                                                         \
				}                                                                                  \
			}                                                                                      \
			memcpy(row + c0, &acc0, sizeof acc0);                                                  \
			memcpy(row + c0 + vw, &acc1, sizeof acc1);                                             \
		}                                                                                          \
		for (; c0 + vw <= C; c0 += vw) {                                                           \
			VEC acc = vinit;                                                                       \
			for (int64_t w = 0; w < wins; w++) {                                                   \
				VEC e;                                                                             \
				memcpy(&e, xb + woff[w] + c0, sizeof e);                                           \
				if (SWAP) VF(&acc, &e, &acc);                                                      \
				else VF(&acc, &acc, &e);                                                           \
			}                                                                                      \
			memcpy(row + c0, &acc, sizeof acc);                                                    \
		}                                                                                          \
		for (; c0 < C; c0++) {                                                                     \
			T acc = init;                                                                          \
			for (int64_t w = 0; w < wins; w++) {                                                   \
				const T e = xb[woff[w] + c0];                                                      \
				acc = SWAP ? SF(e, acc) : SF(acc, e);                                              \
			}                                                                                      \
			row[c0] = acc;                                                                         \
		}                                                                                          \
	}
#define RT_POOL_ROW(T, V, VEC, VMAX, VMIN, MAX, MIN)                                                 \
	static void rt_pool_row_##T##_##V(T* restrict row, const T* restrict xb, int64_t count, int64_t step, \
			const int64_t* woff, int64_t wins, int64_t C, T init, int mode) {                      \
		for (int64_t k = 0; k < count; k++, row += C, xb += step) {                                \
			switch (mode) {                                                                        \
			case 0: RT_POOL_ROW_LOOP(T, VEC, VMAX, MAX, 0) break;                                  \
			case 1: RT_POOL_ROW_LOOP(T, VEC, VMAX, MAX, 1) break;                                  \
			case 2: RT_POOL_ROW_LOOP(T, VEC, VMIN, MIN, 0) break;                                  \
			default: RT_POOL_ROW_LOOP(T, VEC, VMIN, MIN, 1)                                        \
			}                                                                                      \
		}                                                                                          \
	}
// RT_POOL_VARIANT instantiates both element types' rows for one variant.
#define RT_POOL_VARIANT(V)                                                                          \
	RT_VSEL(rt_vmaxf_##V, rt_vf, rt_vfi, >, &)                                                     \
	RT_VSEL(rt_vminf_##V, rt_vf, rt_vfi, <, |)                                                     \
	RT_VSEL(rt_vmax_##V, rt_vd, rt_vdi, >, &)                                                      \
	RT_VSEL(rt_vmin_##V, rt_vd, rt_vdi, <, |)                                                      \
	RT_POOL_ROW(float, V, rt_vf, rt_vmaxf_##V, rt_vminf_##V, rt_maxf_sel, rt_minf_sel)              \
	RT_POOL_ROW(double, V, rt_vd, rt_vmax_##V, rt_vmin_##V, rt_max_sel, rt_min_sel)
RT_POOL_VARIANT(generic)
#if defined(__x86_64__)
#pragma GCC push_options
#pragma GCC target("avx2")
RT_POOL_VARIANT(avx2)
#pragma GCC pop_options
#else
#define rt_pool_row_float_avx2 rt_pool_row_float_generic
#define rt_pool_row_double_avx2 rt_pool_row_double_generic
#endif

// RT_POOL defines the routine for element type T. Part t of n does the
// output rows [rows*t/n, rows*(t+1)/n), in runs along the last leading
// dimension; the row and window positions advance as odometers (no
// division per position). Without base dilation a window's positions
// are at fixed offsets from its first (woff, computed once per call),
// and the rows of a run whose windows stay inside the input in every
// dimension (all rows, without padding) go to rt_pool_row together; the
// others fold position by position, the init value where a position is
// padding or a dilation hole.
#define RT_POOL(T, SUF)                                                                           \
	/* One row, window position by window position: o holds the row's     \
	   position in every leading dimension but the last, ol in that one. */ \
	static void rt_pool_row_slow_##SUF(T* row, const T* x, T init, const int64_t* const* q,        \
			const int64_t* xs, const int64_t* o, int64_t ol, int nd, int64_t wins, int64_t C,    \
			int mode) {                                                                            \
		for (int64_t c = 0; c < C; c++) row[c] = init;                                             \
		int64_t wd[RT_POOL_MAXD] = {0};                                                            \
		for (int64_t w = 0; w < wins; w++) {                                                       \
			int64_t off = 0;                                                                       \
			int in = 1;                                                                            \
			for (int d = 0; d < nd && in; d++) {                                                   \
				const int64_t od = d == nd - 1 ? ol : o[d];                                        \
				const int64_t pos = od * q[d][RT_PSTRIDE] + wd[d] * q[d][RT_PWDIL] - q[d][RT_PPADLO]; \
				const int64_t bd = q[d][RT_PBDIL];                                                 \
				if (pos < 0 || pos % bd != 0 || pos / bd >= q[d][RT_PIN]) in = 0;                  \
				else off += pos / bd * xs[d];                                                      \
			}                                                                                      \
			if (in) rt_pool_fold_##T(row, x + off, C, mode);                                       \
			else rt_pool_fill_##T(row, init, C, mode);                                             \
			for (int d = nd - 1; d >= 0 && ++wd[d] == q[d][RT_PWIN]; d--) wd[d] = 0;               \
		}                                                                                          \
	}                                                                                              \
	static void rt_pool_rows_##SUF(void** bufs, int64_t t, int64_t n) {                            \
		const T* x = (const T*)bufs[0];                                                            \
		const T init = *(const T*)bufs[1];                                                         \
		const int64_t* P = (const int64_t*)bufs[2];                                                \
		T* out = (T*)bufs[3];                                                                      \
		const int nd = (int)P[RT_PRANK] - 1;                                                       \
		const int mode = (int)(P[RT_POP] * 2 + P[RT_PSWAP]);                                       \
		const int64_t C = P[RT_PC];                                                                \
		const int64_t* q[RT_POOL_MAXD];                                                            \
		int64_t xs[RT_POOL_MAXD], s = C, rows = 1, wins = 1;                                       \
		int dilated = 0;                                                                           \
		for (int d = nd - 1; d >= 0; d--) {                                                        \
			q[d] = P + RT_PDIM + d * RT_PPD;                                                       \
			xs[d] = s;                                                                             \
			s *= q[d][RT_PIN];                                                                     \
			rows *= q[d][RT_POUT];                                                                 \
			wins *= q[d][RT_PWIN];                                                                 \
			dilated |= q[d][RT_PBDIL] != 1;                                                        \
		}                                                                                          \
		const int64_t r0 = rows * t / n, r1 = rows * (t + 1) / n;                                  \
		if (r0 >= r1) return;                                                                      \
		/* The window's offsets (NULL: every row position by position). */                         \
		int64_t* woff = dilated ? NULL : (int64_t*)malloc((size_t)wins * sizeof(int64_t));         \
		if (woff) {                                                                                \
			int64_t wd[RT_POOL_MAXD] = {0};                                                        \
			for (int64_t w = 0; w < wins; w++) {                                                   \
				int64_t off = 0;                                                                   \
				for (int d = 0; d < nd; d++) off += wd[d] * q[d][RT_PWDIL] * xs[d];                \
				woff[w] = off;                                                                     \
				for (int d = nd - 1; d >= 0 && ++wd[d] == q[d][RT_PWIN]; d--) wd[d] = 0;           \
			}                                                                                      \
		}                                                                                          \
		const int avx2 = xk_rt_avx2();                                                             \
		const int l = nd - 1; /* the dimension rows run along */                                   \
		int64_t o[RT_POOL_MAXD];                                                                   \
		for (int64_t d = l, rr = r0; d >= 0; d--) {                                                \
			o[d] = rr % q[d][RT_POUT];                                                             \
			rr /= q[d][RT_POUT];                                                                   \
		}                                                                                          \
		for (int64_t r = r0; r < r1;) {                                                            \
			/* A run: the rows up to the end of this part or of dimension l. */                    \
			const int64_t run = r1 - r < q[l][RT_POUT] - o[l] ? r1 - r : q[l][RT_POUT] - o[l];     \
			/* Rows [lo, hi) of the run read inside the input (with woff). */                     \
			int64_t lo = run, hi = run, base = 0;                                                  \
			int inside = woff != NULL;                                                             \
			for (int d = 0; d < l && inside; d++) {                                                \
				const int64_t first = o[d] * q[d][RT_PSTRIDE] - q[d][RT_PPADLO];                   \
				inside = first >= 0 && first + (q[d][RT_PWIN] - 1) * q[d][RT_PWDIL] < q[d][RT_PIN]; \
				base += first * xs[d];                                                             \
			}                                                                                      \
			if (inside) {                                                                          \
				const int64_t st = q[l][RT_PSTRIDE], ext = (q[l][RT_PWIN] - 1) * q[l][RT_PWDIL];   \
				for (lo = 0; lo < run && (o[l] + lo) * st - q[l][RT_PPADLO] < 0; lo++) {}          \
				for (hi = lo; hi < run && (o[l] + hi) * st - q[l][RT_PPADLO] + ext < q[l][RT_PIN]; hi++) {} \
				if (hi > lo) {                                                                     \
					const T* xb = x + base + ((o[l] + lo) * st - q[l][RT_PPADLO]) * xs[l];        \
					if (avx2) rt_pool_row_##T##_avx2(out + (r + lo) * C, xb, hi - lo, st * xs[l], woff, wins, C, init, mode); \
					else rt_pool_row_##T##_generic(out + (r + lo) * C, xb, hi - lo, st * xs[l], woff, wins, C, init, mode); \
				}                                                                                  \
			}                                                                                      \
			/* The rest, [0, lo) and [hi, run), position by position. */                           \
			for (int64_t k = 0; k < lo; k++)                                                       \
				rt_pool_row_slow_##SUF(out + (r + k) * C, x, init, q, xs, o, o[l] + k, nd, wins, C, mode); \
			for (int64_t k = hi; k < run; k++)                                                     \
				rt_pool_row_slow_##SUF(out + (r + k) * C, x, init, q, xs, o, o[l] + k, nd, wins, C, mode); \
			/* Advance past the run: dimension l wraps (or the part ends). */                      \
			r += run;                                                                              \
			o[l] += run;                                                                           \
			for (int d = l; d > 0 && o[d] == q[d][RT_POUT]; d--) {                                 \
				o[d] = 0;                                                                          \
				o[d - 1]++;                                                                        \
			}                                                                                      \
		}                                                                                          \
		free(woff);                                                                                \
	}                                                                                              \
	void xk_rt_pool_##SUF##_par(void** bufs, int64_t t, int64_t n) { rt_pool_rows_##SUF(bufs, t, n); } \
	void xk_rt_pool_##SUF(void** bufs) { rt_pool_rows_##SUF(bufs, 0, 1); }

RT_POOL(float, f32)
RT_POOL(double, f64)

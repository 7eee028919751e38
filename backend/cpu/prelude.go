package cpu

// prelude is included at the top of every kernel translation unit. All
// helpers are static so that kernels linked into one library never clash,
// and every helper defines behaviour C leaves undefined (integer division
// by zero, out-of-range float-to-int conversion) the way StableHLO and the
// reference interpreter define it: a kernel must never trap.
const prelude = `/* No system headers: parsing <math.h> and <stdlib.h> costs about half of
   the compile time of a small kernel. The declarations below are the
   standard ones, so the compiler still treats them as builtins. */
typedef __INT8_TYPE__ int8_t;
typedef __INT16_TYPE__ int16_t;
typedef __INT32_TYPE__ int32_t;
typedef __INT64_TYPE__ int64_t;
typedef __UINT8_TYPE__ uint8_t;
typedef __UINT16_TYPE__ uint16_t;
typedef __UINT32_TYPE__ uint32_t;
typedef __UINT64_TYPE__ uint64_t;
typedef __SIZE_TYPE__ size_t;
#define NULL ((void*)0)
#define INT8_MIN (-128)
#define INT8_MAX 127
#define INT16_MIN (-32768)
#define INT16_MAX 32767
#define INT32_MIN (-2147483647-1)
#define INT32_MAX 2147483647
#define INT64_MIN (-9223372036854775807LL-1)
#define INT64_MAX 9223372036854775807LL
#define UINT8_MAX 255
#define UINT16_MAX 65535
#define UINT32_MAX 4294967295U
#define UINT64_MAX 18446744073709551615ULL
#define NAN (__builtin_nanf(""))
#define INFINITY (__builtin_inff())
#define M_PI 3.14159265358979323846
void* malloc(size_t);
void free(void*);
void* aligned_alloc(size_t, size_t);
void* memset(void*, int, size_t);
void* memcpy(void*, const void*, size_t);
/* A kernel whose scratch allocation fails leaves its outputs unwritten:
   it counts the failure here, and the runtime turns the run into an error
   rather than hand back garbage. Weak, so the kernels of one library share
   one counter whichever translation unit defines it. */
__attribute__((weak, visibility("default"))) unsigned long long xk_alloc_failures;
#define XK_ALLOC_FAILED() __atomic_fetch_add(&xk_alloc_failures, 1ULL, __ATOMIC_RELAXED)
#define XK_MATH1(n) double n(double); float n##f(float);
#define XK_MATH2(n) double n(double, double); float n##f(float, float);
XK_MATH1(exp) XK_MATH1(expm1) XK_MATH1(log) XK_MATH1(log1p) XK_MATH1(tanh)
XK_MATH1(sqrt) XK_MATH1(cbrt) XK_MATH1(cos) XK_MATH1(sin) XK_MATH1(tan)
XK_MATH1(acos) XK_MATH1(acosh) XK_MATH1(asin) XK_MATH1(asinh) XK_MATH1(atan)
XK_MATH1(atanh) XK_MATH1(cosh) XK_MATH1(sinh) XK_MATH1(erf) XK_MATH1(erfc)
XK_MATH1(lgamma) XK_MATH1(floor) XK_MATH1(ceil) XK_MATH1(nearbyint)
XK_MATH1(round) XK_MATH1(fabs)
XK_MATH2(pow) XK_MATH2(fmod) XK_MATH2(atan2) XK_MATH2(nextafter)

#define XK_INLINE static inline __attribute__((always_inline, unused))
/* Kernels that touch at most a thousand elements (kernel.small) are
   built at -O1 whatever the unit's level: they run in a few
   microseconds either way, and the vectorizer's loops and epilogues
   were most of their compile (see smallElements). GCC only; other
   compilers build them at the unit's level. */
/* Untuned elementwise loops, kernels calling the inline transcendental
   helpers (xk_expf, xk_tanhf, ...) and lanes reductions are built at -O1
   with FMA contraction and the loop vectorizer, the level of
   cc.LevelVectorCode, whatever their unit's level (kernel.bodyAt): the
   same bits as -O2, for 12-30% less of their compile. */
#if defined(__GNUC__) && !defined(__clang__)
#define XK_SMALL __attribute__((optimize("O1")))
#define XK_DEAR __attribute__((optimize("O1", "expensive-optimizations", "tree-loop-vectorize")))
#else
#define XK_SMALL
#define XK_DEAR
#endif

/* Signed integer division: x/0 = -1, MIN/-1 = MIN (two's-complement wrap). */
#define XK_SDIV(T, MINV) \
XK_INLINE T xk_div_##T(T a, T b) { if (b == 0) return (T)-1; if (b == (T)-1) return (T)(0 - (uint64_t)a); return a / b; } \
XK_INLINE T xk_rem_##T(T a, T b) { if (b == 0) return a; if (b == (T)-1) return 0; return a % b; }
XK_SDIV(int8_t, INT8_MIN)
XK_SDIV(int16_t, INT16_MIN)
XK_SDIV(int32_t, INT32_MIN)
XK_SDIV(int64_t, INT64_MIN)
/* Unsigned: x/0 = all ones, x%0 = x. */
#define XK_UDIV(T) \
XK_INLINE T xk_div_##T(T a, T b) { return b == 0 ? (T)~(T)0 : (T)(a / b); } \
XK_INLINE T xk_rem_##T(T a, T b) { return b == 0 ? a : (T)(a % b); }
XK_UDIV(uint8_t)
XK_UDIV(uint16_t)
XK_UDIV(uint32_t)
XK_UDIV(uint64_t)

/* Integer power by squaring; negative exponents give 0 except for bases
   1 and -1, as in XLA. */
#define XK_IPOW(T, SIGNED) \
XK_INLINE T xk_pow_##T(T a, T b) { \
	if (SIGNED && (int64_t)b < 0) { if (a == 1) return 1; if ((int64_t)a == -1) return ((-(int64_t)b) & 1) ? (T)-1 : (T)1; return 0; } \
	uint64_t e = (uint64_t)b, r = 1, x = (uint64_t)a; \
	while (e) { if (e & 1) r *= x; x *= x; e >>= 1; } \
	return (T)r; }
XK_IPOW(int8_t, 1)
XK_IPOW(int16_t, 1)
XK_IPOW(int32_t, 1)
XK_IPOW(int64_t, 1)
XK_IPOW(uint8_t, 0)
XK_IPOW(uint16_t, 0)
XK_IPOW(uint32_t, 0)
XK_IPOW(uint64_t, 0)

/* NaN-propagating maximum/minimum; -0 < +0. The branches suit a running
   maximum (a reduce): the accumulator rarely changes, the branches are
   predicted and the loop-carried chain is short. */
XK_INLINE float xk_maxf(float a, float b) { if (a != a) return a; if (b != b) return b; if (a == b) return __builtin_signbitf(a) ? b : a; return a > b ? a : b; }
XK_INLINE float xk_minf(float a, float b) { if (a != a) return a; if (b != b) return b; if (a == b) return __builtin_signbitf(a) ? a : b; return a < b ? a : b; }
XK_INLINE double xk_max(double a, double b) { if (a != a) return a; if (b != b) return b; if (a == b) return __builtin_signbit(a) ? b : a; return a > b ? a : b; }
XK_INLINE double xk_min(double a, double b) { if (a != a) return a; if (b != b) return b; if (a == b) return __builtin_signbit(a) ? a : b; return a < b ? a : b; }
/* The same as masks on the bits, for small windows (reduce_window's
   pooling), where each output combines a few unrelated elements: there the
   branches mispredicted about every other element on random data (and
   ternaries, which GCC turns back into branches, as much), and the masks
   ran 10-60x faster and vectorize across outputs. Not for long running
   reductions: the longer loop-carried chain made those 2x slower. Equal
   operands differ at most in the sign of a zero, so AND of their bits
   (max) or OR (min) picks +0 or -0. */
XK_INLINE float xk_maxf_sel(float a, float b) { uint32_t u, v; memcpy(&u, &a, 4); memcpy(&v, &b, 4); uint32_t m = -(uint32_t)(a > b), r = (u & m) | (v & ~m); m = -(uint32_t)(a == b); r = (r & ~m) | (u & v & m); m = -(uint32_t)(b != b); r = (r & ~m) | (v & m); m = -(uint32_t)(a != a); r = (r & ~m) | (u & m); float f; memcpy(&f, &r, 4); return f; }
XK_INLINE float xk_minf_sel(float a, float b) { uint32_t u, v; memcpy(&u, &a, 4); memcpy(&v, &b, 4); uint32_t m = -(uint32_t)(a < b), r = (u & m) | (v & ~m); m = -(uint32_t)(a == b); r = (r & ~m) | ((u | v) & m); m = -(uint32_t)(b != b); r = (r & ~m) | (v & m); m = -(uint32_t)(a != a); r = (r & ~m) | (u & m); float f; memcpy(&f, &r, 4); return f; }
XK_INLINE double xk_max_sel(double a, double b) { uint64_t u, v; memcpy(&u, &a, 8); memcpy(&v, &b, 8); uint64_t m = -(uint64_t)(a > b), r = (u & m) | (v & ~m); m = -(uint64_t)(a == b); r = (r & ~m) | (u & v & m); m = -(uint64_t)(b != b); r = (r & ~m) | (v & m); m = -(uint64_t)(a != a); r = (r & ~m) | (u & m); double f; memcpy(&f, &r, 8); return f; }
XK_INLINE double xk_min_sel(double a, double b) { uint64_t u, v; memcpy(&u, &a, 8); memcpy(&v, &b, 8); uint64_t m = -(uint64_t)(a < b), r = (u & m) | (v & ~m); m = -(uint64_t)(a == b); r = (r & ~m) | ((u | v) & m); m = -(uint64_t)(b != b); r = (r & ~m) | (v & m); m = -(uint64_t)(a != a); r = (r & ~m) | (u & m); double f; memcpy(&f, &r, 8); return f; }

XK_INLINE float xk_signf(float x) { if (x != x || x == 0) return x; return x > 0 ? 1.0f : -1.0f; }
XK_INLINE double xk_sign(double x) { if (x != x || x == 0) return x; return x > 0 ? 1.0 : -1.0; }
/* f32 exp and tanh without a libm call per element, so that the loops
   calling them vectorize (a scalar tanhf call was half the run time of
   the examples' GELU and tanh layers). Both work in double: e^y - 1 for
   y = n ln2 + r, |r| <= ln2/2 (two-part ln2), by the Taylor series of
   e^r - 1 to r^13 (truncation below 1e-16 relative), times 2^n built in
   the exponent bits; rounded once to float the result is the correctly
   rounded one except within ~1e-15 of a rounding boundary, which is what
   the reference (Go's float64 functions rounded to f32) computes. Every
   step is branch-free, clamps included (integer min on the bits): a
   select that skips floating-point work is not if-converted under
   -ftrapping-math, and the loop would not vectorize.
   The series is summed as its even and odd halves in r^2, two chains of
   six steps instead of one of thirteen, and the clamps work on the
   float's bits (eight lanes a vector, where 64-bit lanes need compares
   for a shift AVX2 lacks): the GELU kernel's tanh went from 2.6 to 2.1
   ns an element, exp from 2.1 to 1.9. Both give the bits the previous
   forms gave for every one of the 2^32 inputs (checked exhaustively). */
XK_INLINE double xk_exp_parts(double y, double* s) {
	const double shift = 0x1.8p52;
	double kd = y * 0x1.71547652b82fep0 + shift;
	double n = kd - shift;
	double r = (y - n * 0x1.62e42fefa3800p-1) - n * 0x1.ef35793c7673p-45;
	double r2 = r * r;
	double pe = 1.0 / 479001600.0;
	pe = pe * r2 + 1.0 / 3628800.0;
	pe = pe * r2 + 1.0 / 40320.0;
	pe = pe * r2 + 1.0 / 720.0;
	pe = pe * r2 + 1.0 / 24.0;
	pe = pe * r2 + 0.5;
	double po = 1.0 / 6227020800.0;
	po = po * r2 + 1.0 / 39916800.0;
	po = po * r2 + 1.0 / 362880.0;
	po = po * r2 + 1.0 / 5040.0;
	po = po * r2 + 1.0 / 120.0;
	po = po * r2 + 1.0 / 6.0;
	double p = (pe + po * r) * r2 + r;
	int64_t kb;
	memcpy(&kb, &kd, 8);
	kb = (kb - 0x4338000000000000LL + 1023) * ((int64_t)1 << 52);
	memcpy(s, &kb, 8);
	return p;
}
/* v with its magnitude clamped to posLim (v >= 0) or negLim (v < 0),
   both given as float bits; NaN and infinities clamp too. */
XK_INLINE float xk_clampmagf(float v, int32_t posLim, int32_t negLim) {
	int32_t b, sgn, lim, mag, d;
	memcpy(&b, &v, 4);
	sgn = b >> 31;
	lim = posLim ^ ((posLim ^ negLim) & sgn);
	mag = b & INT32_MAX;
	d = mag - lim;
	mag -= d & ~(d >> 31);
	b = mag | (b & INT32_MIN);
	memcpy(&v, &b, 4);
	return v;
}
/* r, or x where x is a NaN. */
XK_INLINE float xk_nanback(float r, float x) {
	int32_t rb, xb, m;
	memcpy(&rb, &r, 4);
	memcpy(&xb, &x, 4);
	m = (int32_t)(0x7f800000 - (xb & 0x7fffffff)) >> 31;
	rb = (rb & ~m) | (xb & m);
	memcpy(&r, &rb, 4);
	return r;
}
/* e^x: |x| clamped to 100 (positive) or 200 (negative), where the f32
   result is already Inf or 0. */
XK_INLINE float xk_expf(float x) {
	double y = (double)xk_clampmagf(x, 0x42c80000, 0x43480000);
	double s, p = xk_exp_parts(y, &s);
	return xk_nanback((float)(s * p + s), x);
}
/* tanh x = sign(x) e/(e + 2) with e = e^2|x| - 1; |x| clamped to 10
   (on the bits, where NaN and Inf are above 10's), beyond which the f32
   result is 1; the sign goes back on the float result. */
XK_INLINE float xk_tanhf(float x) {
	int32_t b, xb;
	memcpy(&xb, &x, 4);
	b = xb & INT32_MAX;
	b = b < 0x41200000 ? b : 0x41200000;
	float a;
	memcpy(&a, &b, 4);
	double t = (double)a;
	double s, p = xk_exp_parts(2.0 * t, &s);
	double e = s * p + (s - 1.0);
	float r = (float)(e / (e + 2.0));
	int32_t rb;
	memcpy(&rb, &r, 4);
	rb |= xb & INT32_MIN;
	memcpy(&r, &rb, 4);
	return xk_nanback(r, x);
}
XK_INLINE float xk_logisticf(float x) { return 1.0f / (1.0f + expf(-x)); }
XK_INLINE double xk_logistic(double x) { return 1.0 / (1.0 + exp(-x)); }

/* f32 cosh/sinh follow the chlo decomposition XLA uses (e^(x+log 1/2)
   terms evaluated in float), so results match the reference to the ULP. */
XK_INLINE float xk_exp32(float x) { return (float)exp((double)x); }
XK_INLINE float xk_coshf(float x) { const float lh = (float)-0.69314718055994530942; return xk_exp32(x + lh) + xk_exp32(-x + lh); }
XK_INLINE float xk_sinhf(float x) {
	const float lh = (float)-0.69314718055994530942;
	if (fabsf(x) >= 1) return xk_exp32(x + lh) - xk_exp32(-x + lh);
	float e = (float)expm1((double)x);
	return 0.5f * (e + e / (e + 1));
}

/* 16-bit floats are stored as bit patterns (uint16_t) and computed in
   float, which holds every f16 and bf16 value exactly; every op on them
   rounds its float result back to the 16-bit format (nearest-even), as the
   reference interpreter does. */
XK_INLINE float xk_u2f(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
XK_INLINE uint32_t xk_f2u(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
XK_INLINE double xk_u2d(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }
XK_INLINE uint64_t xk_d2u(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
XK_INLINE float xk_bf2f(uint16_t b) { return xk_u2f((uint32_t)b << 16); }
XK_INLINE uint16_t xk_f2bf(float f) {
	uint32_t u = xk_f2u(f);
	if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
	u += 0x7fffu + ((u >> 16) & 1u);
	return (uint16_t)(u >> 16);
}
XK_INLINE float xk_h2f(uint16_t h) {
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h & 0x7c00u) >> 10, m = (uint32_t)(h & 0x03ffu) << 13;
	if (e == 0x1f) return xk_u2f(sign | (m ? 0x7fc00000u : 0x7f800000u) | m);
	if (e == 0) {
		if (m == 0) return xk_u2f(sign);
		e++;
		while ((m & 0x7f800000u) == 0) { m <<= 1; e--; }
		m &= 0x007fffffu;
	}
	return xk_u2f(sign | ((e + 112u) << 23) | m);
}
XK_INLINE uint16_t xk_f2h(float f) {
	uint32_t u = xk_f2u(f), sign = u & 0x80000000u, e = u & 0x7f800000u, m = u & 0x007fffffu;
	uint32_t hs = sign >> 16;
	if (e == 0x7f800000u) return (uint16_t)(hs | 0x7c00u | (m ? 0x0200u : 0u) | (m >> 13));
	int32_t he = (int32_t)(e >> 23) - 127 + 15;
	if (he >= 0x1f) return (uint16_t)(hs | 0x7c00u);
	if (he <= 0) {
		if (14 - he > 24) return (uint16_t)hs;
		uint32_t c = m | 0x00800000u, hc = c >> (uint32_t)(14 - he), rb = 1u << (uint32_t)(13 - he);
		if ((c & rb) != 0 && (c & (3u * rb - 1u)) != 0) hc++;
		return (uint16_t)(hs | hc);
	}
	uint32_t r = hs | ((uint32_t)he << 10) | (m >> 13);
	if ((m & 0x1000u) != 0 && (m & 0x2fffu) != 0) r++;
	return (uint16_t)r;
}
XK_INLINE float xk_rh(float x) { return xk_h2f(xk_f2h(x)); }
XK_INLINE float xk_rbf(float x) { return xk_bf2f(xk_f2bf(x)); }
/* double to float rounding to odd: exact, or the odd neighbour toward
   zero, so that rounding once more to f16/bf16 is correctly rounded. */
XK_INLINE float xk_d2f_odd(double d) {
	float f = (float)d;
	if (d != d || (double)f == d) return f;
	uint32_t u = xk_f2u(f);
	if (fabs((double)f) > fabs(d)) u--;
	return xk_u2f(u | 1u);
}
/* Integers to double rounding to odd (exact below 2^53). */
XK_INLINE double xk_u2d_odd(uint64_t u) {
	if (u < (1ull << 53)) return (double)u;
	int sh = 11 - __builtin_clzll(u);
	uint64_t m = u >> sh;
	if (u & ((1ull << sh) - 1)) m |= 1;
	return (double)m * (double)(1ull << sh);
}
XK_INLINE double xk_i2d_odd(int64_t v) { return v < 0 ? -xk_u2d_odd(0 - (uint64_t)v) : xk_u2d_odd((uint64_t)v); }

/* Shifts: the amount is read as unsigned; amounts >= the width give 0, or
   the sign fill for arithmetic right shifts (spec §shift_*). */
#define XK_SHIFT(T, UT, ST, W) \
XK_INLINE T xk_shl_##T(T a, T b) { return (UT)b >= W ? (T)0 : (T)((UT)a << (UT)b); } \
XK_INLINE T xk_shrl_##T(T a, T b) { return (UT)b >= W ? (T)0 : (T)((UT)a >> (UT)b); } \
XK_INLINE T xk_shra_##T(T a, T b) { UT s = (UT)b >= W ? (UT)(W - 1) : (UT)b; return (T)(UT)((ST)a >> s); } \
XK_INLINE T xk_clz_##T(T a) { return (UT)a == 0 ? (T)W : (T)(__builtin_clzll((uint64_t)(UT)a) - (64 - W)); } \
XK_INLINE T xk_popcnt_##T(T a) { return (T)__builtin_popcountll((uint64_t)(UT)a); }
XK_SHIFT(int8_t, uint8_t, int8_t, 8)
XK_SHIFT(int16_t, uint16_t, int16_t, 16)
XK_SHIFT(int32_t, uint32_t, int32_t, 32)
XK_SHIFT(int64_t, uint64_t, int64_t, 64)
XK_SHIFT(uint8_t, uint8_t, int8_t, 8)
XK_SHIFT(uint16_t, uint16_t, int16_t, 16)
XK_SHIFT(uint32_t, uint32_t, int32_t, 32)
XK_SHIFT(uint64_t, uint64_t, int64_t, 64)

/* reduce_precision on a float's bit pattern (XLA's algorithm): round the
   mantissa to mb bits (nearest-even), flush exponents outside eb bits to
   Inf or zero, keep NaN (Inf when mb = 0). */
XK_INLINE uint64_t xk_redprec(uint64_t v, int se, int sm, int eb, int mb) {
	int w = 1 + se + sm;
	uint64_t sign = 1ull << (w - 1), em = ((1ull << se) - 1) << sm, mm = (1ull << sm) - 1, x = v;
	int nan = (v & em) == em && (v & mm) != 0;
	if (mb < sm) {
		uint64_t last = 1ull << (sm - mb);
		x = (x + (last >> 1) - 1 + ((x & last) >> (sm - mb))) & ~(last - 1);
	}
	if (eb < se) {
		uint64_t sb = (1ull << (se - 1)) - 1, rb = (1ull << (eb - 1)) - 1, e = x & em, s = x & sign;
		if (e > ((sb + rb) << sm)) x = s | em;
		else if (e <= ((sb - rb) << sm)) x = s;
	}
	if (nan) return mb > 0 ? v : ((v & sign) | em);
	return x;
}

/* Threefry-2x32 with 20 rounds (rng_bit_generator THREE_FRY): c is the
   counter, k the key, both split into 32-bit halves, low first; the first
   output word is the low half of the result. */
XK_INLINE uint32_t xk_rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }
XK_INLINE uint64_t xk_threefry(uint64_t c, uint64_t k) {
	static const int rot[8] = {13, 15, 26, 6, 17, 29, 16, 24};
	uint32_t ks[3] = {(uint32_t)k, (uint32_t)(k >> 32), 0};
	ks[2] = 0x1BD11BDAu ^ ks[0] ^ ks[1];
	uint32_t x0 = (uint32_t)c + ks[0], x1 = (uint32_t)(c >> 32) + ks[1];
	for (int i = 0; i < 5; i++) {
		for (int j = 0; j < 4; j++) { x0 += x1; x1 = xk_rotl32(x1, rot[(i % 2) * 4 + j]); x1 ^= x0; }
		x0 += ks[(i + 1) % 3];
		x1 += ks[(i + 2) % 3] + (uint32_t)(i + 1);
	}
	return ((uint64_t)x1 << 32) | x0;
}

/* Total order keys for floats: -NaN < -Inf < ... < -0 < +0 < ... < +Inf < +NaN. */
XK_INLINE int32_t xk_tokf(float x) { int32_t i; memcpy(&i, &x, 4); return i ^ (int32_t)(((uint32_t)(i >> 31)) >> 1); }
XK_INLINE int64_t xk_tok(double x) { int64_t i; memcpy(&i, &x, 8); return i ^ (int64_t)(((uint64_t)(i >> 63)) >> 1); }

/* Saturating float-to-integer conversion; NaN converts to 0. */
#define XK_F2I(T, LO, HI) \
XK_INLINE T xk_f2i_##T(double x) { if (x != x) return 0; if (x <= (double)LO) return LO; if (x >= (double)HI) return HI; return (T)x; }
XK_F2I(int8_t, INT8_MIN, INT8_MAX)
XK_F2I(int16_t, INT16_MIN, INT16_MAX)
XK_F2I(int32_t, INT32_MIN, INT32_MAX)
XK_F2I(int64_t, INT64_MIN, INT64_MAX)
XK_F2I(uint8_t, 0, UINT8_MAX)
XK_F2I(uint16_t, 0, UINT16_MAX)
XK_F2I(uint32_t, 0, UINT32_MAX)
XK_F2I(uint64_t, 0, UINT64_MAX)

/* Inverse error function: Giles' single-precision approximation refined by
   two Newton steps in double precision. */
XK_INLINE double xk_erfinv(double x) {
	if (x != x || x < -1 || x > 1) return NAN;
	if (x == 1) return INFINITY;
	if (x == -1) return -INFINITY;
	double w = -log((1.0 - x) * (1.0 + x)), p;
	if (w < 5.0) {
		w = w - 2.5;
		p = 2.81022636e-08; p = 3.43273939e-07 + p*w; p = -3.5233877e-06 + p*w;
		p = -4.39150654e-06 + p*w; p = 0.00021858087 + p*w; p = -0.00125372503 + p*w;
		p = -0.00417768164 + p*w; p = 0.246640727 + p*w; p = 1.50140941 + p*w;
	} else {
		w = sqrt(w) - 3.0;
		p = -0.000200214257; p = 0.000100950558 + p*w; p = 0.00134934322 + p*w;
		p = -0.00367342844 + p*w; p = 0.00573950773 + p*w; p = -0.0076224613 + p*w;
		p = 0.00943887047 + p*w; p = 1.00167406 + p*w; p = 2.83297682 + p*w;
	}
	double y = p * x;
	for (int i = 0; i < 2; i++) {
		double err = erf(y) - x;
		y -= err / (1.1283791670955126 * exp(-y * y));
	}
	return y;
}

/* Digamma: reflection for x < 0.5, recurrence up to 6, asymptotic series. */
XK_INLINE double xk_digamma(double x) {
	if (x != x) return x;
	if (x == -INFINITY) return NAN;
	if (x <= 0 && floor(x) == x) return NAN;
	double r = 0;
	if (x < 0.5) {
		r = -M_PI / tan(M_PI * x);
		x = 1 - x;
	}
	while (x < 6) { r -= 1 / x; x += 1; }
	double f = 1 / (x * x);
	double t = f * (-1.0/12 + f * (1.0/120 + f * (-1.0/252 + f * (1.0/240 + f * (-1.0/132)))));
	return r + log(x) - 0.5 / x + t;
}
` + chloPrelude

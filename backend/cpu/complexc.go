package cpu

// complexPrelude holds the C helpers of complex<f32> and complex<f64>
// ops. It is emitted (once per translation unit, hence the guard) before
// a kernel that computes on complex values, so programs without complex
// numbers compile to exactly the code they did before.
//
// The reference is the interpreter, which computes with Go's complex
// arithmetic and math/cmplx. These helpers are ports of that Go code, so
// that both backends agree on every special case (Inf, NaN, signed zeros)
// rather than following C99 Annex G where the two differ:
//   - multiply is the textbook (ac-bd, ad+bc) with no Annex G NaN
//     recovery, as Go's compiler emits it; complex<f32> products are
//     computed in double and each part is rounded once (Go widens
//     complex64 products the same way), which makes them exact;
//   - divide is Go's runtime.complex128div (Smith's algorithm plus the
//     C99 G.5.1 fix-ups for zero and infinite operands); complex<f32>
//     operands are widened to double, divided, and narrowed, as Go does;
//   - abs is Go's math.Hypot (the amd64 assembly version:
//     max*sqrt(1+(min/max)^2), +Inf before NaN);
//   - exp, log, sqrt, sin, cos, tan, tanh and pow are Go's math/cmplx
//     Exp, Log, Sqrt, Sin, Cos, Tan, Tanh and Pow (Go 1.26 sources),
//     evaluated in double and rounded once for complex<f32>. libm's exp,
//     sin, ... may differ from Go's math package in the last ulp, so
//     only those ops are compared with a tolerance;
//   - where the interpreter follows XLA's elemental emitter instead of
//     math/cmplx (stablehlo/complex.go: csign, cexpm1, clog1p, ctanh and
//     ctan for a part beyond 20, logistic as 1/(1+e^-z)), so do these.
//
// XK_OPQ makes a value opaque to the optimizer: kernels are compiled
// with the default -ffp-contract=fast, which would fuse a product into a
// following addition (an FMA) and change the rounding that Go, which
// does not fuse on amd64, performs. Every product whose rounding is part
// of an exact result goes through it.
const complexPrelude = `
#ifndef XK_COMPLEX
#define XK_COMPLEX
double hypot(double, double);
double copysign(double, double);
#if defined(__x86_64__) || defined(__i386__)
#define XK_OPQ(x) __asm__("" : "+x"(x))
#elif defined(__aarch64__)
#define XK_OPQ(x) __asm__("" : "+w"(x))
#else
#define XK_OPQ(x) __asm__("" : "+m"(x))
#endif
#define XK_Z(re, im) __builtin_complex((double)(re), (double)(im))
#define XK_CF(re, im) __builtin_complex((float)(re), (float)(im))
#define XK_ISINF(x) ((x) == INFINITY || (x) == -INFINITY)
#define XK_ISNAN(x) ((x) != (x))
/* A product rounded on its own (never fused into an FMA). */
XK_INLINE double xk_pmul(double a, double b) { double p = a * b; XK_OPQ(p); return p; }

XK_INLINE double _Complex xk_zmul(double _Complex x, double _Complex y) {
	double a = __real__ x, b = __imag__ x, c = __real__ y, d = __imag__ y;
	return XK_Z(xk_pmul(a, c) - xk_pmul(b, d), xk_pmul(a, d) + xk_pmul(b, c));
}
/* complex<f32> products of widened parts are exact in double: one
   rounding per part, as Go's compiler does for complex64. */
XK_INLINE float _Complex xk_cmulf(float _Complex x, float _Complex y) {
	double a = __real__ x, b = __imag__ x, c = __real__ y, d = __imag__ y;
	return XK_CF(a * c - b * d, a * d + b * c);
}
/* Go's runtime.complex128div. */
XK_INLINE double _Complex xk_zdiv(double _Complex n, double _Complex m) {
	double a = __real__ n, b = __imag__ n, c = __real__ m, d = __imag__ m, e, f;
	if (fabs(c) >= fabs(d)) {
		double ratio = d / c, denom = c + xk_pmul(ratio, d);
		e = (a + xk_pmul(b, ratio)) / denom;
		f = (b - xk_pmul(a, ratio)) / denom;
	} else {
		double ratio = c / d, denom = d + xk_pmul(ratio, c);
		e = (xk_pmul(a, ratio) + b) / denom;
		f = (xk_pmul(b, ratio) - a) / denom;
	}
	if (XK_ISNAN(e) && XK_ISNAN(f)) {
		int ainf = XK_ISINF(a), binf = XK_ISINF(b), cinf = XK_ISINF(c), dinf = XK_ISINF(d);
		int afin = !ainf && !XK_ISNAN(a), bfin = !binf && !XK_ISNAN(b);
		int cfin = !cinf && !XK_ISNAN(c), dfin = !dinf && !XK_ISNAN(d);
		if (c == 0 && d == 0 && (!XK_ISNAN(a) || !XK_ISNAN(b))) {
			e = copysign(INFINITY, c) * a;
			f = copysign(INFINITY, c) * b;
		} else if ((ainf || binf) && cfin && dfin) {
			a = copysign(ainf ? 1.0 : 0.0, a);
			b = copysign(binf ? 1.0 : 0.0, b);
			e = INFINITY * (xk_pmul(a, c) + xk_pmul(b, d));
			f = INFINITY * (xk_pmul(b, c) - xk_pmul(a, d));
		} else if ((cinf || dinf) && afin && bfin) {
			c = copysign(cinf ? 1.0 : 0.0, c);
			d = copysign(dinf ? 1.0 : 0.0, d);
			e = 0.0 * (xk_pmul(a, c) + xk_pmul(b, d));
			f = 0.0 * (xk_pmul(b, c) - xk_pmul(a, d));
		}
	}
	return XK_Z(e, f);
}
/* Go's math.Hypot (amd64). */
XK_INLINE double xk_hypot(double p, double q) {
	p = fabs(p);
	q = fabs(q);
	if (p == INFINITY || q == INFINITY) return INFINITY;
	if (XK_ISNAN(p) || XK_ISNAN(q)) return NAN;
	if (p < q) { double t = p; p = q; q = t; }
	if (p == 0) return 0;
	q = q / p;
	return p * sqrt(1 + xk_pmul(q, q));
}
XK_INLINE double xk_zabs(double _Complex x) { return xk_hypot(__real__ x, __imag__ x); }
/* Go's math/cmplx.IsNaN: a NaN part and no infinite part. */
XK_INLINE int xk_zisnan(double _Complex x) {
	double re = __real__ x, im = __imag__ x;
	if (XK_ISINF(re) || XK_ISINF(im)) return 0;
	return XK_ISNAN(re) || XK_ISNAN(im);
}
XK_INLINE double _Complex xk_zexp(double _Complex x) {
	double re = __real__ x, im = __imag__ x;
	if (XK_ISINF(re)) {
		if (re > 0 && im == 0) return x;
		if (XK_ISINF(im) || XK_ISNAN(im)) {
			if (re < 0) return XK_Z(0, copysign(0, im));
			return XK_Z(INFINITY, NAN);
		}
	} else if (XK_ISNAN(re) && im == 0) {
		return XK_Z(NAN, im);
	}
	double r = exp(re), s = sin(im), c = cos(im);
	return XK_Z(r * c, r * s);
}
/* The interpreter's clog: math/cmplx.Log's special values, and a real
   part without cancellation near |z| = 1 (1/2 log1p(a^2-1 + b^2), the
   squares exact inside fma) or overflow elsewhere (log a + 1/2
   log1p((b/a)^2), XLA's EmitComplexLog). */
double fma(double, double, double); /* the prelude declares no fma; only complex kernels use it */
XK_INLINE double _Complex xk_zlog(double _Complex x) {
	double re = __real__ x, im = __imag__ x;
	double a = fabs(re), b = fabs(im);
	if (a < b) { double t = a; a = b; b = t; }
	if (a == 0 || XK_ISINF(a) || XK_ISNAN(a) || XK_ISNAN(b))
		return XK_Z(log(xk_zabs(x)), atan2(im, re));
	double m;
	if (a >= 0.5 && a <= 2) {
		m = xk_pmul(0.5, log1p(fma(b, b, fma(a, a, -1))));
	} else {
		double r = b / a;
		m = log(a) + xk_pmul(0.5, log1p(xk_pmul(r, r)));
	}
	return XK_Z(m, atan2(im, re));
}
XK_INLINE double _Complex xk_zsqrt(double _Complex x) {
	double a = __real__ x, b = __imag__ x;
	if (b == 0) {
		if (a == 0) return XK_Z(0, b);
		if (a < 0) return XK_Z(0, copysign(sqrt(-a), b));
		return XK_Z(sqrt(a), b);
	}
	if (XK_ISINF(b)) return XK_Z(INFINITY, b);
	if (a == 0) {
		if (b < 0) { double r = sqrt(-0.5 * b); return XK_Z(r, -r); }
		double r = sqrt(0.5 * b);
		return XK_Z(r, r);
	}
	double scale;
	if (fabs(a) > 4 || fabs(b) > 4) {
		a *= 0.25; b *= 0.25; scale = 2;
	} else {
		a *= 1.8014398509481984e16; b *= 1.8014398509481984e16; scale = 7.450580596923828125e-9;
	}
	double r = xk_hypot(a, b), t;
	if (a > 0) {
		t = sqrt(xk_pmul(0.5, r) + xk_pmul(0.5, a));
		r = scale * fabs((0.5 * b) / t);
		t *= scale;
	} else {
		r = sqrt(xk_pmul(0.5, r) - xk_pmul(0.5, a));
		t = scale * fabs((0.5 * b) / r);
		r *= scale;
	}
	if (b < 0) return XK_Z(t, -r);
	return XK_Z(t, r);
}
XK_INLINE void xk_sinhcosh(double x, double* sh, double* ch) {
	if (fabs(x) <= 0.5) { *sh = sinh(x); *ch = cosh(x); return; }
	double e = exp(x), ei = 0.5 / e;
	e *= 0.5;
	*sh = e - ei;
	*ch = e + ei;
}
XK_INLINE double _Complex xk_zsin(double _Complex x) {
	double re = __real__ x, im = __imag__ x;
	if (im == 0 && (XK_ISINF(re) || XK_ISNAN(re))) return XK_Z(NAN, im);
	if (XK_ISINF(im)) {
		if (re == 0) return x;
		if (XK_ISINF(re) || XK_ISNAN(re)) return XK_Z(NAN, im);
	} else if (re == 0 && XK_ISNAN(im)) {
		return x;
	}
	double s = sin(re), c = cos(re), sh, ch;
	xk_sinhcosh(im, &sh, &ch);
	return XK_Z(s * ch, c * sh);
}
XK_INLINE double _Complex xk_zcos(double _Complex x) {
	double re = __real__ x, im = __imag__ x;
	if (im == 0 && (XK_ISINF(re) || XK_ISNAN(re))) return XK_Z(NAN, -im * copysign(0, re));
	if (XK_ISINF(im)) {
		if (re == 0) return XK_Z(INFINITY, -re * copysign(0, im));
		if (XK_ISINF(re) || XK_ISNAN(re)) return XK_Z(INFINITY, NAN);
	} else if (re == 0 && XK_ISNAN(im)) {
		return XK_Z(NAN, 0);
	}
	double s = sin(re), c = cos(re), sh, ch;
	xk_sinhcosh(im, &sh, &ch);
	return XK_Z(c * ch, -s * sh);
}
/* Go's math/cmplx reducePi: x reduced to [-Pi/2, Pi/2] by Cody-Waite
   below 2^30, Payne-Hanek above. */
static __attribute__((unused)) double xk_reducepi(double x) {
	if (fabs(x) < 1073741824.0) {
		const double pi1 = 3.141592502593994, pi2 = 1.5099578831723193e-07, pi3 = 1.0780605716316238e-14;
		double t = x / 3.14159265358979323846264338327950288419716939937510582097494459;
		t += 0.5;
		t = (double)(int64_t)t;
		return ((x - xk_pmul(t, pi1)) - xk_pmul(t, pi2)) - xk_pmul(t, pi3);
	}
	static const uint64_t mpi[20] = {
		0x0000000000000000ULL, 0x517cc1b727220a94ULL, 0xfe13abe8fa9a6ee0ULL, 0x6db14acc9e21c820ULL,
		0xff28b1d5ef5de2b0ULL, 0xdb92371d2126e970ULL, 0x0324977504e8c90eULL, 0x7f0ef58e5894d39fULL,
		0x74411afa975da242ULL, 0x74ce38135a2fbf20ULL, 0x9cc8eb1cc1a99cfaULL, 0x4e422fc5defc941dULL,
		0x8ffc4bffef02cc07ULL, 0xf79788c5ad05368fULL, 0xb69b3f6793e584dbULL, 0xa7a31fb34f2ff516ULL,
		0xba93dd63f5f2f8bdULL, 0x9e839cfbc5294975ULL, 0x35fdafd88fc6ae84ULL, 0x2b0198237e3db5d5ULL,
	};
	uint64_t ix = xk_d2u(x);
	int ex = (int)((ix >> 52) & 0x7FF) - 1023 - 52;
	ix &= (1ULL << 52) - 1;
	ix |= 1ULL << 52;
	unsigned digit = (unsigned)(ex + 64) / 64, bs = (unsigned)(ex + 64) % 64;
	/* Go's shifts by 64 give 0; C's are undefined, hence the guards. */
	uint64_t z0 = (mpi[digit] << bs) | (bs ? mpi[digit + 1] >> (64 - bs) : 0);
	uint64_t z1 = (mpi[digit + 1] << bs) | (bs ? mpi[digit + 2] >> (64 - bs) : 0);
	uint64_t z2 = (mpi[digit + 2] << bs) | (bs ? mpi[digit + 3] >> (64 - bs) : 0);
	uint64_t z2hi = (uint64_t)(((unsigned __int128)z2 * ix) >> 64);
	unsigned __int128 p1 = (unsigned __int128)z1 * ix;
	uint64_t z1hi = (uint64_t)(p1 >> 64), z1lo = (uint64_t)p1;
	uint64_t z0lo = z0 * ix;
	uint64_t lo = z1lo + z2hi, c = lo < z1lo;
	uint64_t hi = z0lo + z1hi + c;
	unsigned lz = hi ? (unsigned)__builtin_clzll(hi) : 64;
	uint64_t e = (uint64_t)(1023 - (lz + 1));
	hi = (lz + 1 < 64 ? hi << (lz + 1) : 0) | (lz + 1 <= 64 ? lo >> (64 - (lz + 1)) : 0);
	hi >>= 64 - 52;
	hi |= e << 52;
	x = xk_u2d(hi);
	if (x > 0.5) x--;
	return 3.14159265358979323846264338327950288419716939937510582097494459 * x;
}
/* Go's math/cmplx tanSeries: cos(2x)+cosh(2y) by its Taylor series, for
   arguments where the direct sum cancels. */
static __attribute__((unused)) double xk_tanseries(double _Complex z) {
	const double machep = 1.0 / 9007199254740992.0;
	double x = fabs(2 * __real__ z), y = fabs(2 * __imag__ z);
	x = xk_reducepi(x);
	x = x * x;
	y = y * y;
	double x2 = 1, y2 = 1, f = 1, rn = 0, d = 0, t;
	for (;;) {
		rn++; f *= rn; rn++; f *= rn;
		x2 *= x; y2 *= y;
		t = y2 + x2; t /= f; d += t;
		rn++; f *= rn; rn++; f *= rn;
		x2 *= x; y2 *= y;
		t = y2 - x2; t /= f; d += t;
		if (!(fabs(t / d) > machep)) break;
	}
	return d;
}
XK_INLINE double _Complex xk_ztan_go(double _Complex x) {
	double re = __real__ x, im = __imag__ x;
	if (XK_ISINF(im)) {
		if (XK_ISINF(re) || XK_ISNAN(re)) return XK_Z(copysign(0, re), copysign(1, im));
		return XK_Z(copysign(0, sin(2 * re)), copysign(1, im));
	}
	if (re == 0 && XK_ISNAN(im)) return x;
	double d = cos(2 * re) + cosh(2 * im);
	if (fabs(d) < 0.25) d = xk_tanseries(x);
	if (d == 0) return XK_Z(INFINITY, INFINITY);
	return XK_Z(sin(2 * re) / d, sinh(2 * im) / d);
}
XK_INLINE double _Complex xk_ztanh_go(double _Complex x) {
	double re = __real__ x, im = __imag__ x;
	if (XK_ISINF(re)) {
		if (XK_ISINF(im) || XK_ISNAN(im)) return XK_Z(copysign(1, re), copysign(0, im));
		return XK_Z(copysign(1, re), copysign(0, sin(2 * im)));
	}
	if (im == 0 && XK_ISNAN(re)) return x;
	double d = cosh(2 * re) + cos(2 * im);
	if (d == 0) return XK_Z(INFINITY, INFINITY);
	return XK_Z(sinh(2 * re) / d, sin(2 * im) / d);
}
/* The interpreter's ctanh: Go's Tanh, except for a finite |x| > 20,
   where it gives XLA's limit (kTanh: the real part is +-1 once e^(2|x|)
   overflows) rather than dividing two infinities: +-1 +
   i 4cos(y)sin(y)e^(-2|x|), NaN for an infinite or NaN y. */
XK_INLINE double _Complex xk_ztanh(double _Complex z) {
	double x = __real__ z, y = __imag__ z;
	if (fabs(x) <= 20 || XK_ISINF(x) || XK_ISNAN(x)) return xk_ztanh_go(z);
	if (XK_ISINF(y) || XK_ISNAN(y)) return XK_Z(NAN, NAN);
	double s = sin(y), c = cos(y);
	return XK_Z(copysign(1, x), xk_pmul(xk_pmul(xk_pmul(4, c), s), exp(-2 * fabs(x))));
}
/* The interpreter's ctan: -i tanh(iz) (as XLA computes it) for a finite
   |imag z| > 20, Go's Tan otherwise. */
XK_INLINE double _Complex xk_ztan(double _Complex z) {
	double y = __imag__ z;
	if (fabs(y) <= 20 || XK_ISINF(y) || XK_ISNAN(y)) return xk_ztan_go(z);
	double _Complex t = xk_ztanh(XK_Z(-y, __real__ z));
	return XK_Z(__imag__ t, -__real__ t);
}
XK_INLINE double _Complex xk_zpow(double _Complex x, double _Complex y) {
	if (__real__ x == 0 && __imag__ x == 0) {
		if (xk_zisnan(y)) return XK_Z(NAN, NAN);
		double r = __real__ y, i = __imag__ y;
		if (r == 0) return XK_Z(1, 0);
		if (r < 0) return i == 0 ? XK_Z(INFINITY, 0) : XK_Z(INFINITY, INFINITY);
		if (r > 0) return XK_Z(0, 0);
		/* r is NaN with an infinite imaginary part: Go panics ("not
		   reached"); give NaN rather than trap. */
		return XK_Z(NAN, NAN);
	}
	double modulus = xk_zabs(x);
	if (modulus == 0) return XK_Z(0, 0);
	double r = pow(modulus, __real__ y);
	double arg = atan2(__imag__ x, __real__ x);
	double theta = xk_pmul(__real__ y, arg);
	if (__imag__ y != 0) {
		r *= exp(xk_pmul(-__imag__ y, arg));
		theta += xk_pmul(__imag__ y, log(modulus));
	}
	double s = sin(theta), c = cos(theta);
	return XK_Z(r * c, r * s);
}
/* sign: z/|z| part by part, +0 at zero (the interpreter's csign). */
XK_INLINE double _Complex xk_zsign(double _Complex x) {
	double re = __real__ x, im = __imag__ x, a = xk_hypot(re, im);
	if (a == 0) return XK_Z(0, 0);
	return XK_Z(re / a, im / a);
}
XK_INLINE double _Complex xk_zrsqrt(double _Complex x) { return xk_zdiv(XK_Z(1, 0), xk_zsqrt(x)); }
/* Complex + and - of Go: part by part (1 is 1+0i, so 1 + z turns a -0
   imaginary part into +0). */
XK_INLINE double _Complex xk_zadd(double _Complex x, double _Complex y) { return XK_Z(__real__ x + __real__ y, __imag__ x + __imag__ y); }
XK_INLINE double _Complex xk_zsub(double _Complex x, double _Complex y) { return XK_Z(__real__ x - __real__ y, __imag__ x - __imag__ y); }
/* The interpreter's cexpm1 (XLA's kExpm1): expm1(x)cos(y) - 2sin^2(y/2)
   + i e^x sin(y), without cancellation for small z; the imaginary part is
   +0 when y is zero, so a real argument gives a real result even when e^x
   overflows. */
XK_INLINE double _Complex xk_zexpm1(double _Complex z) {
	double x = __real__ z, y = __imag__ z;
	double s = sin(y / 2);
	double re = xk_pmul(expm1(x), cos(y)) - xk_pmul(xk_pmul(2, s), s);
	if (y == 0) return XK_Z(re, 0);
	return XK_Z(re, xk_pmul(exp(x), sin(y)));
}
/* The interpreter's clog1p: log(1+z) with the real part
   0.5*log1p(2x + x^2 + y^2) for small z. */
XK_INLINE double _Complex xk_zlog1p(double _Complex z) {
	double x = __real__ z, y = __imag__ z;
	if (fabs(x) >= 0.5 || fabs(y) >= 0.5 || XK_ISNAN(x) || XK_ISNAN(y)) return xk_zlog(XK_Z(1 + x, y)); /* not 1+z: -0 in y stays -0 (branch cut) */
	return XK_Z(xk_pmul(0.5, log1p(xk_pmul(x, 2 + x) + xk_pmul(y, y))), atan2(y, 1 + x));
}
/* logistic: 1/(1 + e^-z). */
XK_INLINE double _Complex xk_zlogistic(double _Complex z) {
	return xk_zdiv(XK_Z(1, 0), xk_zadd(XK_Z(1, 0), xk_zexp(XK_Z(-__real__ z, -__imag__ z))));
}
#endif
`

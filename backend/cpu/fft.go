package cpu

import (
	"fmt"
	"slices"

	"github.com/xlacache/xlacache/stablehlo"
)

// fftPrelude holds the C helpers of fft: one-dimensional discrete
// Fourier transforms of any length, in double precision whatever the
// element type (twiddle factors are computed with cos/sin in double).
// Powers of two use an iterative radix-2 transform; other lengths up to
// xk_fft_direct_max a direct O(n²) sum over an exact twiddle table
// (index j*k mod n); longer ones Bluestein's algorithm (a chirp
// convolution through a power-of-two transform), so every length costs
// O(n log n). Inverse transforms are conj(DFT(conj(x))), unnormalized.
const fftPrelude = `
#ifndef XK_FFT
#define XK_FFT
#define xk_fft_direct_max 32 /* the interpreter's directMax: same algorithm, same special values */
typedef struct xk_fftp {
	int64_t n, m;          /* length; Bluestein's power-of-two length (0 when unused) */
	double _Complex* tw;   /* e^(-2 pi i k/N): N = n (direct), n/2 entries (radix 2), m/2 (Bluestein) */
	double _Complex* chirp;/* Bluestein: e^(-pi i k^2/n), n entries */
	double _Complex* bf;   /* Bluestein: transform of the conjugate chirp, m entries */
	double _Complex* a;    /* scratch: n (direct) or m (Bluestein) entries */
} xk_fftp;
#if defined(__x86_64__) || defined(__i386__)
#define XK_FOPQ(x) __asm__("" : "+x"(x))
#elif defined(__aarch64__)
#define XK_FOPQ(x) __asm__("" : "+w"(x))
#else
#define XK_FOPQ(x) __asm__("" : "+m"(x))
#endif
/* Go's complex128 product (a*c-b*d, a*d+b*c), each product rounded on
   its own: with -ffp-contract=fast an FMA would keep a*c exact, so a
   difference of two overflowing products could be finite here and NaN
   in the interpreter. */
XK_INLINE double _Complex xk_fmul(double _Complex x, double _Complex y) {
	double a = __real__ x, b = __imag__ x, c = __real__ y, d = __imag__ y;
	double ac = a * c, bd = b * d, ad = a * d, bc = b * c;
	XK_FOPQ(ac); XK_FOPQ(bd); XK_FOPQ(ad); XK_FOPQ(bc);
	return __builtin_complex(ac - bd, ad + bc);
}
XK_INLINE double _Complex xk_conj(double _Complex x) { return __builtin_complex(__real__ x, -__imag__ x); }
static __attribute__((unused)) double _Complex xk_cis(double num, double den) {
	/* e^(-2 pi i num/den), num < den reduced exactly by the caller; the
	   angle is rounded as the interpreter's unitRoot rounds it. */
	double t = (-6.283185307179586476925286766559 * num) / den;
	return __builtin_complex(cos(t), sin(t));
}
/* Radix-2 forward transform of x (n a power of two) with tw[k] =
   e^(-2 pi i k/n), k < n/2. */
static __attribute__((unused)) void xk_fft_radix2(double _Complex* x, int64_t n, const double _Complex* tw) {
	for (int64_t i = 1, j = 0; i < n; i++) {
		int64_t bit = n >> 1;
		for (; j & bit; bit >>= 1) j ^= bit;
		j ^= bit;
		if (i < j) { double _Complex t = x[i]; x[i] = x[j]; x[j] = t; }
	}
	for (int64_t len = 2; len <= n; len <<= 1) {
		int64_t half = len >> 1, step = n / len;
		for (int64_t i = 0; i < n; i += len)
			for (int64_t k = 0; k < half; k++) {
				double _Complex u = x[i + k], v = xk_fmul(x[i + k + half], tw[k * step]);
				x[i + k] = u + v;
				x[i + k + half] = u - v;
			}
	}
}
static __attribute__((unused)) void xk_fft_free(xk_fftp* p) {
	if (!p) return;
	free(p->tw); free(p->chirp); free(p->bf); free(p->a); free(p);
}
/* A plan for length n, or NULL when memory runs out. */
static __attribute__((unused)) xk_fftp* xk_fft_plan(int64_t n) {
	xk_fftp* p = (xk_fftp*)malloc(sizeof(xk_fftp));
	if (!p) return NULL;
	memset(p, 0, sizeof(*p));
	p->n = n;
	if (n <= 1) return p;
	if ((n & (n - 1)) == 0) {
		p->tw = (double _Complex*)malloc(sizeof(double _Complex) * (size_t)(n / 2));
		if (!p->tw) { xk_fft_free(p); return NULL; }
		for (int64_t k = 0; k < n / 2; k++) p->tw[k] = xk_cis((double)k, (double)n);
		return p;
	}
	if (n <= xk_fft_direct_max) {
		p->tw = (double _Complex*)malloc(sizeof(double _Complex) * (size_t)n);
		p->a = (double _Complex*)malloc(sizeof(double _Complex) * (size_t)n);
		if (!p->tw || !p->a) { xk_fft_free(p); return NULL; }
		for (int64_t k = 0; k < n; k++) p->tw[k] = xk_cis((double)k, (double)n);
		return p;
	}
	int64_t m = 1;
	while (m < 2 * n - 1) m <<= 1;
	p->m = m;
	p->tw = (double _Complex*)malloc(sizeof(double _Complex) * (size_t)(m / 2));
	p->chirp = (double _Complex*)malloc(sizeof(double _Complex) * (size_t)n);
	p->bf = (double _Complex*)malloc(sizeof(double _Complex) * (size_t)m);
	p->a = (double _Complex*)malloc(sizeof(double _Complex) * (size_t)m);
	if (!p->tw || !p->chirp || !p->bf || !p->a) { xk_fft_free(p); return NULL; }
	for (int64_t k = 0; k < m / 2; k++) p->tw[k] = xk_cis((double)k, (double)m);
	/* q = k^2 mod 2n keeps the angle exact for large k; it is kept by
	   the recurrence (k+1)^2 = k^2 + 2k + 1, which never overflows (and
	   needs no 128-bit type, which not every target has). */
	for (int64_t k = 0, q = 0; k < n; k++) {
		p->chirp[k] = xk_cis((double)q, (double)(2 * n));
		q += 2 * k + 1;
		while (q >= 2 * n) q -= 2 * n;
	}
	for (int64_t k = 0; k < m; k++) p->bf[k] = 0;
	p->bf[0] = xk_conj(p->chirp[0]);
	for (int64_t k = 1; k < n; k++) p->bf[k] = p->bf[m - k] = xk_conj(p->chirp[k]);
	xk_fft_radix2(p->bf, m, p->tw);
	return p;
}
/* Forward DFT of x in place: X[k] = sum_j x[j] e^(-2 pi i jk/n). */
static __attribute__((unused)) void xk_fft_forward(const xk_fftp* p, double _Complex* x) {
	int64_t n = p->n;
	if (n <= 1) return;
	if (p->m == 0 && (n & (n - 1)) == 0) { xk_fft_radix2(x, n, p->tw); return; }
	if (p->m == 0) {
		for (int64_t k = 0; k < n; k++) {
			double _Complex s = 0;
			for (int64_t j = 0, jk = 0; j < n; j++, jk = (jk + k) % n) s += xk_fmul(x[j], p->tw[jk]);
			p->a[k] = s;
		}
		for (int64_t k = 0; k < n; k++) x[k] = p->a[k];
		return;
	}
	int64_t m = p->m;
	double _Complex* a = p->a;
	for (int64_t k = 0; k < n; k++) a[k] = xk_fmul(x[k], p->chirp[k]);
	for (int64_t k = n; k < m; k++) a[k] = 0;
	xk_fft_radix2(a, m, p->tw);
	/* Inverse transform of a * bf through conjugation. */
	for (int64_t k = 0; k < m; k++) a[k] = xk_conj(xk_fmul(a[k], p->bf[k]));
	xk_fft_radix2(a, m, p->tw);
	const double s = 1.0 / (double)m;
	for (int64_t k = 0; k < n; k++) x[k] = xk_fmul(__builtin_complex(__real__ a[k] * s, -__imag__ a[k] * s), p->chirp[k]);
}
/* The transform (inv: the inverse, divided by n as the interpreter does
   it, line by line) of every line of w along a dimension: outer blocks
   of n*stride elements, lines of n elements stride apart; line is n
   elements of scratch. */
static __attribute__((unused)) void xk_fft_lines(double _Complex* w, int64_t outer, int64_t n, int64_t stride,
		const xk_fftp* p, int inv, double _Complex* line) {
	for (int64_t o = 0; o < outer; o++)
		for (int64_t s = 0; s < stride; s++) {
			double _Complex* base = w + o * n * stride + s;
			for (int64_t j = 0; j < n; j++) line[j] = inv ? xk_conj(base[j * stride]) : base[j * stride];
			xk_fft_forward(p, line);
			if (!inv) {
				for (int64_t j = 0; j < n; j++) base[j * stride] = line[j];
				continue;
			}
			const double sc = 1.0 / (double)n;
			for (int64_t j = 0; j < n; j++) base[j * stride] = __builtin_complex(__real__ line[j] * sc, -__imag__ line[j] * sc);
		}
}
#endif
`

// fftLines transforms every line of the work buffer w (one batch, of
// shape shape) along each of dims, inverse or not, with the plans named
// by plan (per length).
func fftLines(g *gen, w string, shape []int64, dims []int, inv bool, plan map[int64]string) {
	for _, d := range dims {
		outer, stride := int64(1), int64(1)
		for _, s := range shape[:d] {
			outer *= s
		}
		for _, s := range shape[d+1:] {
			stride *= s
		}
		i := 0
		if inv {
			i = 1
		}
		g.line("xk_fft_lines(%s, %d, %d, %d, %s, %d, line);", w, outer, shape[d], stride, plan[shape[d]], i)
	}
}

// genFFT implements fft (§fft) over the last len(fft_length) dimensions
// in double precision: FFT and IFFT transform every one of them (IFFT
// divides by the product of the lengths); RFFT transforms the real input
// as complex and keeps the first L/2+1 entries of the last dimension;
// IRFFT inverts the other dimensions first, then extends the last one by
// Hermitian symmetry (X[L-k] = conj(X[k])) and keeps the real part of its
// inverse, so the imaginary parts of X[0] and, for even L, X[L/2] do not
// matter (numpy's irfftn convention, which XLA follows).
func genFFT(g *gen, op *stablehlo.Op) {
	g.needFFT = true
	x, r := op.Operands[0], op.Results[0]
	in, out := g.input(x), g.output(r)
	lens := op.Attrs.FftLength
	k := len(lens)
	typ := op.Attrs.FftType
	rank := r.Type.Rank()
	full := slices.Clone(lens) // the complex work shape of one batch
	total := int64(1)
	for _, n := range full {
		total *= n
	}
	batches := int64(1)
	for _, n := range r.Type.Shape[:rank-k] {
		batches *= n
	}
	if r.Type.NumElements() == 0 || x.Type.NumElements() == 0 {
		return // with no elements on one side there are none on the other (halfLen)
	}
	half := slices.Clone(full) // IRFFT's input shape per batch
	half[k-1] = halfLen(full[k-1])
	halfTotal := total / full[k-1] * half[k-1]
	// One plan per distinct length; the longest line sets the scratch.
	plan := map[int64]string{}
	maxLen := int64(1)
	var plans []string
	for _, n := range full {
		maxLen = max(maxLen, n)
		if _, ok := plan[n]; ok {
			continue
		}
		p := g.name("plan")
		plan[n] = p
		plans = append(plans, p)
		g.line("xk_fftp* %s = xk_fft_plan(%d);", p, n)
	}
	g.line("double _Complex* W = (double _Complex*)malloc(sizeof(double _Complex) * %d);", total+halfTotal+maxLen)
	g.line("if (!(%s)) {", allOf(append(slices.Clone(plans), "W")))
	for _, p := range plans {
		g.line("\txk_fft_free(%s);", p)
	}
	g.line("\tfree(W);")
	g.line("\tXK_ALLOC_FAILED();")
	g.line("\treturn;")
	g.line("}")
	g.line("double _Complex* H = W + %d;", total)
	g.line("double _Complex* line = H + %d;", halfTotal)
	dt, xt := r.Type.DType, x.Type.DType
	load := func(i string) string {
		v := loadExpr(xt, fmt.Sprintf("%s[%s]", in, i))
		if xt.IsComplex() {
			return "(double _Complex)" + v
		}
		return fmt.Sprintf("__builtin_complex((double)%s, 0.0)", v)
	}
	all := make([]int, k)
	for i := range all {
		all[i] = i
	}
	g.line("for (int64_t bt = 0; bt < %d; bt++) {", batches)
	g.ind++
	switch typ {
	case "FFT", "IFFT", "RFFT":
		g.line("for (int64_t e = 0; e < %d; e++) W[e] = %s;", total, load(fmt.Sprintf("bt*%d + e", total)))
		if typ == "RFFT" {
			// The last dimension first, then the others on the kept half
			// only, in the interpreter's order (so rounding and special
			// values spread alike).
			fftLines(g, "W", full, all[k-1:], false, plan)
			n := full[k-1]
			h := halfLen(n)
			g.line("for (int64_t e = 0; e < %d; e++) H[e] = W[(e / %d)*%d + e %% %d];", halfTotal, h, n, h)
			fftLines(g, "H", half, all[:k-1], false, plan)
			g.line("for (int64_t e = 0; e < %d; e++) %s[bt*%d + e] = (%s)H[e];", halfTotal, out, halfTotal, ctype(dt))
			break
		}
		fftLines(g, "W", full, all, typ == "IFFT", plan)
		g.line("for (int64_t e = 0; e < %d; e++) %s[bt*%d + e] = (%s)W[e];", total, out, total, ctype(dt))
	case "IRFFT":
		n := full[k-1]
		h := halfLen(n)
		g.line("for (int64_t e = 0; e < %d; e++) H[e] = %s;", halfTotal, load(fmt.Sprintf("bt*%d + e", halfTotal)))
		fftLines(g, "H", half, all[:k-1], true, plan)
		g.line("for (int64_t row = 0; row < %d; row++)", total/n)
		g.line("for (int64_t j = 0; j < %d; j++)", n)
		g.line("\tW[row*%d + j] = j < %d ? H[row*%d + j] : xk_conj(H[row*%d + %d - j]);", n, h, h, h, n)
		fftLines(g, "W", full, all[k-1:], true, plan)
		g.line("for (int64_t e = 0; e < %d; e++) %s[bt*%d + e] = %s;", total, out, total,
			storeExpr(dt, roundOnce(dt, "(__real__ W[e])")))
	}
	g.ind--
	g.line("}")
	for _, p := range plans {
		g.line("xk_fft_free(%s);", p)
	}
	g.line("free(W);")
}

// roundOnce converts a double to the compute type of the real type dt
// (rounding once for f32; 16-bit floats are rejected before this).
func roundOnce(dt stablehlo.DType, x string) string {
	return fmt.Sprintf("((%s)%s)", ctype(dt), x)
}

// checkFFT checks what genFFT relies on (the verifier's rules, restated
// so that a malformed op is an error, never out-of-range C): the kind,
// the element types, and shapes that match fft_length.
func (l *lowering) checkFFT(op *stablehlo.Op) error {
	if len(op.Operands) != 1 || len(op.Results) != 1 {
		return l.errorf(op, "fft with %d operands and %d results", len(op.Operands), len(op.Results))
	}
	x, r := op.Operands[0].Type, op.Results[0].Type
	lens := op.Attrs.FftLength
	k := len(lens)
	if k == 0 || k > x.Rank() || x.Rank() != r.Rank() {
		return l.errorf(op, "fft_length %v on %s -> %s", lens, x, r)
	}
	in, out := slices.Clone(lens), slices.Clone(lens)
	switch op.Attrs.FftType {
	case "FFT", "IFFT":
		if !x.DType.IsComplex() || r.DType != x.DType {
			return l.unsupportedf(op, "fft %s from %s to %s is not supported", op.Attrs.FftType, x.DType, r.DType)
		}
	case "RFFT":
		if x.DType.IsComplex() || r.DType.ComplexElem() != x.DType {
			return l.unsupportedf(op, "fft RFFT from %s to %s is not supported", x.DType, r.DType)
		}
		out[k-1] = halfLen(lens[k-1])
	case "IRFFT":
		if !x.DType.IsComplex() || x.DType.ComplexElem() != r.DType {
			return l.unsupportedf(op, "fft IRFFT from %s to %s is not supported", x.DType, r.DType)
		}
		in[k-1] = halfLen(lens[k-1])
	default:
		return l.unsupportedf(op, "fft type %q is not supported", op.Attrs.FftType)
	}
	if !slices.Equal(x.Shape[:x.Rank()-k], r.Shape[:r.Rank()-k]) ||
		!slices.Equal(x.Shape[x.Rank()-k:], in) || !slices.Equal(r.Shape[r.Rank()-k:], out) {
		return l.errorf(op, "fft %s with fft_length %v on %s -> %s", op.Attrs.FftType, lens, x, r)
	}
	return nil
}

// halfLen is the number of non-negative frequencies RFFT keeps of a
// length-n dimension: n/2+1, and 0 for n = 0 (the verifier's rule).
func halfLen(n int64) int64 {
	if n == 0 {
		return 0
	}
	return n/2 + 1
}

package cpu

import (
	"strconv"
	"strings"

	"github.com/xlacache/xlacache/stablehlo"
)

// triSolveXLAC is triangular_solve for f32 and f64 as XLA:CPU computes it,
// step for step the interpreter's evalTriSolveXLA (stablehlo/trisolvexla.go
// says why each sum runs in the order it does). Every value is kept in a
// double and rounded to the element type by XK_TR after each operation,
// and XK_TFMA is a fused multiply-add rounded the same way (fmaf for f32,
// as the interpreter's fmaf32), so that both backends agree bit
// for bit. No product is left for the compiler to contract: each FMA is
// explicit. The $NAMES are replaced by genTriSolveXLA.
const triSolveXLAC = `{
const int64_t n = $N, rows = $ROWS, cols = $COLS, bs = $BS, nb = $NB;
const int left = $LEFT, lower = $LOWER, trans = $TRANS, unit = $UNIT, direct = $DIRECT;
const int64_t remsz = (bs * cols > rows * bs ? bs * cols : rows * bs);
double* buf = (double*)malloc(sizeof(double) * (n*n + 2*rows*cols + nb*bs*bs + bs*bs + bs + remsz) + 8);
if (!buf) { XK_ALLOC_FAILED(); return; }
double *am = buf, *x = am + n*n, *bb = x + rows*cols, *invs = bb + rows*cols, *scaled = invs + nb*bs*bs, *row = scaled + bs*bs, *rem = row + bs;
#define XK_OPA(i, j) (trans ? am[(j)*n + (i)] : am[(i)*n + (j)])
for (int64_t bt = 0; bt < $BATCHES; bt++) {
	for (int64_t i = 0; i < n; i++)
	for (int64_t j = 0; j < n; j++) {
		double v = (double)($LOADA);
		if (i == j && unit) v = 1;
		else if (i != j && ((i > j) != lower)) v = 0;
		am[i*n + j] = v;
	}
	for (int64_t e = 0; e < rows*cols; e++) x[e] = (double)($LOADB);
	if (n == 0 || rows*cols == 0) {
	} else if (n == 1) {
		if (!unit) for (int64_t e = 0; e < rows*cols; e++) x[e] = XK_TR(x[e] / am[0]);
	} else if (direct) {
		const int lowerEff = lower != trans;
		for (int64_t s = 0; s < n; s++) {
			const int64_t j = (left != lowerEff) ? n - 1 - s : s;
			const int64_t lo = (j != s) ? j + 1 : 0, hi = (j != s) ? n : j;
			if (left) {
				for (int64_t c = 0; c < cols; c++) {
					double acc = 0;
					for (int64_t p = lo; p < hi; p++) acc = XK_TFMA(XK_OPA(j, p), x[p*cols + c], acc);
					x[j*cols + c] = XK_TR(XK_TR(x[j*cols + c] - acc) / XK_OPA(j, j));
				}
			} else {
				for (int64_t rr = 0; rr < rows; rr++) {
					double acc = 0;
					for (int64_t p = lo; p < hi; p++) acc = XK_TFMA(x[rr*cols + p], XK_OPA(p, j), acc);
					x[rr*cols + j] = XK_TR(XK_TR(x[rr*cols + j] - acc) / XK_OPA(j, j));
				}
			}
		}
	} else {
		/* Invert the diagonal blocks (padded with the identity past n). */
		for (int64_t k = 0; k < nb; k++) {
			double* out = invs + k*bs*bs;
			const int64_t off = k*bs;
			#define XK_BLK(i, j) ((off + (i) >= n || off + (j) >= n) ? ((i) == (j) ? 1.0 : 0.0) : am[(off + (i))*n + off + (j)])
			for (int64_t i = 0; i < bs; i++) { double d = XK_BLK(i, i); row[i] = d == 0 ? 1.0 : d; }
			for (int64_t i = 0; i < bs; i++)
			for (int64_t j = 0; j < bs; j++) scaled[i*bs + j] = XK_TR(XK_BLK(i, j) / row[j]);
			#undef XK_BLK
			for (int64_t e = 0; e < bs*bs; e++) out[e] = 0;
			for (int64_t i = 0; i < bs; i++) out[i*bs + i] = -1;
			{ const int64_t st = lower ? 0 : bs - 1; out[st*bs + st] = 1; }
			for (int64_t i = 1; i < bs; i++) {
				const int64_t j = lower ? i : bs - 1 - i;
				for (int64_t c = 0; c < bs; c++) {
					double acc = 0;
					for (int64_t m = 0; m < bs; m++) acc = XK_TFMA(scaled[j*bs + m], out[m*bs + c], acc);
					rem[c] = -acc;
				}
				for (int64_t c = 0; c < bs; c++) out[j*bs + c] = rem[c];
			}
			for (int64_t i = 0; i < bs; i++)
			for (int64_t c = 0; c < bs; c++) out[i*bs + c] = XK_TR(out[i*bs + c] / row[i]);
		}
		/* Solve block by block. XK_GEMM sums U(q)*V(q) for q < K in the
		   order of Eigen's gebp kernel (two interleaved accumulators over
		   the first K&~7 steps, added, then the rest). */
		#define XK_GEMM(dst, K, U, V) do { \
			const int64_t pk_ = (K) & ~(int64_t)7; double c_ = 0, d_ = 0; \
			for (int64_t q = 0; q < pk_; q += 2) { c_ = XK_TFMA(U, V, c_); q++; d_ = XK_TFMA(U, V, d_); q--; } \
			double s_ = XK_TR(c_ + d_); \
			for (int64_t q = pk_; q < (K); q++) s_ = XK_TFMA(U, V, s_); \
			dst = s_; } while (0)
		const int backward = (left != lower) != trans;
		for (int64_t e = 0; e < rows*cols; e++) bb[e] = x[e];
		for (int64_t i = 0; i < nb; i++) {
			const int64_t j = backward ? nb - 1 - i : i;
			const int64_t lo = j*bs, hi = ((j + 1)*bs < n ? (j + 1)*bs : n), w = hi - lo;
			const double* inv = invs + j*bs*bs;
			#define XK_OPINV(p, q) (trans ? inv[(q)*bs + (p)] : inv[(p)*bs + (q)])
			int64_t slo = 0, shi = (i*bs < n ? i*bs : n);
			if (backward) { slo = (nb - i)*bs; shi = n; }
			if (i == 0) { slo = 0; shi = 0; }
			if (left) {
				for (int64_t p = lo; p < hi; p++)
				for (int64_t c = 0; c < cols; c++) {
					double v = bb[p*cols + c];
					if (shi > slo) { double dt_; XK_GEMM(dt_, shi - slo, XK_OPA(p, slo + q), x[(slo + q)*cols + c]); v = XK_TR(v - dt_); }
					rem[(p - lo)*cols + c] = v;
				}
				for (int64_t p = lo; p < hi; p++)
				for (int64_t c = 0; c < cols; c++) XK_GEMM(x[p*cols + c], w, XK_OPINV(p - lo, q), rem[q*cols + c]);
			} else {
				for (int64_t rr = 0; rr < rows; rr++)
				for (int64_t p = lo; p < hi; p++) {
					double v = bb[rr*cols + p];
					if (shi > slo) { double dt_; XK_GEMM(dt_, shi - slo, x[rr*cols + slo + q], XK_OPA(slo + q, p)); v = XK_TR(v - dt_); }
					rem[rr*w + p - lo] = v;
				}
				for (int64_t rr = 0; rr < rows; rr++)
				for (int64_t p = lo; p < hi; p++) XK_GEMM(x[rr*cols + p], w, rem[rr*w + q], XK_OPINV(q, p - lo));
			}
			#undef XK_OPINV
		}
		#undef XK_GEMM
	}
	for (int64_t e = 0; e < rows*cols; e++) $OUT[bt*rows*cols + e] = ($CT)x[e];
}
#undef XK_OPA
free(buf);
}`

// genTriSolveXLA emits triSolveXLAC for one f32 or f64 triangular_solve.
func genTriSolveXLA(g *gen, op *stablehlo.Op) {
	a, b := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	t := op.Attrs.TriSolve
	dt := r.Type.DType
	A, B := g.input(a), g.input(b)
	out := g.output(r)
	rank := a.Type.Rank()
	n := a.Type.Shape[rank-1]
	rows, cols := b.Type.Shape[rank-2], b.Type.Shape[rank-1]
	batches := int64(1)
	for _, d := range a.Type.Shape[:rank-2] {
		batches *= d
	}
	// XLA's expander: block size 128; direct substitution for more than
	// 8 batches of matrices smaller than 32 (stablehlo/trisolvexla.go).
	bs := min(int64(128), n)
	nb := int64(0)
	if bs > 0 {
		nb = (n + bs - 1) / bs
	}
	b01 := func(v bool) string {
		if v {
			return "1"
		}
		return "0"
	}
	i64 := func(v int64) string { return strconv.FormatInt(v, 10) }
	// f32's FMA is fmaf, rounded once (the interpreter's fmaf32 too). The
	// empty asm pins each rounded result: without it GCC -O3 was seen to
	// compute some of these sums differently (1 ULP) from the interpreter
	// and from an exact evaluation.
	rnd := "((double)(float)(X))"
	fma := "({ float r_ = __builtin_fmaf((float)(X), (float)(Y), (float)(Z)); __asm__(\"\" : \"+m\"(r_)); (double)r_; })"
	if dt == stablehlo.F64 {
		rnd, fma = "(X)", "({ double r_ = __builtin_fma((X), (Y), (Z)); __asm__(\"\" : \"+m\"(r_)); r_; })"
	}
	g.line("#define XK_TR(X) %s", rnd)
	g.line("#define XK_TFMA(X, Y, Z) %s", fma)
	rep := strings.NewReplacer(
		// $NB before its prefix $N: the replacer tries them in order.
		"$NB", i64(nb), "$N", i64(n), "$ROWS", i64(rows), "$COLS", i64(cols), "$BS", i64(bs),
		"$LEFT", b01(t.LeftSide), "$LOWER", b01(t.Lower), "$TRANS", b01(t.TransposeA != "NO_TRANSPOSE"),
		"$UNIT", b01(t.UnitDiagonal), "$DIRECT", b01(batches > 8 && n < 32), "$BATCHES", i64(batches),
		"$LOADA", loadExpr(a.Type.DType, A+"[bt*n*n + i*n + j]"),
		"$LOADB", loadExpr(b.Type.DType, B+"[bt*rows*cols + e]"),
		"$OUT", out, "$CT", ctype(dt))
	for _, ln := range strings.Split(rep.Replace(triSolveXLAC), "\n") {
		g.line("%s", ln)
	}
	g.line("#undef XK_TR")
	g.line("#undef XK_TFMA")
}

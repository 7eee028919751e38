// gemm_tmpl.h is the matrix product of gemm.c, written once for every
// element type and target: gemm.c includes it with T (the element type),
// VW (elements per vector), SUF (the names' suffix) and, for a target's
// variant, under #pragma GCC target. It is not a header of its own.
//
// C[b][m][n] (contiguous) = sum over k of A[b][m][k] * B[b][k][n], where A
// and B are read through the strides of the parameter block (rt.h). Every
// output element is summed in k order, one multiply-add at a time from
// zero, whatever the blocking or the thread split: the order of the
// generated kernels' default configuration, so both give the same bits
// on a machine with FMA (and on one without, where neither contracts).

#define RT_CAT2(a, b) a##_##b
#define RT_CAT(a, b) RT_CAT2(a, b)
#define RT_NAME(n) RT_CAT(n, SUF)

typedef T RT_NAME(vec) __attribute__((vector_size(VW * sizeof(T)), aligned(VW * sizeof(T))));
typedef T RT_NAME(uvec) __attribute__((vector_size(VW * sizeof(T)), aligned(sizeof(T)), may_alias));

// RT_NR is a register block's columns: two vectors.
#define RT_NR (2 * VW)

// micro_any computes one RT_MR x RT_NR block of C over kc steps from A's
// rows and a packed panel bp ([kc][RT_NR]) of B, adding to what C holds
// unless first. rows and cols say how much of the block lies inside C.
// A's rows are a packed panel ap ([kc][RT_MR]) where lda is 0, else
// RT_MR rows read in place, lda elements apart (each contiguous over k).
// It is always inlined into micro and micro_rows, so that each is
// compiled for its own addressing.
static inline __attribute__((always_inline)) void RT_NAME(micro_any)(int64_t kc, const T* restrict ap, int64_t lda, const T* restrict bp, T* restrict c, int64_t ldc, int rows, int cols, int first) {
	RT_NAME(vec) acc[RT_MR][2];
	T tmp[RT_MR][RT_NR];
	int full = rows == RT_MR && cols == RT_NR;
	if (first) {
		for (int r = 0; r < RT_MR; r++) acc[r][0] = acc[r][1] = (RT_NAME(vec)){0};
	} else if (full) {
		for (int r = 0; r < RT_MR; r++) {
			acc[r][0] = *(const RT_NAME(uvec)*)(c + r * ldc);
			acc[r][1] = *(const RT_NAME(uvec)*)(c + r * ldc + VW);
		}
	} else {
		for (int r = 0; r < RT_MR; r++)
			for (int j = 0; j < RT_NR; j++) tmp[r][j] = (r < rows && j < cols) ? c[r * ldc + j] : 0;
		for (int r = 0; r < RT_MR; r++) {
			acc[r][0] = *(const RT_NAME(uvec)*)&tmp[r][0];
			acc[r][1] = *(const RT_NAME(uvec)*)&tmp[r][VW];
		}
	}
	for (int64_t p = 0; p < kc; p++) {
		const RT_NAME(vec) b0 = *(const RT_NAME(vec)*)(bp + p * RT_NR);
		const RT_NAME(vec) b1 = *(const RT_NAME(vec)*)(bp + p * RT_NR + VW);
#pragma GCC unroll 16
		for (int r = 0; r < RT_MR; r++) {
			const T a = lda ? ap[r * lda + p] : ap[p * RT_MR + r];
			acc[r][0] += a * b0;
			acc[r][1] += a * b1;
		}
	}
	if (full) {
		for (int r = 0; r < RT_MR; r++) {
			*(RT_NAME(uvec)*)(c + r * ldc) = acc[r][0];
			*(RT_NAME(uvec)*)(c + r * ldc + VW) = acc[r][1];
		}
		return;
	}
	for (int r = 0; r < RT_MR; r++) {
		*(RT_NAME(uvec)*)&tmp[r][0] = acc[r][0];
		*(RT_NAME(uvec)*)&tmp[r][VW] = acc[r][1];
	}
	for (int r = 0; r < rows; r++)
		for (int j = 0; j < cols; j++) c[r * ldc + j] = tmp[r][j];
}

// micro is micro_any on a packed panel of A.
static void RT_NAME(micro)(int64_t kc, const T* restrict ap, const T* restrict bp, T* restrict c, int64_t ldc, int rows, int cols, int first) {
	RT_NAME(micro_any)(kc, ap, 0, bp, c, ldc, rows, cols, first);
}

// micro_rows is micro_any on RT_MR rows of A read in place, lda (> 0)
// elements apart.
static void RT_NAME(micro_rows)(int64_t kc, const T* restrict a, int64_t lda, const T* restrict bp, T* restrict c, int64_t ldc, int rows, int cols, int first) {
	RT_NAME(micro_any)(kc, a, lda, bp, c, ldc, rows, cols, first);
}

// naive is the product without scratch memory, for when allocating the
// packed panels fails: the same order of operations, slower.
static void RT_NAME(naive)(const int64_t* P, const T* a, const T* b, T* c, int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
	const int64_t K = P[RT_K], N = P[RT_N];
	const T* ab = a + bi * P[RT_SAB];
	const T* bb = b + bi * P[RT_SBB];
	for (int64_t i = i0; i < i1; i++) {
		T* cr = c + (bi * P[RT_M] + i) * N;
		for (int64_t j = j0; j < j1; j++) cr[j] = 0;
		for (int64_t p = 0; p < K; p++) {
			const T av = ab[i * P[RT_SAM] + p * P[RT_SAK]];
			const T* br = bb + p * P[RT_SBK];
			for (int64_t j = j0; j < j1; j++) cr[j] += av * br[j * P[RT_SBN]];
		}
	}
}

// block computes rows i0..i1, columns j0..j1 of batch matrix bi, with bp (RT_KC x RT_NC)
// and ap (RT_MC x RT_KC) as scratch: for each block of RT_NC columns and
// RT_KC steps of k (in order), B's block is packed into column panels,
// then each block of RT_MC rows of A into row panels, and every register
// block of C is updated from them.
static void RT_NAME(block)(const int64_t* P, const T* a, const T* b, T* c, int64_t bi, int64_t i0, int64_t i1, int64_t j0, int64_t j1, T* bp, T* ap) {
	const int64_t K = P[RT_K], N = P[RT_N];
	const T* ab = a + bi * P[RT_SAB];
	const T* bb = b + bi * P[RT_SBB];
	T* cb = c + bi * P[RT_M] * N;
	// lda 0 means a packed panel to micro_any, so a zero row stride (a
	// broadcast A) is packed too.
	const int inplace = P[RT_SAK] == 1 && P[RT_SAM] != 0;
	if (K == 0) {
		for (int64_t i = i0; i < i1; i++)
			for (int64_t j = j0; j < j1; j++) cb[i * N + j] = 0;
		return;
	}
	for (int64_t jc = j0; jc < j1; jc += RT_NC) {
		const int64_t nc = j1 - jc < RT_NC ? j1 - jc : RT_NC;
		const int64_t np = (nc + RT_NR - 1) / RT_NR;
		for (int64_t pc = 0; pc < K; pc += RT_KC) {
			const int64_t kc = K - pc < RT_KC ? K - pc : RT_KC;
			// B's block: bp[(jp*kc + p)*RT_NR + jj], zeros past column N.
			int64_t whole = 0; // panels packed below
			if (P[RT_SBN] == 1) {
				// B's rows contiguous: its whole panels a k row at a
				// time, each row read once along its length (two
				// vector copies a panel). Packing a panel at a time
				// instead read one cache line from each of kc rows a
				// whole row apart, which the hardware prefetchers do
				// not follow: products whose B came from memory (a
				// program's weights) ran 10-15% slower than with B in
				// the caches.
				whole = nc / RT_NR;
				for (int64_t p = 0; p < kc; p++) {
					const T* src = bb + (pc + p) * P[RT_SBK] + jc;
					T* dst = bp + p * RT_NR;
					for (int64_t jp = 0; jp < whole; jp++, src += RT_NR, dst += kc * RT_NR) {
						*(RT_NAME(vec)*)dst = *(const RT_NAME(uvec)*)src;
						*(RT_NAME(vec)*)(dst + VW) = *(const RT_NAME(uvec)*)(src + VW);
					}
				}
			}
			for (int64_t jp = whole; jp < np; jp++) {
				T* dst = bp + jp * kc * RT_NR;
				for (int64_t p = 0; p < kc; p++) {
					const T* src = bb + (pc + p) * P[RT_SBK] + jc * P[RT_SBN];
					for (int64_t jj = 0; jj < RT_NR; jj++) {
						const int64_t j = jp * RT_NR + jj;
						dst[p * RT_NR + jj] = j < nc ? src[j * P[RT_SBN]] : 0;
					}
				}
			}
			for (int64_t ic = i0; ic < i1; ic += RT_MC) {
				const int64_t mc = i1 - ic < RT_MC ? i1 - ic : RT_MC;
				const int64_t mp = (mc + RT_MR - 1) / RT_MR;
				// A's block: ap[(ip*kc + p)*RT_MR + ii], zeros past its rows;
				// where A's rows are contiguous over k, only a last panel
				// of fewer than RT_MR rows (the others are read in place:
				// on the transformer example's products, packing them took
				// 5-10% of the routine's time).
				if (P[RT_SAM] == 1 && P[RT_SAK] != 1) {
					// A transposed (its rows contiguous over m): k row
					// p of the block is mc contiguous elements, read
					// once along the row into the panels. Gathering a
					// panel's row at a time instead read one element
					// per k row RT_MR times over, strided by the whole
					// of m, which ran transformer4l's products with A
					// transposed at half the speed of the others.
					for (int64_t p = 0; p < kc; p++) {
						const T* src = ab + (pc + p) * P[RT_SAK] + ic;
						T* dst = ap + p * RT_MR;
						int64_t i = 0;
						for (; i + RT_MR <= mc; i += RT_MR, dst += kc * RT_MR)
							for (int64_t ii = 0; ii < RT_MR; ii++) dst[ii] = src[i + ii];
						if (i < mc)
							for (int64_t ii = 0; ii < RT_MR; ii++) dst[ii] = i + ii < mc ? src[i + ii] : 0;
					}
				} else
				for (int64_t ip = 0; ip < mp; ip++) {
					if (inplace && (ip + 1) * RT_MR <= mc) continue;
					T* dst = ap + ip * kc * RT_MR;
					for (int64_t ii = 0; ii < RT_MR; ii++) {
						const int64_t i = ip * RT_MR + ii;
						if (i >= mc) {
							for (int64_t p = 0; p < kc; p++) dst[p * RT_MR + ii] = 0;
							continue;
						}
						const T* src = ab + (ic + i) * P[RT_SAM] + pc * P[RT_SAK];
						for (int64_t p = 0; p < kc; p++) dst[p * RT_MR + ii] = src[p * P[RT_SAK]];
					}
				}
				for (int64_t jp = 0; jp < np; jp++) {
					const int64_t cols = nc - jp * RT_NR < RT_NR ? nc - jp * RT_NR : RT_NR;
					for (int64_t ip = 0; ip < mp; ip++) {
						const int64_t rows = mc - ip * RT_MR < RT_MR ? mc - ip * RT_MR : RT_MR;
						T* cblk = cb + (ic + ip * RT_MR) * N + jc + jp * RT_NR;
						if (inplace && rows == RT_MR) {
							RT_NAME(micro_rows)(kc, ab + (ic + ip * RT_MR) * P[RT_SAM] + pc, P[RT_SAM], bp + jp * kc * RT_NR, cblk, N, RT_MR, (int)cols, pc == 0);
						} else {
							RT_NAME(micro)(kc, ap + ip * kc * RT_MR, bp + jp * kc * RT_NR, cblk, N, (int)rows, (int)cols, pc == 0);
						}
					}
				}
			}
		}
	}
}

// part does part t of n: the units [U*t/n, U*(t+1)/n), a batch matrix
// at a time. A unit is RT_MR rows of one batch matrix or, where the
// matrices are wider than tall, RT_NR columns: each part packs all of
// the other operand's block it multiplies with (B's panels for a row
// split, A's for a column split), so the split is along the larger
// dimension and the packing repeated per part is the smaller operand's.
// On a 64x784x512 product, splitting rows made two threads no faster
// than one (each packed all 400 K elements of B).
static void RT_NAME(part)(void** bufs, int64_t t, int64_t n) {
	const T* a = (const T*)bufs[0];
	const T* b = (const T*)bufs[1];
	const int64_t* P = (const int64_t*)bufs[2];
	T* c = (T*)bufs[3];
	const int64_t B = P[RT_B], M = P[RT_M], N = P[RT_N];
	if (B == 0 || M == 0 || N == 0) return;
	const int cols = N > M;
	const int64_t per = cols ? (N + RT_NR - 1) / RT_NR : (M + RT_MR - 1) / RT_MR; // units per batch matrix
	const int64_t U = B * per;
	const int64_t u0 = U * t / n, u1 = U * (t + 1) / n;
	if (u0 >= u1) return;
	T* bp = (T*)rt_scratch(0, (size_t)(RT_KC * RT_NC) * sizeof(T));
	T* ap = (T*)rt_scratch(1, (size_t)(RT_MC * RT_KC) * sizeof(T));
	for (int64_t u = u0; u < u1;) {
		const int64_t bi = u / per;
		const int64_t ue = u1 < (bi + 1) * per ? u1 : (bi + 1) * per;
		const int64_t lo = u - bi * per, hi = ue - bi * per;
		int64_t i0 = 0, i1 = M, j0 = 0, j1 = N;
		if (cols) {
			j0 = lo * RT_NR;
			j1 = hi * RT_NR < N ? hi * RT_NR : N;
		} else {
			i0 = lo * RT_MR;
			i1 = hi * RT_MR < M ? hi * RT_MR : M;
		}
		if (bp && ap && !xk_rt_force_naive) {
			RT_NAME(block)(P, a, b, c, bi, i0, i1, j0, j1, bp, ap);
		} else {
			RT_NAME(naive)(P, a, b, c, bi, i0, i1, j0, j1);
		}
		u = ue;
	}
	rt_scratch_done(0, bp);
	rt_scratch_done(1, ap);
}

#ifndef RT_CONV_HELPERS
#define RT_CONV_HELPERS
// RT_SMALL_CI bounds the input features of a 2-D convolution that
// conv_part sums row by row instead of gathering blocks (see there).
#define RT_SMALL_CI 8
// The convolution's walks over its parameter block, the same for every
// element type. RT_SP is spatial dimension s's values.
#define RT_SP(P, s) ((P) + RT_CSP + (s) * RT_CPS)

// rt_next_tap moves kt to the next window position, row-major.
static inline void rt_next_tap(const int64_t* P, int64_t ns, int64_t* kt) {
	for (int64_t s = ns - 1; s >= 0; s--) {
		if (++kt[s] < RT_SP(P, s)[RT_KSIZE]) return;
		kt[s] = 0;
	}
}

// rt_tap_offset is the kernel offset of window position kt (reversed
// where the block says so), before the feature terms.
static inline int64_t rt_tap_offset(const int64_t* P, int64_t ns, const int64_t* kt) {
	int64_t off = 0;
	for (int64_t s = 0; s < ns; s++) {
		const int64_t* S = RT_SP(P, s);
		off += (S[RT_REV] ? S[RT_KSIZE] - 1 - kt[s] : kt[s]) * S[RT_KSTRIDE];
	}
	return off;
}

// rt_out_pos splits output row row (batch, then spatial positions,
// row-major) into its batch *b and spatial position o, and returns its
// output offset before the feature term.
static inline int64_t rt_out_pos(const int64_t* P, int64_t ns, int64_t row, int64_t* o, int64_t* b) {
	int64_t off = 0;
	for (int64_t s = ns - 1; s >= 0; s--) {
		const int64_t* S = RT_SP(P, s);
		o[s] = row % S[RT_OSIZE];
		row /= S[RT_OSIZE];
		off += o[s] * S[RT_OSTRIDE];
	}
	*b = row;
	return off + row * P[RT_COB];
}

// rt_in_offset is the input offset (before the feature term) that output
// position o of batch b reads at window position kt, or -1 where that
// falls in the padding. Offsets are formed only from positions inside
// the input: those are the products rt.CheckConv bounds.
static inline int64_t rt_in_offset(const int64_t* P, int64_t ns, int64_t b, const int64_t* o, const int64_t* kt) {
	int64_t off = b * P[RT_CIB];
	for (int64_t s = 0; s < ns; s++) {
		const int64_t* S = RT_SP(P, s);
		const int64_t p = o[s] * S[RT_CSTRIDE] + kt[s] * S[RT_DIL] - S[RT_PADLO];
		if (p < 0 || p >= S[RT_ISIZE]) return -1;
		off += p * S[RT_ISTRIDE];
	}
	return off;
}
#endif

// conv_part does part t of n of a convolution (rt.h's conv parameter
// block) as a product over implicit im2col rows, as the generated
// kernels' gathering variant does (conv.go's genConvGemm): the kernel is
// packed once into column panels of RT_NR output features
// ([panel][tap][input feature][RT_NR], taps window row-major, reversed
// where asked), then each block of RT_MR output positions gathers its
// input windows into a packed [K][RT_MR] block (zeros for padding) and
// multiplies it with every panel. Every output element is summed in the
// reference's order (window row-major, input features inner).
static void RT_NAME(conv_part)(void** bufs, int64_t t, int64_t n) {
	const T* in = (const T*)bufs[0];
	const T* w = (const T*)bufs[1];
	const int64_t* P = (const int64_t*)bufs[2];
	T* out = (T*)bufs[3];
	const int64_t ns = P[RT_CNS], NB = P[RT_CN], CI = P[RT_CC], F = P[RT_CF];
	int64_t taps = 1, rowsPer = 1;
	for (int64_t s = 0; s < ns; s++) {
		taps *= RT_SP(P, s)[RT_KSIZE];
		rowsPer *= RT_SP(P, s)[RT_OSIZE];
	}
	const int64_t M = NB * rowsPer, K = taps * CI;
	if (M == 0 || F == 0) return;
	const int64_t nb = (M + RT_MR - 1) / RT_MR;
	const int64_t b0 = nb * t / n, b1 = nb * (t + 1) / n;
	if (b0 >= b1) return;
	const int64_t np = (F + RT_NR - 1) / RT_NR;
	T* bp = (T*)rt_scratch(0, (size_t)(np * K * RT_NR) * sizeof(T) + 64);
	T* ap = (T*)rt_scratch(1, (size_t)(K * RT_MR) * sizeof(T) + 64);
	if (!bp || !ap || xk_rt_force_naive) {
		// Without scratch: each output element alone, in the same order.
		for (int64_t row = b0 * RT_MR; row < b1 * RT_MR && row < M; row++) {
			int64_t o[RT_MAXS], b;
			const int64_t obase = rt_out_pos(P, ns, row, o, &b);
			for (int64_t of = 0; of < F; of++) {
				T acc = 0;
				int64_t kt[RT_MAXS] = {0};
				for (int64_t tap = 0; tap < taps; tap++) {
					const int64_t ioff = rt_in_offset(P, ns, b, o, kt);
					const int64_t woff = of * P[RT_CKO] + rt_tap_offset(P, ns, kt);
					for (int64_t ci = 0; ci < CI; ci++) {
						const T x = ioff >= 0 ? in[ioff + ci * P[RT_CIF]] : 0;
						acc += x * w[woff + ci * P[RT_CKI]];
					}
					rt_next_tap(P, ns, kt);
				}
				out[obase + of * P[RT_COF]] = acc;
			}
		}
		rt_scratch_done(0, bp);
		rt_scratch_done(1, ap);
		return;
	}
	// Pack the kernel: bp[(jp*K + tap*CI + ci)*RT_NR + jj].
	{
		int64_t kt[RT_MAXS] = {0};
		for (int64_t tap = 0; tap < taps; tap++) {
			const int64_t woff = rt_tap_offset(P, ns, kt);
			for (int64_t ci = 0; ci < CI; ci++)
				for (int64_t of = 0; of < np * RT_NR; of++)
					bp[((of / RT_NR) * K + tap * CI + ci) * RT_NR + of % RT_NR] = of < F ? w[woff + ci * P[RT_CKI] + of * P[RT_CKO]] : 0;
			rt_next_tap(P, ns, kt);
		}
	}
	T tile[RT_MR * RT_NR] __attribute__((aligned(64)));
	if (ns == 2 && CI < RT_SMALL_CI) {
		// Few input features (an image's first convolution): the gather
		// below would cost more per row than the row's products, so each
		// output row is summed straight from the input, with the same
		// operations in the same order as the gathered block's (padding
		// read as zeros, k = tap*CI + ci ascending, one fused
		// multiply-add each from zero), so the same bits.
		const int64_t* S0 = RT_SP(P, 0);
		const int64_t* S1 = RT_SP(P, 1);
		const int64_t KH = S0[RT_KSIZE], KW = S1[RT_KSIZE];
		for (int64_t row = b0 * RT_MR; row < b1 * RT_MR && row < M; row++) {
			int64_t o[RT_MAXS], b;
			const int64_t cbase = rt_out_pos(P, ns, row, o, &b);
			const int64_t oh = o[0], ow = o[1];
			for (int64_t jp = 0; jp < np; jp++) {
				RT_NAME(vec) acc0 = {0}, acc1 = {0};
				const T* bpp = bp + jp * K * RT_NR;
				for (int64_t kh = 0; kh < KH; kh++) {
					const int64_t ih = oh * S0[RT_CSTRIDE] + kh * S0[RT_DIL] - S0[RT_PADLO];
					for (int64_t kw = 0; kw < KW; kw++) {
						const int64_t iw = ow * S1[RT_CSTRIDE] + kw * S1[RT_DIL] - S1[RT_PADLO];
						const int ok = ih >= 0 && ih < S0[RT_ISIZE] && iw >= 0 && iw < S1[RT_ISIZE];
						// An offset, not a pointer: outside the input it is
						// never dereferenced (and a pointer there would be
						// undefined).
						const int64_t xoff = b * P[RT_CIB] + ih * S0[RT_ISTRIDE] + iw * S1[RT_ISTRIDE];
						const T* bk = bpp + (kh * KW + kw) * CI * RT_NR;
						for (int64_t ci = 0; ci < CI; ci++) {
							const T a = ok ? in[xoff + ci * P[RT_CIF]] : 0;
							acc0 += a * *(const RT_NAME(vec)*)(bk + ci * RT_NR);
							acc1 += a * *(const RT_NAME(vec)*)(bk + ci * RT_NR + VW);
						}
					}
				}
				*(RT_NAME(vec)*)tile = acc0;
				*(RT_NAME(vec)*)(tile + VW) = acc1;
				const int64_t cols = F - jp * RT_NR < RT_NR ? F - jp * RT_NR : RT_NR;
				for (int64_t j = 0; j < cols; j++) out[cbase + (jp * RT_NR + j) * P[RT_COF]] = tile[j];
			}
		}
		rt_scratch_done(0, bp);
		rt_scratch_done(1, ap);
		return;
	}
	for (int64_t ib = b0; ib < b1; ib++) {
		// Each row's output position, batch and output offset.
		int64_t ro[RT_MR][RT_MAXS], rb[RT_MR], cbase[RT_MR];
		int rows = 0;
		for (int r = 0; r < RT_MR && ib * RT_MR + r < M; r++, rows++)
			cbase[r] = rt_out_pos(P, ns, ib * RT_MR + r, ro[r], &rb[r]);
		// Gather: ap[(tap*CI + ci)*RT_MR + r], zeros for padding and for
		// rows past M.
		int64_t kt[RT_MAXS] = {0};
		for (int64_t tap = 0; tap < taps; tap++) {
			for (int r = 0; r < RT_MR; r++) {
				T* dst = ap + tap * CI * RT_MR + r;
				const int64_t ioff = r < rows ? rt_in_offset(P, ns, rb[r], ro[r], kt) : -1;
				if (ioff >= 0) {
					for (int64_t ci = 0; ci < CI; ci++) dst[ci * RT_MR] = in[ioff + ci * P[RT_CIF]];
				} else {
					for (int64_t ci = 0; ci < CI; ci++) dst[ci * RT_MR] = 0;
				}
			}
			rt_next_tap(P, ns, kt);
		}
		for (int64_t jp = 0; jp < np; jp++) {
			const int64_t cols = F - jp * RT_NR < RT_NR ? F - jp * RT_NR : RT_NR;
			RT_NAME(micro)(K, ap, bp + jp * K * RT_NR, tile, RT_NR, RT_MR, RT_NR, 1);
			for (int r = 0; r < rows; r++)
				for (int64_t j = 0; j < cols; j++) out[cbase[r] + (jp * RT_NR + j) * P[RT_COF]] = tile[r * RT_NR + j];
		}
	}
	rt_scratch_done(0, bp);
	rt_scratch_done(1, ap);
}

#ifndef RT_WINO_HELPERS
#define RT_WINO_HELPERS
// rt_wino_koff is the kernel offset of window position (kh, kw) of a 3x3
// window, reversed where the block says so, before the feature terms.
static inline int64_t rt_wino_koff(const int64_t* P, int64_t kh, int64_t kw) {
	const int64_t* S0 = RT_SP(P, 0);
	const int64_t* S1 = RT_SP(P, 1);
	return (S0[RT_REV] ? 2 - kh : kh) * S0[RT_KSTRIDE] + (S1[RT_REV] ? 2 - kw : kw) * S1[RT_KSTRIDE];
}
#endif

// wino_out is the output transform of one feature: y = Aᵀ·m·A, m's
// element e at mc[e*es], y row-major.
static inline __attribute__((always_inline)) void RT_NAME(wino_out)(const T* mc, int64_t es, T y[4]) {
	const T q00 = mc[0] + mc[4 * es] + mc[8 * es], q01 = mc[es] + mc[5 * es] + mc[9 * es];
	const T q02 = mc[2 * es] + mc[6 * es] + mc[10 * es], q03 = mc[3 * es] + mc[7 * es] + mc[11 * es];
	const T q10 = mc[4 * es] - mc[8 * es] - mc[12 * es], q11 = mc[5 * es] - mc[9 * es] - mc[13 * es];
	const T q12 = mc[6 * es] - mc[10 * es] - mc[14 * es], q13 = mc[7 * es] - mc[11 * es] - mc[15 * es];
	y[0] = q00 + q01 + q02;
	y[1] = q01 - q02 - q03;
	y[2] = q10 + q11 + q12;
	y[3] = q11 - q12 - q13;
}

// wino_direct computes the outputs (oh, ow) of batch b, for oh in
// [oh0, oh0 + 2) and ow in [ow0, ow0 + 2) inside the output, by the
// direct sum in the reference's order (window row-major, input features
// inner, padding skipped): a tile whose Winograd outputs are not finite,
// and every tile where there is no scratch memory.
static void RT_NAME(wino_direct)(const int64_t* P, const T* in, const T* w, T* out, int64_t b, int64_t oh0, int64_t ow0) {
	const int64_t* S0 = RT_SP(P, 0);
	const int64_t* S1 = RT_SP(P, 1);
	const int64_t CI = P[RT_CC], F = P[RT_CF];
	for (int64_t oh = oh0; oh < oh0 + 2 && oh < S0[RT_OSIZE]; oh++)
		for (int64_t ow = ow0; ow < ow0 + 2 && ow < S1[RT_OSIZE]; ow++)
			for (int64_t co = 0; co < F; co++) {
				T sum = 0;
				for (int64_t kh = 0; kh < 3; kh++) {
					const int64_t ih = oh + kh - S0[RT_PADLO];
					if (ih < 0 || ih >= S0[RT_ISIZE]) continue;
					for (int64_t kw = 0; kw < 3; kw++) {
						const int64_t iw = ow + kw - S1[RT_PADLO];
						if (iw < 0 || iw >= S1[RT_ISIZE]) continue;
						const T* xr = in + b * P[RT_CIB] + ih * S0[RT_ISTRIDE] + iw * S1[RT_ISTRIDE];
						const T* wr = w + rt_wino_koff(P, kh, kw) + co * P[RT_CKO];
						for (int64_t ci = 0; ci < CI; ci++) sum += xr[ci * P[RT_CIF]] * wr[ci * P[RT_CKI]];
					}
				}
				out[b * P[RT_COB] + oh * S0[RT_OSTRIDE] + ow * S1[RT_OSTRIDE] + co * P[RT_COF]] = sum;
			}
}

// wino_part does part t of n of a 2-D convolution with a 3x3 window,
// unit strides and no dilation (rt.h's conv parameter block; CheckWino)
// by Winograd F(2x2, 3x3), as the generated kernels' "wino" variant
// does (convwino.go, whose transforms and order of operations these
// are): each part transforms the kernel into up ([element][panel][input
// feature][RT_NR]), then cuts the output into 2x2 tiles (batch, tile
// row, tile column, row-major), RT_MR tiles to a block, transforms each
// block's input tiles into vp ([element][tile][input feature]), runs the
// 16 elements' RT_MR x RT_NR products over the input features
// (micro_any, on the block's rows in place) into mp ([element][tile][feature]), and transforms mp
// into the tiles' outputs. A tile with an output that is not finite
// (an infinite or NaN input or weight, which the transforms spread to
// outputs the direct sum leaves finite: inf - inf) is recomputed by the
// direct sum, so that such values come out as the reference's do.
static void RT_NAME(wino_part)(void** bufs, int64_t t, int64_t n) {
	const T* in = (const T*)bufs[0];
	const T* w = (const T*)bufs[1];
	const int64_t* P = (const int64_t*)bufs[2];
	T* out = (T*)bufs[3];
	const int64_t* S0 = RT_SP(P, 0);
	const int64_t* S1 = RT_SP(P, 1);
	const int64_t NB = P[RT_CN], CI = P[RT_CC], F = P[RT_CF];
	const int64_t IH = S0[RT_ISIZE], IW = S1[RT_ISIZE], OH = S0[RT_OSIZE], OW = S1[RT_OSIZE];
	const int64_t TH = (OH + 1) / 2, TW = (OW + 1) / 2, TT = NB * TH * TW;
	if (TT == 0 || F == 0) return;
	const int64_t nb = (TT + RT_MR - 1) / RT_MR;
	const int64_t b0 = nb * t / n, b1 = nb * (t + 1) / n;
	if (b0 >= b1) return;
	const int64_t np = (F + RT_NR - 1) / RT_NR, NP = np * RT_NR;
	T* up = CI > 0 ? (T*)rt_scratch(0, (size_t)(16 * NP * CI) * sizeof(T)) : NULL;
	T* vp = CI > 0 ? (T*)rt_scratch(1, (size_t)(16 * RT_MR * CI + 16 * RT_MR * NP + CI) * sizeof(T)) : NULL;
	if (!up || !vp || xk_rt_force_naive) {
		for (int64_t tile = b0 * RT_MR; tile < b1 * RT_MR && tile < TT; tile++) {
			const int64_t tw = tile % TW, th = tile / TW % TH, tb = tile / TW / TH;
			RT_NAME(wino_direct)(P, in, w, out, tb, 2 * th, 2 * tw);
		}
		if (up) rt_scratch_done(0, up);
		if (vp) rt_scratch_done(1, vp);
		return;
	}
	T* mp = vp + 16 * RT_MR * CI;
	T* zr = mp + 16 * RT_MR * NP;
	for (int64_t ci = 0; ci < CI; ci++) zr[ci] = 0;
	const int64_t CIF = P[RT_CIF], CKI = P[RT_CKI], CKO = P[RT_CKO];
	const T h = (T)0.5;
	// The kernel: up[((e*np + of/RT_NR)*CI + ci)*RT_NR + of%RT_NR] = (G·g·Gᵀ)[e].
	for (int64_t ci = 0; ci < CI; ci++)
		for (int64_t of = 0; of < NP; of++) {
			T g[3][3] = {{0}};
			if (of < F)
				for (int64_t a = 0; a < 3; a++)
					for (int64_t b = 0; b < 3; b++) g[a][b] = w[rt_wino_koff(P, a, b) + ci * CKI + of * CKO];
			T u[4][3];
			for (int64_t b = 0; b < 3; b++) {
				u[0][b] = g[0][b];
				u[1][b] = h * g[0][b] + h * g[1][b] + h * g[2][b];
				u[2][b] = h * g[0][b] + (-h) * g[1][b] + h * g[2][b];
				u[3][b] = g[2][b];
			}
			T* dst = up + (of / RT_NR * CI + ci) * RT_NR + of % RT_NR;
			const int64_t es = np * CI * RT_NR; // from one element to the next
			for (int64_t i = 0; i < 4; i++) {
				dst[(i * 4 + 0) * es] = u[i][0];
				dst[(i * 4 + 1) * es] = h * u[i][0] + h * u[i][1] + h * u[i][2];
				dst[(i * 4 + 2) * es] = h * u[i][0] + (-h) * u[i][1] + h * u[i][2];
				dst[(i * 4 + 3) * es] = u[i][2];
			}
		}
	for (int64_t ib = b0; ib < b1; ib++) {
		int64_t tb[RT_MR], th[RT_MR], tw[RT_MR];
		// The input transform: vp[((i*4 + j)*RT_MR + r)*CI + ci] = (Bᵀ·d·B)[i][j].
		for (int r = 0; r < RT_MR; r++) {
			int64_t tile = ib * RT_MR + r;
			if (tile >= TT) tile = TT - 1;
			tw[r] = tile % TW;
			th[r] = tile / TW % TH;
			tb[r] = tile / TW / TH;
			const T* d[4][4];
			for (int64_t a = 0; a < 4; a++)
				for (int64_t b = 0; b < 4; b++) {
					const int64_t ih = 2 * th[r] + a - S0[RT_PADLO], iw = 2 * tw[r] + b - S1[RT_PADLO];
					const int ok = ih >= 0 && ih < IH && iw >= 0 && iw < IW;
					// zr stands for padding: CIF is 1 wherever it is read
					// (the strided loop below reads no pointer to it).
					d[a][b] = ok ? in + tb[r] * P[RT_CIB] + ih * S0[RT_ISTRIDE] + iw * S1[RT_ISTRIDE] : CIF == 1 ? zr : NULL;
				}
			T* vr = vp + r * CI;
			const int64_t es = RT_MR * CI;
#define RT_WINO_IN(X)                                                                     \
	_Pragma("GCC ivdep")                                                                  \
	for (int64_t ci = 0; ci < CI; ci++) {                                                 \
		T x[4][4], m[4][4];                                                               \
		for (int a = 0; a < 4; a++)                                                       \
			for (int b = 0; b < 4; b++) x[a][b] = X;                                      \
		for (int b = 0; b < 4; b++) {                                                     \
			m[0][b] = x[0][b] - x[2][b];                                                  \
			m[1][b] = x[1][b] + x[2][b];                                                  \
			m[2][b] = -x[1][b] + x[2][b];                                                 \
			m[3][b] = x[1][b] - x[3][b];                                                  \
		}                                                                                 \
		for (int i = 0; i < 4; i++) {                                                     \
			vr[(i * 4 + 0) * es + ci] = m[i][0] - m[i][2];                                \
			vr[(i * 4 + 1) * es + ci] = m[i][1] + m[i][2];                                \
			vr[(i * 4 + 2) * es + ci] = -m[i][1] + m[i][2];                               \
			vr[(i * 4 + 3) * es + ci] = m[i][1] - m[i][3];                                \
		}                                                                                 \
	}
			if (CIF == 1) {
				RT_WINO_IN(d[a][b][ci])
			} else {
				RT_WINO_IN(d[a][b] ? d[a][b][ci * CIF] : 0)
			}
#undef RT_WINO_IN
		}
		// The 16 products.
		for (int64_t e = 0; e < 16; e++)
			for (int64_t jp = 0; jp < np; jp++)
				RT_NAME(micro_any)(CI, vp + e * RT_MR * CI, CI, up + (e * np + jp) * CI * RT_NR, mp + e * RT_MR * NP + jp * RT_NR, NP, RT_MR, RT_NR, 1);
		// The output transform: each tile's 2x2 outputs.
		for (int r = 0; r < RT_MR && ib * RT_MR + r < TT; r++) {
			T* o[2][2];
			for (int i = 0; i < 2; i++)
				for (int j = 0; j < 2; j++) {
					const int64_t oh = 2 * th[r] + i, ow = 2 * tw[r] + j;
					o[i][j] = oh < OH && ow < OW ? out + tb[r] * P[RT_COB] + oh * S0[RT_OSTRIDE] + ow * S1[RT_OSTRIDE] : NULL;
				}
			const T* mr0 = mp + r * NP;
			const int64_t es = RT_MR * NP;
			int nf = 0;
			if (P[RT_COF] == 1 && o[0][0] && o[0][1] && o[1][0] && o[1][1]) {
				// Every output inside and features contiguous: the loop
				// over features vectorizes.
				T* restrict o00 = o[0][0];
				T* restrict o01 = o[0][1];
				T* restrict o10 = o[1][0];
				T* restrict o11 = o[1][1];
				_Pragma("GCC ivdep")
				for (int64_t co = 0; co < F; co++) {
					T y[4];
					RT_NAME(wino_out)(mr0 + co, es, y);
					o00[co] = y[0];
					o01[co] = y[1];
					o10[co] = y[2];
					o11[co] = y[3];
					const T s = y[0] + y[1] + y[2] + y[3];
					nf |= s - s != 0;
				}
			} else
				for (int64_t co = 0; co < F; co++) {
					T y[4];
					RT_NAME(wino_out)(mr0 + co, es, y);
					for (int i = 0; i < 4; i++)
						if (o[i / 2][i % 2]) o[i / 2][i % 2][co * P[RT_COF]] = y[i];
					const T s = y[0] + y[1] + y[2] + y[3];
					nf |= s - s != 0;
				}
			if (nf) RT_NAME(wino_direct)(P, in, w, out, tb[r], 2 * th[r], 2 * tw[r]);
		}
	}
	rt_scratch_done(0, up);
	rt_scratch_done(1, vp);
}

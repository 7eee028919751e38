package cpu

import (
	"fmt"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file holds genConvWino, the Winograd F(2×2, 3×3) variant of
// convolution's register-blocked kernel: a tuner candidate beside
// genConvGemm's for the 3×3, unit-stride convolutions of image models
// (cnn, resnetblock). At one thread genConvGemm's direct variant already
// runs resnetblock's convolution at about 95% of the core's FMA peak, so
// fewer multiplications are the only way left to run it faster: F(2×2,
// 3×3) computes each 2×2 output tile with 16 products per input and
// output feature pair instead of 36, a 2.25× cut. It is not summed in the
// reference's order (the transforms add and subtract inputs and halve
// kernel weights), so its results differ from the default's by rounding:
// the autotuner keeps it only where closeEnough agrees, and only where
// it is faster. Infinities and NaNs it does not leave to rounding: a tile
// with a non-finite output is recomputed directly (see genConvWino).

// convWinoOK reports whether genConvWino applies: a 2-D convolution with
// a 3×3 window, unit strides and unit dilations (convGemmOK's other
// conditions hold), whose input the direct variants may read in place
// (convDirectOK).
func convWinoOK(l *lowering, op *stablehlo.Op) bool {
	c := op.Attrs.Conv
	d := c.Dims
	if len(d.InputSpatial) != 2 || !convDirectOK(l, op) {
		return false
	}
	// Nothing to compute (and its scratch sizes would be zero or less).
	if op.Results[0].Type.NumElements() == 0 || op.Operands[0].Type.NumElements() == 0 {
		return false
	}
	kt := op.Operands[1].Type
	for s := 0; s < 2; s++ {
		if kt.Shape[d.KernelSpatial[s]] != 3 || c.Strides[s] != 1 || c.RhsDilation[s] != 1 || c.LhsDilation[s] != 1 {
			return false
		}
	}
	return true
}

// winoBT, winoG and winoAT are the F(2, 3) transforms (Lavin and Gray,
// "Fast Algorithms for Convolutional Neural Networks"): an input tile d
// becomes Bᵀ·d·B, a 3×3 window of weights g becomes G·g·Gᵀ, and the
// elementwise products' sums m become the 2×2 output tile Aᵀ·m·A.
var (
	winoBT = [][]float64{{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}}
	winoG  = [][]float64{{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}}
	winoAT = [][]float64{{1, 1, 1, 0}, {0, 1, -1, -1}}
)

// winoSum is the C expression Σₖ row[k]·term(k) of a transform's row.
func winoSum(acc string, row []float64, term func(k int) string) string {
	s := ""
	for k, c := range row {
		switch {
		case c == 0:
			continue
		case c == 1:
			s += " + " + term(k)
		case c == -1:
			s += " - " + term(k)
		default:
			s += fmt.Sprintf(" + (%s)%g*%s", acc, c, term(k))
		}
	}
	if s == "" {
		return "0"
	}
	if s[1] == '+' {
		return s[3:]
	}
	return "-" + s[3:]
}

// winoApply emits the statements of T·x·Tᵀ for the transform t: dst(i,
// j) is assigned element (i, j) of the result, x(a, b) is element (a, b)
// of the square x. Its temporaries are scalars of type acc, so that a
// loop around it over features vectorizes.
func winoApply(g *gen, acc string, t [][]float64, x func(a, b int) string, dst func(i, j int) string) {
	n := len(t[0])
	tmp := g.name("wt")
	for i, row := range t {
		for b := 0; b < n; b++ {
			g.line("const %s %s_%d_%d = %s;", acc, tmp, i, b, winoSum(acc, row, func(a int) string { return x(a, b) }))
		}
	}
	for i := range t {
		for j, row := range t {
			g.line("%s = %s;", dst(i, j), winoSum(acc, row, func(b int) string { return fmt.Sprintf("%s_%d_%d", tmp, i, b) }))
		}
	}
}

// genConvWino computes a convolution convWinoOK accepts by Winograd
// F(2×2, 3×3). Each part transforms the kernel once into up, 16
// matrices of input × output features packed in column panels of nr =
// nv·vw output features ([element][panel][input feature][nr], zeros past
// the last feature). Output positions are cut into 2×2 tiles (batch,
// tile row, tile column, row-major), mr tiles to a block: a block's
// input tiles are transformed into vp ([element][tile][input feature]:
// padding reads zr, kI zeros), then each of the 16 elements is one
// register-blocked mr × nr product over the input features, as
// genConvGemm's (rank1Update), into mp ([element][tile][feature]), and
// the output transform writes each tile's 2×2 outputs (those past an odd
// output size go to a scratch row). The transforms run over features in
// their innermost loops so that they vectorize. A tile whose outputs
// include an infinity or NaN is recomputed by the direct sum.
func genConvWino(g *gen, op *stablehlo.Op, cfg Config) {
	lhs, rhs := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	out := g.output(r)
	c := op.Attrs.Conv
	d := c.Dims
	lt, kt := lhs.Type, rhs.Type
	acc := ctype(r.Type.DType)
	_, N, _, kI := convGemmDims(op)
	mr, nv, vw := cfg.p("mr"), cfg.p("nv"), cfg.p("vw")
	nr := int64(nv * vw)
	np := (N + nr - 1) / nr
	NP := np * nr
	B := r.Type.Shape[d.OutputBatch]
	OH, OW := r.Type.Shape[d.OutputSpatial[0]], r.Type.Shape[d.OutputSpatial[1]]
	TH, TW := (OH+1)/2, (OW+1)/2
	T := B * TH * TW
	nb := (T + int64(mr) - 1) / int64(mr)
	rs := rowStrides(r.Type.Shape)
	sf := rs[d.OutputFeature]
	ls := rowStrides(lt.Shape)
	esz := sizeOfC(acc)
	alloc := func(name string, n int64) {
		g.line("%s* restrict %s = (%s*)aligned_alloc(64, (sizeof(%s) * %d + 63) / 64 * 64 + 64);", acc, name, acc, acc, n)
	}
	g.line("typedef %s xv __attribute__((vector_size(%d), aligned(%d), may_alias));", acc, vw*esz, esz)
	alloc("up", 16*NP*kI)
	alloc("vp", 16*int64(mr)*kI)
	alloc("mp", 16*int64(mr)*NP)
	alloc("zr", kI)
	alloc("dump", (N-1)*sf+1) // outputs past an odd output size; N ≥ 1 (convWinoOK)
	g.line("if (!up || !vp || !mp || !zr || !dump) { XK_ALLOC_FAILED(); goto done; }")
	g.line("for (int64_t i = 0; i < %d; i++) zr[i] = 0;", kI)

	// The kernel: up[((e*np + of/nr)*kI + ci)*nr + of%nr] = (G·w·Gᵀ)[e].
	g.line("for (int64_t ci = 0; ci < %d; ci++)", kI)
	g.line("for (int64_t of = 0; of < %d; of++) {", NP)
	g.ind++
	for a := 0; a < 3; a++ {
		for b := 0; b < 3; b++ {
			g.line("%s w_%d_%d = 0;", acc, a, b)
		}
	}
	g.openBlock("if (of < %d) {", N)
	kk := make([]string, kt.Rank())
	kk[d.KernelInputFeature] = "ci"
	kk[d.KernelOutputFeature] = "of"
	for a := 0; a < 3; a++ {
		for b := 0; b < 3; b++ {
			for s, i := range []int{a, b} {
				if c.Reversal[s] {
					i = 2 - i
				}
				kk[d.KernelSpatial[s]] = fmt.Sprint(i)
			}
			g.line("w_%d_%d = %s;", a, b, g.val(rhs, kk))
		}
	}
	g.closeBlock()
	winoApply(g, acc, winoG, func(a, b int) string { return fmt.Sprintf("w_%d_%d", a, b) },
		func(i, j int) string {
			return fmt.Sprintf("up[((%d + of / %d)*%d + ci)*%d + of %% %d]", (i*4+j)*int(np), nr, kI, nr, nr)
		})
	g.ind--
	g.line("}")

	// This part's tile blocks.
	blockRange(g, cfg, nb)
	base := g.input(lhs)
	g.line("for (int64_t ib = ib0; ib < ib1; ib++) {")
	g.ind++
	g.line("int64_t tb[%d], th[%d], tw[%d];", mr, mr, mr)
	// The input transform: vp[((a*4 + b)*mr + r)*kI + ci] = (Bᵀ·d·B)[a][b].
	g.line("for (int64_t r = 0; r < %d; r++) {", mr)
	g.ind++
	g.line("int64_t t = ib*%d + r; if (t >= %d) t = %d;", mr, T, T-1)
	g.line("tw[r] = t %% %d; t /= %d; th[r] = t %% %d; tb[r] = t / %d;", TW, TW, TH, TH)
	for a := 0; a < 4; a++ {
		g.line("const int64_t ih%d = 2*th[r] + %d, ok%d = ih%d >= 0 && ih%d < %d;", a, int64(a)-c.PadLow[0], a, a, a, lt.Shape[d.InputSpatial[0]])
	}
	for b := 0; b < 4; b++ {
		g.line("const int64_t iw%d = 2*tw[r] + %d, ol%d = iw%d >= 0 && iw%d < %d;", b, int64(b)-c.PadLow[1], b, b, b, lt.Shape[d.InputSpatial[1]])
	}
	for a := 0; a < 4; a++ {
		for b := 0; b < 4; b++ {
			g.line("const %s* restrict d_%d_%d = ok%d && ol%d ? %s + tb[r]*%d + ih%d*%d + iw%d*%d : zr;", acc, a, b, a, b, base, ls[d.InputBatch], a, ls[d.InputSpatial[0]], b, ls[d.InputSpatial[1]])
		}
	}
	g.line("%s* restrict vr = vp + r*%d;", acc, kI)
	g.line("for (int64_t ci = 0; ci < %d; ci++) {", kI)
	g.ind++
	winoApply(g, acc, winoBT, func(a, b int) string { return fmt.Sprintf("d_%d_%d[ci]", a, b) },
		func(i, j int) string { return fmt.Sprintf("vr[%d + ci]", int64(i*4+j)*int64(mr)*kI) })
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	// The 16 products.
	g.line("for (int64_t e = 0; e < 16; e++)")
	g.line("for (int64_t jp = 0; jp < %d; jp++) {", np)
	g.ind++
	for rr := 0; rr < mr; rr++ {
		for v := 0; v < nv; v++ {
			g.line("xv c%d_%d = {0};", rr, v)
		}
	}
	for rr := 0; rr < mr; rr++ {
		g.line("const %s* restrict ar%d = vp + (e*%d + %d)*%d;", acc, rr, mr, rr, kI)
	}
	g.line("const %s* bpp = up + (e*%d + jp)*%d;", acc, np, kI*nr)
	g.line("for (int64_t ci = 0; ci < %d; ci++) {", kI)
	rank1Update(g, acc, mr, nv, vw, "ci", func(rr int) string { return fmt.Sprintf("ar%d[ci]", rr) })
	g.line("}")
	for rr := 0; rr < mr; rr++ {
		for v := 0; v < nv; v++ {
			g.line("*(xv*)(mp + (e*%d + %d)*%d + jp*%d + %d) = c%d_%d;", mr, rr, NP, nr, v*vw, rr, v)
		}
	}
	g.ind--
	g.line("}")
	// The output transform: the tile's 2×2 outputs.
	g.line("for (int64_t r = 0; r < %d && ib*%d + r < %d; r++) {", mr, mr, T)
	g.ind++
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			g.line("%s* restrict o_%d_%d = 2*th[r] + %d < %d && 2*tw[r] + %d < %d ? %s + tb[r]*%d + (2*th[r] + %d)*%d + (2*tw[r] + %d)*%d : dump;",
				acc, i, j, i, OH, j, OW, out, rs[d.OutputBatch], i, rs[d.OutputSpatial[0]], j, rs[d.OutputSpatial[1]])
		}
	}
	g.line("const %s* restrict mr0 = mp + r*%d;", acc, NP)
	g.line("int nf = 0;")
	g.line("for (int64_t co = 0; co < %d; co++) {", N)
	g.ind++
	g.line("%s y_0_0, y_0_1, y_1_0, y_1_1;", acc)
	winoApply(g, acc, winoAT, func(a, b int) string { return fmt.Sprintf("mr0[%d + co]", int64(a*4+b)*int64(mr)*NP) },
		func(i, j int) string { return fmt.Sprintf("y_%d_%d", i, j) })
	for i := 0; i < 2; i++ {
		for j := 0; j < 2; j++ {
			g.line("o_%d_%d[co*%d] = y_%d_%d;", i, j, sf, i, j)
		}
	}
	// s - s is 0 for a finite s and NaN otherwise (no -ffast-math: see
	// internal/cc); an integer OR, unlike a float sum, vectorizes.
	g.line("const %s s_ = y_0_0 + y_0_1 + y_1_0 + y_1_1;", acc)
	g.line("nf |= s_ - s_ != 0;")
	g.ind--
	g.line("}")
	// An infinity or NaN among the tile's outputs: an infinite or NaN
	// input or weight (which the transforms spread to outputs the
	// reference leaves finite or infinite: ∞ - ∞), or a transform
	// overflowing. The tile's outputs are then recomputed by the direct
	// sum in the reference's order, padding skipped, so that non-finite
	// values come out as the interpreter's do.
	g.line("if (nf) {")
	g.ind++
	// One loop over the tile's outputs and one over the window, kept
	// rolled: this path is for rare tiles, and unrolled (four outputs ×
	// nine window positions) it more than doubled the kernel's compile
	// time.
	g.line("%s* const oq[4] = {o_0_0, o_0_1, o_1_0, o_1_1};", acc)
	g.line("#pragma GCC unroll 1")
	g.line("for (int64_t q = 0; q < 4; q++) {")
	g.ind++
	g.line("if (oq[q] == dump) continue;")
	g.line("#pragma GCC unroll 1")
	g.line("for (int64_t co = 0; co < %d; co++) {", N)
	g.ind++
	g.line("%s sum = 0;", acc)
	g.line("#pragma GCC unroll 1")
	g.line("for (int64_t kt = 0; kt < 9; kt++) {")
	g.ind++
	g.line("const int64_t kh = kt / 3, kw = kt %% 3;")
	g.line("const int64_t ih = 2*th[r] + q/2 + kh - %d, iw = 2*tw[r] + q%%2 + kw - %d;", c.PadLow[0], c.PadLow[1])
	g.line("if (ih < 0 || ih >= %d || iw < 0 || iw >= %d) continue;", lt.Shape[d.InputSpatial[0]], lt.Shape[d.InputSpatial[1]])
	g.line("const %s* restrict xr = %s + tb[r]*%d + ih*%d + iw*%d;", acc, base, ls[d.InputBatch], ls[d.InputSpatial[0]], ls[d.InputSpatial[1]])
	g.line("#pragma GCC unroll 1")
	g.openBlock("for (int64_t ci = 0; ci < %d; ci++) {", kI)
	kk = make([]string, kt.Rank())
	kk[d.KernelInputFeature] = "ci"
	kk[d.KernelOutputFeature] = "co"
	for s, v := range []string{"kh", "kw"} {
		if c.Reversal[s] {
			v = "(2 - " + v + ")"
		}
		kk[d.KernelSpatial[s]] = v
	}
	g.line("sum += xr[ci] * %s;", g.val(rhs, kk))
	g.pop()
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.line("oq[q][co*%d] = sum;", sf)
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.line("goto done;")
	g.line("done:")
	for _, p := range []string{"up", "vp", "mp", "zr", "dump"} {
		g.line("free(%s);", p)
	}
}

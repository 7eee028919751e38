package cpu

import (
	"fmt"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers convolution, a kernel root: genConvGemm, the tuned
// register-blocked path for float convolutions (convGemmOK; its Winograd
// candidate is convwino.go's genConvWino), and genConv, the interpreter's
// loop (stablehlo/conv.go) for every other form.

// convKernel builds convolution's kernel: the tuned gemm (genConvGemm)
// where convGemmOK, the interpreter's loop (genConv) otherwise.
func convKernel(k *kernel, op *stablehlo.Op) {
	if convGemmOK(op) {
		k.kind = "convgemm"
		m, n, taps, kI := convGemmDims(op)
		k.work = m * n * taps * kI
		k.cands = convCandidates(op, k.threads, k.work, convDirectOK(k.l, op), convWinoOK(k.l, op))
		k.gen = genConvGemm
		return
	}
	k.kind = op.Name
	k.cands = defaultOnly()
	k.gen = func(g *gen, op *stablehlo.Op, _ Config) { genConv(g, op) }
}

// convGemmOK reports whether genConvGemm handles op: a float convolution
// (f32 or f64 throughout) without feature or batch groups and without lhs
// dilation. Everything else (strides, padding, rhs dilation, reversal,
// any dimension numbers) it handles; other convolutions use genConv.
// Its "da" variants read the input in place, which needs the input
// materialized with input features as its last, contiguous dimension
// (convDirectOK).
func convGemmOK(op *stablehlo.Op) bool {
	c := op.Attrs.Conv
	dt := op.Results[0].Type.DType
	if dt != stablehlo.F32 && dt != stablehlo.F64 {
		return false
	}
	if op.Operands[0].Type.DType != dt || op.Operands[1].Type.DType != dt {
		return false
	}
	if c.FeatureGroupCount != 1 || c.BatchGroupCount != 1 || len(c.Dims.InputSpatial) == 0 {
		return false
	}
	for _, d := range c.LhsDilation {
		if d != 1 {
			return false
		}
	}
	return true
}

// convDirectOK reports whether genConvGemm's direct variants apply: the
// input is a buffer (not computed inline) with features innermost.
func convDirectOK(l *lowering, op *stablehlo.Op) bool {
	x := op.Operands[0]
	return (l.mat[x] || x.Def == nil) && op.Attrs.Conv.Dims.InputFeature == int64(x.Type.Rank()-1)
}

// convGemmDims are a convolution seen as a matrix product: M output
// positions (batch × output spatial) by N output features, summed over K
// = taps (kernel window positions) × input features.
func convGemmDims(op *stablehlo.Op) (m, n, taps, kI int64) {
	c := op.Attrs.Conv
	d := c.Dims
	r, kt := op.Results[0].Type, op.Operands[1].Type
	m = r.Shape[d.OutputBatch]
	for _, s := range d.OutputSpatial {
		m *= r.Shape[s]
	}
	taps = 1
	for _, s := range d.KernelSpatial {
		taps *= kt.Shape[s]
	}
	return m, r.Shape[d.OutputFeature], taps, kt.Shape[d.KernelInputFeature]
}

// convCandidates are genConvGemm's variants: rows per block (mr) and
// vectors per column panel (nv), split by row blocks over threads when
// the convolution is big enough, plus a serial run; where wino
// (convWinoOK), genConvWino's Winograd variant second, with the default's
// register block and split (tiles per block for rows).
func convCandidates(op *stablehlo.Op, threads int, work int64, direct, wino bool) []Config {
	vw := vectorWidth(op.Results[0].Type.DType.Size())
	m, n, _, _ := convGemmDims(op)
	nv := 2
	if n <= int64(vw) {
		nv = 1
	}
	par := parNone
	if threads > 1 && work >= dotMinParWork && (m+7)/8 >= int64(2*threads) {
		par = parRows
	}
	da := 0
	if direct {
		da = 1
	}
	cfg := func(mr, nv, par, da int) Config {
		p := map[string]int{"mr": mr, "nv": nv, "vw": vw}
		if da < 0 {
			// genConvWino: mr tiles and nv vectors per register block.
			if par != parNone {
				p["par"] = par
			}
			return Config{Name: "wino", Params: p}
		}
		if par != parNone {
			p["par"] = par
		}
		if da != 0 {
			p["da"] = 1
		}
		return Config{Name: "gemm", Params: p}
	}
	// Register blocks as for dot (see dotCandidates).
	big, small := 6, 4
	if vw*op.Results[0].Type.DType.Size() >= 64 {
		big, small = 12, 8
	}
	c := []Config{cfg(big, nv, par, da), cfg(small, nv, par, da), cfg(big, 3-nv, par, da)}
	if wino {
		// Second, so that tuneSet's bound never drops it.
		c = append(c[:1], append([]Config{cfg(big, nv, par, -1)}, c[1:]...)...)
	}
	if da != 0 && !wino {
		// The gathering variant. Where Winograd applies it is left out:
		// it lost to both the direct variant and Winograd on each of
		// resnetblock's and cnn's convolutions (95/0.21/0.44 ms against
		// 79/0.18/0.33 direct and 45/0.14/0.20 Winograd, 1 thread), and
		// building and timing it cost the tuned compile as much as
		// Winograd's candidate adds.
		c = append(c, cfg(big, nv, par, 0))
	}
	if par != parNone && work < parSerialMax {
		c = append(c, cfg(big, nv, parNone, da)) // see dotCandidates
	}
	return c
}

// genConvGemm computes a convolution (§convolution, the cases convGemmOK
// accepts) as a register-blocked matrix product over implicit im2col
// rows: the kernel is packed once into column panels of nr = nv·vw output
// features ([panel][tap][input feature][nr]); then each block of mr output
// positions gathers its input windows into a packed [K][mr] block (zeros
// for padding) and multiplies it with every panel, an mr × nr block of
// the output living in vector registers over all of K. Every output
// element is summed in the reference's order (window row-major, input
// features inner), whatever the blocking or the thread split.
func genConvGemm(g *gen, op *stablehlo.Op, cfg Config) {
	if cfg.Name == "wino" {
		genConvWino(g, op, cfg)
		return
	}
	lhs, rhs := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	out := g.output(r)
	c := op.Attrs.Conv
	d := c.Dims
	ns := len(d.InputSpatial)
	lt, kt := lhs.Type, rhs.Type
	acc := ctype(r.Type.DType)
	M, N, taps, kI := convGemmDims(op)
	K := taps * kI
	mr, nv, vw := cfg.p("mr"), cfg.p("nv"), cfg.p("vw")
	nr := nv * vw
	np := (N + int64(nr) - 1) / int64(nr)
	nb := (M + int64(mr) - 1) / int64(mr)
	esz := sizeOfC(acc)
	g.line("typedef %s xv __attribute__((vector_size(%d), aligned(%d), may_alias));", acc, vw*esz, esz)
	g.line("%s* bp = (%s*)aligned_alloc(64, (sizeof(%s) * %d + 63) / 64 * 64 + 64);", acc, acc, acc, np*K*int64(nr))
	// The gathering variant packs A into ap; the direct one reads A in
	// place and points padding rows at zr, kI zeros. Each allocates only
	// its own scratch.
	da := cfg.p("da") == 1
	scratch := "ap"
	if da {
		scratch = "zr"
		g.line("%s* zr = (%s*)aligned_alloc(64, (sizeof(%s) * %d + 63) / 64 * 64 + 64);", acc, acc, acc, kI)
	} else {
		g.line("%s* ap = (%s*)aligned_alloc(64, (sizeof(%s) * %d + 63) / 64 * 64 + 64);", acc, acc, acc, K*int64(mr))
	}
	g.line("if (!bp || !%s) { XK_ALLOC_FAILED(); goto done; }", scratch)
	if da {
		g.line("for (int64_t i = 0; i < %d; i++) zr[i] = 0;", kI)
	}
	// Pack the kernel: bp[(jp*K + t*kI + ci)*nr + jj] = w[tap t, ci, of = jp*nr + jj].
	kShape := make([]int64, ns)
	for s := range kShape {
		kShape[s] = kt.Shape[d.KernelSpatial[s]]
	}
	g.line("{")
	g.ind++
	g.line("int64_t t = 0;")
	ks := g.loops(kShape, "ks")
	g.line("for (int64_t ci = 0; ci < %d; ci++)", kI)
	g.openBlock("for (int64_t of = 0; of < %d; of++) {", np*int64(nr))
	kk := make([]string, kt.Rank())
	for s := 0; s < ns; s++ {
		kk[d.KernelSpatial[s]] = ks[s]
		if c.Reversal[s] {
			kk[d.KernelSpatial[s]] = fmt.Sprintf("(%d - %s)", kShape[s]-1, ks[s])
		}
	}
	kk[d.KernelInputFeature] = "ci"
	kk[d.KernelOutputFeature] = "of"
	g.line("%s wv = 0;", acc)
	g.openBlock("if (of < %d) {", N)
	g.line("wv = %s;", g.val(rhs, kk))
	g.closeBlock()
	g.line("bp[((of / %d)*%d + t*%d + ci)*%d + of %% %d] = wv;", nr, K, kI, nr, nr)
	g.closeBlock()
	g.line("t++;")
	g.endLoops(len(ks))
	g.ind--
	g.line("}")
	// This part's row blocks.
	blockRange(g, cfg, nb)
	// Output row geometry: row = (b, o_0, ..., o_{ns-1}) row-major.
	oShape := make([]int64, ns)
	for s := range oShape {
		oShape[s] = r.Type.Shape[d.OutputSpatial[s]]
	}
	rStrides := rowStrides(r.Type.Shape)
	sf := rStrides[d.OutputFeature]
	g.line("for (int64_t ib = ib0; ib < ib1; ib++) {")
	g.ind++
	g.line("int64_t rb[%d], ro[%d][%d], cbase[%d];", mr, mr, ns, mr)
	g.line("for (int64_t r = 0; r < %d; r++) {", mr)
	g.ind++
	g.line("int64_t row = ib*%d + r; if (row >= %d) row = %d;", mr, M, M-1)
	g.line("cbase[r] = 0;")
	for s := ns - 1; s >= 0; s-- {
		g.line("ro[r][%d] = row %% %d; row /= %d; cbase[r] += ro[r][%d]*%d;", s, oShape[s], oShape[s], s, rStrides[d.OutputSpatial[s]])
	}
	g.line("rb[r] = row; cbase[r] += row*%d;", rStrides[d.OutputBatch])
	g.ind--
	g.line("}")
	if !da {
		// Gather the block's input windows: ap[(t*kI + ci)*mr + r].
		g.line("{")
		g.ind++
		g.line("int64_t t = 0;")
		ks = g.loops(kShape, "ks")
		g.openBlock("for (int64_t r = 0; r < %d; r++) {", mr)
		li := make([]string, lt.Rank())
		var conds []string
		conds = append(conds, fmt.Sprintf("ib*%d + r < %d", mr, M))
		for s := 0; s < ns; s++ {
			p := g.name("p")
			g.line("const int64_t %s = ro[r][%d]*%d + %s*%d - %d;", p, s, c.Strides[s], ks[s], c.RhsDilation[s], c.PadLow[s])
			conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", p, p, lt.Shape[d.InputSpatial[s]]))
			li[d.InputSpatial[s]] = p
		}
		li[d.InputBatch] = "rb[r]"
		li[d.InputFeature] = "ci"
		g.line("%s* dst = ap + t*%d*%d + r;", acc, kI, mr)
		g.line("if (%s) {", allOf(conds))
		g.ind++
		g.openBlock("for (int64_t ci = 0; ci < %d; ci++) {", kI)
		g.line("dst[ci*%d] = %s;", mr, g.val(lhs, li))
		g.closeBlock()
		g.ind--
		g.line("} else {")
		g.line("\tfor (int64_t ci = 0; ci < %d; ci++) dst[ci*%d] = 0;", kI, mr)
		g.line("}")
		g.closeBlock()
		g.line("t++;")
		g.endLoops(len(ks))
		g.ind--
		g.line("}")
	}
	// Multiply the block with every panel.
	g.line("for (int64_t jp = 0; jp < %d; jp++) {", np)
	g.ind++
	for rr := 0; rr < mr; rr++ {
		for v := 0; v < nv; v++ {
			g.line("xv c%d_%d = {0};", rr, v)
		}
	}
	if da {
		// Direct: per tap, each row's window is kI contiguous input
		// features read in place (or zr, zeros, for padding), so there
		// is no gather; the micro-kernel streams mr rows of A.
		base := g.input(lhs)
		ls := rowStrides(lt.Shape)
		g.line("int64_t t = 0;")
		ks := g.loops(kShape, "kt")
		// One loop sets the rows' pointers rather than mr unrolled
		// copies of the bounds test: the same run time, and the copies
		// were a third of the kernel's compile time.
		g.line("const %s* ar[%d];", acc, mr)
		g.line("for (int64_t r = 0; r < %d; r++) {", mr)
		g.ind++
		conds := []string{fmt.Sprintf("ib*%d + r < %d", mr, M)}
		off := fmt.Sprintf("rb[r]*%d", ls[d.InputBatch])
		for s := 0; s < ns; s++ {
			p := g.name("p")
			g.line("const int64_t %s = ro[r][%d]*%d + %s*%d - %d;", p, s, c.Strides[s], ks[s], c.RhsDilation[s], c.PadLow[s])
			conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", p, p, lt.Shape[d.InputSpatial[s]]))
			off += fmt.Sprintf(" + %s*%d", p, ls[d.InputSpatial[s]])
		}
		g.line("ar[r] = (%s) ? %s + %s : zr;", allOf(conds), base, off)
		g.ind--
		g.line("}")
		for rr := 0; rr < mr; rr++ {
			g.line("const %s* restrict ar%d = ar[%d];", acc, rr, rr)
		}
		g.line("const %s* bpp = bp + jp*%d + t*%d;", acc, K*int64(nr), kI*int64(nr))
		g.line("for (int64_t ci = 0; ci < %d; ci++) {", kI)
		rank1Update(g, acc, mr, nv, vw, "ci", func(rr int) string { return fmt.Sprintf("ar%d[ci]", rr) })
		g.line("}")
		g.line("t++;")
		g.endLoops(len(ks))
	} else {
		g.line("const %s* bpp = bp + jp*%d;", acc, K*int64(nr))
		g.line("for (int64_t k = 0; k < %d; k++) {", K)
		g.ind++
		g.line("const %s* apk = ap + k*%d;", acc, mr)
		g.ind--
		rank1Update(g, acc, mr, nv, vw, "k", func(rr int) string { return fmt.Sprintf("apk[%d]", rr) })
		g.line("}")
	}
	g.line("const int64_t j0 = jp*%d;", nr)
	if sf == 1 {
		g.line("if (ib*%d + %d <= %d && j0 + %d <= %d) {", mr, mr, M, nr, N)
		g.ind++
		for rr := 0; rr < mr; rr++ {
			for v := 0; v < nv; v++ {
				g.line("*(xv*)(%s + cbase[%d] + j0 + %d) = c%d_%d;", out, rr, v*vw, rr, v)
			}
		}
		g.ind--
		g.line("} else {")
		g.ind++
	} else {
		g.line("{")
		g.ind++
	}
	g.line("%s tmp[%d][%d] __attribute__((aligned(64)));", acc, mr, nr)
	for rr := 0; rr < mr; rr++ {
		for v := 0; v < nv; v++ {
			g.line("*(xv*)&tmp[%d][%d] = c%d_%d;", rr, v*vw, rr, v)
		}
	}
	g.line("for (int64_t r = 0; r < %d && ib*%d + r < %d; r++)", mr, mr, M)
	g.line("for (int64_t jj = 0; jj < %d && j0 + jj < %d; jj++)", nr, N)
	g.line("\t%s[cbase[r] + (j0 + jj)*%d] = tmp[r][jj];", out, sf)
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.line("goto done;")
	g.line("done:")
	g.line("free(bp);")
	g.line("free(%s);", scratch)
}

// rank1Update emits the body of genConvGemm's loop over k (named k): the
// nv vectors of packed B for this k, then c_rr_v += a_rr * b_v for the mr
// rows, where aOf(rr) is row rr's value of A. The accumulators are
// indented one level inside the loop.
func rank1Update(g *gen, acc string, mr, nv, vw int, k string, aOf func(rr int) string) {
	g.ind++
	for v := 0; v < nv; v++ {
		g.line("const xv b%d = *(const xv*)(bpp + %s*%d + %d);", v, k, nv*vw, v*vw)
	}
	for rr := 0; rr < mr; rr++ {
		g.line("{ const %s a = %s;", acc, aOf(rr))
		for v := 0; v < nv; v++ {
			g.line("c%d_%d += a * b%d;", rr, v, v)
		}
		g.line("}")
	}
	g.ind--
}

// rowStrides returns the row-major element strides of shape.
func rowStrides(shape []int64) []int64 {
	st := make([]int64, len(shape))
	s := int64(1)
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = s
		s *= shape[i]
	}
	return st
}

// genConv computes convolution (§convolution) as the interpreter does:
// per output element, the sum over the kernel window (row-major) and the
// group's input features of input × kernel, skipping padding and
// lhs-dilation holes; feature groups split features, batch groups split
// the input batch across output feature groups. Floats accumulate in the
// compute type (f32 for 16-bit floats, rounded once at the store),
// integers in 64 bits.
func genConv(g *gen, op *stablehlo.Op) {
	lhs, rhs := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	out := g.output(r)
	c := op.Attrs.Conv
	d := c.Dims
	ns := len(d.InputSpatial)
	lt, kt := lhs.Type, rhs.Type
	kI, kO := kt.Shape[d.KernelInputFeature], kt.Shape[d.KernelOutputFeature]
	fg, bg := c.FeatureGroupCount, c.BatchGroupCount
	oPerFG, oPerBG, nPerBG := kO/fg, kO/bg, lt.Shape[d.InputBatch]/bg
	acc := ctype(computeDT(r.Type.DType))
	if !r.Type.DType.IsFloat() {
		acc = "int64_t"
	}
	if acc != "int64_t" {
		g.line("#ifndef XK_CONV_OPQ")
		g.line("#if defined(__x86_64__) || defined(__i386__)")
		g.line("#define XK_CONV_OPQ(x) __asm__(\"\" : \"+x\"(x))")
		g.line("#elif defined(__aarch64__)")
		g.line("#define XK_CONV_OPQ(x) __asm__(\"\" : \"+w\"(x))")
		g.line("#else")
		g.line("#define XK_CONV_OPQ(x) __asm__(\"\" : \"+m\"(x))")
		g.line("#endif")
		g.line("#endif")
	}
	oi := g.loops(r.Type.Shape, "o")
	b, of := oi[d.OutputBatch], oi[d.OutputFeature]
	g.line("const int64_t grp = %s / %d;", of, oPerFG)
	if bg > 1 {
		g.line("const int64_t n = (%s / %d) * %d + %s;", of, oPerBG, nPerBG, b)
	} else {
		g.line("const int64_t n = %s;", b)
	}
	g.line("%s acc = 0;", acc)
	kShape := make([]int64, ns)
	for s := range kShape {
		kShape[s] = kt.Shape[d.KernelSpatial[s]]
	}
	ki := g.loops(kShape, "k")
	li := make([]string, lt.Rank())
	kk := make([]string, kt.Rank())
	var conds []string
	for s := 0; s < ns; s++ {
		p := g.name("p")
		g.line("const int64_t %s = %s*%d + %s*%d - %d;", p, oi[d.OutputSpatial[s]], c.Strides[s], ki[s], c.RhsDilation[s], c.PadLow[s])
		ld := c.LhsDilation[s]
		if ld != 1 {
			conds = append(conds, fmt.Sprintf("%s >= 0 && %s %% %d == 0 && %s / %d < %d", p, p, ld, p, ld, lt.Shape[d.InputSpatial[s]]))
			li[d.InputSpatial[s]] = fmt.Sprintf("(%s / %d)", p, ld)
		} else {
			conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", p, p, lt.Shape[d.InputSpatial[s]]))
			li[d.InputSpatial[s]] = p
		}
		kk[d.KernelSpatial[s]] = ki[s]
		if c.Reversal[s] {
			kk[d.KernelSpatial[s]] = fmt.Sprintf("(%d - %s)", kShape[s]-1, ki[s])
		}
	}
	g.line("if (%s) {", allOf(conds))
	g.ind++
	g.openBlock("for (int64_t ci = 0; ci < %d; ci++) {", kI)
	li[d.InputBatch] = "n"
	li[d.InputFeature] = fmt.Sprintf("(grp*%d + ci)", kI)
	kk[d.KernelInputFeature] = "ci"
	kk[d.KernelOutputFeature] = of
	x := g.val(lhs, li)
	w := g.val(rhs, kk)
	if acc == "int64_t" {
		g.line("acc += (int64_t)%s * (int64_t)%s;", x, w)
	} else {
		// The product goes through an empty asm so that the default
		// -ffp-contract=fast cannot fuse it into the addition: an FMA
		// rounds differently from the interpreter (and from XLA, whose
		// result a grouped f32 convolution missed by 4 ULP that way).
		g.line("{ %s p_ = %s * %s; XK_CONV_OPQ(p_); acc = acc + p_; }", acc, x, w)
	}
	g.closeBlock()
	g.ind--
	g.line("}")
	g.endLoops(len(ki))
	res := "acc"
	if acc == "int64_t" {
		res = fmt.Sprintf("((%s)acc)", ctype(r.Type.DType))
	} else if isHalf(r.Type.DType) {
		res = roundExpr(r.Type.DType, "acc")
	}
	g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, res))
	g.endLoops(len(oi))
}

// blockRange declares ib0 and ib1, the blocks of nb that this part runs:
// its share (partUnits) under the row split, all of them otherwise. The
// direct and the Winograd convolutions split their blocks the same way.
func blockRange(g *gen, cfg Config, nb int64) {
	if cfg.p("par") == parRows {
		lo, hi := partUnits(nb)
		g.line("const int64_t ib0 = %s, ib1 = %s;", lo, hi)
	} else {
		g.line("const int64_t ib0 = 0, ib1 = %d;", nb)
	}
}

package cpu

import (
	"fmt"
	"sort"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// dotLayout is dot_general's operands viewed as canonical batched matrices
// A[B][M][K] and Bm[B][K][N]; the result is C[B][M][N], which is already the
// layout StableHLO specifies (batch, lhs free, rhs free).
type dotLayout struct {
	lhsOrder, rhsOrder []int // operand dims in canonical order
	b, m, k, n         int64
}

func prod(shape []int64, dims []int) int64 {
	p := int64(1)
	for _, d := range dims {
		p *= shape[d]
	}
	return p
}

func free(rank int, used ...[]int64) []int {
	u := map[int]bool{}
	for _, l := range used {
		for _, d := range l {
			u[int(d)] = true
		}
	}
	var out []int
	for d := 0; d < rank; d++ {
		if !u[d] {
			out = append(out, d)
		}
	}
	return out
}

func ints(l []int64) []int {
	out := make([]int, len(l))
	for i, v := range l {
		out[i] = int(v)
	}
	return out
}

func layoutOf(op *stablehlo.Op) dotLayout {
	dd := op.Attrs.Dot
	lhs, rhs := op.Operands[0].Type, op.Operands[1].Type
	lb, lc, lf := ints(dd.LhsBatch), ints(dd.LhsContracting), free(lhs.Rank(), dd.LhsBatch, dd.LhsContracting)
	rb, rc, rf := ints(dd.RhsBatch), ints(dd.RhsContracting), free(rhs.Rank(), dd.RhsBatch, dd.RhsContracting)
	var L dotLayout
	L.lhsOrder = append(append(append([]int{}, lb...), lf...), lc...)
	L.rhsOrder = append(append(append([]int{}, rb...), rc...), rf...)
	L.b, L.m, L.k, L.n = prod(lhs.Shape, lb), prod(lhs.Shape, lf), prod(lhs.Shape, lc), prod(rhs.Shape, rf)
	return L
}

func dotDims(op *stablehlo.Op) (b, m, k, n int64) {
	L := layoutOf(op)
	return L.b, L.m, L.k, L.n
}

// vectorWidth is the number of elements in the widest vector register the
// target has, for elements of size bytes.
func vectorWidth(size int) int {
	bytes := 16
	cpu := cc.DetectCPU()
	has := func(f string) bool {
		i := sort.SearchStrings(cpu.Features, f)
		return i < len(cpu.Features) && cpu.Features[i] == f
	}
	switch {
	case has("avx512f"):
		bytes = 64
	case has("avx2"), has("avx"):
		bytes = 32
	}
	return bytes / size
}

// Values of a dot configuration's "par" parameter: how a parallel variant
// splits the work between parts. Every split gives each output element to
// exactly one part, which sums it in the same order as a serial run.
const (
	parNone  = iota // serial
	parCols         // each part packs and computes its own column panels
	parRows         // each part computes its own row blocks (packing all of B)
	parBatch        // each part computes its own batch matrices
)

// dotMinParWork is the multiply-add count from which dot and convolution
// kernels get parallel candidates: below it a part is too short to pay
// for waking a thread. From parSerialMax on they get no serial candidate.
const (
	dotMinParWork = 1 << 20
	parSerialMax  = 1 << 23
)

func dotCandidates(op *stablehlo.Op, threads int, work int64) []Config {
	c := []Config{{Name: "ikj"}}
	dt := op.Results[0].Type.DType
	switch dt {
	case stablehlo.F32, stablehlo.F64, stablehlo.I32, stablehlo.I64:
	default:
		return c
	}
	// One cache-blocked variant without register blocking, then
	// register-blocked micro-kernels: mr rows x (nv*vw) columns of C live in
	// vector registers; kc is the depth of a packed panel of B; order picks
	// the outer loop. Earlier runs showed mr=4 and the wider tiled
	// variants never winning on AVX2/AVX-512 machines, so they are not
	// candidates: every candidate costs compile time on a cold start.
	c = append(c, Config{Name: "tiled", Params: map[string]int{"ti": 64, "tj": 512, "tk": 128}})
	vw := vectorWidth(dt.Size())
	// With several threads, the register-blocked candidates run in
	// parallel with the split that suits the shape best, and the
	// autotuner also sees the other splits and a serial run of one of
	// them: timing, not a rule, decides whether and how to split.
	split, alt := parNone, []int(nil)
	if threads > 1 && work >= dotMinParWork {
		b, m, _, n := dotDims(op)
		np, nb := (n+int64(2*vw)-1)/int64(2*vw), (m+11)/12
		switch {
		case np >= int64(2*threads):
			split = parCols
		case nb >= int64(2*threads):
			split = parRows
		case b >= int64(threads):
			split = parBatch
		}
		for _, s := range []int{parCols, parRows, parBatch} {
			if s != split && (s != parBatch || b >= 2) {
				alt = append(alt, s)
			}
		}
		// A serial run competes only where a part is short enough for
		// waking threads to matter: on a big product, threads always pay
		// on idle cores, and timing one while other processes load the
		// machine would keep it serial for good.
		if work < parSerialMax {
			alt = append(alt, parNone)
		}
	}
	// Register blocks of mr rows by two vectors: with 32 vector
	// registers (AVX-512) up to 14 rows fit (28 accumulators, two B
	// vectors, one broadcast), with 16 up to 6. Timing 512^3 f32 on an
	// AVX-512 Xeon put 12 rows, kc = 256 and packed A level with
	// OpenBLAS and the old 6- and 8-row blocks 20-30% behind; the other
	// candidates cover shapes and caches where that is not the best.
	big, small, huge := 6, 4, 0
	if vw*dt.Size() >= 64 {
		big, small, huge = 12, 8, 14
	}
	type micro struct{ mr, kc, pa, order int }
	micros := []micro{{big, 256, 1, 0}, {big, 256, 0, 0}, {big, 512, 0, 0}, {big, 128, 1, 0}, {small, 256, 1, 0}, {small, 128, 0, 0}, {big, 256, 1, 1}}
	if huge > 0 {
		micros = append(micros, micro{huge, 256, 0, 0})
	}
	for _, u := range micros {
		p := map[string]int{"mr": u.mr, "nv": 2, "vw": vw, "kc": u.kc, "order": u.order}
		if u.pa != 0 {
			p["pa"] = 1
		}
		if split != parNone {
			p["par"] = split
		}
		c = append(c, Config{Name: "micro", Params: p})
	}
	if split != parNone {
		for _, s := range alt {
			p := map[string]int{"mr": big, "nv": 2, "vw": vw, "kc": 256, "order": 0, "pa": 1}
			if s != parNone {
				p["par"] = s
			}
			c = append(c, Config{Name: "micro", Params: p})
		}
	}
	return c
}

// pack emits a copy of operand v into canonical order unless it already is
// canonical with the accumulation type, and returns the pointer name.
func packOperand(g *gen, v *stablehlo.Value, order []int, acc string, name string) string {
	src := g.input(v)
	identity := ctype(v.Type.DType) == acc
	for i, d := range order {
		if d != i {
			identity = false
		}
	}
	if identity {
		g.line("const %s* %s = %s;", acc, name, src)
		return name
	}
	n := v.Type.NumElements()
	g.line("%s_buf = (%s*)malloc(sizeof(%s) * %d + 64);", name, acc, acc, n)
	g.line("if (!%s_buf) { XK_ALLOC_FAILED(); goto done; }", name)
	g.line("{")
	g.ind++
	g.line("int64_t p = 0;")
	shape := make([]int64, len(order))
	for i, d := range order {
		shape[i] = v.Type.Shape[d]
	}
	idx := g.loops(shape, "q")
	src_idx := make([]string, v.Type.Rank())
	for i, d := range order {
		src_idx[d] = idx[i]
	}
	g.line("%s_buf[p++] = %s;", name, convertExpr(fmt.Sprintf("%s[%s]", src, offset(v.Type.Shape, src_idx)), v.Type.DType, accType(v.Type.DType, acc)))
	g.endLoops(len(idx))
	g.ind--
	g.line("}")
	g.line("const %s* %s = %s_buf;", acc, name, name)
	return name
}

// accType maps the accumulation C type back to a dtype for conversions.
func accType(from stablehlo.DType, acc string) stablehlo.DType {
	for _, d := range []stablehlo.DType{stablehlo.F32, stablehlo.F64, stablehlo.I32, stablehlo.I64, stablehlo.I8, stablehlo.I16, stablehlo.UI16, stablehlo.UI32, stablehlo.UI64} {
		if ctype(d) == acc {
			return d
		}
	}
	if acc == "uint8_t" && from == stablehlo.I1 {
		return stablehlo.I1
	}
	return stablehlo.UI8
}

func genDot(g *gen, op *stablehlo.Op, cfg Config) {
	L := layoutOf(op)
	r := op.Results[0]
	acc := ctype(r.Type.DType)
	isBool := r.Type.DType == stablehlo.I1
	out := g.output(r)
	g.line("%s* A_buf = NULL;", acc)
	g.line("%s* Bm_buf = NULL;", acc)
	A := packOperand(g, op.Operands[0], L.lhsOrder, acc, "A")
	B := packOperand(g, op.Operands[1], L.rhsOrder, acc, "Bm")
	M, K, N := L.m, L.k, L.n
	if cfg.p("par") == parBatch {
		g.line("for (int64_t bt = %d*xk_tid/xk_nt; bt < %d*(xk_tid + 1)/xk_nt; bt++) {", L.b, L.b)
	} else {
		g.line("for (int64_t bt = 0; bt < %d; bt++) {", L.b)
	}
	g.ind++
	g.line("const %s* restrict a = %s + bt*%d;", acc, A, M*K)
	g.line("const %s* restrict b = %s + bt*%d;", acc, B, K*N)
	g.line("%s* restrict c = %s + bt*%d;", acc, out, M*N)
	fma := func(dst, x, y string) string {
		if isBool {
			return fmt.Sprintf("%s |= (%s & %s);", dst, x, y)
		}
		return fmt.Sprintf("%s += %s * %s;", dst, x, y)
	}
	switch cfg.Name {
	case "tiled":
		ti, tj, tk := cfg.p("ti"), cfg.p("tj"), cfg.p("tk")
		g.line("for (int64_t i = 0; i < %d; i++) c[i] = 0;", M*N)
		g.line("for (int64_t i0 = 0; i0 < %d; i0 += %d)", M, ti)
		g.line("for (int64_t k0 = 0; k0 < %d; k0 += %d)", K, tk)
		g.line("for (int64_t j0 = 0; j0 < %d; j0 += %d) {", N, tj)
		g.line("\tconst int64_t i1 = i0 + %d < %d ? i0 + %d : %d;", ti, M, ti, M)
		g.line("\tconst int64_t k1 = k0 + %d < %d ? k0 + %d : %d;", tk, K, tk, K)
		g.line("\tconst int64_t j1 = j0 + %d < %d ? j0 + %d : %d;", tj, N, tj, N)
		g.line("\tfor (int64_t i = i0; i < i1; i++)")
		g.line("\tfor (int64_t k = k0; k < k1; k++) {")
		g.line("\t\tconst %s av = a[i*%d + k];", acc, K)
		g.line("\t\t%s* restrict cr = c + i*%d;", acc, N)
		g.line("\t\tconst %s* restrict br = b + k*%d;", acc, N)
		g.line("\t\tfor (int64_t j = j0; j < j1; j++) %s", fma("cr[j]", "av", "br[j]"))
		g.line("\t}")
		g.line("}")
	case "micro":
		genMicro(g, cfg, acc, M, K, N)
	default: // ikj: the untuned default
		g.line("for (int64_t i = 0; i < %d; i++) {", M)
		g.line("\t%s* restrict cr = c + i*%d;", acc, N)
		g.line("\tfor (int64_t j = 0; j < %d; j++) cr[j] = 0;", N)
		g.line("\tfor (int64_t k = 0; k < %d; k++) {", K)
		g.line("\t\tconst %s av = a[i*%d + k];", acc, K)
		g.line("\t\tconst %s* restrict br = b + k*%d;", acc, N)
		g.line("\t\tfor (int64_t j = 0; j < %d; j++) %s", N, fma("cr[j]", "av", "br[j]"))
		g.line("\t}")
		g.line("}")
	}
	g.ind--
	g.line("}")
	g.line("goto done;") // keeps the label used even when nothing was packed
	g.line("done:")
	g.line("free(A_buf);")
	g.line("free(Bm_buf);")
}

// genMicro emits a register-blocked kernel: B is packed into kc x NR panels
// (NR = nv vectors of vw elements), and an mr x NR block of C is kept in
// vector registers while k runs over the panel. order selects whether the
// row blocks (0) or the column panels (1) form the outer loop.
func genMicro(g *gen, cfg Config, acc string, M, K, N int64) {
	mr, nv, vw, kc, order := cfg.p("mr"), cfg.p("nv"), cfg.p("vw"), cfg.p("kc"), cfg.p("order")
	nr := nv * vw
	np := (N + int64(nr) - 1) / int64(nr)
	// This part's column panels [jp0, jp1) and rows [ir0, ir1): all of
	// them unless the work is split by columns or by row blocks (at
	// multiples of mr, so blocks never straddle parts).
	jpRange, irRange := fmt.Sprintf("jp0 = 0, jp1 = %d", np), fmt.Sprintf("ir0 = 0, ir1 = %d", M)
	switch cfg.p("par") {
	case parCols:
		jpRange = fmt.Sprintf("jp0 = %d*xk_tid/xk_nt, jp1 = %d*(xk_tid + 1)/xk_nt", np, np)
	case parRows:
		nb := (M + int64(mr) - 1) / int64(mr)
		irRange = fmt.Sprintf("ir0 = (%d*xk_tid/xk_nt)*%d, ir1 = (%d*(xk_tid + 1)/xk_nt)*%d < %d ? (%d*(xk_tid + 1)/xk_nt)*%d : %d", nb, mr, nb, mr, M, nb, mr, M)
	}
	g.line("const int64_t %s;", jpRange)
	g.line("const int64_t %s;", irRange)
	if int64(kc) > K {
		kc = int(K)
	}
	if kc < 1 {
		kc = 1
	}
	g.line("typedef %s xv __attribute__((vector_size(%d), aligned(%d), may_alias));", acc, vw*sizeOfC(acc), sizeOfC(acc))
	g.line("%s* bp = (%s*)aligned_alloc(64, ((sizeof(%s) * %d * %d * %d) + 63) / 64 * 64);", acc, acc, acc, kc, np, nr)
	g.line("if (!bp) { XK_ALLOC_FAILED(); goto done; }")
	pa := cfg.p("pa") == 1
	if pa {
		// A is packed too, a kc-deep slice of this part's rows at a time,
		// as [row block][k][mr]: the micro-kernel then reads its mr
		// values of A for one k from one cache line instead of mr rows.
		nbAll := (M + int64(mr) - 1) / int64(mr)
		g.line("%s* apk0 = (%s*)aligned_alloc(64, ((sizeof(%s) * %d * %d * %d) + 63) / 64 * 64);", acc, acc, acc, kc, nbAll, mr)
		g.line("if (!apk0) { XK_ALLOC_FAILED(); free(bp); goto done; }")
	}
	g.line("for (int64_t pc = 0; pc < %d; pc += %d) {", K, kc)
	g.ind++
	g.line("const int64_t kc = pc + %d <= %d ? %d : %d - pc;", kc, K, kc, K)
	// Pack B[pc:pc+kc, :] into panels, zero-padding the last one.
	g.line("for (int64_t jp = jp0; jp < jp1; jp++)")
	g.line("for (int64_t k = 0; k < kc; k++)")
	g.line("for (int64_t jj = 0; jj < %d; jj++) {", nr)
	g.line("\tconst int64_t j = jp*%d + jj;", nr)
	g.line("\tbp[(jp*kc + k)*%d + jj] = j < %d ? b[(pc + k)*%d + j] : 0;", nr, N, N)
	g.line("}")
	if pa {
		g.line("for (int64_t ir = ir0; ir < ir1; ir += %d)", mr)
		g.line("for (int64_t r = 0; r < %d; r++) {", mr)
		g.line("	%s* dst = apk0 + ((ir - ir0)/%d)*kc*%d + r;", acc, mr, mr)
		g.line("	if (ir + r < %d) { const %s* src = a + (ir + r)*%d + pc; for (int64_t k = 0; k < kc; k++) dst[k*%d] = src[k]; }", M, acc, K, mr)
		g.line("	else for (int64_t k = 0; k < kc; k++) dst[k*%d] = 0;", mr)
		g.line("}")
	}
	outer, inner := "ir", "jp"
	outerLim, innerLim := fmt.Sprintf("ir < ir1; ir += %d", mr), "jp < jp1; jp++"
	if order == 1 {
		outer, inner = inner, outer
		outerLim, innerLim = innerLim, outerLim
	}
	g.line("for (int64_t %s = %s0; %s) {", outer, outer, outerLim)
	g.line("for (int64_t %s = %s0; %s) {", inner, inner, innerLim)
	g.ind++
	if pa {
		g.line("const %s* ap = apk0 + ((ir - ir0)/%d)*kc*%d;", acc, mr, mr)
	} else {
		for r := 0; r < mr; r++ {
			g.line("const %s* ar%d = a + (ir + %d < %d ? ir + %d : %d)*%d + pc;", acc, r, r, M, r, M-1, K)
		}
	}
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.line("xv c%d_%d = {0};", r, v)
		}
	}
	g.line("const %s* bpp = bp + jp*kc*%d;", acc, nr)
	g.line("for (int64_t k = 0; k < kc; k++) {")
	g.ind++
	for v := 0; v < nv; v++ {
		g.line("const xv b%d = *(const xv*)(bpp + k*%d + %d);", v, nr, v*vw)
	}
	for r := 0; r < mr; r++ {
		if pa {
			g.line("const %s a%d = ap[k*%d + %d];", acc, r, mr, r)
		} else {
			g.line("const %s a%d = ar%d[k];", acc, r, r)
		}
		for v := 0; v < nv; v++ {
			g.line("c%d_%d += a%d * b%d;", r, v, r, v)
		}
	}
	g.ind--
	g.line("}")
	g.line("const int64_t j0 = jp*%d;", nr)
	g.line("if (ir + %d <= %d && j0 + %d <= %d) {", mr, M, nr, N)
	g.ind++
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.line("{ xv* cp = (xv*)(c + (ir + %d)*%d + j0 + %d); if (pc == 0) *cp = c%d_%d; else *cp += c%d_%d; }", r, N, v*vw, r, v, r, v)
		}
	}
	g.ind--
	g.line("} else {")
	g.ind++
	g.line("%s tmp[%d][%d] __attribute__((aligned(64)));", acc, mr, nr)
	for r := 0; r < mr; r++ {
		for v := 0; v < nv; v++ {
			g.line("*(xv*)&tmp[%d][%d] = c%d_%d;", r, v*vw, r, v)
		}
	}
	g.line("for (int64_t r = 0; r < %d && ir + r < %d; r++)", mr, M)
	g.line("for (int64_t jj = 0; jj < %d && j0 + jj < %d; jj++) {", nr, N)
	g.line("\t%s* cp = c + (ir + r)*%d + j0 + jj;", acc, N)
	g.line("\t*cp = (pc == 0 ? 0 : *cp) + tmp[r][jj];")
	g.line("}")
	g.ind--
	g.line("}")
	g.ind--
	g.line("}")
	g.line("}")
	g.ind--
	g.line("}")
	g.line("free(bp);")
	if pa {
		g.line("free(apk0);")
	}
}

func sizeOfC(t string) int {
	switch t {
	case "double", "int64_t", "uint64_t":
		return 8
	case "float", "int32_t", "uint32_t":
		return 4
	case "int16_t", "uint16_t":
		return 2
	}
	return 1
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
// the convolution is big enough, plus a serial run.
func convCandidates(op *stablehlo.Op, threads int, work int64, direct bool) []Config {
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
	if da != 0 {
		c = append(c, cfg(big, nv, par, 0)) // the gathering variant
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
	g.line("%s* ap = (%s*)aligned_alloc(64, (sizeof(%s) * %d + 63) / 64 * 64 + 64);", acc, acc, acc, K*int64(mr))
	g.line("%s* zr = (%s*)aligned_alloc(64, (sizeof(%s) * %d + 63) / 64 * 64 + 64);", acc, acc, acc, kI)
	g.line("if (!bp || !ap || !zr) { XK_ALLOC_FAILED(); goto done; }")
	g.line("for (int64_t i = 0; i < %d; i++) zr[i] = 0;", kI)
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
	g.line("for (int64_t of = 0; of < %d; of++) {", np*int64(nr))
	g.ind++
	g.push()
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
	g.line("if (of < %d) {", N)
	g.ind++
	g.push()
	g.line("wv = %s;", g.val(rhs, kk))
	g.closeBlock()
	g.line("bp[((of / %d)*%d + t*%d + ci)*%d + of %% %d] = wv;", nr, K, kI, nr, nr)
	g.closeBlock()
	g.line("t++;")
	g.endLoops(len(ks))
	g.ind--
	g.line("}")
	// This part's row blocks.
	if cfg.p("par") == parRows {
		g.line("const int64_t ib0 = %d*xk_tid/xk_nt, ib1 = %d*(xk_tid + 1)/xk_nt;", nb, nb)
	} else {
		g.line("const int64_t ib0 = 0, ib1 = %d;", nb)
	}
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
	da := cfg.p("da") == 1
	if !da {
		// Gather the block's input windows: ap[(t*kI + ci)*mr + r].
		g.line("{")
		g.ind++
		g.line("int64_t t = 0;")
		ks = g.loops(kShape, "ks")
		g.line("for (int64_t r = 0; r < %d; r++) {", mr)
		g.ind++
		g.push()
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
		g.line("for (int64_t ci = 0; ci < %d; ci++) {", kI)
		g.ind++
		g.push()
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
		for rr := 0; rr < mr; rr++ {
			conds := []string{fmt.Sprintf("ib*%d + %d < %d", mr, rr, M)}
			off := fmt.Sprintf("rb[%d]*%d", rr, ls[d.InputBatch])
			for s := 0; s < ns; s++ {
				p := fmt.Sprintf("(ro[%d][%d]*%d + %s*%d - %d)", rr, s, c.Strides[s], ks[s], c.RhsDilation[s], c.PadLow[s])
				conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", p, p, lt.Shape[d.InputSpatial[s]]))
				off += fmt.Sprintf(" + %s*%d", p, ls[d.InputSpatial[s]])
			}
			g.line("const %s* restrict ar%d = (%s) ? %s + %s : zr;", acc, rr, allOf(conds), base, off)
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
	g.line("free(ap);")
	g.line("free(zr);")
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

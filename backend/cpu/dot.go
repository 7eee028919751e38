package cpu

import (
	"fmt"
	"slices"
	"sort"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers dot_general, a kernel root: genDot, the tuned
// register-blocked gemm for f32 and f64 operands, and genDotHalf, the
// interpreter's loop (stablehlo/dot.go) for 16-bit floats and complex
// values. Convolution's tuned path, also a gemm, is in conv.go.

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

// dotKernel builds dot_general's kernel: the tuned gemm (genDot) for
// f32 and f64, one in-order variant (genDotHalf) for complex values and
// 16-bit floats.
func dotKernel(k *kernel, op *stablehlo.Op) {
	if hasComplex(op) {
		// A plain loop in the interpreter's order: the tuned
		// kernels are real-valued gemms.
		k.kind = "dotcomplex"
		k.cands = defaultOnly()
		k.gen = func(g *gen, op *stablehlo.Op, _ Config) { genDotHalf(g, op) }
		return
	}
	if isHalf(op.Operands[0].Type.DType) || isHalf(op.Operands[1].Type.DType) || isHalf(op.Results[0].Type.DType) {
		// The tuned kernels work in one C type from packed buffers.
		k.kind = "dothalf"
		k.cands = defaultOnly()
		k.gen = func(g *gen, op *stablehlo.Op, _ Config) { genDotHalf(g, op) }
		return
	}
	k.kind = "dot"
	b, m, kk, n := dotDims(op)
	k.work = b * m * kk * n
	k.cands = dotCandidates(op, k.threads, k.work)
	k.gen = genDot
}

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
	// genMicro clamps kc to the contracting size K, so where K is
	// smaller, candidates that differ only in kc beyond K would compile
	// to the same code: each costs compile time and none can win, so
	// only the first is kept.
	_, _, kDim, _ := dotDims(op)
	seen := map[micro]bool{}
	for _, u := range micros {
		eff := u
		eff.kc = int(min(int64(u.kc), max(kDim, 1)))
		if seen[eff] {
			continue
		}
		seen[eff] = true
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

// dotPartsPerThread is how many parts per thread a parallel dot variant
// is cut into. Parts split by column panels pack only their own panels
// of B (and get several only where they read A in place) and parts split
// by batch matrices share nothing, so these get up
// to 4 parts per thread (at least one panel or batch matrix each): on a
// loaded machine a thread that loses its core then holds up the call by
// a quarter of its share, since the others take its remaining parts.
// Row splits keep one part per thread: each of their parts packs all of
// B. Which part computes an output element never changes its sum, so the
// result does not depend on the part count.
func dotPartsPerThread(op *stablehlo.Op, cfg Config, threads int) int {
	b, _, _, n := dotDims(op)
	var units int64
	switch cfg.p("par") {
	case parCols:
		if cfg.p("pa") == 1 || !inPlace(op.Operands[0], layoutOf(op).lhsOrder, ctype(op.Results[0].Type.DType)) {
			// Every part packs all of A (into its micro-kernel order, or
			// out of a transposed layout), so each extra part repeats
			// that: on transformer4l's 512x512 products (2 threads,
			// interleaved), 4 parts per thread ran 4.2-8.0 ms with A
			// transposed against 2.7-3.3 ms with one, and 2.6-4.7 ms
			// against 2.1-3.6 ms with A in place but packed (pa=1).
			return 1
		}
		nr := int64(max(cfg.p("nv")*cfg.p("vw"), 1))
		units = (n + nr - 1) / nr
	case parBatch:
		units = b
	default:
		return 1
	}
	return int(min(max(units/int64(max(threads, 1)), 1), 4))
}

// packRange restricts a packed copy (packOperand) to the elements one part
// of a parallel variant reads: lo <= flat index < hi in each of the three
// groups of canonical dims (batch, then the two matrix dims); an empty lo
// means the whole group.
type packRange struct{ lo, hi [3]string }

// pack emits a copy of operand v into canonical order unless it already is
// canonical with the accumulation type, and returns the pointer name.
// groups is how many of order's dims form each of the three canonical
// groups. The copy is laid out for the whole operand but fills only the
// part of it rng names: every part of a parallel call packs for itself
// (parts keep their own scratch), and a part that packed the whole
// operand did so once per part, which on transformer4l's transposed
// 512x512 and attention operands (up to 8 parts on 2 threads) cost more
// than the part's multiply-adds and kept it from scaling at all.
func packOperand(g *gen, v *stablehlo.Value, order []int, groups [3]int, rng packRange, acc string, name string) string {
	src := g.input(v)
	if inPlace(v, order, acc) {
		g.line("const %s* %s = %s;", acc, name, src)
		return name
	}
	n := v.Type.NumElements()
	g.line("%s_buf = (%s*)malloc(sizeof(%s) * %d + 64);", name, acc, acc, n)
	g.line("if (!%s_buf) { XK_ALLOC_FAILED(); goto done; }", name)
	g.line("{")
	g.ind++
	srcIdx := make([]string, v.Type.Rank())
	var dims [3][]int
	var size [3]int64
	var flat, lo, hi [3]string
	first := 0
	for gi := range 3 {
		dims[gi] = order[first : first+groups[gi]]
		first += groups[gi]
		size[gi] = 1
		for _, d := range dims[gi] {
			size[gi] *= v.Type.Shape[d]
		}
		flat[gi] = g.name("pk")
		lo[gi], hi[gi] = "0", fmt.Sprint(size[gi])
		if rng.lo[gi] != "" {
			lo[gi], hi[gi] = rng.lo[gi], rng.hi[gi]
		}
	}
	// decode names the source index of each of group gi's dims.
	decode := func(gi int) {
		stride := size[gi]
		for _, d := range dims[gi] {
			stride /= v.Type.Shape[d]
			q := g.name("pq")
			if len(dims[gi]) == 1 {
				g.line("const int64_t %s = %s;", q, flat[gi])
			} else {
				g.line("const int64_t %s = (%s / %d) %% %d;", q, flat[gi], stride, v.Type.Shape[d])
			}
			srcIdx[d] = q
		}
	}
	open := func(gi int, from, to string) {
		g.line("for (int64_t %s = %s; %s < %s; %s++) {", flat[gi], from, flat[gi], to, flat[gi])
		g.ind++
		decode(gi)
	}
	g.line("for (int64_t %s = %s; %s < %s; %s++) {", flat[0], lo[0], flat[0], hi[0], flat[0])
	g.ind++
	decode(0)
	// A transposed operand (the source's innermost dim in the middle
	// group) is copied in strips of packTile rows of the middle group: a
	// strip reads packTile consecutive source elements per step and
	// writes packTile rows of the copy, which stay in L1. Element by
	// element along the copy's rows it read one source cache line per
	// element: transposing an 8x512x512 operand took about 5 ms, as long
	// as the product.
	transposed := len(dims[1]) > 0 && len(dims[2]) > 0 && dims[1][len(dims[1])-1] == v.Type.Rank()-1
	loops := 3
	if transposed {
		blk := g.name("pkb")
		g.line("for (int64_t %s = %s; %s < %s; %s += %d) {", blk, lo[1], blk, hi[1], blk, packTile)
		g.ind++
		g.line("const int64_t %s_end = %s + %d < %s ? %s + %d : %s;", blk, blk, packTile, hi[1], blk, packTile, hi[1])
		open(2, lo[2], hi[2])
		open(1, blk, blk+"_end")
		loops = 4
	} else {
		open(1, lo[1], hi[1])
		open(2, lo[2], hi[2])
	}
	at := fmt.Sprintf("(%s*%d + %s)*%d + %s", flat[0], size[1], flat[1], size[2], flat[2])
	g.line("%s_buf[%s] = %s;", name, at, convertExpr(fmt.Sprintf("%s[%s]", src, offset(v.Type.Shape, srcIdx)), v.Type.DType, accType(v.Type.DType, acc)))
	for range loops {
		g.ind--
		g.line("}")
	}
	g.ind--
	g.line("}")
	g.line("const %s* %s = %s_buf;", acc, name, name)
	return name
}

// inPlace reports whether a dot operand v with canonical dim order order
// is read where it lies: in canonical order already and of the
// accumulation C type acc, so packOperand copies nothing.
func inPlace(v *stablehlo.Value, order []int, acc string) bool {
	if ctype(v.Type.DType) != acc {
		return false
	}
	for i, d := range order {
		if d != i {
			return false
		}
	}
	return true
}

// partSpan returns C expressions for the elements [lo, hi) of part
// xk_tid's blocks (partUnits of n blocks of size elements), the end
// clamped to limit, since the last block may be short. genDot packs, for
// each part, the span genMicro's loops then cover: both cut with it (or
// with partUnits), or a part would read what it did not pack.
func partSpan(n, size, limit int64) (lo, hi string) {
	u0, u1 := partUnits(n)
	end := fmt.Sprintf("(%s)*%d", u1, size)
	return fmt.Sprintf("(%s)*%d", u0, size), fmt.Sprintf("(%s < %d ? %s : %d)", end, limit, end, limit)
}

// packTile is how many rows of the middle canonical group packOperand
// copies at once out of a transposed operand: 16 f32 are one cache line.
const packTile = 16

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
	M, K, N := L.m, L.k, L.n
	dd := op.Attrs.Dot
	nb, nf, nc := len(dd.LhsBatch), len(L.lhsOrder)-len(dd.LhsBatch)-len(dd.LhsContracting), len(dd.LhsContracting)
	nrf := len(L.rhsOrder) - nb - nc
	// Each part packs only what it reads: its batch matrices, its row
	// blocks of A or its column panels of B (the ranges genMicro gives it).
	var ra, rb packRange
	if cfg.Name == "micro" {
		switch cfg.p("par") {
		case parBatch:
			lo, hi := partUnits(L.b)
			ra.lo[0], ra.hi[0], rb.lo[0], rb.hi[0] = lo, hi, lo, hi
		case parRows:
			mr := int64(cfg.p("mr"))
			ra.lo[1], ra.hi[1] = partSpan((M+mr-1)/mr, mr, M)
		case parCols:
			nr := int64(cfg.p("nv") * cfg.p("vw"))
			rb.lo[2], rb.hi[2] = partSpan((N+nr-1)/nr, nr, N)
		}
	}
	A := packOperand(g, op.Operands[0], L.lhsOrder, [3]int{nb, nf, nc}, ra, acc, "A")
	B := packOperand(g, op.Operands[1], L.rhsOrder, [3]int{nb, nc, nrf}, rb, acc, "Bm")
	if cfg.p("par") == parBatch {
		lo, hi := partUnits(L.b)
		g.line("for (int64_t bt = %s; bt < %s; bt++) {", lo, hi)
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
	jp0, jp1, ir0, ir1 := "0", fmt.Sprint(np), "0", fmt.Sprint(M)
	switch cfg.p("par") {
	case parCols:
		jp0, jp1 = partUnits(np)
	case parRows:
		ir0, ir1 = partSpan((M+int64(mr)-1)/int64(mr), int64(mr), M)
	}
	g.line("const int64_t jp0 = %s, jp1 = %s;", jp0, jp1)
	g.line("const int64_t ir0 = %s, ir1 = %s;", ir0, ir1)
	if int64(kc) > K {
		kc = int(K)
	}
	if kc < 1 {
		kc = 1
	}
	g.line("typedef %s xv __attribute__((vector_size(%d), aligned(%d), may_alias));", acc, vw*sizeOfC(acc), sizeOfC(acc))
	// Room for this part's panels only (a part of a column split packs
	// no others), indexed from jp0.
	g.line("%s* bp = (%s*)aligned_alloc(64, ((sizeof(%s) * %d * (jp1 - jp0 > 0 ? jp1 - jp0 : 1) * %d) + 63) / 64 * 64);", acc, acc, acc, kc, nr)
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
	// Pack B[pc:pc+kc, :] into panels, zero-padding the last one. Full
	// panels are copied row by row without a bounds test per element, so
	// that the copy vectorizes.
	g.line("for (int64_t jp = jp0; jp < jp1; jp++) {")
	g.line("\t%s* restrict dst = bp + (jp - jp0)*kc*%d;", acc, nr)
	g.line("\tconst int64_t jb = jp*%d;", nr)
	g.line("\tif (jb + %d <= %d) {", nr, N)
	g.line("\t\tfor (int64_t k = 0; k < kc; k++)")
	g.line("\t\tfor (int64_t jj = 0; jj < %d; jj++) dst[k*%d + jj] = b[(pc + k)*%d + jb + jj];", nr, nr, N)
	g.line("\t} else {")
	g.line("\t\tfor (int64_t k = 0; k < kc; k++)")
	g.line("\t\tfor (int64_t jj = 0; jj < %d; jj++) dst[k*%d + jj] = jb + jj < %d ? b[(pc + k)*%d + jb + jj] : 0;", nr, nr, N, N)
	g.line("\t}")
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
	g.line("const %s* bpp = bp + (jp - jp0)*kc*%d;", acc, nr)
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

// genDotHalf computes a dot_general with 16-bit float operands or result
// as the interpreter does: operands converted to the accumulation type
// (f32 for a 16-bit result), each output element summed over the
// contracting dimensions in order, a 16-bit result rounded once. It also
// computes complex dot_general (acc starts at 0 and adds each product,
// Go's complex multiply, in the same order).
func genDotHalf(g *gen, op *stablehlo.Op) {
	l, rh := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	out := g.output(r)
	dd := op.Attrs.Dot
	adt := computeDT(r.Type.DType)
	acc := ctype(adt)
	free := func(t stablehlo.TensorType, used ...[]int64) []int {
		var f []int
		for i := 0; i < t.Rank(); i++ {
			inUse := false
			for _, u := range used {
				inUse = inUse || slices.Contains(u, int64(i))
			}
			if !inUse {
				f = append(f, i)
			}
		}
		return f
	}
	lf := free(l.Type, dd.LhsBatch, dd.LhsContracting)
	rf := free(rh.Type, dd.RhsBatch, dd.RhsContracting)
	oi := g.loops(r.Type.Shape, "o")
	g.line("%s acc = 0;", acc)
	kShape := make([]int64, len(dd.LhsContracting))
	for i, d := range dd.LhsContracting {
		kShape[i] = l.Type.Shape[d]
	}
	ki := g.loops(kShape, "k")
	li := make([]string, l.Type.Rank())
	ri := make([]string, rh.Type.Rank())
	nb := len(dd.LhsBatch)
	for i := range dd.LhsBatch {
		li[dd.LhsBatch[i]], ri[dd.RhsBatch[i]] = oi[i], oi[i]
	}
	for i, d := range lf {
		li[d] = oi[nb+i]
	}
	for i, d := range rf {
		ri[d] = oi[nb+len(lf)+i]
	}
	for i := range dd.LhsContracting {
		li[dd.LhsContracting[i]], ri[dd.RhsContracting[i]] = ki[i], ki[i]
	}
	x := convertExpr(g.val(l, li), l.Type.DType, adt)
	y := convertExpr(g.val(rh, ri), rh.Type.DType, adt)
	if adt.IsComplex() {
		g.needComplex = true
		g.line("acc = acc + %s;", complexMul(adt, x, y))
	} else {
		g.line("acc = acc + (%s)(%s * %s);", acc, x, y)
	}
	g.endLoops(len(ki))
	res := "acc"
	if isHalf(r.Type.DType) {
		res = roundExpr(r.Type.DType, "acc")
	}
	g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, res))
	g.endLoops(len(oi))
}

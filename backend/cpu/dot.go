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

func dotCandidates(op *stablehlo.Op) []Config {
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
	for _, mr := range []int{6, 8} {
		for _, kc := range []int{128, 256} {
			for _, order := range []int{0, 1} {
				c = append(c, Config{Name: "micro", Params: map[string]int{"mr": mr, "nv": 2, "vw": vw, "kc": kc, "order": order}})
			}
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
	g.line("if (!%s_buf) goto done;", name)
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
	g.line("for (int64_t bt = 0; bt < %d; bt++) {", L.b)
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
	if int64(kc) > K {
		kc = int(K)
	}
	if kc < 1 {
		kc = 1
	}
	g.line("typedef %s xv __attribute__((vector_size(%d), aligned(%d), may_alias));", acc, vw*sizeOfC(acc), sizeOfC(acc))
	g.line("%s* bp = (%s*)aligned_alloc(64, ((sizeof(%s) * %d * %d * %d) + 63) / 64 * 64);", acc, acc, acc, kc, np, nr)
	g.line("if (!bp) goto done;")
	g.line("for (int64_t pc = 0; pc < %d; pc += %d) {", K, kc)
	g.ind++
	g.line("const int64_t kc = pc + %d <= %d ? %d : %d - pc;", kc, K, kc, K)
	// Pack B[pc:pc+kc, :] into panels, zero-padding the last one.
	g.line("for (int64_t jp = 0; jp < %d; jp++)", np)
	g.line("for (int64_t k = 0; k < kc; k++)")
	g.line("for (int64_t jj = 0; jj < %d; jj++) {", nr)
	g.line("\tconst int64_t j = jp*%d + jj;", nr)
	g.line("\tbp[(jp*kc + k)*%d + jj] = j < %d ? b[(pc + k)*%d + j] : 0;", nr, N, N)
	g.line("}")
	outer, inner := "ir", "jp"
	outerLim, innerLim := fmt.Sprintf("ir < %d; ir += %d", M, mr), fmt.Sprintf("jp < %d; jp++", np)
	if order == 1 {
		outer, inner = inner, outer
		outerLim, innerLim = innerLim, outerLim
	}
	g.line("for (int64_t %s = 0; %s) {", outer, outerLim)
	g.line("for (int64_t %s = 0; %s) {", inner, innerLim)
	g.ind++
	for r := 0; r < mr; r++ {
		g.line("const %s* ar%d = a + (ir + %d < %d ? ir + %d : %d)*%d + pc;", acc, r, r, M, r, M-1, K)
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
		g.line("const %s a%d = ar%d[k];", acc, r, r)
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

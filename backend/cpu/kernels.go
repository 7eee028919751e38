package cpu

import (
	"fmt"
	"sort"
	"strings"

	"github.com/xlacache/xlacache/stablehlo"
)

// Config is one variant of a tunable kernel. Name identifies it in the
// autotune tier; Params are its knobs.
type Config struct {
	Name   string         `json:"name"`
	Params map[string]int `json:"params,omitempty"`
}

func (c Config) p(k string) int { return c.Params[k] }

// String formats the config for --verbose.
func (c Config) String() string {
	if len(c.Params) == 0 {
		return c.Name
	}
	keys := make([]string, 0, len(c.Params))
	for k := range c.Params {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(c.Name)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%d", k, c.Params[k])
	}
	return b.String()
}

// kernel is one generated kernel before compilation.
type kernel struct {
	kind    string // loop, reduce, dot, dothalf, concat, pad, topk, or the op name of the other roots
	root    *stablehlo.Op
	desc    string
	cands   []Config // cands[0] is the untuned default
	work    int64    // rough element or multiply-add count, to decide whether tuning pays
	inputs  []*stablehlo.Value
	outputs []*stablehlo.Value
	l       *lowering
	threads int // the thread bound parallel candidates are made for
}

// parallel reports whether variant cfg has a parallel entry point (see
// thread.go): its "par" parameter says how it splits the work.
func (k *kernel) parallel(cfg Config) bool { return cfg.p("par") > 0 }

// partsPerThread is how many parts per thread a parallel variant's calls
// are cut into (see partsSuffix): several where parts share nothing but
// a little setup, one for dot kernels, whose parts each pack an operand.
func (k *kernel) partsPerThread(cfg Config) int {
	if k.kind == "dot" {
		return 1
	}
	return 4
}

// tunable reports whether timing candidates is worth it for this kernel.
func (k *kernel) tunable() bool {
	if len(k.cands) < 2 {
		return false
	}
	if k.kind == "dot" || k.kind == "convgemm" {
		return k.work >= 1<<15
	}
	return k.work >= 1<<14
}

// newKernel builds the kernel rooted at op and fixes its input order by
// generating the default variant. threads is the thread bound kernels will
// run with: with more than one, big kernels get parallel variants.
func newKernel(l *lowering, op *stablehlo.Op, threads int) (*kernel, error) {
	k := &kernel{root: op, l: l, threads: max(threads, 1)}
	switch op.Name {
	case "dot_general":
		k.kind = "dot"
		if hasComplex(op) {
			// A plain loop in the interpreter's order: the tuned
			// kernels are real-valued gemms.
			k.kind = "dotcomplex"
			k.cands = []Config{{Name: "default"}}
			break
		}
		if isHalf(op.Operands[0].Type.DType) || isHalf(op.Operands[1].Type.DType) || isHalf(op.Results[0].Type.DType) {
			// The tuned kernels work in one C type from packed buffers.
			k.kind = "dothalf"
			k.cands = []Config{{Name: "default"}}
			break
		}
		b, m, kk, n := dotDims(op)
		k.work = b * m * kk * n
		k.cands = dotCandidates(op, k.threads, k.work)
	case "reduce":
		k.kind = "reduce"
		k.work = op.Operands[0].Type.NumElements()
		k.cands = reduceCandidates(op, k.threads, k.work)
	case "concatenate":
		k.kind = "concat"
		k.cands = []Config{{Name: "default"}}
	case "pad":
		k.kind = "pad"
		k.cands = []Config{{Name: "default"}}
	case "chlo.top_k":
		k.kind = "topk"
		k.cands = []Config{{Name: "default"}}
	case "convolution":
		if convGemmOK(op) {
			k.kind = "convgemm"
			m, n, taps, kI := convGemmDims(op)
			k.work = m * n * taps * kI
			k.cands = convCandidates(op, k.threads, k.work, convDirectOK(l, op))
			break
		}
		k.kind = op.Name
		k.cands = []Config{{Name: "default"}}
	case "fft":
		k.kind = "fft"
		k.cands = []Config{{Name: "default"}}
	case "dynamic_update_slice", "scatter", "reduce_window", "select_and_scatter", "sort", "rng_bit_generator", "triangular_solve", "cholesky":
		k.kind = op.Name
		k.cands = []Config{{Name: "default"}}
	default:
		k.kind = "loop"
		k.cands = []Config{{Name: "default"}}
		k.work = op.Results[0].Type.NumElements()
		if k.threads > 1 && k.work >= parMinElements && len(op.Results[0].Type.Shape) > 0 {
			k.cands = []Config{{Name: "default", Params: map[string]int{"par": 1}}}
		}
	}
	g, err := k.generate(k.cands[0], nil)
	if err != nil {
		return nil, err
	}
	k.inputs, k.outputs = g.inputs, g.outputs
	var types []string
	for _, r := range op.Results {
		types = append(types, r.Type.String())
	}
	// Splat constants are literals in the code, not work worth listing.
	var fused []*stablehlo.Op
	for _, f := range fusedOps(l, op) {
		if f.Name != "constant" {
			fused = append(fused, f)
		}
	}
	name := op.Name
	if len(fused) > 1 {
		name = "fusion(" + opSummary(fused) + ")"
	}
	k.desc = fmt.Sprintf("%s %s", name, strings.Join(types, ","))
	return k, nil
}

// fusedOps lists op and every producer generated inline in its kernel.
func fusedOps(l *lowering, op *stablehlo.Op) []*stablehlo.Op {
	seen := map[*stablehlo.Op]bool{}
	var out []*stablehlo.Op
	var walk func(o *stablehlo.Op)
	walk = func(o *stablehlo.Op) {
		if seen[o] {
			return
		}
		seen[o] = true
		out = append(out, o)
		for _, v := range o.Operands {
			if v.Def != nil && !l.mat[v] {
				walk(v.Def)
			}
		}
	}
	walk(op)
	return out
}

// generate emits the kernel body for cfg. fixed, when non-nil, pins the
// input order (all variants must read the same buffers in the same order).
func (k *kernel) generate(cfg Config, fixed []*stablehlo.Value) (*gen, error) {
	g := newGen(k.l, fixed)
	if fixed != nil {
		for _, o := range k.outputs {
			g.output(o)
		}
	}
	switch k.kind {
	case "loop":
		genLoop(g, k.root, cfg.p("par") > 0)
	case "reduce":
		genReduce(g, k.root, cfg)
	case "dot":
		genDot(g, k.root, cfg)
	case "concat":
		genConcat(g, k.root)
	case "pad":
		genPad(g, k.root)
	case "topk":
		genTopK(g, k.root)
	case "dynamic_update_slice":
		genDynamicUpdateSlice(g, k.root)
	case "scatter":
		genScatter(g, k.root)
	case "reduce_window":
		genReduceWindow(g, k.root)
	case "select_and_scatter":
		genSelectAndScatter(g, k.root)
	case "sort":
		genSort(g, k.root)
	case "convolution":
		genConv(g, k.root)
	case "convgemm":
		genConvGemm(g, k.root, cfg)
	case "dothalf", "dotcomplex":
		genDotHalf(g, k.root)
	case "fft":
		genFFT(g, k.root)
	case "rng_bit_generator":
		genRngBits(g, k.root)
	case "triangular_solve":
		genTriSolve(g, k.root)
	case "cholesky":
		genCholesky(g, k.root)
	}
	if g.err != nil {
		return nil, g.err
	}
	return g, nil
}

// source returns the complete translation unit of a variant under the
// given symbol name.
func (k *kernel) source(cfg Config, symbol string) (string, error) {
	body, err := k.body(cfg, symbol)
	if err != nil {
		return "", err
	}
	return prelude + body, nil
}

// body returns the kernel function alone, for translation units that hold
// several kernels after one prelude (the autotuner's candidate libraries).
func (k *kernel) body(cfg Config, symbol string) (string, error) {
	g, err := k.generate(cfg, k.inputs)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if g.needComplex || g.needFFT {
		b.WriteString(complexPrelude)
	}
	if g.needFFT {
		b.WriteString(fftPrelude)
	}
	fmt.Fprintf(&b, "\n/* %s; %s */\n", k.desc, cfg)
	if k.parallel(cfg) {
		// The part entry point, then the serial one as its only part.
		fmt.Fprintf(&b, "void %s%s(void** bufs, int64_t xk_tid, int64_t xk_nt);\n", symbol, parSuffix)
		fmt.Fprintf(&b, "void %s(void** bufs) { %s%s(bufs, 0, 1); }\n", symbol, symbol, parSuffix)
		fmt.Fprintf(&b, "const int64_t %s%s = %d;\n", symbol, partsSuffix, k.partsPerThread(cfg))
		fmt.Fprintf(&b, "void %s%s(void** bufs, int64_t xk_tid, int64_t xk_nt) {\n", symbol, parSuffix)
	} else {
		fmt.Fprintf(&b, "void %s(void** bufs) {\n", symbol)
	}
	for i, v := range g.inputs {
		t := stype(v.Type.DType)
		fmt.Fprintf(&b, "\tconst %s* restrict in%d = (const %s*)bufs[%d];\n", t, i, t, i)
	}
	for i, v := range g.outputs {
		t := stype(v.Type.DType)
		fmt.Fprintf(&b, "\t%s* restrict out%d = (%s*)bufs[%d];\n", t, i, t, len(g.inputs)+i)
	}
	b.WriteString(g.b.String())
	b.WriteString("}\n")
	return b.String(), nil
}

// genLoop writes every element of an elementwise/index root; with par,
// each part writes its share of the outer iterations.
func genLoop(g *gen, op *stablehlo.Op, par bool) {
	r := op.Results[0]
	out := g.output(r)
	idx, n := parLoops(g, r.Type.Shape, "i", par)
	x := g.compute(op, idx)
	g.line("%s[%s] = %s;", out, offset(r.Type.Shape, idx), storeExpr(r.Type.DType, x))
	g.endLoops(n)
}

// reduceShape splits a reduce's input dims into kept and reduced.
func reduceShape(op *stablehlo.Op) (kept, reduced []int) {
	red := map[int64]bool{}
	for _, d := range op.Attrs.ReduceDims {
		red[d] = true
	}
	for d := 0; d < op.Operands[0].Type.Rank(); d++ {
		if red[int64(d)] {
			reduced = append(reduced, d)
		} else {
			kept = append(kept, d)
		}
	}
	return kept, reduced
}

// simpleReducer returns the binary op name when the body is one
// commutative, associative op on (acc, elem), the case variants may reorder.
func simpleReducer(op *stablehlo.Op) string {
	if len(op.Results) != 1 {
		return ""
	}
	body := op.Regions[0]
	if len(body.Ops) != 2 {
		return ""
	}
	b := body.Ops[0]
	switch b.Name {
	case "add", "multiply", "maximum", "minimum", "and", "or", "xor":
	default:
		return ""
	}
	acc, el := body.Args[0], body.Args[1]
	ok := (b.Operands[0] == acc && b.Operands[1] == el) || (b.Operands[0] == el && b.Operands[1] == acc)
	if !ok || body.Ops[1].Operands[0] != b.Results[0] {
		return ""
	}
	return b.Name
}

func reduceCandidates(op *stablehlo.Op, threads int, work int64) []Config {
	// Big reductions with enough kept elements split those over threads
	// (each output element is still reduced by one thread, in the same
	// order, so results do not depend on the thread count).
	kept, reduced := reduceShape(op)
	inShape := op.Operands[0].Type.Shape
	keptN := int64(1)
	for _, d := range kept {
		keptN *= inShape[d]
	}
	var par map[string]int
	if threads > 1 && work >= parMinElements && len(kept) > 0 && keptN >= int64(2*threads) {
		par = map[string]int{"par": 1}
	}
	c := []Config{{Name: "scalar", Params: par}}
	if dt := op.Results[0].Type.DType; simpleReducer(op) == "" || isHalf(dt) || dt.IsComplex() {
		// 16-bit floats round after every step: only the in-order
		// accumulation gives the reference's result. Complex reductions
		// keep that order too (and their products need the helpers the
		// reordered variants do not emit).
		return c
	}
	r := op.Operands[0].Type.Rank()
	if len(reduced) == 1 && reduced[0] == r-1 {
		for _, u := range []int{2, 4, 8} {
			p := map[string]int{"u": u}
			if par != nil {
				p["par"] = 1
			}
			c = append(c, Config{Name: "unroll", Params: p})
		}
	}
	c = append(c, Config{Name: "rowmajor"})
	if par != nil {
		// The serial scalar loop too: a reduction that does not pay for
		// threads on this machine keeps one.
		c = append(c, Config{Name: "scalar"})
	}
	return c
}

// reducerBody emits the body with acc/elem bound to C names and returns the
// new accumulator expressions.
func reducerBody(g *gen, op *stablehlo.Op, accs, elems []string) []string {
	body := op.Regions[0]
	n := len(op.Results)
	for i := 0; i < n; i++ {
		g.bound[body.Args[i]] = accs[i]
		g.bound[body.Args[n+i]] = elems[i]
	}
	saved := g.l.mat
	// Body values are never materialized; compute them inline.
	g.l.mat = map[*stablehlo.Value]bool{}
	g.push()
	ret := body.Ops[len(body.Ops)-1].Operands
	res := make([]string, n)
	for i := range ret {
		res[i] = g.val(ret[i], nil)
	}
	g.pop()
	g.l.mat = saved
	return res
}

func genReduce(g *gen, op *stablehlo.Op, cfg Config) {
	n := len(op.Results)
	in := op.Operands[:n]
	inits := op.Operands[n:]
	kept, reduced := reduceShape(op)
	inShape := in[0].Type.Shape
	outs := make([]string, n)
	for i, r := range op.Results {
		outs[i] = g.output(r)
	}
	keptShape := make([]int64, len(kept))
	for i, d := range kept {
		keptShape[i] = inShape[d]
	}
	redShape := make([]int64, len(reduced))
	for i, d := range reduced {
		redShape[i] = inShape[d]
	}
	initv := make([]string, n)
	for i := range inits {
		initv[i] = g.val(inits[i], nil)
	}
	merge := func(o, r []string) []string {
		idx := make([]string, len(inShape))
		for i, d := range kept {
			idx[d] = o[i]
		}
		for i, d := range reduced {
			idx[d] = r[i]
		}
		return idx
	}
	switch cfg.Name {
	case "rowmajor":
		// Accumulate into the output in input order: contiguous reads and
		// vectorizable updates when the reduced dims are leading.
		dt := op.Results[0].Type.DType
		opName := simpleReducer(op)
		o := g.loops(keptShape, "o")
		g.line("%s[%s] = %s;", outs[0], offset(keptShape, o), initv[0])
		g.endLoops(len(o))
		idx := g.loops(inShape, "i")
		oi := make([]string, len(kept))
		for i, d := range kept {
			oi[i] = idx[d]
		}
		x := g.val(in[0], idx)
		dst := fmt.Sprintf("%s[%s]", outs[0], offset(keptShape, oi))
		g.line("%s = %s;", dst, binaryExpr(opName, dst, x, dt))
		g.endLoops(len(idx))
		return
	case "unroll":
		u := cfg.p("u")
		dt := op.Results[0].Type.DType
		ct := ctype(dt)
		opName := simpleReducer(op)
		rn := redShape[0]
		o, no := parLoops(g, keptShape, "o", cfg.p("par") > 0)
		accs := make([]string, u)
		for j := range accs {
			accs[j] = g.name("acc")
			g.line("%s %s = %s;", ct, accs[j], initv[0])
		}
		g.line("int64_t r0 = 0;")
		g.line("for (; r0 + %d <= %d; r0 += %d) {", u, rn, u)
		g.ind++
		g.push()
		for j := 0; j < u; j++ {
			x := g.val(in[0], merge(o, []string{fmt.Sprintf("(r0 + %d)", j)}))
			g.line("%s = %s;", accs[j], binaryExpr(opName, accs[j], x, dt))
		}
		g.closeBlock()
		g.line("for (; r0 < %d; r0++) {", rn)
		g.ind++
		g.push()
		x := g.val(in[0], merge(o, []string{"r0"}))
		g.line("%s = %s;", accs[0], binaryExpr(opName, accs[0], x, dt))
		g.closeBlock()
		total := accs[0]
		for j := 1; j < u; j++ {
			total = binaryExpr(opName, total, accs[j], dt)
		}
		g.line("%s[%s] = %s;", outs[0], offset(keptShape, o), total)
		g.endLoops(no)
		return
	}
	// scalar: one accumulator per output, reducer body applied per element.
	o, no := parLoops(g, keptShape, "o", cfg.p("par") > 0)
	accs := make([]string, n)
	for i := range accs {
		accs[i] = g.name("acc")
		g.line("%s %s = %s;", ctype(op.Results[i].Type.DType), accs[i], initv[i])
	}
	r := g.loops(redShape, "r")
	elems := make([]string, n)
	for i := range in {
		elems[i] = g.val(in[i], merge(o, r))
	}
	next := reducerBody(g, op, accs, elems)
	tmps := make([]string, n)
	for i := range next {
		tmps[i] = g.name("n")
		g.line("const %s %s = %s;", ctype(op.Results[i].Type.DType), tmps[i], next[i])
	}
	for i := range next {
		g.line("%s = %s;", accs[i], tmps[i])
	}
	g.endLoops(len(r))
	for i := range outs {
		g.line("%s[%s] = %s;", outs[i], offset(keptShape, o), storeExpr(op.Results[i].Type.DType, accs[i]))
	}
	g.endLoops(no)
}

func genConcat(g *gen, op *stablehlo.Op) {
	r := op.Results[0]
	out := g.output(r)
	dim := int(op.Attrs.Dimension)
	base := int64(0)
	for _, o := range op.Operands {
		idx := g.loops(o.Type.Shape, "i")
		x := g.val(o, idx)
		oi := append([]string(nil), idx...)
		oi[dim] = fmt.Sprintf("(%s + %d)", idx[dim], base)
		g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, x))
		g.endLoops(len(idx))
		base += o.Type.Shape[dim]
	}
}

func genPad(g *gen, op *stablehlo.Op) {
	r := op.Results[0]
	out := g.output(r)
	pv := g.val(op.Operands[1], nil)
	g.line("for (int64_t i = 0; i < %d; i++) %s[i] = %s;", r.Type.NumElements(), out, storeExpr(r.Type.DType, pv))
	o := op.Operands[0]
	idx := g.loops(o.Type.Shape, "i")
	var conds []string
	oi := make([]string, len(idx))
	for d := range idx {
		lo, in := op.Attrs.EdgePaddingLow[d], op.Attrs.InteriorPadding[d]
		oi[d] = g.name("p")
		g.line("const int64_t %s = %s*%d + %d;", oi[d], idx[d], in+1, lo)
		conds = append(conds, fmt.Sprintf("%s >= 0 && %s < %d", oi[d], oi[d], r.Type.Shape[d]))
	}
	g.openIf(conds)
	x := g.val(o, idx)
	g.line("%s[%s] = %s;", out, offset(r.Type.Shape, oi), storeExpr(r.Type.DType, x))
	g.closeBlock()
	g.endLoops(len(idx))
}

// genTopK selects the k largest elements of each row (last dimension) in
// descending order; ties keep the lower index first, and for floats NaN
// counts as larger than every number, matching a stable descending sort.
func genTopK(g *gen, op *stablehlo.Op) {
	x := op.Operands[0]
	in := g.input(x)
	vals, inds := g.output(op.Results[0]), g.output(op.Results[1])
	shape := x.Type.Shape
	n := shape[len(shape)-1]
	k := op.Attrs.K
	rows := x.Type.NumElements()
	if n > 0 {
		rows /= n
	}
	ct := ctype(x.Type.DType)
	st := stype(x.Type.DType)
	gt := "(a > b)"
	if x.Type.DType.IsFloat() {
		gt = "((a != a && b == b) || a > b)"
	}
	g.line("unsigned char* used = (unsigned char*)malloc(%d > 0 ? %d : 1);", n, n)
	g.line("if (!used) { XK_ALLOC_FAILED(); return; }")
	g.line("for (int64_t row = 0; row < %d; row++) {", rows)
	g.line("\tconst %s* xr = %s + row*%d;", st, in, n)
	g.line("\tmemset(used, 0, %d > 0 ? %d : 1);", n, n)
	g.line("\tfor (int64_t j = 0; j < %d; j++) {", k)
	g.line("\t\tint64_t best = -1;")
	g.line("\t\tfor (int64_t i = 0; i < %d; i++) {", n)
	g.line("\t\t\tif (used[i]) continue;")
	g.line("\t\t\tif (best < 0) { best = i; continue; }")
	g.line("\t\t\tconst %s a = %s, b = %s;", ct, loadExpr(x.Type.DType, "xr[i]"), loadExpr(x.Type.DType, "xr[best]"))
	g.line("\t\t\tif %s best = i;", gt)
	g.line("\t\t}")
	g.line("\t\tif (best < 0) best = 0;")
	g.line("\t\tused[best] = 1;")
	g.line("\t\t%s[row*%d + j] = xr[best];", vals, k)
	g.line("\t\t%s[row*%d + j] = (int32_t)best;", inds, k)
	g.line("\t}")
	g.line("}")
	g.line("free(used);")
}

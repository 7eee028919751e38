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

package cpu

import (
	"fmt"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// nestGen builds, from fuzz bytes, a well-typed program of nested while,
// if and case ops over tensor<2xf32> values: regions that capture outer
// values, return their arguments permuted or repeated, and nest to depth
// two.
type nestGen struct {
	data []byte
	i    int
	n    int
	b    strings.Builder
}

func (g *nestGen) next() int {
	if g.i >= len(g.data) {
		return 0
	}
	g.i++
	return int(g.data[g.i-1])
}

func (g *nestGen) name() string { g.n++; return fmt.Sprintf("%%v%d", g.n) }

const nestT = "tensor<2xf32>"

func repeatT(n int) string { return strings.TrimSuffix(strings.Repeat(nestT+", ", n), ", ") }

// block writes statements using the values in avail and returns nret
// values picked from what it can see.
func (g *nestGen) block(avail []string, depth, nret int, ind string) []string {
	avail = append([]string(nil), avail...)
	for s := g.next() % 4; s > 0; s-- {
		kind := g.next() % 4
		if depth >= 2 {
			kind = 0
		}
		pick := func() string { return avail[g.next()%len(avail)] }
		m := 1 + g.next()%2
		res := g.name()
		outs := []string{res}
		head := res
		if m > 1 {
			head = fmt.Sprintf("%s:%d", res, m)
			outs = []string{res + "#0", res + "#1"}
		}
		switch kind {
		case 0:
			fmt.Fprintf(&g.b, "%s%s = stablehlo.add %s, %s : %s\n", ind, res, pick(), pick(), nestT)
			outs = outs[:1]
		case 1, 2:
			branches, sel, selT, op := 2, "%p", "tensor<i1>", "if"
			if kind == 2 {
				branches, sel, selT, op = 1+g.next()%3, "%k", "tensor<i32>", "case"
			}
			fmt.Fprintf(&g.b, "%s%s = \"stablehlo.%s\"(%s) ({\n", ind, head, op, sel)
			for j := 0; j < branches; j++ {
				if j > 0 {
					fmt.Fprintf(&g.b, "%s}, {\n", ind)
				}
				r := g.block(avail, depth+1, m, ind+"  ")
				fmt.Fprintf(&g.b, "%s  stablehlo.return %s : %s\n", ind, strings.Join(r, ", "), repeatT(m))
			}
			fmt.Fprintf(&g.b, "%s}) : (%s) -> (%s)\n", ind, selT, repeatT(m))
		case 3:
			c := g.name()
			var inits, args []string
			for j := 0; j < m; j++ {
				a := g.name()
				args = append(args, a)
				inits = append(inits, a+" = "+pick())
			}
			fmt.Fprintf(&g.b, "%s%s:%d = stablehlo.while(%s = %%c0, %s) : tensor<i32>, %s\n", ind, res, m+1, c, strings.Join(inits, ", "), repeatT(m))
			lt := g.name()
			fmt.Fprintf(&g.b, "%s cond {\n%s  %s = stablehlo.compare LT, %s, %%n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>\n%s  stablehlo.return %s : tensor<i1>\n%s} do {\n",
				ind, ind, lt, c, ind, lt, ind)
			c1 := g.name()
			fmt.Fprintf(&g.b, "%s  %s = stablehlo.add %s, %%one : tensor<i32>\n", ind, c1, c)
			r := g.block(append(args, avail...), depth+1, m, ind+"  ")
			fmt.Fprintf(&g.b, "%s  stablehlo.return %s, %s : tensor<i32>, %s\n%s}\n", ind, c1, strings.Join(r, ", "), repeatT(m), ind)
			outs = nil
			for j := 1; j <= m; j++ {
				outs = append(outs, fmt.Sprintf("%s#%d", res, j))
			}
		}
		avail = append(avail, outs...)
	}
	var rets []string
	for j := 0; j < nret; j++ {
		rets = append(rets, avail[g.next()%len(avail)])
	}
	return rets
}

// nestProgram is the whole program for fuzz input data.
func nestProgram(data []byte) string {
	g := &nestGen{data: data}
	body := &nestGen{data: data}
	rets := body.block([]string{"%x", "%y"}, 0, 2, "  ")
	g.b.WriteString("func.func @main(%x: " + nestT + ", %y: " + nestT + ", %p: tensor<i1>, %k: tensor<i32>, %n: tensor<i32>) -> (" + repeatT(2) + ") {\n")
	g.b.WriteString("  %c0 = stablehlo.constant dense<0> : tensor<i32>\n  %one = stablehlo.constant dense<1> : tensor<i32>\n")
	g.b.WriteString(body.b.String())
	fmt.Fprintf(&g.b, "  return %s : %s\n}\n", strings.Join(rets, ", "), repeatT(2))
	return g.b.String()
}

// FuzzLowerControl lowers generated programs of nested while/if/case ops
// (nestProgram) without a C compiler: every one must parse, lower, and
// yield a plan that validates, with a step for every kernel. The
// differential tests run such programs for real.
func FuzzLowerControl(f *testing.F) {
	for _, seed := range [][]byte{
		{1, 3, 0, 0, 1},
		{2, 1, 1, 1, 0, 0, 0, 1, 0, 2, 3, 1},
		{3, 2, 1, 0, 3, 0, 1, 1, 2, 2, 1, 3, 0, 1, 0, 2, 0, 1},
		{3, 3, 1, 2, 3, 1, 3, 3, 0, 2, 1, 1, 1, 1, 0, 0, 2, 2, 1, 1},
		{1, 2, 0, 2, 2, 1, 1, 0, 0, 1, 3, 1, 0, 1, 1, 0},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) > 256 {
			return
		}
		src := nestProgram(data)
		m, err := stablehlo.Parse([]byte(src), "nest.mlir")
		if err != nil {
			t.Fatalf("generated program rejected: %v\n%s", err, src)
		}
		flat, err := stablehlo.Inline(m)
		if err != nil {
			t.Fatal(err)
		}
		l, err := analyze(flat.Main(), "nest.mlir")
		if err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		var kernels []*kernel
		var srcs []cc.Source
		for i, op := range l.roots {
			k, err := newKernel(l, op, 1)
			if err != nil {
				t.Fatalf("%v\n%s", err, src)
			}
			kernels = append(kernels, k)
			srcs = append(srcs, cc.Source{Name: fmt.Sprintf("k%d", i)})
		}
		p := buildPlan(l, flat, kernels, srcs, make([]KernelInfo, len(kernels)))
		syms := map[string]bool{}
		for _, s := range srcs {
			syms[s.Name] = true
		}
		if err := p.validate(syms); err != nil {
			t.Fatalf("%v\n%s", err, src)
		}
		seen := map[string]bool{}
		for _, s := range p.Steps {
			seen[s.Kernel] = true
		}
		for _, s := range srcs {
			if !seen[s.Name] {
				t.Fatalf("kernel %s has no step\n%s", s.Name, src)
			}
		}
	})
}

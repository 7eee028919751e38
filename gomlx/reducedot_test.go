package gomlx

import (
	"context"
	"math"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// programs records the StableHLO texts compiled while f runs.
var programsMu sync.Mutex

func programs(t *testing.T, f func()) []string {
	t.Helper()
	programsMu.Lock()
	defer programsMu.Unlock()
	var texts []string
	onProgram = func(_ string, text []byte) { texts = append(texts, string(text)) }
	defer func() { onProgram = nil }()
	f()
	return texts
}

func testBackend(t *testing.T) *Backend {
	t.Helper()
	be, err := NewWithLookup(context.Background(), "dir="+t.TempDir()+",notune", func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(be.Finalize)
	return be
}

func seq(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * (float32((i*37)%17)/17 - 0.5)
	}
	return v
}

// TestReduceDot builds ReduceSum(Mul(BroadcastInDim(a), BroadcastInDim(b)))
// with the backend's ops directly and checks the values against a direct
// Go sum, and whether ReduceSum became a dot_general (no reduce left).
func TestReduceDot(t *testing.T) {
	type operand struct {
		dims, axes []int // nil axes: used as is, without a broadcast
	}
	cases := []struct {
		name    string
		prod    []int
		a, b    operand
		sum     []int
		wantDot bool
	}{
		{"matmul", []int{3, 4, 5}, operand{[]int{3, 4}, []int{0, 1}}, operand{[]int{4, 5}, []int{1, 2}}, []int{1}, true},
		{"transposed result", []int{3, 4, 5}, operand{[]int{5, 4}, []int{2, 1}}, operand{[]int{3, 4}, []int{0, 1}}, []int{1}, true},
		{"batch and size-1 axes", []int{2, 1, 3, 4, 6}, operand{[]int{2, 1, 3, 4, 1}, nil}, operand{[]int{2, 4, 6}, []int{0, 3, 4}}, []int{3}, true},
		{"weight gradient", []int{8, 6, 4, 5}, operand{[]int{8, 6, 4, 1}, nil}, operand{[]int{8, 6, 1, 5}, nil}, []int{0, 1}, true},
		{"matrix vector", []int{4, 6}, operand{[]int{4, 6}, nil}, operand{[]int{6}, []int{1}}, []int{1}, true},
		{"elementwise, summed everywhere", []int{4, 6}, operand{[]int{4, 6}, []int{0, 1}}, operand{[]int{4, 6}, []int{0, 1}}, nil, false},
		{"elementwise, batch axis", []int{4, 6}, operand{[]int{4, 6}, nil}, operand{[]int{4, 6}, nil}, []int{1}, false},
		{"summed in one operand only", []int{4, 5}, operand{[]int{4, 5}, nil}, operand{[]int{5}, []int{1}}, []int{0}, false},
		{"no contracted axis", []int{4, 5}, operand{[]int{4}, []int{0}}, operand{[]int{5}, []int{1}}, nil, false},
		{"broadcast in both, kept", []int{3, 4, 2}, operand{[]int{3, 4}, []int{0, 1}}, operand{[]int{4}, []int{1}}, []int{1}, false},
	}
	be := testBackend(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			bld := be.Builder(c.name)
			prod := shapes.Make(dtypes.Float32, c.prod...)
			var outShape shapes.Shape
			texts := programs(t, func() {
				factor := func(name string, o operand) backends.Op {
					p, err := bld.Parameter(name, shapes.Make(dtypes.Float32, o.dims...), nil)
					if err != nil {
						t.Fatal(err)
					}
					if o.axes == nil {
						return p
					}
					x, err := bld.BroadcastInDim(p, prod, o.axes)
					if err != nil {
						t.Fatal(err)
					}
					return x
				}
				m, err := bld.Mul(factor("a", c.a), factor("b", c.b))
				if err != nil {
					t.Fatal(err)
				}
				s, err := bld.ReduceSum(m, c.sum...)
				if err != nil {
					t.Fatal(err)
				}
				if outShape, err = bld.OpShape(s); err != nil {
					t.Fatal(err)
				}
				exe, err := bld.Compile([]backends.Op{s}, nil)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(exe.Finalize)
				av, bv := seq(shapes.Make(dtypes.Float32, c.a.dims...).Size(), 1), seq(shapes.Make(dtypes.Float32, c.b.dims...).Size(), 2)
				ab, err := be.BufferFromFlatData(0, av, shapes.Make(dtypes.Float32, c.a.dims...))
				if err != nil {
					t.Fatal(err)
				}
				bb, err := be.BufferFromFlatData(0, bv, shapes.Make(dtypes.Float32, c.b.dims...))
				if err != nil {
					t.Fatal(err)
				}
				out, err := exe.Execute([]backends.Buffer{ab, bb}, nil, 0)
				if err != nil {
					t.Fatal(err)
				}
				got := make([]float32, outShape.Size())
				if err := be.BufferToFlatData(out[0], got); err != nil {
					t.Fatal(err)
				}
				want := naiveReduceProduct(c.prod, c.a.dims, c.a.axes, av, c.b.dims, c.b.axes, bv, c.sum)
				for i := range want {
					if math.Abs(float64(got[i]-want[i])) > 1e-5*math.Max(1, math.Abs(float64(want[i]))) {
						t.Fatalf("element %d: got %v, want %v (all: %v, want %v)", i, got[i], want[i], got, want)
					}
				}
			})
			if len(texts) != 1 {
				t.Fatalf("%d programs compiled, want 1", len(texts))
			}
			dot := strings.Contains(texts[0], "dot_general")
			reduce := strings.Contains(texts[0], "stablehlo.reduce")
			if dot != c.wantDot || reduce == c.wantDot {
				t.Errorf("dot_general %v, reduce %v; want the dot %v:\n%s", dot, reduce, c.wantDot, texts[0])
			}
		})
	}
}

// naiveReduceProduct sums a*b broadcast to prod (a size-1 or unmapped
// axis is broadcast) over the axes sum (all when nil), the kept axes in
// order.
func naiveReduceProduct(prod, ad, aaxes []int, av []float32, bd, baxes []int, bv []float32, sum []int) []float32 {
	summed := make([]bool, len(prod))
	for _, a := range sum {
		summed[a] = true
	}
	if sum == nil {
		for i := range summed {
			summed[i] = true
		}
	}
	n := 1
	for i, d := range prod {
		if !summed[i] {
			n *= d
		}
	}
	out := make([]float32, n)
	at := func(dims, axes []int, v []float32, idx []int) float32 {
		if axes == nil {
			axes = make([]int, len(dims))
			for i := range axes {
				axes[i] = i
			}
		}
		off := 0
		for j, d := range dims {
			k := idx[axes[j]]
			if d == 1 {
				k = 0
			}
			off = off*d + k
		}
		return v[off]
	}
	idx := make([]int, len(prod))
	for {
		o := 0
		for i, d := range prod {
			if !summed[i] {
				o = o*d + idx[i]
			}
		}
		out[o] += at(ad, aaxes, av, idx) * at(bd, baxes, bv, idx)
		i := len(prod) - 1
		for ; i >= 0; i-- {
			if idx[i]++; idx[i] < prod[i] {
				break
			}
			idx[i] = 0
		}
		if i < 0 {
			return out
		}
	}
}

// TestDotGradientsMatchSimpleGo checks GoMLX's gradients of dot products
// (which ReduceSum builds as dot_general) against the pure-Go backend.
func TestDotGradientsMatchSimpleGo(t *testing.T) {
	cases := []struct {
		name     string
		eq       string
		lhs, rhs []int
		dots     int // the forward dot and the gradients that are dots
	}{
		{"dense", "bsi,io->bso", []int{2, 5, 6}, []int{6, 7}, 3},
		{"attention scores", "bhqd,bhkd->bhqk", []int{2, 3, 4, 5}, []int{2, 3, 6, 5}, 3},
		{"attention values", "bhqk,bhkd->bhqd", []int{2, 3, 4, 6}, []int{2, 3, 6, 5}, 3},
		// The matrix's gradient is an outer product: nothing to sum.
		{"matrix vector", "ij,j->i", []int{7, 5}, []int{5}, 2},
	}
	sg, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	defer sg.Finalize()
	be := testBackend(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			run := func(backend backends.Backend) [][]float32 {
				exec, err := graph.NewExecAny(backend, func(in []*graph.Node) []*graph.Node {
					out := graph.Einsum(c.eq, in[0], in[1])
					w := graph.Sin(graph.Iota(out.Graph(), out.Shape(), out.Rank()-1))
					loss := graph.ReduceAllSum(graph.Mul(out, w))
					return append([]*graph.Node{loss}, graph.Gradient(loss, in[0], in[1])...)
				})
				if err != nil {
					t.Fatal(err)
				}
				l := tensors.FromFlatDataAndDimensions(seq(shapes.Make(dtypes.Float32, c.lhs...).Size(), 1), c.lhs...)
				r := tensors.FromFlatDataAndDimensions(seq(shapes.Make(dtypes.Float32, c.rhs...).Size(), 2), c.rhs...)
				outs, err := exec.Exec(l, r)
				if err != nil {
					t.Fatal(err)
				}
				var vals [][]float32
				for _, o := range outs {
					v, err := tensors.CopyFlatData[float32](o)
					if err != nil {
						t.Fatal(err)
					}
					vals = append(vals, v)
				}
				return vals
			}
			var got [][]float32
			texts := programs(t, func() { got = run(be) })
			want := run(sg)
			for i := range want {
				for j := range want[i] {
					if math.Abs(float64(got[i][j]-want[i][j])) > 1e-4*math.Max(1, math.Abs(float64(want[i][j]))) {
						t.Fatalf("output %d element %d: xlacache %v, pure Go %v", i, j, got[i][j], want[i][j])
					}
				}
			}
			if n := strings.Count(strings.Join(texts, ""), "stablehlo.dot_general"); n != c.dots {
				t.Errorf("%d dot_general in the programs, want %d", n, c.dots)
			}
		})
	}
}

package cpu

import (
	"context"
	"fmt"
	"log/slog"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
)

// Flags or-ed into TestDotPartsPerThread's par: packed A (pa=1), and A
// stored transposed.
const (
	paFlag = 1 << 8
	lhsT   = 1 << 9
)

// TestDotPartsPerThread checks how many parts per thread parallel dot
// variants are cut into: up to 4 for column-panel and batch splits, never
// more than there are panels or batch matrices per thread, and one for
// row splits (each of whose parts packs all of B) and for column splits
// that pack all of A in each part.
func TestDotPartsPerThread(t *testing.T) {
	for _, tc := range []struct {
		b, m, k, n int
		par        int
		threads    int
		want       int
	}{
		{1, 64, 784, 512, parCols, 2, 4}, // 32 panels of 16
		{1, 64, 784, 512, parCols, 8, 4},
		{1, 64, 784, 512, parCols, 16, 2},
		{1, 64, 784, 40, parCols, 2, 1}, // 3 panels
		{1, 64, 784, 1, parCols, 2, 1},
		{1, 256, 128, 512, parRows, 2, 1},
		{32, 32, 32, 32, parBatch, 2, 4},
		{3, 32, 32, 32, parBatch, 2, 1},
		{5, 32, 32, 32, parBatch, 2, 2},
		{1, 64, 784, 512, parNone, 2, 1},
		// Column splits that pack all of A in every part: one part.
		{1, 64, 784, 512, parCols | paFlag, 2, 1},
		{1, 64, 784, 512, parCols | lhsT, 2, 1},
		{32, 32, 32, 32, parBatch | lhsT, 2, 4},
	} {
		t.Run(fmt.Sprintf("%dx%dx%dx%d/par=%d/threads=%d", tc.b, tc.m, tc.k, tc.n, tc.par, tc.threads), func(t *testing.T) {
			text := fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[2]dx%[3]dxf32>, %%b: tensor<%[1]dx%[3]dx%[4]dxf32>) -> tensor<%[1]dx%[2]dx%[4]dxf32> {
  %%0 = stablehlo.dot_general %%a, %%b, batching_dims = [0] x [0], contracting_dims = [2] x [1] : (tensor<%[1]dx%[2]dx%[3]dxf32>, tensor<%[1]dx%[3]dx%[4]dxf32>) -> tensor<%[1]dx%[2]dx%[4]dxf32>
  return %%0 : tensor<%[1]dx%[2]dx%[4]dxf32>
}
`, tc.b, tc.m, tc.k, tc.n)
			if tc.par&lhsT != 0 {
				// A stored as [b][k][m]: transposed, so packed.
				text = fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[3]dx%[2]dxf32>, %%b: tensor<%[1]dx%[3]dx%[4]dxf32>) -> tensor<%[1]dx%[2]dx%[4]dxf32> {
  %%0 = stablehlo.dot_general %%a, %%b, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (tensor<%[1]dx%[3]dx%[2]dxf32>, tensor<%[1]dx%[3]dx%[4]dxf32>) -> tensor<%[1]dx%[2]dx%[4]dxf32>
  return %%0 : tensor<%[1]dx%[2]dx%[4]dxf32>
}
`, tc.b, tc.m, tc.k, tc.n)
			}
			m := parseText(t, text)
			var op = m.Main().Body.Ops[0]
			cfg := Config{Name: "micro", Params: map[string]int{"mr": 6, "nv": 2, "vw": 8, "kc": 256, "par": tc.par &^ (paFlag | lhsT)}}
			if tc.par&paFlag != 0 {
				cfg.Params["pa"] = 1
			}
			if got := dotPartsPerThread(op, cfg, tc.threads); got != tc.want {
				t.Errorf("dotPartsPerThread = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestDotEdgeShapeCandidates runs every candidate of dot kernels whose
// sizes are 1, odd or leave a partial column panel (the packing's two
// paths), as one part and as several (checkCandidates), and the default
// against the interpreter; i32 products are exact, so there the
// comparison is bit for bit.
func TestDotEdgeShapeCandidates(t *testing.T) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	const threads = 3
	pl := &pipeline{b: New(), cc: comp, log: slog.Default()}
	for _, tc := range []struct {
		dt      string
		m, k, n int
	}{
		{"f32", 1, 1, 1},
		{"f32", 7, 3, 1},
		{"f32", 5, 9, 17},
		{"f32", 1, 1000, 33},
		{"i32", 13, 300, 301},
		{"i32", 37, 64, 480},
		{"f32", 0, 64, 33},
	} {
		t.Run(fmt.Sprintf("%s/%dx%dx%d", tc.dt, tc.m, tc.k, tc.n), func(t *testing.T) {
			a := fmt.Sprintf("tensor<%dx%dx%s>", tc.m, tc.k, tc.dt)
			b := fmt.Sprintf("tensor<%dx%dx%s>", tc.k, tc.n, tc.dt)
			c := fmt.Sprintf("tensor<%dx%dx%s>", tc.m, tc.n, tc.dt)
			text := fmt.Sprintf(`func.func @main(%%a: %[1]s, %%b: %[2]s) -> %[3]s {
  %%0 = stablehlo.dot_general %%a, %%b, contracting_dims = [1] x [0] : (%[1]s, %[2]s) -> %[3]s
  return %%0 : %[3]s
}
`, a, b, c)
			m := parseText(t, text)
			l := lowerModule(t, m, "dot")
			k, err := newKernel(l, l.roots[0], threads)
			if err != nil {
				t.Fatal(err)
			}
			checkCandidates(t, pl, k, threads)

			exe, err := (&Backend{NoTune: true, Threads: threads, Jobs: 1}).CompileModule(context.Background(), m, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer exe.Close()
			args := randomArgs(m, 3)
			got, want := runBoth(t, exe, m, args)
			if tc.dt == "i32" {
				assertSame(t, "", got, want)
			} else {
				assertClose(t, got, want, 1e-5)
			}
		})
	}
}

// TestDotPackedPartsCandidates runs every candidate of products whose
// operands need packing (transposed, batch dims not leading, free dims
// split in two) as one part and as several, against the default, and the
// default against the interpreter: each part packs only the batch
// matrices, rows or column panels it reads (packRange), so a part that
// read outside them would read unwritten memory and disagree.
func TestDotPackedPartsCandidates(t *testing.T) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	pl := &pipeline{b: New(), cc: comp, log: slog.Default()}
	for _, tc := range []struct {
		name, a, b, dims, c string
	}{
		// dW = x^T dy: A transposed.
		{"lhs-transposed", "300x61", "300x70", "contracting_dims = [0] x [0]", "61x70"},
		// x W^T: B transposed.
		{"rhs-transposed", "50x200", "130x200", "contracting_dims = [1] x [1]", "50x130"},
		// Attention's scores: both batched, B transposed.
		{"attention", "5x67x40", "5x99x40", "batching_dims = [0] x [0], contracting_dims = [2] x [2]", "5x67x99"},
		// A batch dim that is not leading and free dims in two pieces.
		{"scattered", "3x4x150x7", "150x4x3x33", "batching_dims = [1] x [1], contracting_dims = [2] x [0]", "4x3x7x3x33"},
	} {
		for _, threads := range []int{2, 3} {
			t.Run(fmt.Sprintf("%s/threads=%d", tc.name, threads), func(t *testing.T) {
				a, b, c := "tensor<"+tc.a+"xf32>", "tensor<"+tc.b+"xf32>", "tensor<"+tc.c+"xf32>"
				text := fmt.Sprintf(`func.func @main(%%a: %[1]s, %%b: %[2]s) -> %[3]s {
  %%0 = stablehlo.dot_general %%a, %%b, %[4]s : (%[1]s, %[2]s) -> %[3]s
  return %%0 : %[3]s
}
`, a, b, c, tc.dims)
				m := parseText(t, text)
				l := lowerModule(t, m, "dot")
				k, err := newKernel(l, l.roots[0], threads)
				if err != nil {
					t.Fatal(err)
				}
				pars := 0
				for _, cfg := range k.cands {
					if cfg.p("par") != parNone {
						pars++
					}
				}
				if pars == 0 {
					t.Fatalf("%s: no parallel candidate among %v", k.desc, k.cands)
				}
				checkCandidates(t, pl, k, threads)

				exe, err := (&Backend{NoTune: true, Threads: threads, Jobs: 1}).CompileModule(context.Background(), m, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer exe.Close()
				args := randomArgs(m, 3)
				got, want := runBoth(t, exe, m, args)
				assertClose(t, got, want, 1e-5)
			})
		}
	}
}

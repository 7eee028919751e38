package cpu

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math"
	"strconv"
	"strings"
	"testing"
	"unsafe"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// lanesRows returns rows × n values whose rows exercise the lanes
// variant's fast path and every way out of it: random finite rows, a NaN
// (two payloads, both signs) at the first, a middle and the last
// position, rows of signed zeros only (the result is a zero whose sign
// the order decides), zeros among negatives, zeros of both signs in one
// lane, infinities, subnormals and ties between equal values.
func lanesRows(rows, n int, seed uint64) []float64 {
	negZero := math.Copysign(0, -1)
	nan2 := math.Float64frombits(0x7ff4000000000123) // another payload
	out := make([]float64, 0, rows*n)
	s := seed
	rnd := func() float64 {
		s = s*6364136223846793005 + 1442695040888963407
		return float64(int64(s>>11)-(1<<52)) / (1 << 50)
	}
	for r := 0; r < rows; r++ {
		row := make([]float64, n)
		for i := range row {
			row[i] = rnd()
		}
		switch r % 12 {
		case 1:
			row[0] = math.NaN()
		case 2:
			row[n/2] = -math.NaN()
			row[n-1] = nan2
		case 3:
			row[n-1] = math.NaN()
		case 4:
			for i := range row {
				row[i] = negZero
			}
		case 5:
			for i := range row {
				row[i] = []float64{0, negZero}[(i+r)%2]
			}
		case 6:
			for i := range row {
				row[i] = -math.Abs(row[i]) - 1
			}
			row[(r*7)%n] = negZero
			row[(r*5+1)%n] = 0
		case 7:
			for i := range row {
				row[i] = math.Inf(-1)
			}
		case 8:
			row[r%n] = math.Inf(1)
			row[(r+3)%n] = math.Inf(-1)
		case 9:
			for i := range row {
				row[i] = float64(i%3) * 1e-310 * float64(1-2*(i%2))
			}
		case 10:
			for i := range row {
				row[i] = 2.5
			}
		case 11:
			// Zeros of both signs meeting in one lane: -0 everywhere
			// but the last element of the last full vector of lanes.
			for i := range row {
				row[i] = negZero
			}
			if n >= 16 {
				row[(n/8)*8-1] = 0
			}
		}
		out = append(out, row...)
	}
	return out
}

// TestReduceLanesMatchesScalar checks the lanes variant of float
// maximum and minimum reductions (reduce.go) against the in-order scalar
// loop, bit for bit (NaN payloads included), and against the
// interpreter, on f32 and f64, row lengths at and around the vector
// width and odd ones, initial values that send every row to the scalar
// loop (NaN, ±0) and those that do not, a fused elementwise op, and 1
// and 3 threads of the parallel variant.
func TestReduceLanesMatchesScalar(t *testing.T) {
	pl := variantPipeline(t)
	type tc struct {
		dt, op, init string
		rows, n      int
		negate       bool
		threads      int
	}
	var cases []tc
	for _, dt := range []string{"f32", "f64"} {
		for _, op := range []string{"maximum", "minimum"} {
			inf := map[string]string{"maximum": "0xFF800000", "minimum": "0x7F800000"}[op]
			if dt == "f64" {
				inf = map[string]string{"maximum": "0xFFF0000000000000", "minimum": "0x7FF0000000000000"}[op]
			}
			for _, init := range []string{inf, "0.0", "-0.0", "0x7FC00000", "0.75"} {
				if dt == "f64" && init == "0x7FC00000" {
					init = "0x7FF8000000000000"
				}
				for _, n := range []int{4, 8, 9, 16, 17, 31, 67} {
					cases = append(cases, tc{dt, op, init, 24, n, n%2 == 1, 1})
				}
			}
			// Enough rows for the parallel variant (parMinElements elements).
			cases = append(cases, tc{dt, op, inf, 4100, 33, true, 3})
		}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/init=%s/%dx%d/neg=%v/threads=%d", c.dt, c.op, c.init, c.rows, c.n, c.negate, c.threads)
		t.Run(name, func(t *testing.T) {
			ty := fmt.Sprintf("tensor<%dx%dx%s>", c.rows, c.n, c.dt)
			in := "%a"
			neg := ""
			if c.negate {
				in, neg = "%0", "%0 = stablehlo.negate %a : "+ty
			}
			src := fmt.Sprintf(`func.func @main(%%a: %[1]s) -> tensor<%[2]dx%[3]s> {
  %[4]s
  %%z = stablehlo.constant dense<%[5]s> : tensor<%[3]s>
  %%1 = stablehlo.reduce(%[7]s init: %%z) applies stablehlo.%[6]s across dimensions = [1] : (%[1]s, tensor<%[3]s>) -> tensor<%[2]dx%[3]s>
  return %%1 : tensor<%[2]dx%[3]s>
}`, ty, c.rows, c.dt, neg, c.init, c.op, in)
			size := map[string]int{"f32": 4, "f64": 8}[c.dt]
			want := c.n*size >= lanesWidth // shorter rows get no lanes variant
			checkVariant(t, pl, src, "lanes", want, c.threads, lanesRows(c.rows, c.n, uint64(c.n)))
		})
	}
}

// TestReduceRowsMatchesScalar checks the rows variant (reduce.go:
// rowsBlock outputs side by side, each in the scalar order) against the
// scalar loop bit for bit and against the interpreter: sums, products
// and a reducer that is neither commutative nor associative, the reduced
// dim last, in the middle (kept dims after it) or several of them, an
// empty reduced dim, a non-identity init, fused elementwise ops, f32 and
// f64, and 1 and 3 threads of the parallel variant; shapes whose last
// kept dim is no multiple of rowsBlock get no rows variant.
func TestReduceRowsMatchesScalar(t *testing.T) {
	pl := variantPipeline(t)
	add := "applies stablehlo.add"
	mul := "applies stablehlo.multiply"
	// acc*0.5 + x: neither commutative nor associative.
	skew := `reducer(%%x: tensor<%[1]s>, %%y: tensor<%[1]s>) {
    %%h = stablehlo.constant dense<0.5> : tensor<%[1]s>
    %%p = stablehlo.multiply %%x, %%h : tensor<%[1]s>
    %%s = stablehlo.add %%p, %%y : tensor<%[1]s>
    stablehlo.return %%s : tensor<%[1]s>
  }`
	cases := []struct {
		name, in, out, dims, reducer, init string
		fused, rows                        bool
		threads                            int
	}{
		{"last", "256x128", "256", "1", add, "0.0", false, true, 1},
		{"last_fused", "256x128", "256", "1", add, "1.5", true, true, 1},
		{"middle", "8x32x128", "8x128", "1", add, "0.0", true, true, 1},
		{"two_dims", "16x5x24x3", "16x24", "1, 3", mul, "1.0", false, true, 1},
		{"skew", "40x17", "40", "1", skew, "0.25", false, true, 1},
		{"empty", "16x0", "16", "1", add, "2.5", false, true, 1},
		{"odd_kept", "20x64", "20", "1", add, "0.0", false, false, 1},
		{"par", "1032x131", "1032", "1", add, "0.0", true, true, 3},
		{"par_middle", "5x520x56", "5x56", "1", skew, "0.0", false, true, 3},
	}
	for _, dt := range []string{"f32", "f64"} {
		for _, c := range cases {
			t.Run(dt+"/"+c.name, func(t *testing.T) {
				ty := fmt.Sprintf("tensor<%sx%s>", c.in, dt)
				oty := fmt.Sprintf("tensor<%sx%s>", c.out, dt)
				in, pre := "%a", ""
				if c.fused {
					in = "%1"
					pre = fmt.Sprintf(`%%c = stablehlo.constant dense<0.75> : %[1]s
  %%0 = stablehlo.multiply %%a, %%c : %[1]s
  %%1 = stablehlo.subtract %%0, %%a : %[1]s`, ty)
				}
				applies, body := c.reducer, ""
				if c.reducer == skew {
					applies, body = "", fmt.Sprintf(skew, dt)
				}
				src := fmt.Sprintf(`func.func @main(%%a: %[1]s) -> %[2]s {
  %[3]s
  %%z = stablehlo.constant dense<%[4]s> : tensor<%[5]s>
  %%r = stablehlo.reduce(%[6]s init: %%z) %[7]s across dimensions = [%[8]s] : (%[1]s, tensor<%[5]s>) -> %[2]s
  %[9]s
  return %%r : %[2]s
}`, ty, oty, pre, c.init, dt, in, applies, c.dims, body)
				n := 1
				var shape []int
				for _, f := range strings.Split(c.in, "x") {
					v, _ := strconv.Atoi(f)
					shape = append(shape, v)
					n *= v
				}
				last := shape[len(shape)-1]
				vals := make([]float64, 0, n)
				if last > 0 {
					vals = lanesRows(n/last, last, 3)
				}
				if c.reducer == mul {
					for i := range vals {
						vals[i] = 1 + vals[i]/64 // keep products finite
					}
				}
				checkVariant(t, pl, src, "rows", c.rows, c.threads, vals)
			})
		}
	}
}

// variantPipeline returns a pipeline for building candidate units, or
// skips without a C compiler.
func variantPipeline(t *testing.T) *pipeline {
	t.Helper()
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	return &pipeline{b: New(), cc: comp, log: slog.Default()}
}

// checkVariant lowers src (one argument, taking vals), finds its reduce
// kernel and checks that it has a candidate named variant exactly when
// want; if so, it runs that candidate and the scalar one (both parallel
// when threads > 1) on vals and requires the same bytes, and the
// interpreter's values (within closeTensor's tolerance where the
// elements multiply the argument: contracted to fused multiply-adds).
func checkVariant(t *testing.T, pl *pipeline, src, variant string, want bool, threads int, vals []float64) {
	exact := !strings.Contains(src, "stablehlo.multiply %a")
	t.Helper()
	l := lowerText(t, src, "variant.mlir")
	var k *kernel
	for _, op := range l.roots {
		if op.Name == "reduce" {
			var err error
			if k, err = newKernel(l, op, threads); err != nil {
				t.Fatal(err)
			}
		}
	}
	if k == nil || len(k.inputs) != 1 {
		t.Fatalf("no reduce kernel with one input in %s", src)
	}
	scalar, vi := -1, -1
	for i, cfg := range k.cands {
		par := k.parallel(cfg) == (threads > 1)
		if cfg.Name == "scalar" && scalar < 0 && par {
			scalar = i
		}
		if cfg.Name == variant && par {
			vi = i
		}
	}
	if !want {
		if vi >= 0 {
			t.Fatalf("candidates %v: want no %s variant", k.cands, variant)
		}
		return
	}
	if scalar < 0 || vi < 0 {
		t.Fatalf("candidates %v: want scalar and %s (parallel: %v)", k.cands, variant, threads > 1)
	}
	u, lib, h, done := openCandidates(t, pl, k, []int{scalar, vi})
	defer done()

	shape := k.inputs[0].Type.Shape
	var arg *stablehlo.Tensor
	var err error
	if k.inputs[0].Type.DType == stablehlo.F32 {
		arg, err = stablehlo.FromFloat32s(shape, f32s(vals))
	} else {
		arg, err = stablehlo.FromFloat64s(shape, vals)
	}
	if err != nil {
		t.Fatal(err)
	}
	copy(unsafe.Slice((*byte)(h.bufs[0]), len(arg.Data)), arg.Data)
	m, err := stablehlo.Parse([]byte(src), "variant.mlir")
	if err != nil {
		t.Fatal(err)
	}
	ref, err := stablehlo.Eval(m, "", []*stablehlo.Tensor{arg})
	if err != nil {
		t.Fatal(err)
	}
	var outs [2][]byte
	for i, sym := range u.syms {
		fn, err := resolveKernel(lib, sym)
		if err != nil {
			t.Fatal(err)
		}
		h.clearOutputs()
		fn.run(h.ptrs, threads)
		outs[i] = h.outputs()[0]
	}
	got := &stablehlo.Tensor{Type: ref[0].Type, Data: outs[1]}
	if !bytes.Equal(outs[0], outs[1]) {
		es := ref[0].Type.DType.Size()
		for i := 0; i < len(outs[0]); i += es {
			if a, b := outs[1][i:i+es], outs[0][i:i+es]; !bytes.Equal(a, b) {
				t.Fatalf("%s %s differs from scalar at element %d: bytes %x, scalar %x", k.desc, k.cands[vi], i/es, a, b)
			}
		}
	}
	// The interpreter's values, exactly where no multiply-add was fused
	// into the elements (the C compiler may contract those).
	if i, ok := sameValues(got, ref[0]); !ok && (exact || !closeTensor(got, ref[0])) {
		t.Fatalf("%s %s differs from the interpreter at %d: %v, want %v", k.desc, k.cands[vi], i, got.Float64At(i), ref[0].Float64At(i))
	}
}

// TestReduceRowsLeavesThreadsBusy checks that the rows variant is the
// default only where its blocks of rowsBlock outputs give every thread
// two: a big reduction with fewer blocks keeps the scalar loop's split
// (single outputs) as its default, with a serial rows candidate.
func TestReduceRowsLeavesThreadsBusy(t *testing.T) {
	for _, c := range []struct {
		rows, threads int
		def           string
	}{{8, 2, "scalar par=1"}, {24, 2, "scalar par=1"}, {32, 2, "rows par=1"}, {8, 1, "rows"}} {
		n := (1 << 18) / c.rows
		src := fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[2]dxf32>) -> tensor<%[1]dxf32> {
  %%z = stablehlo.constant dense<0.0> : tensor<f32>
  %%r = stablehlo.reduce(%%a init: %%z) applies stablehlo.add across dimensions = [1] : (tensor<%[1]dx%[2]dxf32>, tensor<f32>) -> tensor<%[1]dxf32>
  return %%r : tensor<%[1]dxf32>
}`, c.rows, n)
		l := lowerText(t, src, "rows.mlir")
		k, err := newKernel(l, l.roots[0], c.threads)
		if err != nil {
			t.Fatal(err)
		}
		if got := k.cands[0].String(); got != c.def {
			t.Errorf("%dx%d on %d threads: default %s, want %s (candidates %v)", c.rows, n, c.threads, got, c.def, k.cands)
		}
		rows := false
		for _, cfg := range k.cands {
			rows = rows || cfg.Name == "rows"
		}
		if !rows {
			t.Errorf("%dx%d on %d threads: no rows candidate in %v", c.rows, n, c.threads, k.cands)
		}
	}
}

// TestUntunedConfig pins what a NoTune build compiles reductions as: the
// scalar loop, with the default's split, where the default is rows (cheap
// to compile, see untunedConfig); the lanes variant and every other
// default unchanged (rowmajor, the default of a reduction over leading
// dimensions, among them).
func TestUntunedConfig(t *testing.T) {
	for _, c := range []struct {
		reducer, dims string
		rows, threads int
		def, untuned  string
	}{
		{"add", "[1]", 8, 1, "rows", "scalar"},
		{"add", "[1]", 32, 2, "rows par=1", "scalar par=1"},
		{"add", "[1]", 8, 2, "scalar par=1", "scalar par=1"},
		{"maximum", "[1]", 8, 1, "lanes", "lanes"},
		{"add", "[0]", 8, 1, "rowmajor", "rowmajor"}, // reduced dimensions first (leadingReduce)
		{"add", "[0, 1]", 8, 1, "scalar", "scalar"},
	} {
		n := (1 << 18) / c.rows
		out := fmt.Sprintf("%dx", c.rows)
		switch c.dims {
		case "[0]":
			out = fmt.Sprintf("%dx", n)
		case "[0, 1]":
			out = ""
		}
		src := fmt.Sprintf(`func.func @main(%%a: tensor<%[1]dx%[2]dxf32>) -> tensor<%[3]sf32> {
  %%z = stablehlo.constant dense<0.0> : tensor<f32>
  %%r = stablehlo.reduce(%%a init: %%z) applies stablehlo.%[4]s across dimensions = %[5]s : (tensor<%[1]dx%[2]dxf32>, tensor<f32>) -> tensor<%[3]sf32>
  return %%r : tensor<%[3]sf32>
}`, c.rows, n, out, c.reducer, c.dims)
		l := lowerText(t, src, "untuned.mlir")
		k, err := newKernel(l, l.roots[0], c.threads)
		if err != nil {
			t.Fatal(err)
		}
		name := fmt.Sprintf("%s over %s of %dx%d on %d threads", c.reducer, c.dims, c.rows, n, c.threads)
		if got := k.cands[0].String(); got != c.def {
			t.Errorf("%s: default %s, want %s", name, got, c.def)
		}
		if got := untunedConfig(k).String(); got != c.untuned {
			t.Errorf("%s: untuned %s, want %s", name, got, c.untuned)
		}
	}
}

// TestNoTuneCompilesRowsAsScalar checks the wiring of untunedConfig: a
// NoTune build compiles a rows-default reduction as the scalar loop, and a
// tuning build leaves a reduction too small to tune at rows.
func TestNoTuneCompilesRowsAsScalar(t *testing.T) {
	src := `func.func @main(%a: tensor<16x64xf32>) -> tensor<16xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : (tensor<16x64xf32>, tensor<f32>) -> tensor<16xf32>
  return %r : tensor<16xf32>
}`
	for _, noTune := range []bool{true, false} {
		b := New()
		b.NoTune = noTune
		_, exe := compileIn(t, testCache(t, t.TempDir()), b, "rows", src)
		want := "rows"
		if noTune {
			want = "scalar"
		}
		reduces := 0
		for _, k := range exe.Kernels() {
			if !strings.HasPrefix(k.Desc, "reduce") {
				continue
			}
			reduces++
			if k.Config != want {
				t.Errorf("NoTune=%v: %s compiled as %s, want %s", noTune, k.Desc, k.Config, want)
			}
		}
		if reduces != 1 {
			t.Errorf("NoTune=%v: %d reduce kernels, want 1: %+v", noTune, reduces, exe.Kernels())
		}
		exe.Close()
	}
}

package cpu

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestSmallKernels checks which kernels are built at -O1 (XK_SMALL):
// those writing at most smallElements elements and touching at most
// twice that (mlp's softmax step: 640 written, 704 read), not a bigger
// elementwise loop (by what it writes, or what it reads), a reduction
// of a bigger operand or a product doing more multiply-adds than that.
// The small ones still match the interpreter.
func TestSmallKernels(t *testing.T) {
	src := `func.func @main(%a: tensor<16x10xf32>, %b: tensor<64x64xf32>, %c: tensor<4x300xf32>, %d: tensor<12x12xf32>, %e: tensor<64x10xf32>, %f: tensor<64xf32>, %g: tensor<24x40xf32>, %h: tensor<24x40xf32>, %i: tensor<32x40xf32>) -> (tensor<16x10xf32>, tensor<64x64xf32>, tensor<4xf32>, tensor<12x12xf32>, tensor<64x10xf32>, tensor<24x40xf32>, tensor<32x40xf32>) {
  %0 = stablehlo.exponential %a : tensor<16x10xf32>
  %1 = stablehlo.exponential %b : tensor<64x64xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [1] : (tensor<4x300xf32>, tensor<f32>) -> tensor<4xf32>
  %3 = stablehlo.dot_general %d, %d, contracting_dims = [1] x [0] : (tensor<12x12xf32>, tensor<12x12xf32>) -> tensor<12x12xf32>
  %4 = stablehlo.broadcast_in_dim %f, dims = [0] : (tensor<64xf32>) -> tensor<64x10xf32>
  %5 = stablehlo.subtract %e, %4 : tensor<64x10xf32>
  %6 = stablehlo.exponential %5 : tensor<64x10xf32>
  %7 = stablehlo.multiply %g, %h : tensor<24x40xf32>
  %8 = stablehlo.exponential %7 : tensor<24x40xf32>
  %9 = stablehlo.exponential %i : tensor<32x40xf32>
  return %0, %1, %2, %3, %6, %8, %9 : tensor<16x10xf32>, tensor<64x64xf32>, tensor<4xf32>, tensor<12x12xf32>, tensor<64x10xf32>, tensor<24x40xf32>, tensor<32x40xf32>
}`
	l, err := analyze(parseText(t, src).Main(), "small")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{"exponential tensor<16x10xf32>": true, "exponential tensor<64x64xf32>": false, "reduce tensor<4xf32>": false, "dot_general tensor<12x12xf32>": false,
		"fusion(broadcast_in_dim+exponential+subtract) tensor<64x10xf32>": true,  // 640 written, 704 read
		"fusion(exponential+multiply) tensor<24x40xf32>":                  false, // 960 written, 1920 read
		"exponential tensor<32x40xf32>":                                   false, // 1280 written
	}
	for _, op := range l.roots {
		k, err := newKernel(l, op, 1)
		if err != nil {
			t.Fatal(err)
		}
		w, ok := want[k.desc]
		if !ok {
			t.Fatalf("unexpected kernel %s", k.desc)
		}
		delete(want, k.desc)
		body, err := k.body(k.cands[0], "k")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(body, "XK_SMALL void k("); got != w {
			t.Errorf("%s: built at -O1 %v, want %v", k.desc, got, w)
		}
	}
	if len(want) > 0 {
		t.Errorf("kernels not found: %v", want)
	}
	m, exe := compileText(t, src)
	got, want2 := runBoth(t, exe, m, randomArgs(m, 3))
	for i := range got {
		if i == 3 {
			continue // the product may contract multiply-adds
		}
		if j, ok := sameValues(got[i], want2[i]); !ok {
			t.Errorf("output %d differs from the interpreter at %d", i, j)
		}
	}
}

// TestCollapseLoops checks which loops of elementwise kernels merge
// (collapseLoops): dimensions every read buffer walks contiguously or not
// at all, past dimensions of size 1; none across a broadcast of one
// dimension only, a transpose or a size-1 broadcast operand. Every
// program also matches the interpreter bit for bit.
func TestCollapseLoops(t *testing.T) {
	for _, c := range []struct {
		name, src string
		loops     []int64
	}{
		{"relu with a channel bias", `func.func @main(%x: tensor<4x6x6x16xf32>, %b: tensor<16xf32>) -> tensor<4x6x6x16xf32> {
  %0 = stablehlo.broadcast_in_dim %b, dims = [3] : (tensor<16xf32>) -> tensor<4x6x6x16xf32>
  %1 = stablehlo.add %x, %0 : tensor<4x6x6x16xf32>
  %z = stablehlo.constant dense<0.0> : tensor<4x6x6x16xf32>
  %2 = stablehlo.maximum %1, %z : tensor<4x6x6x16xf32>
  return %2 : tensor<4x6x6x16xf32>
}`, []int64{144, 16}},
		{"same shapes", `func.func @main(%x: tensor<3x5x7xf32>, %y: tensor<3x5x7xf32>) -> tensor<3x5x7xf32> {
  %0 = stablehlo.multiply %x, %y : tensor<3x5x7xf32>
  %1 = stablehlo.exponential %0 : tensor<3x5x7xf32>
  return %1 : tensor<3x5x7xf32>
}`, []int64{105}},
		{"row statistics", `func.func @main(%x: tensor<4x8x32xf32>, %m: tensor<4x8xf32>) -> tensor<4x8x32xf32> {
  %0 = stablehlo.broadcast_in_dim %m, dims = [0, 1] : (tensor<4x8xf32>) -> tensor<4x8x32xf32>
  %1 = stablehlo.subtract %x, %0 : tensor<4x8x32xf32>
  return %1 : tensor<4x8x32xf32>
}`, []int64{32, 32}},
		{"broadcast over the middle", `func.func @main(%x: tensor<4x5x6xf32>, %y: tensor<4x6xf32>) -> tensor<4x5x6xf32> {
  %0 = stablehlo.broadcast_in_dim %y, dims = [0, 2] : (tensor<4x6xf32>) -> tensor<4x5x6xf32>
  %1 = stablehlo.add %x, %0 : tensor<4x5x6xf32>
  return %1 : tensor<4x5x6xf32>
}`, []int64{4, 5, 6}},
		{"size-1 dimensions", `func.func @main(%x: tensor<4x1x8xf32>, %y: tensor<4x1x8xf32>) -> tensor<4x1x8xf32> {
  %0 = stablehlo.subtract %x, %y : tensor<4x1x8xf32>
  return %0 : tensor<4x1x8xf32>
}`, []int64{32}},
		{"size-1 operand broadcast", `func.func @main(%x: tensor<1x20xf32>, %y: tensor<20x20xf32>) -> tensor<20x20xf32> {
  %0 = stablehlo.broadcast_in_dim %x, dims = [0, 1] : (tensor<1x20xf32>) -> tensor<20x20xf32>
  %1 = stablehlo.multiply %0, %y : tensor<20x20xf32>
  return %1 : tensor<20x20xf32>
}`, []int64{20, 20}},
		{"scalar clamp bounds", `func.func @main(%x: tensor<3x4xf32>, %lo: tensor<f32>, %hi: tensor<f32>) -> tensor<3x4xf32> {
  %0 = stablehlo.clamp %lo, %x, %hi : (tensor<f32>, tensor<3x4xf32>, tensor<f32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}`, []int64{12}},
		{"transpose", `func.func @main(%x: tensor<3x4xf32>, %y: tensor<4x3xf32>) -> tensor<4x3xf32> {
  %0 = stablehlo.transpose %x, dims = [1, 0] : (tensor<3x4xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.add %0, %y : tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}`, []int64{4, 3}},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := parseText(t, c.src)
			l, err := analyze(m.Main(), "collapse")
			if err != nil {
				t.Fatal(err)
			}
			if len(l.roots) != 1 {
				t.Fatalf("%d kernels, want 1", len(l.roots))
			}
			loops, expand := collapseLoops(l, l.roots[0])
			if !slices.Equal(loops, c.loops) {
				t.Errorf("loops %v, want %v", loops, c.loops)
			}
			names := make([]string, len(loops))
			for i := range names {
				names[i] = fmt.Sprintf("i%d", i)
			}
			if idx := expand(names); len(idx) != l.roots[0].Results[0].Type.Rank() {
				t.Errorf("expanded index %v for rank %d", idx, l.roots[0].Results[0].Type.Rank())
			}
			m2, exe := compileText(t, c.src)
			got, want := runBoth(t, exe, m2, randomArgs(m2, 4))
			assertSame(t, c.name, got, want)
		})
	}
}

// TestDearKernels checks which kernels of an untuned build have their
// entry points built at XK_DEAR's level: elementwise loops, whether they
// call an inline transcendental helper or not, serial or parallel, and
// the lanes reduction; not another reduction, not a small kernel
// (XK_SMALL), and none at -O3 (tuned). The untuned build computes the
// bits of the tuned one (a multiply-add included: FMA contraction at
// both levels), and the interpreter's values.
func TestDearKernels(t *testing.T) {
	src := `func.func @main(%a: tensor<64x64xf32>, %b: tensor<256x256xf32>, %c: tensor<64x64xf32>, %d: tensor<16x10xf32>) -> (tensor<64x64xf32>, tensor<256x256xf32>, tensor<64x64xf32>, tensor<16x10xf32>, tensor<64xf32>, tensor<64xf32>) {
  %0 = stablehlo.exponential %a : tensor<64x64xf32>
  %1 = stablehlo.tanh %b : tensor<256x256xf32>
  %m = stablehlo.multiply %c, %a : tensor<64x64xf32>
  %2 = stablehlo.add %m, %c : tensor<64x64xf32>
  %3 = stablehlo.exponential %d : tensor<16x10xf32>
  %i = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %4 = stablehlo.reduce(%c init: %i) applies stablehlo.maximum across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %5 = stablehlo.reduce(%c init: %z) applies stablehlo.add across dimensions = [1] : (tensor<64x64xf32>, tensor<f32>) -> tensor<64xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<64x64xf32>, tensor<256x256xf32>, tensor<64x64xf32>, tensor<16x10xf32>, tensor<64xf32>, tensor<64xf32>
}`
	m := parseText(t, src)
	l, err := analyze(m.Main(), "dear")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"exponential tensor<64x64xf32> default":          "XK_DEAR void k(",
		"tanh tensor<256x256xf32> default":               "XK_DEAR void k_par(",
		"fusion(add+multiply) tensor<64x64xf32> default": "XK_DEAR void k(",
		"exponential tensor<16x10xf32> default":          "XK_SMALL void k(",
		"reduce tensor<64xf32> lanes":                    "XK_DEAR void k(",
		"reduce tensor<64xf32> rows":                     "",
	}
	for _, op := range l.roots {
		k, err := newKernel(l, op, 2)
		if err != nil {
			t.Fatal(err)
		}
		name := k.desc + " " + k.cands[0].Name
		w, ok := want[name]
		if !ok {
			t.Fatalf("unexpected kernel %s", name)
		}
		delete(want, name)
		untuned, err := k.bodyAt(k.cands[0], "k", untunedOpt)
		if err != nil {
			t.Fatal(err)
		}
		tuned, err := k.body(k.cands[0], "k")
		if err != nil {
			t.Fatal(err)
		}
		if w != "" && !strings.Contains(untuned, w) {
			t.Errorf("%s: untuned entry points lack %q:\n%s", k.desc, w, untuned)
		}
		if w == "" && strings.Contains(untuned, "XK_DEAR") {
			t.Errorf("%s: built at XK_DEAR's level untuned", k.desc)
		}
		if strings.Contains(tuned, "XK_DEAR") {
			t.Errorf("%s: built at XK_DEAR's level at -O3", k.desc)
		}
	}
	if len(want) > 0 {
		t.Errorf("kernels not found: %v", want)
	}

	args := randomArgs(m, 5)
	run := func(noTune bool) []*stablehlo.Tensor {
		b := New()
		b.NoTune = noTune
		b.Threads = 2
		_, exe := compileIn(t, testCache(t, t.TempDir()), b, "dear", src)
		defer exe.Close()
		got, err := exe.Run(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	untuned, tuned := run(true), run(false)
	want2, err := stablehlo.Eval(m, "", args)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, untuned, want2, 1e-5)
	for i := range untuned {
		if !slices.Equal(untuned[i].Data, tuned[i].Data) {
			t.Errorf("result %d: the untuned build computes other bits than the tuned one", i)
		}
	}
}

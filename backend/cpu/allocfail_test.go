package cpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestScratchAllocationFailureIsAnError compiles kernels whose malloc and
// aligned_alloc always fail (a C compiler wrapper that renames them to
// functions returning NULL). Such a kernel leaves its outputs unwritten;
// Run must report an error, never return those outputs.
func TestScratchAllocationFailureIsAnError(t *testing.T) {
	useAllocator(t, `__attribute__((weak)) void* xk_test_malloc(xk_test_size_t n) { (void)n; return (void*)0; }
__attribute__((weak)) void* xk_test_aligned_alloc(xk_test_size_t a, xk_test_size_t n) { (void)a; (void)n; return (void*)0; }
#define malloc xk_test_malloc
#define aligned_alloc xk_test_aligned_alloc
`)
	// sort's permutation scratch; fft's plans and work buffer (radix 2,
	// direct sums and Bluestein's several buffers in one kernel); the
	// convolution gemm's packed kernel and its variant's own scratch
	// (zeros for the direct variant, features innermost; the gathered
	// block when features are not innermost).
	srcs := map[string]string{"conv-direct": `func.func @main(%x: tensor<2x8x8x4xf32>) -> tensor<2x8x8x8xf32> {
  %w = stablehlo.constant dense<0.5> : tensor<3x3x4x8xf32>
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x8x8x4xf32>, tensor<3x3x4x8xf32>) -> tensor<2x8x8x8xf32>
  return %0 : tensor<2x8x8x8xf32>
}
`, "conv-gather": `func.func @main(%x: tensor<2x4x8x8xf32>) -> tensor<2x8x8x8xf32> {
  %w = stablehlo.constant dense<0.5> : tensor<3x3x4x8xf32>
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, f, 0, 1]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x4x8x8xf32>, tensor<3x3x4x8xf32>) -> tensor<2x8x8x8xf32>
  return %0 : tensor<2x8x8x8xf32>
}
`, "sort": `func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %s = "stablehlo.sort"(%x) <{dimension = 1 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %p = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %s : tensor<4x64xf32>
}
`, "fft": `func.func @main(%x: tensor<4x64xf32>) -> tensor<4x33xcomplex<f32>> {
  %0 = stablehlo.fft %x, type = RFFT, length = [64] : (tensor<4x64xf32>) -> tensor<4x33xcomplex<f32>>
  %1 = stablehlo.fft %0, type = FFT, length = [4, 33] : (tensor<4x33xcomplex<f32>>) -> tensor<4x33xcomplex<f32>>
  %2 = stablehlo.fft %1, type = IFFT, length = [33] : (tensor<4x33xcomplex<f32>>) -> tensor<4x33xcomplex<f32>>
  return %2 : tensor<4x33xcomplex<f32>>
}
`}
	for name, src := range srcs {
		t.Run(name, func(t *testing.T) {
			m := parseText(t, src)
			b := New()
			b.noRoutines = true // the generated kernels' scratch
			exe, err := b.CompileModule(context.Background(), m, nil)
			if err != nil {
				t.Fatalf("compile with the failing allocator: %v", err)
			}
			defer exe.Close()
			x := stablehlo.NewTensor(m.Main().Args[0].Type)
			for i := range x.Data {
				x.Data[i] = byte(i * 7)
			}
			_, err = exe.Run(context.Background(), []*stablehlo.Tensor{x})
			if err == nil || !strings.Contains(err.Error(), "out of memory") {
				t.Fatalf("Run with a failing scratch allocation: err = %v, want an out-of-memory error", err)
			}
		})
	}
}

// TestFFTPartialAllocationFailure compiles fft kernels whose malloc fails
// on every 23rd call (counting across runs; a run makes 18), so that runs
// fail at different points: a plan's second or third buffer, the next
// plan, the work buffer, or not at all. Each run must either report running out of memory or
// return exactly what the same kernels return with a working allocator;
// a buffer freed twice or used after a failed allocation would crash or
// corrupt the result instead.
func TestFFTPartialAllocationFailure(t *testing.T) {
	const src = `func.func @main(%x: tensor<2x40xf64>) -> tensor<2x21xcomplex<f64>> {
  %0 = stablehlo.fft %x, type = RFFT, length = [2, 40] : (tensor<2x40xf64>) -> tensor<2x21xcomplex<f64>>
  %1 = stablehlo.fft %0, type = IFFT, length = [21] : (tensor<2x21xcomplex<f64>>) -> tensor<2x21xcomplex<f64>>
  %2 = stablehlo.fft %1, type = FFT, length = [2, 21] : (tensor<2x21xcomplex<f64>>) -> tensor<2x21xcomplex<f64>>
  return %2 : tensor<2x21xcomplex<f64>>
}
`
	m := parseText(t, src)
	x := stablehlo.NewTensor(m.Main().Args[0].Type)
	for i := range x.Data {
		x.Data[i] = byte(i * 7)
	}
	good, err := New().CompileModule(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, err := good.Run(context.Background(), []*stablehlo.Tensor{x})
	good.Close()
	if err != nil {
		t.Fatal(err)
	}

	useAllocator(t, `void* malloc(xk_test_size_t);
__attribute__((weak)) void* xk_test_malloc(xk_test_size_t n) {
	static unsigned long calls;
	return calls++ % 23 == 22 ? (void*)0 : malloc(n);
}
#define malloc xk_test_malloc
`)
	exe, err := New().CompileModule(context.Background(), m, nil)
	if err != nil {
		t.Fatalf("compile with the failing allocator: %v", err)
	}
	defer exe.Close()
	failed, ok := 0, 0
	for run := 0; run < 12; run++ {
		got, err := exe.Run(context.Background(), []*stablehlo.Tensor{x})
		if err != nil {
			if !strings.Contains(err.Error(), "out of memory") {
				t.Fatalf("run %d: %v, want an out-of-memory error", run, err)
			}
			failed++
			continue
		}
		ok++
		if !got[0].Type.Equal(want[0].Type) || string(got[0].Data) != string(want[0].Data) {
			t.Fatalf("run %d: result differs from the kernels' with a working allocator", run)
		}
	}
	t.Logf("%d runs ran out of memory, %d succeeded", failed, ok)
	if failed == 0 || ok == 0 {
		t.Fatalf("%d runs failed, %d succeeded: want both", failed, ok)
	}
}

// TestAllocationFailureInLoopStops runs a while loop whose condition
// depends on what an fft in its body computes, with a malloc that always
// fails. The fft's output is never written, so the loop would never end;
// the run must stop at the first failed kernel with an out-of-memory
// error instead of spinning until its context is cancelled.
func TestAllocationFailureInLoopStops(t *testing.T) {
	const src = `func.func @main(%x: tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>> {
  %r = stablehlo.while(%z = %x) : tensor<8xcomplex<f32>>
  cond {
    %re = stablehlo.real %z : (tensor<8xcomplex<f32>>) -> tensor<8xf32>
    %zero = stablehlo.constant dense<0.0> : tensor<f32>
    %m = stablehlo.reduce(%re init: %zero) applies stablehlo.maximum across dimensions = [0] : (tensor<8xf32>, tensor<f32>) -> tensor<f32>
    %lim = stablehlo.constant dense<1.0e6> : tensor<f32>
    %c = stablehlo.compare LT, %m, %lim, FLOAT : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %y = stablehlo.fft %z, type = FFT, length = [8] : (tensor<8xcomplex<f32>>) -> tensor<8xcomplex<f32>>
    stablehlo.return %y : tensor<8xcomplex<f32>>
  }
  return %r : tensor<8xcomplex<f32>>
}
`
	m := parseText(t, src)
	x := stablehlo.NewTensor(m.Main().Args[0].Type)
	for i := int64(0); i < 8; i++ {
		fillPart(x, i, 0, 1)
	}
	good, err := New().CompileModule(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := good.Run(context.Background(), []*stablehlo.Tensor{x}); err != nil {
		t.Fatalf("with a working allocator: %v", err)
	}
	good.Close()

	useAllocator(t, `__attribute__((weak)) void* xk_test_malloc(xk_test_size_t n) { (void)n; return (void*)0; }
#define malloc xk_test_malloc
`)
	exe, err := New().CompileModule(context.Background(), m, nil)
	if err != nil {
		t.Fatalf("compile with the failing allocator: %v", err)
	}
	defer exe.Close()
	// The deadline only turns a hang into a failure.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = exe.Run(ctx, []*stablehlo.Tensor{x})
	if err == nil || !strings.Contains(err.Error(), "out of memory") {
		t.Fatalf("Run with a failing scratch allocation in a loop: err = %v, want an out-of-memory error", err)
	}
}

// useAllocator makes the kernels this test compiles use the allocator that
// decls defines (C declarations after a typedef of xk_test_size_t), through
// a C-compiler wrapper that includes them in every kernel source.
func useAllocator(t *testing.T, decls string) {
	t.Helper()
	dir := t.TempDir()
	header := filepath.Join(dir, "alloc.h")
	if err := os.WriteFile(header, []byte("typedef __SIZE_TYPE__ xk_test_size_t;\n"+decls), 0o600); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "cc-alloc")
	script := "#!/bin/sh\n" +
		"# Only kernel sources get the header: the probe's test programs and\n" +
		"# links are passed through unchanged.\n" +
		"for a in \"$@\"; do case \"$a\" in *.c) exec cc -include " + header + " \"$@\";; esac; done\n" +
		"exec cc \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XLACACHE_CC", wrapper)
}

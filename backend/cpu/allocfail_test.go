package cpu

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestScratchAllocationFailureIsAnError compiles kernels whose malloc and
// aligned_alloc always fail (a C compiler wrapper that renames them to
// functions returning NULL). Such a kernel leaves its outputs unwritten;
// Run must report an error, never return those outputs.
func TestScratchAllocationFailureIsAnError(t *testing.T) {
	dir := t.TempDir()
	header := filepath.Join(dir, "nomalloc.h")
	if err := os.WriteFile(header, []byte(`typedef __SIZE_TYPE__ xk_test_size_t;
__attribute__((weak)) void* xk_test_malloc(xk_test_size_t n) { (void)n; return (void*)0; }
__attribute__((weak)) void* xk_test_aligned_alloc(xk_test_size_t a, xk_test_size_t n) { (void)a; (void)n; return (void*)0; }
#define malloc xk_test_malloc
#define aligned_alloc xk_test_aligned_alloc
`), 0o600); err != nil {
		t.Fatal(err)
	}
	wrapper := filepath.Join(dir, "cc-nomalloc")
	script := "#!/bin/sh\n" +
		"# Only kernel sources get the header: the probe's test programs and\n" +
		"# links are passed through unchanged.\n" +
		"for a in \"$@\"; do case \"$a\" in *.c) exec cc -include " + header + " \"$@\";; esac; done\n" +
		"exec cc \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	t.Setenv("XLACACHE_CC", wrapper)
	const src = `func.func @main(%x: tensor<4x64xf32>) -> tensor<4x64xf32> {
  %s = "stablehlo.sort"(%x) <{dimension = 1 : i64}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %p = stablehlo.compare LT, %a, %b, TOTALORDER : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<4x64xf32>) -> tensor<4x64xf32>
  return %s : tensor<4x64xf32>
}
`
	m := parseText(t, src)
	exe, err := New().CompileModule(context.Background(), m, nil)
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
}

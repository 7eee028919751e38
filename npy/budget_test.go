package npy

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testsupport/memtest"
	"github.com/xlacache/xlacache/stablehlo"
)

// zerosNPZ is a small deflated .npz of n members, each a float32 array of
// elems zeros: it decompresses to about n*elems*4 bytes.
func zerosNPZ(t *testing.T, n, elems int) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for i := range n {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("arg%d.npy", i), Method: zip.Deflate})
		if err != nil {
			t.Fatal(err)
		}
		if err := Write(w, &Array{DType: "<f4", Shape: []int64{int64(elems)}, Data: make([]byte, elems*4)}); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// All the members of one archive share one memory budget: an archive of
// many members that are each within the per-member bound, but together
// decompress to far more than the budget, is refused with an error that
// names the member and the budget, having allocated about the budget at
// most (a bound per member alone let a 3 MB archive exhaust memory).
func TestNPZOneBudgetPerArchive(t *testing.T) {
	const budgetBytes = 16 << 20
	old := npzBudget
	npzBudget = func() int64 { return budgetBytes }
	t.Cleanup(func() { npzBudget = old })

	data := zerosNPZ(t, 12, 1<<20) // 12 members of 4 MiB: 48 MiB from ~50 KB
	if len(data) > 1<<20 {
		t.Fatalf("archive is %d bytes; the test wants a small one", len(data))
	}
	var err error
	allocated := memtest.Allocated(func() { _, err = ReadNPZ(bytes.NewReader(data), int64(len(data))) })
	if err == nil || !strings.Contains(err.Error(), `member "arg3.npy"`) || !strings.Contains(err.Error(), "16.0 MiB") {
		t.Fatalf("ReadNPZ of 48 MiB of arrays with a 16 MiB budget: err = %v, want the fourth member refused naming the budget", err)
	}
	if allocated > 2*budgetBytes {
		t.Errorf("refusing the archive allocated %d bytes, more than twice its %d-byte budget", allocated, budgetBytes)
	}

	// The same budget holds for arguments read against a program's
	// signature (xlacache run's inputs).
	var params []string
	for i := range 12 {
		params = append(params, fmt.Sprintf("%%arg%d: tensor<1048576xf32>", i))
	}
	m, err := stablehlo.Parse([]byte("func.func @main("+strings.Join(params, ", ")+") -> tensor<1048576xf32> {\n  return %arg0 : tensor<1048576xf32>\n}"), "twelve.mlir")
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "in.npz")
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	allocated = memtest.Allocated(func() { _, err = LoadArgs(p, m.Main()) })
	if err == nil || !strings.Contains(err.Error(), `member "arg3.npy"`) {
		t.Fatalf("LoadArgs of 48 MiB of arrays with a 16 MiB budget: err = %v, want the fourth member refused", err)
	}
	if allocated > 2*budgetBytes {
		t.Errorf("refusing the arguments allocated %d bytes, more than twice the %d-byte budget", allocated, budgetBytes)
	}

	// Within the budget, everything is read.
	small := zerosNPZ(t, 3, 1<<20)
	arrays, err := ReadNPZ(bytes.NewReader(small), int64(len(small)))
	if err != nil || len(arrays) != 3 {
		t.Fatalf("12 MiB of arrays within a 16 MiB budget: %d arrays, %v", len(arrays), err)
	}
}

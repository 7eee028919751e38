package npy

import (
	"archive/zip"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testsupport/memtest"
	"github.com/xlacache/xlacache/stablehlo"
)

// hugeHeader declares a 16 GiB f64 array.
const hugeHeader = "{'descr': '<f8', 'fortran_order': False, 'shape': (2147483648,), }"

// allocBudget bounds what refusing a huge declared array may allocate. A
// declared 16 GiB array must cost an error, not an allocation: with
// overcommit a 16 GiB make can succeed without touching memory, so the
// allocation itself is what is measured.
const allocBudget = 1 << 20

func TestReadDeclaredSizeBeyondData(t *testing.T) {
	small := rawNPY(hugeHeader, make([]byte, 24))
	dir := t.TempDir()
	p := filepath.Join(dir, "huge.npy")
	if err := os.WriteFile(p, small, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		read func() error
		want []string
	}{
		{"bytes.Reader", func() error { _, err := Read(bytes.NewReader(small)); return err }, []string{"needs 17179869184 data bytes, file has 24"}},
		{"unsized reader", func() error { _, err := Read(io.MultiReader(bytes.NewReader(small))); return err }, []string{"needs 17179869184 data bytes, file has 24"}},
		{"ReadFile", func() error { _, err := ReadFile(p); return err }, []string{p, "needs 17179869184 data bytes, file has 24"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var err error
			n := memtest.Allocated(func() { err = tc.read() })
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if n > allocBudget {
				t.Errorf("allocated %d bytes for a %d-byte file", n, len(small))
			}
		})
	}
}

// TestLoadArgsDeclaredSize: an input whose header matches its (16 GiB)
// argument but whose file holds a few bytes is an error naming the file,
// found before the argument's tensor is allocated; and a mismatched header
// is refused before any data is read.
func TestLoadArgsDeclaredSize(t *testing.T) {
	m, err := stablehlo.Parse([]byte(`func.func @main(%a: tensor<2147483648xf64>) -> tensor<2147483648xf64> {
  return %a : tensor<2147483648xf64>
}`), "huge.mlir")
	if err != nil {
		t.Fatal(err)
	}
	fn := m.Main()
	dir := t.TempDir()
	small := rawNPY(hugeHeader, make([]byte, 24))
	p := filepath.Join(dir, "a.npy")
	os.WriteFile(p, small, 0o600)
	npz := filepath.Join(dir, "in.npz")
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("a.npy")
	w.Write(small)
	zw.Close()
	os.WriteFile(npz, buf.Bytes(), 0o600)

	for _, tc := range []struct{ spec, want string }{
		{p, p},
		{dir, p},
		{npz, `in.npz: npz: member "a.npy"`},
	} {
		var err error
		n := memtest.Allocated(func() { _, err = LoadArgs(tc.spec, fn) })
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "needs 17179869184 data bytes") {
			t.Errorf("LoadArgs(%s): %v, want an error naming %s and the size", tc.spec, err, tc.want)
		}
		if n > allocBudget {
			t.Errorf("LoadArgs(%s) allocated %d bytes", tc.spec, n)
		}
	}

	// The header declares a 16 GiB array for a 4-element argument: refused
	// from the header, naming the argument.
	m, err = stablehlo.Parse([]byte(`func.func @main(%a: tensor<4xf64>) -> tensor<4xf64> {
  return %a : tensor<4xf64>
}`), "small.mlir")
	if err != nil {
		t.Fatal(err)
	}
	n := memtest.Allocated(func() { _, err = LoadArgs(p, m.Main()) })
	if err == nil || !strings.Contains(err.Error(), "argument #0 (a): shape [2147483648], want tensor<4xf64>") || n > allocBudget {
		t.Errorf("mismatched header: %v (allocated %d)", err, n)
	}
}

// TestNPZMemberDeclaredSize: an archive member whose .npy header declares
// more data than the member holds fails from the sizes, not after reading.
func TestNPZMemberDeclaredSize(t *testing.T) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	w, _ := zw.Create("x.npy")
	w.Write(rawNPY(hugeHeader, make([]byte, 8)))
	zw.Close()
	var err error
	n := memtest.Allocated(func() { _, err = ReadNPZ(bytes.NewReader(buf.Bytes()), int64(buf.Len())) })
	if err == nil || !strings.Contains(err.Error(), `member "x.npy"`) || !strings.Contains(err.Error(), "needs 17179869184 data bytes") {
		t.Fatalf("got %v", err)
	}
	if n > allocBudget {
		t.Errorf("allocated %d bytes", n)
	}
}

package main

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/npy"
	"github.com/xlacache/xlacache/stablehlo"
)

const runComplexProgram = `func.func @main(%x: tensor<2xcomplex<f32>>, %y: tensor<2xcomplex<f64>>) -> (tensor<2xcomplex<f32>>, tensor<2xcomplex<f64>>) {
  %0 = stablehlo.multiply %x, %x : tensor<2xcomplex<f32>>
  %1 = stablehlo.add %y, %y : tensor<2xcomplex<f64>>
  return %0, %1 : tensor<2xcomplex<f32>>, tensor<2xcomplex<f64>>
}
`

// rawNPYFile writes a version 1.0 .npy file with the given header text
// and data bytes as they are (here: a big-endian array, which npy.Write
// never produces).
func rawNPYFile(t *testing.T, path, header string, data []byte) {
	t.Helper()
	var b bytes.Buffer
	b.WriteString("\x93NUMPY\x01\x00")
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	b.Write(data)
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// Complex arguments travel through `run --inputs` from .npy files (one
// little-endian <c8, one big-endian >c16) and come back in --output as
// <c8 and <c16, with the same values on the cpu backend and the
// interpreter.
func TestCLIRunComplexInputs(t *testing.T) {
	dir := t.TempDir()
	prog := filepath.Join(dir, "c.mlir")
	if err := os.WriteFile(prog, []byte(runComplexProgram), 0o600); err != nil {
		t.Fatal(err)
	}
	in := filepath.Join(dir, "in")
	if err := os.Mkdir(in, 0o700); err != nil {
		t.Fatal(err)
	}
	x, err := stablehlo.FromComplex64s([]int64{2}, []complex64{complex(1, 2), complex(-3, 0.5)})
	if err != nil {
		t.Fatal(err)
	}
	xa, err := npy.FromTensor(x)
	if err != nil {
		t.Fatal(err)
	}
	if err := npy.WriteFile(filepath.Join(in, "x.npy"), xa); err != nil {
		t.Fatal(err)
	}
	ys := []complex128{complex(1.25, -2), complex(-1e300, 7)}
	var be []byte
	for _, v := range ys {
		be = binary.BigEndian.AppendUint64(be, math.Float64bits(real(v)))
		be = binary.BigEndian.AppendUint64(be, math.Float64bits(imag(v)))
	}
	rawNPYFile(t, filepath.Join(in, "y.npy"), "{'descr': '>c16', 'fortran_order': False, 'shape': (2,), }\n", be)

	wantX, _ := stablehlo.FromComplex64s([]int64{2}, []complex64{complex(1, 2) * complex(1, 2), complex(-3, 0.5) * complex(-3, 0.5)})
	wantY, _ := stablehlo.FromComplex128s([]int64{2}, []complex128{2 * ys[0], 2 * ys[1]})
	env := map[string]string{config.EnvDir: filepath.Join(dir, "cache"), config.EnvMinCompileTime: "0"}
	for _, backend := range []string{"cpu", "interp"} {
		outFile := filepath.Join(dir, backend+".npz")
		out, code := runAdminCLI(t, env, "run", prog, "--backend", backend, "--inputs", in, "--output", outFile)
		if code != 0 {
			t.Fatalf("%s: exit %d\n%s", backend, code, out)
		}
		res, err := npy.ReadNPZFile(outFile)
		if err != nil {
			t.Fatal(err)
		}
		if len(res) != 2 || res[0].Array.DType != npy.Complex64 || res[1].Array.DType != npy.Complex128 {
			t.Fatalf("%s: outputs %+v", backend, res)
		}
		for i, want := range []*stablehlo.Tensor{wantX, wantY} {
			got, err := npy.ToTensor(res[i].Array, want.Type)
			if err != nil || !bytes.Equal(got.Data, want.Data) {
				t.Errorf("%s: out%d = %v (%v), want %v", backend, i, got, err, want)
			}
		}
	}
}

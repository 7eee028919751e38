package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

const tensorTestProgram = `func.func @main(%x: tensor<2x3xf32>, %n: tensor<4xi32>) -> tensor<2x3xf32> {
  return %x : tensor<2x3xf32>
}
`

func mainFunc(t *testing.T) *stablehlo.Func {
	t.Helper()
	m, err := stablehlo.Parse([]byte(tensorTestProgram), "t.mlir")
	if err != nil {
		t.Fatal(err)
	}
	return m.Main()
}

func TestTensorRoundTrip(t *testing.T) {
	fn := mainFunc(t)
	x := &Array{DType: Float32, Shape: []int64{2, 3}, Data: f32bytes(1, 2, 3, 4, 5, 6)}
	tx, err := ToTensor(x, fn.Args[0].Type)
	if err != nil {
		t.Fatal(err)
	}
	if tx.Float64At(5) != 6 {
		t.Errorf("element 5 = %v, want 6", tx.Float64At(5))
	}
	back, err := FromTensor(tx)
	if err != nil || back.DType != Float32 || len(back.Shape) != 2 || string(back.Data) != string(x.Data) {
		t.Errorf("FromTensor: %+v %v", back, err)
	}
	// Element type and shape must match exactly.
	if _, err := ToTensor(x, fn.Args[1].Type); err == nil || !strings.Contains(err.Error(), "dtype") {
		t.Errorf("wrong dtype: %v", err)
	}
	wrong := &Array{DType: Float32, Shape: []int64{3, 2}, Data: x.Data}
	if _, err := ToTensor(wrong, fn.Args[0].Type); err == nil || !strings.Contains(err.Error(), "shape") {
		t.Errorf("wrong shape: %v", err)
	}
}

func TestLoadArgs(t *testing.T) {
	fn := mainFunc(t)
	dir := t.TempDir()
	x := &Array{DType: Float32, Shape: []int64{2, 3}, Data: f32bytes(1, 2, 3, 4, 5, 6)}
	n := &Array{DType: Int32, Shape: []int64{4}, Data: make([]byte, 16)}
	n.Data[0] = 7
	check := func(name string, args []*stablehlo.Tensor, err error) {
		t.Helper()
		if err != nil || len(args) != 2 || args[0].Float64At(5) != 6 || args[1].Float64At(0) != 7 {
			t.Errorf("%s: %v %v", name, args, err)
		}
	}
	// A comma-separated list of .npy files in argument order.
	px, pn := filepath.Join(dir, "a.npy"), filepath.Join(dir, "b.npy")
	WriteFile(px, x)
	WriteFile(pn, n)
	args, err := LoadArgs(px+","+pn, fn)
	check("npy list", args, err)
	if _, err := LoadArgs(px, fn); err == nil || !strings.Contains(err.Error(), "1 .npy files for 2 arguments") {
		t.Errorf("short list: %v", err)
	}
	if _, err := LoadArgs(pn+","+px, fn); err == nil || !strings.Contains(err.Error(), "argument #0 (x)") {
		t.Errorf("swapped list: %v", err)
	}
	// A directory: <name>.npy, else arg<N>.npy.
	in := filepath.Join(dir, "in")
	os.Mkdir(in, 0o700)
	WriteFile(filepath.Join(in, "x.npy"), x)
	WriteFile(filepath.Join(in, "arg1.npy"), n)
	args, err = LoadArgs(in, fn)
	check("directory", args, err)
	os.Remove(filepath.Join(in, "arg1.npy"))
	if _, err := LoadArgs(in, fn); err == nil || !strings.Contains(err.Error(), "argument #1 (n)") {
		t.Errorf("directory missing an argument: %v", err)
	}
	// An .npz archive: by name, by arg<N>, else by position.
	for _, tc := range []struct {
		name  string
		names [2]string
	}{{"npz by name", [2]string{"x", "n"}}, {"npz by argN", [2]string{"arg0", "arg1"}}, {"npz by position", [2]string{"p", "q"}}} {
		p := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "_")+".npz")
		if err := WriteNPZFile(p, []Named{{Name: tc.names[0], Array: x}, {Name: tc.names[1], Array: n}}); err != nil {
			t.Fatal(err)
		}
		args, err = LoadArgs(p, fn)
		check(tc.name, args, err)
	}
	p := filepath.Join(dir, "one.npz")
	WriteNPZFile(p, []Named{{Name: "x", Array: x}})
	if _, err := LoadArgs(p, fn); err == nil || !strings.Contains(err.Error(), "no array for argument #1 (n)") {
		t.Errorf("npz missing an argument: %v", err)
	}
	if _, err := LoadArgs(filepath.Join(dir, "missing.npz"), fn); err == nil {
		t.Error("missing file: no error")
	}
}

func TestWriteTensorsNPZ(t *testing.T) {
	fn := mainFunc(t)
	a := stablehlo.NewTensor(fn.Args[0].Type)
	a.Float32s()[1] = 2.5
	b := stablehlo.NewTensor(fn.Args[1].Type)
	p := filepath.Join(t.TempDir(), "out.npz")
	if err := WriteTensorsNPZ(p, []*stablehlo.Tensor{a, b}); err != nil {
		t.Fatal(err)
	}
	got, err := ReadNPZFile(p)
	if err != nil || len(got) != 2 || got[0].Name != "out0" || got[1].Name != "out1" || got[1].Array.DType != Int32 {
		t.Fatalf("read back: %+v %v", got, err)
	}
	back, err := ToTensor(got[0].Array, fn.Args[0].Type)
	if err != nil || back.Float64At(1) != 2.5 {
		t.Errorf("out0: %v %v", back, err)
	}
}

// Complex numbers and f16 travel as NumPy's <c8, <c16 and <f2; a
// big-endian complex array is swapped part by part, not as one number.
func TestComplexAndHalfArrays(t *testing.T) {
	c64, err := stablehlo.FromComplex64s([]int64{2}, []complex64{complex(1.5, -2), complex(0, 3.25)})
	if err != nil {
		t.Fatal(err)
	}
	c128, err := stablehlo.FromComplex128s([]int64{1}, []complex128{complex(-1e300, 7)})
	if err != nil {
		t.Fatal(err)
	}
	f16 := stablehlo.NewTensor(stablehlo.TensorType{DType: stablehlo.F16, Shape: []int64{2}})
	copy(f16.Data, []byte{0x00, 0x3c, 0x00, 0xc0}) // 1, -2
	for _, tc := range []struct {
		t     *stablehlo.Tensor
		descr string
	}{{c64, Complex64}, {c128, Complex128}, {f16, Float16}} {
		a, err := FromTensor(tc.t)
		if err != nil || a.DType != tc.descr {
			t.Fatalf("%s: FromTensor %+v %v", tc.t.Type, a, err)
		}
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(buf.String(), "'descr': '"+tc.descr+"'") {
			t.Errorf("%s: header %q", tc.t.Type, buf.String()[:60])
		}
		back, err := Read(&buf)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ToTensor(back, tc.t.Type)
		if err != nil || !bytes.Equal(got.Data, tc.t.Data) {
			t.Errorf("%s: round trip %v %v", tc.t.Type, got, err)
		}
	}
	// >c8: each part big-endian.
	be := []byte{0x3f, 0xc0, 0x00, 0x00, 0xc0, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0x40, 0x50, 0x00, 0x00}
	a, err := Read(bytes.NewReader(rawNPY("{'descr': '>c8', 'fortran_order': False, 'shape': (2,), }", be)))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ToTensor(a, c64.Type)
	if err != nil || !bytes.Equal(got.Data, c64.Data) {
		t.Errorf(">c8 read as %v (%v), want %v", got, err, c64)
	}
}

// A Fortran-order complex array is reordered by whole elements (real and
// imaginary parts stay together), after each part is byte-swapped when
// the array is big-endian.
func TestFortranComplex(t *testing.T) {
	want := []complex128{complex(1, -1), complex(2, -2), complex(3, -3), complex(4, -4), complex(5, -5), complex(6, -6)}
	// Shape (2, 3), column-major: a[0,0], a[1,0], a[0,1], a[1,1], ...
	var le, be []byte
	for _, j := range []int{0, 3, 1, 4, 2, 5} {
		for _, part := range []float64{real(want[j]), imag(want[j])} {
			bits := math.Float64bits(part)
			le = binary.LittleEndian.AppendUint64(le, bits)
			be = binary.BigEndian.AppendUint64(be, bits)
		}
	}
	wantT, err := stablehlo.FromComplex128s([]int64{2, 3}, want)
	if err != nil {
		t.Fatal(err)
	}
	for descr, data := range map[string][]byte{"<c16": le, ">c16": be} {
		a, err := Read(bytes.NewReader(rawNPY("{'descr': '"+descr+"', 'fortran_order': True, 'shape': (2, 3), }", data)))
		if err != nil {
			t.Fatal(err)
		}
		got, err := ToTensor(a, wantT.Type)
		if err != nil || !bytes.Equal(got.Data, wantT.Data) {
			t.Errorf("%s Fortran order read as %v (%v), want %v", descr, got, err, wantT)
		}
	}
	// complex64 too, big-endian.
	var be64 []byte
	for _, j := range []int{0, 3, 1, 4, 2, 5} {
		be64 = binary.BigEndian.AppendUint32(be64, math.Float32bits(float32(real(want[j]))))
		be64 = binary.BigEndian.AppendUint32(be64, math.Float32bits(float32(imag(want[j]))))
	}
	w64 := make([]complex64, len(want))
	for i, v := range want {
		w64[i] = complex64(v)
	}
	want64, err := stablehlo.FromComplex64s([]int64{2, 3}, w64)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Read(bytes.NewReader(rawNPY("{'descr': '>c8', 'fortran_order': True, 'shape': (2, 3), }", be64)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := ToTensor(a, want64.Type); err != nil || !bytes.Equal(got.Data, want64.Data) {
		t.Errorf(">c8 Fortran order read as %v (%v), want %v", got, err, want64)
	}
}

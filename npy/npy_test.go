package npy

import (
	"bytes"
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func f32bytes(v ...float32) []byte {
	b := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(x))
	}
	return b
}

func TestRoundTrip(t *testing.T) {
	tests := []*Array{
		{DType: Float32, Shape: []int64{2, 3}, Data: f32bytes(1, 2, 3, 4, 5, 6)},
		{DType: Float32, Shape: []int64{}, Data: f32bytes(7)},
		{DType: Int32, Shape: []int64{3}, Data: []byte{1, 0, 0, 0, 2, 0, 0, 0, 255, 255, 255, 255}},
		{DType: Bool, Shape: []int64{2, 2}, Data: []byte{1, 0, 0, 1}},
		{DType: Float64, Shape: []int64{0, 4}, Data: []byte{}},
		{DType: Uint8, Shape: []int64{1, 1, 1, 2}, Data: []byte{9, 8}},
	}
	for _, a := range tests {
		var buf bytes.Buffer
		if err := Write(&buf, a); err != nil {
			t.Fatalf("%v: %v", a.Shape, err)
		}
		if (buf.Len()-len(a.Data))%64 != 0 {
			t.Errorf("%v: data not 64-byte aligned (file %d bytes)", a.Shape, buf.Len())
		}
		got, err := Read(&buf)
		if err != nil {
			t.Fatalf("%v: %v", a.Shape, err)
		}
		if got.DType != a.DType || !reflect.DeepEqual(got.Shape, a.Shape) || !bytes.Equal(got.Data, a.Data) {
			t.Errorf("round trip: got %+v want %+v", got, a)
		}
	}
}

func rawNPY(header string, data []byte) []byte {
	var b bytes.Buffer
	b.Write(magic)
	b.Write([]byte{1, 0})
	binary.Write(&b, binary.LittleEndian, uint16(len(header)))
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func TestReadConversions(t *testing.T) {
	// Big-endian int32 [1, 2].
	be := rawNPY("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }\n", []byte{0, 0, 0, 1, 0, 0, 0, 2})
	a, err := Read(bytes.NewReader(be))
	if err != nil {
		t.Fatal(err)
	}
	if a.DType != Int32 || !bytes.Equal(a.Data, []byte{1, 0, 0, 0, 2, 0, 0, 0}) {
		t.Errorf("big-endian: got %+v", a)
	}
	// Fortran-ordered 2x3 uint8: column-major 1 4 2 5 3 6 is row-major 1..6.
	fo := rawNPY("{'shape': (2, 3), 'fortran_order': True, 'descr': '|u1'}\n", []byte{1, 4, 2, 5, 3, 6})
	a, err = Read(bytes.NewReader(fo))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Data, []byte{1, 2, 3, 4, 5, 6}) {
		t.Errorf("fortran: got %v", a.Data)
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "magic"},
		{"bad magic", []byte("PK\x03\x04xxxxxxxx"), "bad magic"},
		{"version", append(append([]byte{}, magic...), 9, 0, 0, 0), "version"},
		{"short data", rawNPY("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }", f32bytes(1)), "needs 16"},
		{"dtype", rawNPY("{'descr': '<c32', 'fortran_order': False, 'shape': (1,), }", make([]byte, 32)), "unsupported dtype"},
		{"unknown key", rawNPY("{'descr': '<f4', 'x': 1, 'shape': (1,), }", f32bytes(1)), "unknown key"},
		{"negative", rawNPY("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }", nil), "bad dimension"},
		{"huge", rawNPY("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", nil), "too large"},
		{"not dict", rawNPY("descr", nil), "not a dict"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read(bytes.NewReader(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestWriteRejectsInconsistent(t *testing.T) {
	if err := Write(&bytes.Buffer{}, &Array{DType: Float32, Shape: []int64{3}, Data: f32bytes(1)}); err == nil {
		t.Error("short data accepted")
	}
	if err := Write(&bytes.Buffer{}, &Array{DType: "<c32", Shape: []int64{}, Data: make([]byte, 8)}); err == nil {
		t.Error("bad dtype accepted")
	}
}

func TestNPZRoundTrip(t *testing.T) {
	arrays := []Named{
		{"x", &Array{DType: Float32, Shape: []int64{2}, Data: f32bytes(1, 2)}},
		{"arg1", &Array{DType: Int64, Shape: []int64{}, Data: make([]byte, 8)}},
	}
	path := filepath.Join(t.TempDir(), "a.npz")
	if err := WriteNPZFile(path, arrays); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("npz permissions: %v %v", fi.Mode(), err)
	}
	got, err := ReadNPZFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, arrays) {
		t.Errorf("got %+v", got)
	}
	if err := WriteNPZ(&bytes.Buffer{}, []Named{{"../evil", arrays[0].Array}}); err == nil {
		t.Error("path-like name accepted")
	}
}

func FuzzRead(f *testing.F) {
	var buf bytes.Buffer
	Write(&buf, &Array{DType: Float32, Shape: []int64{2, 2}, Data: f32bytes(1, 2, 3, 4)})
	f.Add(buf.Bytes())
	f.Add(rawNPY("{'shape': (2, 3), 'fortran_order': True, 'descr': '|u1'}\n", []byte{1, 4, 2, 5, 3, 6}))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := Read(bytes.NewReader(data))
		if err != nil {
			return
		}
		if err := a.Validate(); err != nil {
			t.Fatalf("Read returned an invalid array: %v", err)
		}
		var out bytes.Buffer
		if err := Write(&out, a); err != nil {
			t.Fatalf("cannot write what was read: %v", err)
		}
		b, err := Read(&out)
		if err != nil || !bytes.Equal(a.Data, b.Data) || !reflect.DeepEqual(a.Shape, b.Shape) {
			t.Fatalf("round trip changed the array: %v", err)
		}
	})
}

func FuzzReadNPZ(f *testing.F) {
	var buf bytes.Buffer
	WriteNPZ(&buf, []Named{{"a", &Array{DType: Int32, Shape: []int64{1}, Data: []byte{1, 2, 3, 4}}}})
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		arrays, err := ReadNPZ(bytes.NewReader(data), int64(len(data)))
		if err != nil {
			return
		}
		for _, a := range arrays {
			if err := a.Array.Validate(); err != nil {
				t.Fatalf("invalid array %q: %v", a.Name, err)
			}
		}
	})
}

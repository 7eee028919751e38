package stablehlo

import (
	"fmt"
	"math"
	"unsafe"
)

// Tensor is a host buffer: Data holds NumElements() elements of Type.DType
// in little-endian row-major order (i1 stored as one byte 0/1). This is
// the exact layout the CPU backend's generated kernels read and write.
type Tensor struct {
	Type TensorType
	Data []byte
}

// NewTensor allocates a zeroed tensor. The buffer is 8-byte aligned so the
// typed accessors can reinterpret it without copying.
func NewTensor(t TensorType) *Tensor {
	n := t.ByteSize()
	words := make([]uint64, (n+7)/8)
	var data []byte
	if len(words) > 0 {
		data = unsafe.Slice((*byte)(unsafe.Pointer(&words[0])), n)
	} else {
		data = []byte{}
	}
	return &Tensor{Type: TensorType{DType: t.DType, Shape: append([]int64(nil), t.Shape...)}, Data: data}
}

// Clone returns a deep copy.
func (t *Tensor) Clone() *Tensor {
	c := NewTensor(t.Type)
	copy(c.Data, t.Data)
	return c
}

// aligned makes sure the buffer can be viewed as elements of size n,
// copying into a fresh aligned buffer when a caller supplied an unaligned
// slice.
func (t *Tensor) aligned(n uintptr) {
	if len(t.Data) == 0 {
		return
	}
	if uintptr(unsafe.Pointer(&t.Data[0]))%n != 0 {
		c := NewTensor(t.Type)
		copy(c.Data, t.Data)
		t.Data = c.Data
	}
}

func view[T any](t *Tensor, want DType) []T {
	if t.Type.DType != want {
		panic(fmt.Sprintf("stablehlo: tensor of type %s viewed as %s", t.Type, want))
	}
	var z T
	sz := unsafe.Sizeof(z)
	t.aligned(unsafe.Alignof(z)) // complex128 needs 8, not 16
	n := len(t.Data) / int(sz)
	if n == 0 {
		return []T{}
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&t.Data[0])), n)
}

// Float32s views an f32 tensor's buffer (no copy). It panics on a dtype
// mismatch, which is a programming error, never a data error.
func (t *Tensor) Float32s() []float32 { return view[float32](t, F32) }

// Float64s views an f64 tensor's buffer.
func (t *Tensor) Float64s() []float64 { return view[float64](t, F64) }

// Int8s views an i8 tensor's buffer.
func (t *Tensor) Int8s() []int8 { return view[int8](t, I8) }

// Int16s views an i16 tensor's buffer.
func (t *Tensor) Int16s() []int16 { return view[int16](t, I16) }

// Int32s views an i32 tensor's buffer.
func (t *Tensor) Int32s() []int32 { return view[int32](t, I32) }

// Int64s views an i64 tensor's buffer.
func (t *Tensor) Int64s() []int64 { return view[int64](t, I64) }

// Uint8s views a ui8 tensor's buffer.
func (t *Tensor) Uint8s() []uint8 { return view[uint8](t, UI8) }

// Uint16s views a ui16 tensor's buffer.
func (t *Tensor) Uint16s() []uint16 { return view[uint16](t, UI16) }

// Uint32s views a ui32 tensor's buffer.
func (t *Tensor) Uint32s() []uint32 { return view[uint32](t, UI32) }

// Uint64s views a ui64 tensor's buffer.
func (t *Tensor) Uint64s() []uint64 { return view[uint64](t, UI64) }

// Bools views an i1 tensor's buffer as bytes holding 0 or 1.
func (t *Tensor) Bools() []uint8 { return view[uint8](t, I1) }

// Complex64s views a complex<f32> tensor's buffer (real part first in
// each element, the layout of Go's complex64).
func (t *Tensor) Complex64s() []complex64 { return view[complex64](t, C64) }

// Complex128s views a complex<f64> tensor's buffer.
func (t *Tensor) Complex128s() []complex128 { return view[complex128](t, C128) }

// FromComplex64s builds a complex<f32> tensor.
func FromComplex64s(shape []int64, values []complex64) (*Tensor, error) {
	return fromSlice(TensorType{DType: C64, Shape: shape}, values)
}

// FromComplex128s builds a complex<f64> tensor.
func FromComplex128s(shape []int64, values []complex128) (*Tensor, error) {
	return fromSlice(TensorType{DType: C128, Shape: shape}, values)
}

// Complex128At returns element i of a complex tensor widened to
// complex128 (for messages and tests; not for hot loops). Real tensors
// give their value with a zero imaginary part.
func (t *Tensor) Complex128At(i int64) complex128 {
	switch t.Type.DType {
	case C64:
		return complex128(t.Complex64s()[i])
	case C128:
		return t.Complex128s()[i]
	}
	return complex(t.Float64At(i), 0)
}

// parts views a complex tensor as a tensor of its part type with a
// trailing dimension of 2 (real, imaginary), sharing the buffer: element
// i's real part is part element 2i.
func (t *Tensor) parts() *Tensor {
	shape := append(append(make([]int64, 0, t.Type.Rank()+1), t.Type.Shape...), 2)
	return &Tensor{Type: TensorType{DType: t.Type.DType.ComplexElem(), Shape: shape}, Data: t.Data}
}

// FromFloat32s builds an f32 tensor of the given shape from values.
func FromFloat32s(shape []int64, values []float32) (*Tensor, error) {
	return fromSlice(TensorType{DType: F32, Shape: shape}, values)
}

// FromFloat64s builds an f64 tensor.
func FromFloat64s(shape []int64, values []float64) (*Tensor, error) {
	return fromSlice(TensorType{DType: F64, Shape: shape}, values)
}

// FromInt32s builds an i32 tensor.
func FromInt32s(shape []int64, values []int32) (*Tensor, error) {
	return fromSlice(TensorType{DType: I32, Shape: shape}, values)
}

// FromInt64s builds an i64 tensor.
func FromInt64s(shape []int64, values []int64) (*Tensor, error) {
	return fromSlice(TensorType{DType: I64, Shape: shape}, values)
}

// FromBools builds an i1 tensor.
func FromBools(shape []int64, values []bool) (*Tensor, error) {
	t := NewTensor(TensorType{DType: I1, Shape: shape})
	if int64(len(values)) != t.Type.NumElements() {
		return nil, fmt.Errorf("%d values for %s", len(values), t.Type)
	}
	for i, v := range values {
		if v {
			t.Data[i] = 1
		}
	}
	return t, nil
}

func fromSlice[T any](tt TensorType, values []T) (*Tensor, error) {
	t := NewTensor(tt)
	if int64(len(values)) != tt.NumElements() {
		return nil, fmt.Errorf("%d values for %s", len(values), tt)
	}
	copy(view[T](t, tt.DType), values)
	return t, nil
}

// Float64At returns element i converted to float64 (for messages and
// tolerant comparisons; not for hot loops).
func (t *Tensor) Float64At(i int64) float64 {
	switch t.Type.DType {
	case F32:
		return float64(t.Float32s()[i])
	case F64:
		return t.Float64s()[i]
	case I1, UI8:
		return float64(t.Data[i])
	case I8:
		return float64(t.Int8s()[i])
	case I16:
		return float64(t.Int16s()[i])
	case I32:
		return float64(t.Int32s()[i])
	case I64:
		return float64(t.Int64s()[i])
	case UI16:
		return float64(t.Uint16s()[i])
	case UI32:
		return float64(t.Uint32s()[i])
	case UI64:
		return float64(t.Uint64s()[i])
	case F16, BF16:
		return float64(halfToFloat32(t.halfBits()[i], t.Type.DType))
	}
	return math.NaN()
}

// Int64At returns element i of an integer or i1 tensor as int64 (unsigned
// 64-bit values wrap).
func (t *Tensor) Int64At(i int64) int64 {
	switch t.Type.DType {
	case I1, UI8:
		return int64(t.Data[i])
	case I8:
		return int64(t.Int8s()[i])
	case I16:
		return int64(t.Int16s()[i])
	case I32:
		return int64(t.Int32s()[i])
	case I64:
		return t.Int64s()[i]
	case UI16:
		return int64(t.Uint16s()[i])
	case UI32:
		return int64(t.Uint32s()[i])
	case UI64:
		return int64(t.Uint64s()[i])
	case F32:
		return int64(t.Float32s()[i])
	case F64:
		return int64(t.Float64s()[i])
	case F16, BF16:
		return int64(t.Float64At(i))
	}
	return 0
}

// setFloat stores v (converted) at element i.
func (t *Tensor) setFloat(i int64, v float64) {
	switch t.Type.DType {
	case F32:
		t.Float32s()[i] = float32(v)
	case F64:
		t.Float64s()[i] = v
	case F16, BF16:
		t.halfBits()[i] = float64ToHalf(v, t.Type.DType)
	default:
		t.setInt(i, int64(v))
	}
}

// setInt stores v (truncated to the element width) at element i.
func (t *Tensor) setInt(i int64, v int64) {
	switch t.Type.DType {
	case I1:
		if v != 0 {
			t.Data[i] = 1
		} else {
			t.Data[i] = 0
		}
	case UI8:
		t.Data[i] = uint8(v)
	case I8:
		t.Int8s()[i] = int8(v)
	case I16:
		t.Int16s()[i] = int16(v)
	case I32:
		t.Int32s()[i] = int32(v)
	case I64:
		t.Int64s()[i] = v
	case UI16:
		t.Uint16s()[i] = uint16(v)
	case UI32:
		t.Uint32s()[i] = uint32(v)
	case UI64:
		t.Uint64s()[i] = uint64(v)
	case F32:
		t.Float32s()[i] = float32(v)
	case F64:
		t.Float64s()[i] = float64(v)
	case F16, BF16:
		t.halfBits()[i] = float64ToHalf(intToFloat64Odd(absU(v), v < 0), t.Type.DType)
	}
}

// absU is |v| as an unsigned value (exact for math.MinInt64).
func absU(v int64) uint64 {
	if v < 0 {
		return -uint64(v)
	}
	return uint64(v)
}

// setBits stores the raw bit pattern v (as written in hex literals like
// 0x7FC00000) at element i.
func (t *Tensor) setBits(i int64, v uint64) {
	switch t.Type.DType {
	case F32:
		t.Float32s()[i] = math.Float32frombits(uint32(v))
	case F64:
		t.Float64s()[i] = math.Float64frombits(v)
	case F16, BF16:
		t.halfBits()[i] = uint16(v)
	default:
		t.setInt(i, int64(v))
	}
}

// Equal reports whether two tensors have the same type and identical
// bytes (so NaNs with equal bit patterns compare equal).
func (t *Tensor) Equal(o *Tensor) bool {
	if t == nil || o == nil {
		return t == o
	}
	if !t.Type.Equal(o.Type) || len(t.Data) != len(o.Data) {
		return false
	}
	for i := range t.Data {
		if t.Data[i] != o.Data[i] {
			return false
		}
	}
	return true
}

// String renders the tensor as a dense literal with its type (for
// messages and the canonical form).
func (t *Tensor) String() string {
	return formatDense(t) + " : " + t.Type.String()
}

// Close compares got (t) with want elementwise and returns nil when every
// element satisfies |got-want| <= atol + rtol*|want| (NaN matches NaN;
// infinities must be equal); integer and i1 tensors must match exactly;
// complex tensors compare each part (the error's index then ends with 0
// for the real part, 1 for the imaginary one). The error names the first
// mismatching index and both values.
func (t *Tensor) Close(want *Tensor, rtol, atol float64) error {
	if t == nil || want == nil {
		return fmt.Errorf("nil tensor")
	}
	if !t.Type.Equal(want.Type) {
		return fmt.Errorf("type %s, want %s", t.Type, want.Type)
	}
	if t.Type.DType.IsComplex() {
		// Each part against the same bounds; the index names the
		// element, the last index the part (0 real, 1 imaginary).
		return t.parts().Close(want.parts(), rtol, atol)
	}
	n := t.Type.NumElements()
	for i := int64(0); i < n; i++ {
		if !t.Type.DType.IsFloat() {
			if t.Int64At(i) != want.Int64At(i) {
				return fmt.Errorf("index %v: got %s, want %s", unravel(i, t.Type.Shape), formatScalar(t, i), formatScalar(want, i))
			}
			continue
		}
		g, w := t.Float64At(i), want.Float64At(i)
		switch {
		case g != g || w != w:
			if g == g || w == w {
				return fmt.Errorf("index %v: got %v, want %v", unravel(i, t.Type.Shape), g, w)
			}
		case math.IsInf(g, 0) || math.IsInf(w, 0):
			if g != w {
				return fmt.Errorf("index %v: got %v, want %v", unravel(i, t.Type.Shape), g, w)
			}
		case math.Abs(g-w) > atol+rtol*math.Abs(w):
			return fmt.Errorf("index %v: got %v, want %v (|diff| %g > %g)", unravel(i, t.Type.Shape), g, w, math.Abs(g-w), atol+rtol*math.Abs(w))
		}
	}
	return nil
}

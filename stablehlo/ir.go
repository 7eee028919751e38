package stablehlo

import (
	"fmt"
	"strconv"
	"strings"
)

// DType is a tensor element type. The zero value is invalid so that a
// forgotten initialisation is caught by the verifier instead of silently
// meaning f32.
type DType int

// Element types understood by the front end. The order is part of the
// canonical form's stability only through String(), never through the
// numeric values.
const (
	InvalidDType DType = iota
	F32
	F64
	I1
	I8
	I16
	I32
	I64
	UI8
	UI16
	UI32
	UI64
	F16
	BF16
	// C64 and C128 are complex numbers: two f32 or two f64, real part
	// first (StableHLO spec, "Types": complex<f32>, complex<f64>).
	C64
	C128
)

var dtypeNames = [...]string{
	InvalidDType: "invalid",
	F32:          "f32",
	F64:          "f64",
	I1:           "i1",
	I8:           "i8",
	I16:          "i16",
	I32:          "i32",
	I64:          "i64",
	UI8:          "ui8",
	UI16:         "ui16",
	UI32:         "ui32",
	UI64:         "ui64",
	F16:          "f16",
	BF16:         "bf16",
	C64:          "complex<f32>",
	C128:         "complex<f64>",
}

// String returns the MLIR spelling ("f32", "i1", "ui8", ...).
func (d DType) String() string {
	if d < 0 || int(d) >= len(dtypeNames) {
		return "dtype(" + strconv.Itoa(int(d)) + ")"
	}
	return dtypeNames[d]
}

// Size is the number of bytes one element occupies in a Tensor buffer
// (i1 uses a whole byte holding 0 or 1).
func (d DType) Size() int {
	switch d {
	case I1, I8, UI8:
		return 1
	case I16, UI16, F16, BF16:
		return 2
	case F32, I32, UI32:
		return 4
	case F64, I64, UI64, C64:
		return 8
	case C128:
		return 16
	}
	return 0
}

// IsFloat reports whether d is a floating-point type.
func (d DType) IsFloat() bool { return d == F32 || d == F64 || d == F16 || d == BF16 }

// IsComplex reports whether d is a complex type.
func (d DType) IsComplex() bool { return d == C64 || d == C128 }

// ComplexElem is the type of a complex type's parts (f32 for
// complex<f32>), or InvalidDType for any other type.
func (d DType) ComplexElem() DType {
	switch d {
	case C64:
		return F32
	case C128:
		return F64
	}
	return InvalidDType
}

// IsInt reports whether d is an integer type other than i1.
func (d DType) IsInt() bool { return d.IsSigned() || d.IsUnsigned() }

// IsSigned reports whether d is a signed integer type (i1 excluded).
func (d DType) IsSigned() bool { return d == I8 || d == I16 || d == I32 || d == I64 }

// IsUnsigned reports whether d is an unsigned integer type.
func (d DType) IsUnsigned() bool { return d == UI8 || d == UI16 || d == UI32 || d == UI64 }

// IsBool reports whether d is i1.
func (d DType) IsBool() bool { return d == I1 }

// ParseDType maps an MLIR element type spelling to a DType.
func ParseDType(s string) (DType, bool) {
	for i, n := range dtypeNames {
		if i != int(InvalidDType) && n == s {
			return DType(i), true
		}
	}
	return InvalidDType, false
}

// TensorType is a statically shaped ranked tensor type. A nil or empty
// Shape is a rank-0 (scalar) tensor.
type TensorType struct {
	DType DType
	Shape []int64
}

// Rank is the number of dimensions.
func (t TensorType) Rank() int { return len(t.Shape) }

// NumElements is the product of the dimensions (1 for a scalar).
func (t TensorType) NumElements() int64 {
	n := int64(1)
	for _, d := range t.Shape {
		n *= d
	}
	return n
}

// ByteSize is the size in bytes of a host buffer holding the tensor.
func (t TensorType) ByteSize() int64 { return t.NumElements() * int64(t.DType.Size()) }

// String returns the MLIR spelling, e.g. "tensor<2x3xf32>" or "tensor<i1>".
func (t TensorType) String() string {
	var b strings.Builder
	b.WriteString("tensor<")
	for _, d := range t.Shape {
		b.WriteString(strconv.FormatInt(d, 10))
		b.WriteByte('x')
	}
	b.WriteString(t.DType.String())
	b.WriteByte('>')
	return b.String()
}

// Equal reports whether two types have the same element type and shape.
func (t TensorType) Equal(o TensorType) bool {
	if t.DType != o.DType || len(t.Shape) != len(o.Shape) {
		return false
	}
	for i := range t.Shape {
		if t.Shape[i] != o.Shape[i] {
			return false
		}
	}
	return true
}

// SameShape reports whether two types have identical dimensions.
func (t TensorType) SameShape(o TensorType) bool {
	return TensorType{DType: F32, Shape: t.Shape}.Equal(TensorType{DType: F32, Shape: o.Shape})
}

// Strides returns the row-major element strides of the shape.
func (t TensorType) Strides() []int64 {
	s := make([]int64, len(t.Shape))
	acc := int64(1)
	for i := len(t.Shape) - 1; i >= 0; i-- {
		s[i] = acc
		acc *= t.Shape[i]
	}
	return s
}

// Pos is a 1-based source position; the zero value means "unknown"
// (for example for ops created by Inline or by a Go program).
type Pos struct {
	Line, Col int
}

// String formats the position as "line:col".
func (p Pos) String() string { return fmt.Sprintf("%d:%d", p.Line, p.Col) }

// Module is a parsed StableHLO module: a list of functions plus the
// module-level attributes (kept as canonical attribute text keyed by name).
type Module struct {
	// Name is the module symbol without '@' ("jit_main"); may be empty.
	Name string
	// Attrs holds module attributes such as mhlo.num_replicas, as
	// canonical attribute text ("1 : i32").
	Attrs map[string]string
	// Funcs in source order.
	Funcs []*Func
	// File is the file name given to Parse, used in error messages.
	File string
}

// Func returns the function with the given name (without '@'), or nil.
func (m *Module) Func(name string) *Func {
	for _, f := range m.Funcs {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// Main returns the entry function: "main" if present, else the only public
// function, else nil.
func (m *Module) Main() *Func {
	if f := m.Func("main"); f != nil {
		return f
	}
	var pub *Func
	for _, f := range m.Funcs {
		if f.Public {
			if pub != nil {
				return nil
			}
			pub = f
		}
	}
	return pub
}

// Func is a func.func. Args are the entry block's arguments (Body.Args
// holds the same pointers).
type Func struct {
	Name        string
	Public      bool
	Args        []*Value
	ResultTypes []TensorType
	// ArgAttrs and ResultAttrs hold per-argument/result attribute
	// dictionaries (canonical text by name), nil entries when absent.
	ArgAttrs    []map[string]string
	ResultAttrs []map[string]string
	// Attrs holds the function's own attributes ("attributes {...}"
	// after the signature) as canonical text by name.
	Attrs map[string]string
	Body  *Block
	Pos   Pos
	// NumValues is one more than the largest Value.ID in the function
	// (IDs are dense in [0, NumValues)), handy for slice-indexed
	// environments in interpreters and code generators.
	NumValues int
}

// Block is a straight-line list of ops with block arguments. A function
// body and every region of an op (e.g. a reduce body) is a Block whose last
// op is a terminator named "return".
type Block struct {
	Args []*Value
	Ops  []*Op
}

// Value is an SSA value: a block argument (Def == nil) or result number
// Index of op Def.
type Value struct {
	Type TensorType
	// ID is unique within the enclosing function, including nested regions.
	ID int
	// Def is the defining op, nil for block arguments.
	Def *Op
	// Index is the result number within Def, or the argument number for
	// block arguments.
	Index int
	// Name is the SSA name as written in the source (without '%'), for
	// error messages only; it is not part of the canonical form.
	Name string
}

// String returns "%name" (or "%<id>" for unnamed values).
func (v *Value) String() string {
	if v.Name != "" {
		return "%" + v.Name
	}
	return "%" + strconv.Itoa(v.ID)
}

// Op is one operation. Name is the op name without the "stablehlo."
// prefix ("add", "dot_general", "reduce", "custom_call"); chlo ops keep
// their dialect ("chlo.top_k"); func.call is "call" and both func.return
// and stablehlo.return are "return".
type Op struct {
	Name     string
	Operands []*Value
	Results  []*Value
	// Regions holds the bodies of region-carrying ops (reduce: one block
	// whose arguments are (acc_1..acc_N, elem_1..elem_N) scalars).
	Regions []*Block
	Attrs   Attrs
	Pos     Pos
}

// DotDims are the dimension numbers of dot_general.
type DotDims struct {
	LhsBatch, RhsBatch             []int64
	LhsContracting, RhsContracting []int64
}

// Attrs holds the typed attributes of an op. Only the fields relevant to
// the op's Name are set; see doc.go for the per-op table.
type Attrs struct {
	// BroadcastDims: broadcast_in_dim operand-dim -> result-dim mapping.
	BroadcastDims []int64
	// Permutation: transpose.
	Permutation []int64
	// StartIndices, LimitIndices, Strides: slice.
	StartIndices, LimitIndices, Strides []int64
	// EdgePaddingLow, EdgePaddingHigh, InteriorPadding: pad.
	EdgePaddingLow, EdgePaddingHigh, InteriorPadding []int64
	// Dimension: concatenate dimension, iota dimension.
	Dimension int64
	// Dot: dot_general dimension numbers.
	Dot DotDims
	// Precision: dot_general precision config ("DEFAULT", "HIGH",
	// "HIGHEST"), empty when not given. Kept for the canonical form.
	Precision []string
	// ReduceDims: reduce dimensions (sorted as written).
	ReduceDims []int64
	// ComparisonDirection: compare "EQ", "NE", "GE", "GT", "LE", "LT".
	ComparisonDirection string
	// CompareType: compare "FLOAT", "TOTALORDER", "SIGNED", "UNSIGNED"
	// or "" (derived from the element type).
	CompareType string
	// Callee: call target function name (without '@') for "call", and
	// call_target_name for custom_call ("check.expect_close").
	Callee string
	// Constant: the literal of a constant op.
	Constant *Tensor
	// K: chlo.top_k.
	K int64
	// Dims: reverse dimensions.
	Dims []int64
	// SliceSizes: dynamic_slice (and gather) slice sizes.
	SliceSizes []int64
	// ExponentBits, MantissaBits: reduce_precision's target format.
	ExponentBits, MantissaBits int64
	// Gather: gather's dimension numbers (slice sizes in SliceSizes).
	Gather GatherDims
	// Scatter: scatter's dimension numbers.
	Scatter ScatterDims
	// IndicesAreSorted, UniqueIndices: gather/scatter hints (they do not
	// change results this implementation computes; kept for the
	// canonical form).
	IndicesAreSorted, UniqueIndices bool
	// IsStable: sort.
	IsStable bool
	// Window: reduce_window and select_and_scatter.
	Window Window
	// Conv: convolution's dimension numbers, window and group counts.
	Conv Conv
	// TriSolve: triangular_solve's flags.
	TriSolve TriSolve
	// Lower: cholesky's triangle.
	Lower bool
	// RngAlgorithm: rng_bit_generator's algorithm (DEFAULT, THREE_FRY,
	// PHILOX).
	RngAlgorithm string
	// FftType, FftLength: fft's kind (FFT, IFFT, RFFT, IRFFT) and the
	// lengths of the transformed innermost dimensions.
	FftType   string
	FftLength []int64
	// HasSideEffect: custom_call has_side_effect.
	HasSideEffect bool
	// Check tolerances for check.expect_close (ULP bounds) and
	// check.expect_almost_eq (absolute tolerance), nil when defaulted.
	MinULP, MaxULP *int64
	Tolerance      *float64
	// Other holds attributes this package does not interpret, as
	// canonical text keyed by name. They take part in the canonical form
	// (so they change fingerprints) but are otherwise ignored.
	Other map[string]string
}

// CheckOps are the custom_call targets evaluated as assertions.
var CheckOps = map[string]bool{
	"check.expect_eq":        true,
	"check.expect_close":     true,
	"check.expect_almost_eq": true,
}

package stablehlo

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
)

// This file holds the bit-level and simple indexing ops: is_finite,
// bitcast_convert, reduce_precision, reverse, dynamic_slice and
// dynamic_update_slice (type rules and evaluation), and the integer
// kernels of shift_*, popcnt and count_leading_zeros.

// inferIndexOrBits is the type rule of the ops in this file.
func inferIndexOrBits(op *Op) ([]TensorType, error) {
	ops := op.Operands
	a := &op.Attrs
	need := func(n int) error { return checkArity(ops, n) }
	switch op.Name {
	case "is_finite": // §is_finite: float operand, i1 result of its shape.
		if err := need(1); err != nil {
			return nil, err
		}
		if !ops[0].Type.DType.IsFloat() {
			return nil, fmt.Errorf("requires a floating-point operand, got %s", ops[0].Type)
		}
		return []TensorType{{DType: I1, Shape: slices.Clone(ops[0].Type.Shape)}}, nil
	case "reduce_precision": // §reduce_precision
		if err := need(1); err != nil {
			return nil, err
		}
		if !ops[0].Type.DType.IsFloat() {
			return nil, fmt.Errorf("requires a floating-point operand, got %s", ops[0].Type)
		}
		if a.ExponentBits < 1 || a.MantissaBits < 0 || a.ExponentBits > 64 || a.MantissaBits > 64 {
			return nil, fmt.Errorf("bad format e%dm%d (exponent_bits >= 1, mantissa_bits >= 0)", a.ExponentBits, a.MantissaBits)
		}
		return []TensorType{ops[0].Type}, nil
	case "bitcast_convert": // §bitcast_convert
		r, err := declaredResult(op, 1)
		if err != nil {
			return nil, err
		}
		in := ops[0].Type
		if in.DType == I1 && r.DType == I1 {
			// i1 to i1 is the identity whatever the representation.
			if !in.SameShape(r) {
				return nil, fmt.Errorf("cannot bitcast %s to %s: shapes differ", in, r)
			}
			return []TensorType{r}, nil
		}
		if in.DType == I1 || r.DType == I1 {
			// i1's bit representation is implementation-defined (one
			// byte here, one bit elsewhere): refuse rather than guess.
			return nil, fmt.Errorf("bitcast_convert of i1 (%s to %s): %w", in, r, ErrUnsupported)
		}
		if in.DType.IsComplex() != r.DType.IsComplex() {
			// §bitcast_convert (C2): complex only to and from complex
			// (XLA's InferBitcastConvertShape refuses the mix too).
			return nil, fmt.Errorf("cannot bitcast %s to %s: complex types bitcast only to complex types", in, r)
		}
		is, rs := int64(in.DType.Size()), int64(r.DType.Size())
		switch {
		case is == rs:
			if !in.SameShape(r) {
				return nil, fmt.Errorf("cannot bitcast %s to %s: shapes differ", in, r)
			}
		case is > rs: // one more, innermost, dimension of is/rs elements
			if r.Rank() != in.Rank()+1 || !slices.Equal(r.Shape[:in.Rank()], in.Shape) || r.Shape[in.Rank()] != is/rs {
				return nil, fmt.Errorf("cannot bitcast %s to %s: the result needs the operand's shape plus a dimension of %d", in, r, is/rs)
			}
		default: // the operand's innermost dimension disappears
			if in.Rank() != r.Rank()+1 || !slices.Equal(in.Shape[:r.Rank()], r.Shape) || in.Shape[r.Rank()] != rs/is {
				return nil, fmt.Errorf("cannot bitcast %s to %s: the operand's last dimension must be %d", in, r, rs/is)
			}
		}
		return []TensorType{r}, nil
	case "reverse": // §reverse: dimensions unique and in range.
		if err := need(1); err != nil {
			return nil, err
		}
		in := ops[0].Type
		seen := map[int64]bool{}
		for _, d := range a.Dims {
			if d < 0 || d >= int64(in.Rank()) || seen[d] {
				return nil, fmt.Errorf("bad or repeated dimension %d for %s", d, in)
			}
			seen[d] = true
		}
		return []TensorType{in}, nil
	case "dynamic_slice": // §dynamic_slice
		if len(ops) < 1 {
			return nil, fmt.Errorf("needs an operand")
		}
		in := ops[0].Type
		if err := checkStartIndices(ops[1:], in.Rank()); err != nil {
			return nil, err
		}
		if len(a.SliceSizes) != in.Rank() {
			return nil, fmt.Errorf("slice_sizes %v has %d entries for %s", a.SliceSizes, len(a.SliceSizes), in)
		}
		for i, s := range a.SliceSizes {
			if s < 0 || s > in.Shape[i] {
				return nil, fmt.Errorf("slice size %d out of [0, %d] in dimension %d", s, in.Shape[i], i)
			}
		}
		return []TensorType{{DType: in.DType, Shape: slices.Clone(a.SliceSizes)}}, nil
	case "dynamic_update_slice": // §dynamic_update_slice
		if len(ops) < 2 {
			return nil, fmt.Errorf("needs an operand and an update")
		}
		in, up := ops[0].Type, ops[1].Type
		if up.DType != in.DType || up.Rank() != in.Rank() {
			return nil, fmt.Errorf("update %s does not match operand %s", up, in)
		}
		for i := range up.Shape {
			if up.Shape[i] > in.Shape[i] {
				return nil, fmt.Errorf("update %s larger than operand %s in dimension %d", up, in, i)
			}
		}
		if err := checkStartIndices(ops[2:], in.Rank()); err != nil {
			return nil, err
		}
		return []TensorType{in}, nil
	}
	return nil, fmt.Errorf("no type rule")
}

// checkStartIndices checks dynamic_slice's and dynamic_update_slice's
// start indices: rank scalars of one integer type.
func checkStartIndices(idx []*Value, rank int) error {
	if len(idx) != rank {
		return fmt.Errorf("%d start indices for rank %d", len(idx), rank)
	}
	for _, v := range idx {
		if v.Type.Rank() != 0 || !v.Type.DType.IsInt() {
			return fmt.Errorf("start index %s must be an integer scalar, got %s", v, v.Type)
		}
		if v.Type.DType != idx[0].Type.DType {
			return fmt.Errorf("start indices %s (%s) and %s (%s) differ in type", idx[0], idx[0].Type, v, v.Type)
		}
	}
	return nil
}

// indexValue reads element i of an integer tensor as an index, saturating
// ui64 values above MaxInt64 (they are clamped to the dimension anyway).
func indexValue(t *Tensor, i int64) int64 {
	if t.Type.DType == UI64 {
		if u := t.Uint64s()[i]; u > math.MaxInt64 {
			return math.MaxInt64
		}
	}
	return t.Int64At(i)
}

// clampStarts implements the index adjustment of dynamic_slice and
// dynamic_update_slice: start = clamp(0, start, dim - size).
func clampStarts(idx []*Tensor, shape, size []int64) []int64 {
	out := make([]int64, len(idx))
	for d, t := range idx {
		out[d] = min(max(indexValue(t, 0), 0), shape[d]-size[d])
	}
	return out
}

func evalDynamicSlice(x *Tensor, idx []*Tensor, sizes []int64) *Tensor {
	out := NewTensor(TensorType{DType: x.Type.DType, Shape: sizes})
	start := clampStarts(idx, x.Type.Shape, sizes)
	xs := x.Type.Strides()
	off := int64(0)
	for d := range start {
		off += start[d] * xs[d]
	}
	copyStrided(out, 0, out.Type.Strides(), x, off, xs, sizes)
	return out
}

func evalDynamicUpdateSlice(x, up *Tensor, idx []*Tensor) *Tensor {
	out := x.Clone()
	start := clampStarts(idx, x.Type.Shape, up.Type.Shape)
	os := out.Type.Strides()
	off := int64(0)
	for d := range start {
		off += start[d] * os[d]
	}
	copyStrided(out, off, os, up, 0, up.Type.Strides(), up.Type.Shape)
	return out
}

// evalReverse reverses x along dims: a strided copy that starts at the
// last element of each reversed dimension with a negative stride.
func evalReverse(x *Tensor, dims []int64) *Tensor {
	out := NewTensor(x.Type)
	if x.Type.NumElements() == 0 {
		return out
	}
	src := x.Type.Strides()
	off := int64(0)
	for _, d := range dims {
		off += (x.Type.Shape[d] - 1) * src[d]
		src[d] = -src[d]
	}
	copyStrided(out, 0, out.Type.Strides(), x, off, src, x.Type.Shape)
	return out
}

func evalIsFinite(x *Tensor) *Tensor {
	out := NewTensor(TensorType{DType: I1, Shape: x.Type.Shape})
	for i := range out.Data {
		v := x.Float64At(int64(i))
		out.Data[i] = b2u(!math.IsInf(v, 0) && v == v)
	}
	return out
}

// evalBitcast reinterprets x's buffer as the result type: tensors are
// little-endian row-major here, so a narrower result's extra innermost
// dimension holds the wider element's bytes from least significant up,
// as on XLA's CPU backend.
func evalBitcast(x *Tensor, rt TensorType) *Tensor {
	out := NewTensor(rt)
	copy(out.Data, x.Data)
	return out
}

// evalReducePrecision rounds every element to exponentBits/mantissaBits
// (nearest-even) while keeping x's type (§reduce_precision); overflow goes
// to ±Inf, values below the reduced format's smallest normal to ±0 (the
// reduced format has no denormals, as in XLA), and NaN stays NaN.
func evalReducePrecision(x *Tensor, eb, mb int64) *Tensor {
	out := NewTensor(x.Type)
	n := x.Type.NumElements()
	for i := int64(0); i < n; i++ {
		switch dt := x.Type.DType; dt {
		case F32:
			out.Float32s()[i] = math.Float32frombits(uint32(reducePrecisionBits(uint64(math.Float32bits(x.Float32s()[i])), 8, 23, eb, mb)))
		case F64:
			out.Float64s()[i] = math.Float64frombits(reducePrecisionBits(math.Float64bits(x.Float64s()[i]), 11, 52, eb, mb))
		case F16:
			out.halfBits()[i] = uint16(reducePrecisionBits(uint64(x.halfBits()[i]), 5, 10, eb, mb))
		case BF16:
			out.halfBits()[i] = uint16(reducePrecisionBits(uint64(x.halfBits()[i]), 8, 7, eb, mb))
		}
	}
	return out
}

// reducePrecisionBits applies reduce_precision to the bit pattern v of a
// float with srcExp exponent and srcMant mantissa bits; it follows XLA's
// elemental emitter (round the mantissa to nearest-even by adding a bias
// and truncating, then flush exponents outside the reduced range).
func reducePrecisionBits(v uint64, srcExp, srcMant, eb, mb int64) uint64 {
	width := 1 + srcExp + srcMant
	signMask := uint64(1) << (width - 1)
	expMask := (uint64(1)<<srcExp - 1) << srcMant
	mantMask := uint64(1)<<srcMant - 1
	isNaN := v&expMask == expMask && v&mantMask != 0
	x := v
	if mb < srcMant {
		shift := uint64(srcMant - mb)
		lastBit := uint64(1) << shift
		bias := (lastBit >> 1) - 1 + (x&lastBit)>>shift
		x = (x + bias) &^ (lastBit - 1)
	}
	if eb < srcExp {
		srcBias := uint64(1)<<(srcExp-1) - 1
		redBias := uint64(1)<<(eb-1) - 1
		maxExp := srcBias + redBias
		minExp := srcBias - redBias
		e := x & expMask
		sign := x & signMask
		switch {
		case e > maxExp<<srcMant:
			x = sign | expMask
		case e <= minExp<<srcMant:
			x = sign
		}
	}
	if isNaN {
		// Rounding or the exponent flush would turn a NaN into Inf, or
		// carry its mantissa into the exponent: NaN stays NaN. With no
		// mantissa bits a NaN cannot be represented and becomes an
		// infinity of its sign (XLA's stated intent).
		if mb > 0 {
			return v
		}
		return v&signMask | expMask
	}
	return x
}

// shiftInt implements the shifts with the spec's rule for amounts outside
// [0, bits): the amount is read as unsigned, and an amount >= bits gives 0
// (shift_left, shift_right_logical) or the sign fill
// (shift_right_arithmetic).
func shiftInt[T intT](name string, a, b, o []T) {
	var zero T
	w := uint64(bitsOf(zero))
	mask := uint64(1)<<w - 1
	if w == 64 {
		mask = math.MaxUint64
	}
	for i := range a {
		s := uint64(b[i]) & mask
		switch name {
		case "shift_left":
			if s >= w {
				o[i] = 0
			} else {
				o[i] = a[i] << s
			}
		case "shift_right_logical":
			if s >= w {
				o[i] = 0
			} else {
				o[i] = T((uint64(a[i]) & mask) >> s)
			}
		case "shift_right_arithmetic":
			// Sign-extend to 64 bits, then shift arithmetically.
			v := int64(uint64(a[i])<<(64-w)) >> (64 - w)
			if s >= w {
				s = w - 1
			}
			o[i] = T(v >> s)
		}
	}
}

func bitsOf[T intT](z T) int {
	switch any(z).(type) {
	case int8, uint8:
		return 8
	case int16, uint16:
		return 16
	case int32, uint32:
		return 32
	}
	return 64
}

// bitCountInt implements popcnt and count_leading_zeros at the element's
// width.
func bitCountInt[T intT](name string, x, o []T) {
	var zero T
	w := bitsOf(zero)
	for i, v := range x {
		u := uint64(v) & (uint64(1)<<uint(w) - 1)
		if w == 64 {
			u = uint64(v)
		}
		if name == "popcnt" {
			o[i] = T(bits.OnesCount64(u))
		} else {
			o[i] = T(bits.LeadingZeros64(u) - (64 - w))
		}
	}
}

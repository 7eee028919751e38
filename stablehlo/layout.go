package stablehlo

import (
	"fmt"
	"unsafe"
)

// This file holds the data-movement kernels shared by broadcast_in_dim,
// transpose, slice, pad, concatenate, reshape and dot_general/reduce
// operand relayout. They work on element bit patterns (1, 2, 4, 8 or 16
// bytes), so one kernel serves every element type.

// word128 is a complex<f64> element's bit pattern.
type word128 [2]uint64

func asWords[T uint8 | uint16 | uint32 | uint64 | word128](b []byte) []T {
	var z T
	n := len(b) / int(unsafe.Sizeof(z))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*T)(unsafe.Pointer(&b[0])), n)
}

// stridedCopy copies, for every multi-index i over shape,
// src[srcOff + Σ i[d]*srcStrides[d]] to dst[dstOff + Σ i[d]*dstStrides[d]].
// The innermost dimension runs as a tight loop.
func stridedCopy[T any](dst []T, dstOff int64, dstStrides []int64, src []T, srcOff int64, srcStrides []int64, shape []int64) {
	rank := len(shape)
	for _, s := range shape {
		if s == 0 {
			return
		}
	}
	if rank == 0 {
		dst[dstOff] = src[srcOff]
		return
	}
	inner := shape[rank-1]
	ds, ss := dstStrides[rank-1], srcStrides[rank-1]
	idx := make([]int64, rank)
	d, s := dstOff, srcOff
	for {
		if ds == 1 && ss == 1 {
			copy(dst[d:d+inner], src[s:s+inner])
		} else {
			dd, sp := d, s
			for k := int64(0); k < inner; k++ {
				dst[dd] = src[sp]
				dd += ds
				sp += ss
			}
		}
		// Advance the odometer over the outer dimensions.
		j := rank - 2
		for ; j >= 0; j-- {
			idx[j]++
			d += dstStrides[j]
			s += srcStrides[j]
			if idx[j] < shape[j] {
				break
			}
			d -= dstStrides[j] * shape[j]
			s -= srcStrides[j] * shape[j]
			idx[j] = 0
		}
		if j < 0 {
			return
		}
	}
}

// copyStrided dispatches stridedCopy on the element size of dst.
func copyStrided(dst *Tensor, dstOff int64, dstStrides []int64, src *Tensor, srcOff int64, srcStrides []int64, shape []int64) {
	switch dst.Type.DType.Size() {
	case 1:
		stridedCopy(dst.Data, dstOff, dstStrides, src.Data, srcOff, srcStrides, shape)
	case 2:
		dst.aligned(2)
		src.aligned(2)
		stridedCopy(asWords[uint16](dst.Data), dstOff, dstStrides, asWords[uint16](src.Data), srcOff, srcStrides, shape)
	case 4:
		dst.aligned(4)
		src.aligned(4)
		stridedCopy(asWords[uint32](dst.Data), dstOff, dstStrides, asWords[uint32](src.Data), srcOff, srcStrides, shape)
	case 8:
		dst.aligned(8)
		src.aligned(8)
		stridedCopy(asWords[uint64](dst.Data), dstOff, dstStrides, asWords[uint64](src.Data), srcOff, srcStrides, shape)
	case 16:
		dst.aligned(8)
		src.aligned(8)
		stridedCopy(asWords[word128](dst.Data), dstOff, dstStrides, asWords[word128](src.Data), srcOff, srcStrides, shape)
	default:
		// A new element size must get its case: copying nothing would be
		// a silently wrong result.
		panic(fmt.Sprintf("stablehlo: no strided copy for %s", dst.Type.DType))
	}
}

// transposeTensor returns x with dimensions permuted: result dim i is x
// dim perm[i].
func transposeTensor(x *Tensor, perm []int64) *Tensor {
	shape := make([]int64, len(perm))
	for i, p := range perm {
		shape[i] = x.Type.Shape[p]
	}
	out := NewTensor(TensorType{DType: x.Type.DType, Shape: shape})
	identity := true
	for i, p := range perm {
		if int64(i) != p {
			identity = false
		}
	}
	if identity {
		copy(out.Data, x.Data)
		return out
	}
	xs := x.Type.Strides()
	src := make([]int64, len(perm))
	for i, p := range perm {
		src[i] = xs[p]
	}
	copyStrided(out, 0, out.Type.Strides(), x, 0, src, shape)
	return out
}

// Package rt holds the cpu backend's runtime routines: kernels compiled
// into the Go binary by cgo, when the binary is built, instead of being
// generated and compiled with the program (as XLA:CPU calls precompiled
// Eigen routines for matrix products). A cold compile that uses one runs
// no C compiler for that kernel; the untuned build uses them for matrix
// products and convolutions, every build for max- and min-pools (package
// cpu, runtime.go).
//
// A routine has the generated kernels' ABI (void f(void** bufs) and
// void f_par(void** bufs, int64_t t, int64_t n)); its shape and strides
// come in a parameter block, an int64 constant buffer of the plan that
// sits between the inputs and the outputs. Plans come from the cache, so
// the block is untrusted: Check validates it against the buffers' sizes
// before any routine may run with it.
package rt

/*
#cgo CFLAGS: -O3
#include "rt.h"
*/
import "C"

import (
	"crypto/sha256"
	_ "embed"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"unsafe"
)

// The routines' names, as plan steps name them.
const (
	GemmF32 = "xk_rt_gemm_f32"
	GemmF64 = "xk_rt_gemm_f64"
	ConvF32 = "xk_rt_conv_f32"
	ConvF64 = "xk_rt_conv_f64"
	// WinoF32 and WinoF64 compute a convolution CheckWino accepts by
	// Winograd F(2x2, 3x3): 2.25x fewer multiplications than the direct
	// sum, rounded differently (the transforms add inputs and halve
	// weights); a tile with a non-finite output is recomputed directly.
	WinoF32 = "xk_rt_wino_f32"
	WinoF64 = "xk_rt_wino_f64"
	// PoolF32 and PoolF64 are reduce_window by maximum or minimum over
	// windows the innermost dimension passes through (CheckPool's block).
	PoolF32 = "xk_rt_pool_f32"
	PoolF64 = "xk_rt_pool_f64"
)

// GemmParams is the length of a gemm parameter block: b, m, k, n, then
// A's strides (batch, row, k) and B's (batch, k, column), in elements.
const GemmParams = int(C.RT_GEMM_PARAMS)

// Routine is a resolved runtime routine.
type Routine struct {
	Serial unsafe.Pointer // void f(void**)
	Part   unsafe.Pointer // void f_par(void**, int64_t, int64_t)
	// ElemSize is the size of the elements the routine reads and writes.
	ElemSize int
	// Conv is true for a convolution (CheckConv's parameter block), false
	// for a matrix product (CheckGemm's).
	Conv bool
	// Wino is true for the Winograd convolutions, whose block must also
	// pass CheckWino.
	Wino bool
	// Pool is true for the pooling routines: CheckPool's block, and their
	// second input is the init value, not a matrix.
	Pool bool
}

// Check validates params for r (CheckGemm, CheckConv or CheckPool): the routine reads
// only inside its inputs (aLen and bLen elements) and writes only inside
// its output (cLen).
func (r Routine) Check(params []int64, aLen, bLen, cLen int64) error {
	if r.Wino {
		if err := CheckWino(params); err != nil {
			return err
		}
	}
	if r.Pool {
		return CheckPool(params, aLen, bLen, cLen)
	}
	if r.Conv {
		return CheckConv(params, aLen, bLen, cLen)
	}
	return CheckGemm(params, aLen, bLen, cLen)
}

// Lookup returns the routine named name.
func Lookup(name string) (Routine, bool) {
	switch name {
	case GemmF32:
		return Routine{Serial: C.xk_rt_gemm_f32, Part: C.xk_rt_gemm_f32_par, ElemSize: 4}, true
	case GemmF64:
		return Routine{Serial: C.xk_rt_gemm_f64, Part: C.xk_rt_gemm_f64_par, ElemSize: 8}, true
	case ConvF32:
		return Routine{Serial: C.xk_rt_conv_f32, Part: C.xk_rt_conv_f32_par, ElemSize: 4, Conv: true}, true
	case ConvF64:
		return Routine{Serial: C.xk_rt_conv_f64, Part: C.xk_rt_conv_f64_par, ElemSize: 8, Conv: true}, true
	case WinoF32:
		return Routine{Serial: C.xk_rt_wino_f32, Part: C.xk_rt_wino_f32_par, ElemSize: 4, Conv: true, Wino: true}, true
	case WinoF64:
		return Routine{Serial: C.xk_rt_wino_f64, Part: C.xk_rt_wino_f64_par, ElemSize: 8, Conv: true, Wino: true}, true
	case PoolF32:
		return Routine{Serial: C.xk_rt_pool_f32, Part: C.xk_rt_pool_f32_par, ElemSize: 4, Pool: true}, true
	case PoolF64:
		return Routine{Serial: C.xk_rt_pool_f64, Part: C.xk_rt_pool_f64_par, ElemSize: 8, Pool: true}, true
	}
	return Routine{}, false
}

// Variant names the compiled variant of the routines this CPU runs
// ("avx2" or "generic").
func Variant() string { return C.GoString(C.xk_rt_gemm_variant()) }

//go:embed gemm.c
var gemmC string

//go:embed gemm_tmpl.h
var gemmTmpl string

//go:embed rt.h
var rtH string

//go:embed pool.c
var poolC string

// Version identifies the routines' C source. It belongs in the key of
// any executable whose plan calls a routine: a binary with other
// routines (another blocking, another parameter layout) must not run a
// plan made for these.
var Version = func() string {
	h := sha256.New()
	for _, s := range []string{rtH, gemmC, gemmTmpl, poolC} {
		fmt.Fprintf(h, "%d\n%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
}()

// maxDim bounds every parameter, so that no product of two of them
// (an index times a stride) overflows int64.
const maxDim = 1 << 40

// CheckGemm reports whether p is a gemm parameter block that reads only
// inside A (aLen elements) and B (bLen) and writes exactly C (cLen): the
// check that makes a routine safe to run on a plan from the cache.
func CheckGemm(p []int64, aLen, bLen, cLen int64) error {
	if len(p) != GemmParams {
		return fmt.Errorf("rt: gemm parameter block has %d values, want %d", len(p), GemmParams)
	}
	for i, v := range p {
		if v < 0 || v > maxDim {
			return fmt.Errorf("rt: gemm parameter %d is %d", i, v)
		}
	}
	b, m, k, n := p[0], p[1], p[2], p[3]
	out, ok := mul(b, m, n)
	if !ok || out != cLen {
		return fmt.Errorf("rt: gemm of %dx%dx%dx%d writes %d elements, the output has %d", b, m, k, n, out, cLen)
	}
	if out == 0 {
		return nil
	}
	if k == 0 {
		return nil // nothing read; the output is zeros
	}
	// The largest offset read: extents b, m, k through A's strides, b,
	// k, n through B's.
	if l, ok := span(b, p[4], m, p[5], k, p[6]); !ok || l >= aLen {
		return fmt.Errorf("rt: gemm reads A up to element %d, A has %d", l, aLen)
	}
	if l, ok := span(b, p[7], k, p[8], n, p[9]); !ok || l >= bLen {
		return fmt.Errorf("rt: gemm reads B up to element %d, B has %d", l, bLen)
	}
	return nil
}

// The convolution parameter block's layout (rt.h).
const (
	ConvParams  = int(C.RT_CONV_PARAMS)
	MaxSpatial  = int(C.RT_MAXS)
	convPerDim  = int(C.RT_CPS)
	convSpatial = int(C.RT_CSP)
)

// Indices into the convolution parameter block, and into each spatial
// dimension's values (at ConvSpatialAt(s)).
const (
	ConvNS, ConvBatch, ConvIn, ConvOut                     = 0, 1, 2, 3
	ConvInBatchStride, ConvInFeatureStride                 = 4, 5
	ConvKernelInStride, ConvKernelOutStride                = 6, 7
	ConvOutBatchStride, ConvOutFeatureStride               = 8, 9
	SpInSize, SpInStride, SpKSize, SpKStride, SpOutSize    = 0, 1, 2, 3, 4
	SpOutStride, SpConvStride, SpPadLow, SpDilation, SpRev = 5, 6, 7, 8, 9
)

// ConvSpatialAt is the index of spatial dimension s's first value.
func ConvSpatialAt(s int) int { return convSpatial + s*convPerDim }

// CheckWino reports whether the convolution parameter block p is one the
// Winograd routines compute: two spatial dimensions, each with a window
// of 3, stride 1 and dilation 1. CheckConv checks the rest (that it reads
// and writes only inside its buffers).
func CheckWino(p []int64) error {
	if len(p) != ConvParams || p[ConvNS] != 2 {
		return errors.New("rt: the Winograd convolution takes two spatial dimensions")
	}
	for s := range 2 {
		q := p[ConvSpatialAt(s):]
		if q[SpKSize] != 3 || q[SpConvStride] != 1 || q[SpDilation] != 1 {
			return fmt.Errorf("rt: the Winograd convolution's dimension %d has window %d, stride %d, dilation %d; want 3, 1, 1", s, q[SpKSize], q[SpConvStride], q[SpDilation])
		}
	}
	return nil
}

// CheckConv reports whether p is a convolution parameter block that reads
// only inside the input (inLen elements) and the kernel (wLen) and writes
// only inside the output, which has exactly outLen elements.
func CheckConv(p []int64, inLen, wLen, outLen int64) error {
	if len(p) != ConvParams {
		return fmt.Errorf("rt: conv parameter block has %d values, want %d", len(p), ConvParams)
	}
	ns := int(p[ConvNS])
	if p[ConvNS] < 1 || ns > MaxSpatial {
		return fmt.Errorf("rt: conv of %d spatial dimensions", p[ConvNS])
	}
	for i, v := range p {
		lo := int64(0)
		if i >= convSpatial && (i-convSpatial)%convPerDim == SpPadLow {
			lo = -maxDim
		}
		if v < lo || v > maxDim {
			return fmt.Errorf("rt: conv parameter %d is %d", i, v)
		}
		if i >= ConvSpatialAt(ns) && v != 0 {
			return fmt.Errorf("rt: conv parameter %d of an unused spatial dimension is %d", i, v)
		}
	}
	sp := func(s, i int) int64 { return p[ConvSpatialAt(s)+i] }
	rows, taps := p[ConvBatch], int64(1)
	var ok bool
	for s := range ns {
		if sp(s, SpRev) > 1 {
			return fmt.Errorf("rt: conv reversal of dimension %d is %d", s, sp(s, SpRev))
		}
		if rows, ok = mul(rows, sp(s, SpOutSize)); !ok {
			return errors.New("rt: conv output too large")
		}
		if taps, ok = mul(taps, sp(s, SpKSize)); !ok {
			return errors.New("rt: conv window too large")
		}
		// The input position o*stride + t*dilation - padlow must not
		// overflow, for every output position o and tap t.
		_, ok1 := mul(max(sp(s, SpOutSize)-1, 0), sp(s, SpConvStride))
		_, ok2 := mul(max(sp(s, SpKSize)-1, 0), sp(s, SpDilation))
		if !ok1 || !ok2 {
			return fmt.Errorf("rt: conv positions of dimension %d overflow", s)
		}
	}
	// The packed kernel holds taps x input features x output features
	// (rounded up to a panel): its size must not overflow, whatever
	// strides (zero included) the spans below allow.
	if _, ok := mul(taps, p[ConvIn], p[ConvOut]+32); !ok {
		return errors.New("rt: conv kernel too large")
	}
	out, ok := mul(rows, p[ConvOut])
	if !ok || out != outLen {
		return fmt.Errorf("rt: conv writes %d elements, the output has %d", out, outLen)
	}
	if out == 0 {
		return nil
	}
	in := []int64{p[ConvBatch], p[ConvInBatchStride], p[ConvIn], p[ConvInFeatureStride]}
	w := []int64{p[ConvIn], p[ConvKernelInStride], p[ConvOut], p[ConvKernelOutStride]}
	o := []int64{p[ConvBatch], p[ConvOutBatchStride], p[ConvOut], p[ConvOutFeatureStride]}
	for s := range ns {
		in = append(in, sp(s, SpInSize), sp(s, SpInStride))
		w = append(w, sp(s, SpKSize), sp(s, SpKStride))
		o = append(o, sp(s, SpOutSize), sp(s, SpOutStride))
	}
	if l, ok := span(o...); !ok || l >= outLen {
		return fmt.Errorf("rt: conv writes up to element %d, the output has %d", l, outLen)
	}
	if taps == 0 || p[ConvIn] == 0 {
		return nil // nothing read: the output is zeros
	}
	if l, ok := span(w...); !ok || l >= wLen {
		return fmt.Errorf("rt: conv reads the kernel up to element %d, it has %d", l, wLen)
	}
	empty := false
	for s := range ns {
		empty = empty || sp(s, SpInSize) == 0
	}
	if l, ok := span(in...); !empty && (!ok || l >= inLen) {
		return fmt.Errorf("rt: conv reads the input up to element %d, it has %d", l, inLen)
	}
	return nil
}

// The pooling parameter block's layout (rt.h): PoolParams values, the
// rank, op, swap and innermost size at PoolRank..PoolC, then PoolPerDim
// values per leading dimension from PoolDimAt(d).
const (
	PoolParams = int(C.RT_POOL_PARAMS)
	// MaxPoolRank is the largest rank a pooling block describes.
	MaxPoolRank = int(C.RT_POOL_MAXD) + 1
	PoolRank    = int(C.RT_PRANK)
	PoolOp      = int(C.RT_POP)
	PoolSwap    = int(C.RT_PSWAP)
	PoolC       = int(C.RT_PC)
	PoolPerDim  = int(C.RT_PPD)
	// The values of a leading dimension, from PoolDimAt(d).
	PoolOut      = int(C.RT_POUT)
	PoolIn       = int(C.RT_PIN)
	PoolWindow   = int(C.RT_PWIN)
	PoolStride   = int(C.RT_PSTRIDE)
	PoolWinDil   = int(C.RT_PWDIL)
	PoolBaseDil  = int(C.RT_PBDIL)
	PoolPadLow   = int(C.RT_PPADLO)
	poolDimFirst = int(C.RT_PDIM)
)

// PoolDimAt is the index of leading dimension d's first value.
func PoolDimAt(d int) int { return poolDimFirst + d*PoolPerDim }

// CheckPool reports whether p is a pooling parameter block whose
// routine reads only inside its operand (xLen elements) and init value
// (initLen) and writes exactly its result (outLen): both row-major with
// the block's sizes. Every window position it reads at is bounds-checked
// by the routine itself; what is checked here is that its arithmetic
// cannot overflow and the sizes match the buffers.
func CheckPool(p []int64, xLen, initLen, outLen int64) error {
	if len(p) != PoolParams {
		return fmt.Errorf("rt: pooling parameter block has %d values, want %d", len(p), PoolParams)
	}
	rank := p[PoolRank]
	if rank < 2 || rank > int64(MaxPoolRank) {
		return fmt.Errorf("rt: pooling of rank %d, want 2 to %d", rank, MaxPoolRank)
	}
	if p[PoolOp] != 0 && p[PoolOp] != 1 || p[PoolSwap] != 0 && p[PoolSwap] != 1 {
		return fmt.Errorf("rt: pooling op %d, swap %d: want 0 or 1", p[PoolOp], p[PoolSwap])
	}
	c := p[PoolC]
	if c < 0 || c > maxDim {
		return fmt.Errorf("rt: pooling innermost size %d", c)
	}
	if initLen < 1 {
		return fmt.Errorf("rt: pooling init value has %d elements", initLen)
	}
	if xLen < 0 {
		return fmt.Errorf("rt: pooling operand has %d elements", xLen)
	}
	in, out := c, c
	nd := int(rank) - 1
	for d := range MaxPoolRank - 1 {
		q := p[PoolDimAt(d) : PoolDimAt(d)+PoolPerDim]
		if d >= nd {
			for i, v := range q {
				if v != 0 {
					return fmt.Errorf("rt: pooling dimension %d (past the rank) has value %d = %d", d, i, v)
				}
			}
			continue
		}
		for i, v := range q {
			lo := int64(1) // window, strides and dilations
			switch i {
			case PoolOut, PoolIn:
				lo = 0
			case PoolPadLow:
				lo = -maxDim
			}
			if v < lo || v > maxDim {
				return fmt.Errorf("rt: pooling dimension %d value %d is %d", d, i, v)
			}
		}
		// The largest position a window reaches, times the operand's
		// size (which bounds the dimension's stride): the routine's
		// offsets, even those of positions it then finds outside, never
		// overflow.
		pos, ok := span(q[PoolOut], q[PoolStride], q[PoolWindow], q[PoolWinDil])
		if ok {
			_, ok = mul(pos+max(q[PoolPadLow], -q[PoolPadLow]), xLen)
		}
		if !ok {
			return fmt.Errorf("rt: pooling dimension %d: window positions overflow", d)
		}
		if in, ok = mul(in, q[PoolIn]); !ok {
			return fmt.Errorf("rt: pooling operand too large")
		}
		if out, ok = mul(out, q[PoolOut]); !ok {
			return fmt.Errorf("rt: pooling result too large")
		}
	}
	if in != xLen || out != outLen {
		return fmt.Errorf("rt: pooling of %d elements into %d, the buffers have %d and %d", in, out, xLen, outLen)
	}
	return nil
}

// span is the largest offset a walk reaches: the sum of (extent-1)*stride
// over its (extent, stride) pairs, false past maxDim*4. An extent of 0
// counts as 1 (nothing walked).
func span(pairs ...int64) (int64, bool) {
	var s int64
	for i := 0; i < len(pairs); i += 2 {
		v, ok := mul(max(pairs[i]-1, 0), pairs[i+1])
		if !ok {
			return 0, false
		}
		if s += v; s > maxDim*4 {
			return 0, false
		}
	}
	return s, true
}

// mul multiplies non-negative values, reporting overflow past maxDim*4.
func mul(vs ...int64) (int64, bool) {
	r := int64(1)
	for _, v := range vs {
		if v != 0 && r > maxDim*4/v {
			return 0, false
		}
		r *= v
	}
	return r, true
}

// DecodeParams reads a parameter block from a constant buffer's
// little-endian bytes.
func DecodeParams(data []byte) ([]int64, error) {
	if len(data)%8 != 0 {
		return nil, fmt.Errorf("rt: parameter block of %d bytes is not a whole number of int64s", len(data))
	}
	p := make([]int64, len(data)/8)
	for i := range p {
		p[i] = int64(binary.LittleEndian.Uint64(data[8*i:]))
	}
	return p, nil
}

// EncodeParams is DecodeParams' inverse.
func EncodeParams(p []int64) []byte {
	out := make([]byte, 0, 8*len(p))
	for _, v := range p {
		out = binary.LittleEndian.AppendUint64(out, uint64(v))
	}
	return out
}

// setNaive makes the routines take their no-scratch path (the one they
// take when allocating their packed panels fails), for tests.
func setNaive(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.xk_rt_force_naive = v
}

// setGeneric makes the routines run their variant for any CPU, for tests
// on machines that have AVX2.
func setGeneric(on bool) {
	v := C.int(0)
	if on {
		v = 1
	}
	C.xk_rt_force_generic = v
}

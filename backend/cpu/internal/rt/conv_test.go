package rt

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// convCase is a convolution with input [batch][spatial...][in] (row
// major), kernel [spatial...][in][out] and output [batch][spatial...][out],
// or, with featuresFirst, input [batch][in][spatial...] and output
// [batch][out][spatial...] (strided features), the kernel [out][in][spatial...].
type convCase struct {
	batch, in, out int64
	inSize, kSize  []int64
	stride, dil    []int64
	padLo, padHi   []int64
	rev            []bool
	featuresFirst  bool
}

func (c convCase) outSize() []int64 {
	o := make([]int64, len(c.inSize))
	for s := range o {
		span := (c.kSize[s]-1)*c.dil[s] + 1
		n := c.inSize[s] + c.padLo[s] + c.padHi[s] - span
		if n < 0 {
			o[s] = 0
		} else {
			o[s] = n/c.stride[s] + 1
		}
	}
	return o
}

// strides returns row-major strides of dims.
func strides(dims ...int64) []int64 {
	st := make([]int64, len(dims))
	s := int64(1)
	for i := len(dims) - 1; i >= 0; i-- {
		st[i] = s
		s *= dims[i]
	}
	return st
}

func prod(v []int64) int64 {
	p := int64(1)
	for _, x := range v {
		p *= x
	}
	return p
}

func (c convCase) params() (p []int64, inLen, wLen, outLen int64) {
	ns := len(c.inSize)
	os := c.outSize()
	p = make([]int64, ConvParams)
	p[ConvNS], p[ConvBatch], p[ConvIn], p[ConvOut] = int64(ns), c.batch, c.in, c.out
	var is, ks, ost []int64 // strides of the spatial dims
	if !c.featuresFirst {
		st := strides(append(append([]int64{c.batch}, c.inSize...), c.in)...)
		p[ConvInBatchStride], p[ConvInFeatureStride], is = st[0], st[ns+1], st[1:ns+1]
		kt := strides(append(append([]int64{}, c.kSize...), c.in, c.out)...)
		p[ConvKernelInStride], p[ConvKernelOutStride], ks = kt[ns], kt[ns+1], kt[:ns]
		ot := strides(append(append([]int64{c.batch}, os...), c.out)...)
		p[ConvOutBatchStride], p[ConvOutFeatureStride], ost = ot[0], ot[ns+1], ot[1:ns+1]
	} else {
		st := strides(append([]int64{c.batch, c.in}, c.inSize...)...)
		p[ConvInBatchStride], p[ConvInFeatureStride], is = st[0], st[1], st[2:]
		kt := strides(append([]int64{c.out, c.in}, c.kSize...)...)
		p[ConvKernelOutStride], p[ConvKernelInStride], ks = kt[0], kt[1], kt[2:]
		ot := strides(append([]int64{c.batch, c.out}, os...)...)
		p[ConvOutBatchStride], p[ConvOutFeatureStride], ost = ot[0], ot[1], ot[2:]
	}
	for s := range ns {
		q := p[ConvSpatialAt(s):]
		q[SpInSize], q[SpInStride], q[SpKSize], q[SpKStride] = c.inSize[s], is[s], c.kSize[s], ks[s]
		q[SpOutSize], q[SpOutStride], q[SpConvStride], q[SpPadLow], q[SpDilation] = os[s], ost[s], c.stride[s], c.padLo[s], c.dil[s]
		if c.rev[s] {
			q[SpRev] = 1
		}
	}
	return p, c.batch * prod(c.inSize) * c.in, prod(c.kSize) * c.in * c.out, c.batch * prod(os) * c.out
}

// convReference computes the convolution the block describes, in
// float64, one output element at a time, with each element's error
// bound in T (as reference does for gemm).
func convReference[T float32 | float64](p []int64, in, w []T, outLen int64, eps float64) (want, tol []float64) {
	ns := int(p[ConvNS])
	want, tol = make([]float64, outLen), make([]float64, outLen)
	sp := func(s, i int) int64 { return p[ConvSpatialAt(s)+i] }
	o := make([]int64, ns)
	k := make([]int64, ns)
	// each runs f for every index idx (row-major) below the spatial
	// dimensions' values at i (their output or window sizes).
	var each func(idx []int64, i, s int, f func())
	each = func(idx []int64, i, s int, f func()) {
		if s == ns {
			f()
			return
		}
		for idx[s] = 0; idx[s] < sp(s, i); idx[s]++ {
			each(idx, i, s+1, f)
		}
	}
	n := p[ConvIn] // terms per element
	for s := range ns {
		n *= sp(s, SpKSize)
	}
	for b := range p[ConvBatch] {
		each(o, SpOutSize, 0, func() {
			for of := range p[ConvOut] {
				var sum, mag float64
				each(k, SpKSize, 0, func() {
					ioff, woff := b*p[ConvInBatchStride], of*p[ConvKernelOutStride]
					for s := range ns {
						pos := o[s]*sp(s, SpConvStride) + k[s]*sp(s, SpDilation) - sp(s, SpPadLow)
						if pos < 0 || pos >= sp(s, SpInSize) {
							return
						}
						ioff += pos * sp(s, SpInStride)
						kk := k[s]
						if sp(s, SpRev) == 1 {
							kk = sp(s, SpKSize) - 1 - kk
						}
						woff += kk * sp(s, SpKStride)
					}
					for ci := range p[ConvIn] {
						x := float64(in[ioff+ci*p[ConvInFeatureStride]]) * float64(w[woff+ci*p[ConvKernelInStride]])
						sum += x
						mag += math.Abs(x)
					}
				})
				off := b*p[ConvOutBatchStride] + of*p[ConvOutFeatureStride]
				for s := range ns {
					off += o[s] * sp(s, SpOutStride)
				}
				want[off], tol[off] = sum, float64(n+1)*eps*mag+1e-30
			}
		})
	}
	return want, tol
}

var convCases = []convCase{
	// cnn's first convolution, smaller: 3x3, same padding, NHWC.
	{batch: 2, in: 3, out: 16, inSize: []int64{9, 9}, kSize: []int64{3, 3}, stride: []int64{1, 1}, dil: []int64{1, 1}, padLo: []int64{1, 1}, padHi: []int64{1, 1}, rev: []bool{false, false}},
	// Strided, dilated, reversed, features over one panel.
	{batch: 1, in: 5, out: 17, inSize: []int64{11, 7}, kSize: []int64{3, 2}, stride: []int64{2, 1}, dil: []int64{2, 1}, padLo: []int64{2, 0}, padHi: []int64{1, 1}, rev: []bool{true, false}},
	// Negative padding crops; features first (strided features).
	{batch: 3, in: 4, out: 6, inSize: []int64{10, 8}, kSize: []int64{2, 3}, stride: []int64{1, 2}, dil: []int64{1, 1}, padLo: []int64{-1, 0}, padHi: []int64{0, -1}, rev: []bool{false, true}, featuresFirst: true},
	// 1-D and 3-D.
	{batch: 2, in: 7, out: 9, inSize: []int64{20}, kSize: []int64{5}, stride: []int64{3}, dil: []int64{1}, padLo: []int64{2}, padHi: []int64{2}, rev: []bool{false}},
	{batch: 1, in: 2, out: 3, inSize: []int64{4, 5, 3}, kSize: []int64{2, 2, 2}, stride: []int64{1, 1, 1}, dil: []int64{1, 2, 1}, padLo: []int64{0, 1, 1}, padHi: []int64{1, 1, 0}, rev: []bool{true, true, false}},
	// A packed kernel (9.4 MB in f32) over what a thread keeps between
	// calls (RT_KEEP): allocated and freed per call.
	{batch: 1, in: 256, out: 1024, inSize: []int64{3, 3}, kSize: []int64{3, 3}, stride: []int64{1, 1}, dil: []int64{1, 1}, padLo: []int64{0, 0}, padHi: []int64{0, 0}, rev: []bool{false, false}},
	// An empty window (input feature count 0): zeros.
	{batch: 1, in: 0, out: 3, inSize: []int64{4}, kSize: []int64{2}, stride: []int64{1}, dil: []int64{1}, padLo: []int64{0}, padHi: []int64{0}, rev: []bool{false}},
}

func testConv[T float32 | float64](t *testing.T, name string, eps float64) {
	rng := rand.New(rand.NewPCG(5, 6))
	for i, c := range convCases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			p, inLen, wLen, outLen := c.params()
			if err := CheckConv(p, inLen, wLen, outLen); err != nil {
				t.Fatal(err)
			}
			in, w := randVals[T](rng, inLen), randVals[T](rng, wLen)
			got := run(t, name, p, in, w, outLen, 0)
			want, tol := convReference(p, in, w, outLen, eps)
			for i := range got {
				if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol[i]) {
					t.Fatalf("element %d: got %v, want %v (tolerance %g)", i, got[i], want[i], tol[i])
				}
			}
			same := func(what string, other []T) {
				for i := range got {
					if math.Float64bits(float64(other[i])) != math.Float64bits(float64(got[i])) {
						t.Fatalf("%s: element %d is %v, serial %v", what, i, other[i], got[i])
					}
				}
			}
			for _, parts := range []int{2, 3, 7} {
				same(fmt.Sprintf("%d parts", parts), run(t, name, p, in, w, outLen, parts))
			}
			setNaive(true)
			defer setNaive(false)
			same("no-scratch path", run(t, name, p, in, w, outLen, 0))
		})
	}
}

func TestConvF32(t *testing.T) { testConv[float32](t, ConvF32, 0x1p-24) }
func TestConvF64(t *testing.T) { testConv[float64](t, ConvF64, 0x1p-53) }

func TestCheckConv(t *testing.T) {
	good, inLen, wLen, outLen := convCases[1].params()
	with := func(i int, v int64) []int64 {
		q := append([]int64(nil), good...)
		q[i] = v
		return q
	}
	s0 := ConvSpatialAt(0)
	for _, c := range []struct {
		name string
		p    []int64
		ok   bool
	}{
		{"good", good, true},
		{"short", good[:ConvParams-1], false},
		{"no spatial dims", with(ConvNS, 0), false},
		{"too many spatial dims", with(ConvNS, int64(MaxSpatial+1)), false},
		{"unused dim set", with(ConvSpatialAt(2)+SpInSize, 1), false},
		{"input stride past the input", with(s0+SpInStride, 1000), false},
		{"kernel stride past the kernel", with(ConvKernelOutStride, 1000), false},
		{"output stride past the output", with(ConvOutFeatureStride, 1000), false},
		{"output count", with(ConvOut, 16), false},
		{"negative stride", with(ConvInFeatureStride, -1), false},
		{"reversal 2", with(s0+SpRev, 2), false},
		{"negative padding", with(s0+SpPadLow, -3), true},
		{"huge conv stride", with(s0+SpConvStride, 1<<41), false},
		{"huge packed kernel through zero strides", func() []int64 {
			q := with(ConvIn, 1<<40)
			q[ConvKernelInStride], q[ConvInFeatureStride] = 0, 0
			return q
		}(), false},
	} {
		err := CheckConv(c.p, inLen, wLen, outLen)
		if (err == nil) != c.ok {
			t.Errorf("%s: CheckConv = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// FuzzCheckConv: a block CheckConv accepts makes the routine read only
// inside the input and kernel and write only inside the output; the
// reference walk (Go slices, bounds-checked) and the routine run on
// buffers of exactly the accepted sizes (small ones only, so that the
// fuzzer stays fast).
func FuzzCheckConv(f *testing.F) {
	for _, c := range convCases {
		p, a, b, o := c.params()
		f.Add(EncodeParams(p), a, b, o)
	}
	f.Fuzz(func(t *testing.T, data []byte, inLen, wLen, outLen int64) {
		p, err := DecodeParams(data)
		if err != nil || CheckConv(p, inLen, wLen, outLen) != nil {
			return
		}
		if inLen > 1<<16 || wLen > 1<<16 || outLen > 1<<16 || outLen < 0 || inLen < 0 || wLen < 0 {
			return
		}
		rng := rand.New(rand.NewPCG(1, 1))
		in, w := randVals[float32](rng, inLen), randVals[float32](rng, wLen)
		// Bound the work too: rows x features x window.
		work := outLen
		for s := range int(p[ConvNS]) {
			work *= max(p[ConvSpatialAt(s)+SpKSize], 1)
		}
		if work*max(p[ConvIn], 1) > 1<<22 {
			return
		}
		// The reference reads and writes Go slices of the accepted
		// sizes, element for element what the routine touches: an
		// index CheckConv should have rejected panics here, before the
		// routine runs. (Outputs are not compared: a block may map two
		// output positions to one element, and then the last writer
		// differs; that is a wrong result, not an unsafe one.)
		convReference(p, in, w, outLen, 0x1p-24)
		run(t, ConvF32, p, in, w, outLen, 0)
	})
}

// winoCases are 3x3, unit-stride, undilated 2-D convolutions: what the
// Winograd routines take.
var winoCases = []convCase{
	convCases[0],
	// Odd output sizes (a tile half outside), reversal, more features
	// than a panel and a tile block.
	{batch: 3, in: 19, out: 33, inSize: []int64{7, 9}, kSize: []int64{3, 3}, stride: []int64{1, 1}, dil: []int64{1, 1}, padLo: []int64{0, 2}, padHi: []int64{1, 0}, rev: []bool{true, false}},
	// Features first (strided features), negative padding.
	{batch: 2, in: 4, out: 5, inSize: []int64{8, 6}, kSize: []int64{3, 3}, stride: []int64{1, 1}, dil: []int64{1, 1}, padLo: []int64{-1, 1}, padHi: []int64{1, -1}, rev: []bool{false, true}, featuresFirst: true},
	// One input feature (cnn's first convolution).
	{batch: 2, in: 1, out: 16, inSize: []int64{12, 12}, kSize: []int64{3, 3}, stride: []int64{1, 1}, dil: []int64{1, 1}, padLo: []int64{1, 1}, padHi: []int64{1, 1}, rev: []bool{false, false}},
	// No input features: zeros.
	{batch: 1, in: 0, out: 3, inSize: []int64{4, 4}, kSize: []int64{3, 3}, stride: []int64{1, 1}, dil: []int64{1, 1}, padLo: []int64{0, 0}, padHi: []int64{0, 0}, rev: []bool{false, false}},
}

// winoSlack is how much more rounding error than the direct sum's bound
// the Winograd routines may have: the input transform adds up to four
// inputs, the kernel transform three halved weights and the output
// transform nine products' sums, each step rounding, so an output's
// error can reach a few tens of the direct sum's.
const winoSlack = 32

func testWino[T float32 | float64](t *testing.T, name string, eps float64) {
	rng := rand.New(rand.NewPCG(7, 8))
	for i, c := range winoCases {
		for _, special := range []bool{false, true} {
			t.Run(fmt.Sprintf("%d/nonfinite=%v", i, special), func(t *testing.T) {
				p, inLen, wLen, outLen := c.params()
				if err := CheckWino(p); err != nil {
					t.Fatal(err)
				}
				if err := CheckConv(p, inLen, wLen, outLen); err != nil {
					t.Fatal(err)
				}
				in, w := randVals[T](rng, inLen), randVals[T](rng, wLen)
				if special && inLen > 2 {
					// An infinity and a NaN: the tiles that read them
					// are recomputed by the direct sum, so those
					// outputs are the reference's infinities and NaNs.
					in[inLen/3] = T(math.Inf(1))
					in[2*inLen/3] = T(math.NaN())
				}
				got := run(t, name, p, in, w, outLen, 0)
				want, tol := convReference(p, in, w, outLen, eps)
				for i := range got {
					g := float64(got[i])
					switch {
					case math.IsNaN(want[i]) || math.IsInf(want[i], 0):
						if !(math.IsNaN(want[i]) && math.IsNaN(g)) && g != want[i] {
							t.Fatalf("element %d: got %v, want %v", i, g, want[i])
						}
					case !(math.Abs(g-want[i]) <= winoSlack*tol[i]):
						t.Fatalf("element %d: got %v, want %v (tolerance %g)", i, g, want[i], winoSlack*tol[i])
					}
				}
				// Any split gives the same bits: a tile is computed by
				// one part, in one order.
				sameSplits(t, name, p, in, w, got, 2, 3, 7)
			})
		}
	}
}

func TestWinoF32(t *testing.T) { testWino[float32](t, WinoF32, 0x1p-24) }
func TestWinoF64(t *testing.T) { testWino[float64](t, WinoF64, 0x1p-53) }

// TestWinoNoScratch: without scratch memory the Winograd routine computes
// every output by the direct sum, within the direct sum's bound.
func TestWinoNoScratch(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	c := winoCases[1]
	p, inLen, wLen, outLen := c.params()
	in, w := randVals[float32](rng, inLen), randVals[float32](rng, wLen)
	setNaive(true)
	defer setNaive(false)
	got := run(t, WinoF32, p, in, w, outLen, 0)
	want, tol := convReference(p, in, w, outLen, 0x1p-24)
	for i := range got {
		if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol[i]) {
			t.Fatalf("element %d: got %v, want %v (tolerance %g)", i, got[i], want[i], tol[i])
		}
	}
}

// TestCheckWino: the Winograd routines take 2-D, 3x3, unit-stride,
// undilated convolutions only.
func TestCheckWino(t *testing.T) {
	for i, c := range convCases {
		p, _, _, _ := c.params()
		err := CheckWino(p)
		wino := len(c.kSize) == 2 && c.kSize[0] == 3 && c.kSize[1] == 3 && c.stride[0] == 1 && c.stride[1] == 1 && c.dil[0] == 1 && c.dil[1] == 1
		if (err == nil) != wino {
			t.Errorf("case %d: CheckWino = %v, want accepted %v", i, err, wino)
		}
	}
	if r, ok := Lookup(WinoF32); !ok || !r.Wino || !r.Conv {
		t.Fatalf("Lookup(%s) = %+v, %v", WinoF32, r, ok)
	}
	p, inLen, wLen, outLen := convCases[1].params()
	r, _ := Lookup(WinoF32)
	if err := r.Check(p, inLen, wLen, outLen); err == nil {
		t.Error("a strided, dilated convolution passed the Winograd routine's check")
	}
}

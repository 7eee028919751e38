package rt

import (
	"math"
	"math/rand/v2"
	"testing"
)

// poolCase is a pooling block's leading dimensions (out, in, window,
// stride, window and base dilation, padding low, one value per
// dimension), its innermost size and its op and swap.
type poolCase struct {
	name                                 string
	out, in, win, str, wdil, bdil, padLo []int64
	c, op, swap                          int64
}

func (pc poolCase) params() (p []int64, xLen, outLen int64) {
	p = make([]int64, PoolParams)
	p[PoolRank], p[PoolOp], p[PoolSwap], p[PoolC] = int64(len(pc.out)+1), pc.op, pc.swap, pc.c
	xLen, outLen = pc.c, pc.c
	for d := range pc.out {
		q := p[PoolDimAt(d):]
		q[PoolOut], q[PoolIn], q[PoolWindow], q[PoolStride] = pc.out[d], pc.in[d], pc.win[d], pc.str[d]
		q[PoolWinDil], q[PoolBaseDil], q[PoolPadLow] = 1, 1, 0
		if pc.wdil != nil {
			q[PoolWinDil] = pc.wdil[d]
		}
		if pc.bdil != nil {
			q[PoolBaseDil] = pc.bdil[d]
		}
		if pc.padLo != nil {
			q[PoolPadLow] = pc.padLo[d]
		}
		xLen *= pc.in[d]
		outLen *= pc.out[d]
	}
	return p, xLen, outLen
}

var poolCases = []poolCase{
	{name: "2x2/2 valid", out: []int64{2, 4, 4}, in: []int64{2, 8, 8}, win: []int64{1, 2, 2}, str: []int64{1, 2, 2}, c: 16},
	{name: "3x3/2 same, swapped", out: []int64{2, 4, 4}, in: []int64{2, 7, 7}, win: []int64{1, 3, 3}, str: []int64{1, 2, 2}, padLo: []int64{0, 1, 1}, c: 8, swap: 1},
	{name: "min, dilations, negative padding", out: []int64{2, 3, 15}, in: []int64{2, 9, 9}, win: []int64{1, 2, 2}, str: []int64{1, 2, 1}, wdil: []int64{1, 2, 3}, bdil: []int64{1, 1, 2}, padLo: []int64{0, 0, 1}, c: 5, op: 1},
	{name: "min swapped, padding only", out: []int64{3, 3}, in: []int64{1, 1}, win: []int64{2, 2}, str: []int64{1, 1}, padLo: []int64{1, -1}, c: 3, op: 1, swap: 1},
	{name: "rank 2, wide window", out: []int64{2}, in: []int64{9}, win: []int64{5}, str: []int64{4}, c: 12},
	{name: "odd rows, rank 6", out: []int64{1, 2, 1, 3, 2}, in: []int64{2, 3, 1, 4, 3}, win: []int64{2, 2, 1, 2, 2}, str: []int64{1, 1, 1, 1, 1}, c: 7},
	{name: "no rows", out: []int64{0, 4}, in: []int64{3, 4}, win: []int64{1, 1}, str: []int64{1, 1}, c: 4},
}

// poolSel is the routines' branch-free maximum (op 0) or minimum (op 1)
// on the bits: a's NaN, else b's, else the larger (smaller) value, +0
// over -0 for the maximum and -0 for the minimum.
func poolSel[T float32 | float64](op int64, a, b T) T {
	switch {
	case a != a:
		return a
	case b != b:
		return b
	case op == 0 && a > b || op == 1 && a < b:
		return a
	case a != b:
		return b
	}
	switch v := any(a).(type) {
	case float32:
		u, w := math.Float32bits(v), math.Float32bits(any(b).(float32))
		if op == 0 {
			return T(math.Float32frombits(u & w))
		}
		return T(math.Float32frombits(u | w))
	default:
		u, w := math.Float64bits(any(a).(float64)), math.Float64bits(any(b).(float64))
		if op == 0 {
			return T(math.Float64frombits(u & w))
		}
		return T(math.Float64frombits(u | w))
	}
}

// poolReference is reduce_window as the interpreter defines it, over a
// pooling block: every output element folds its window, in row-major
// order, from init. Its slice indexing panics where the block would make
// the routine read outside x or write outside the result.
func poolReference[T float32 | float64](p []int64, x []T, init T, outLen int64) []T {
	nd, c := int(p[PoolRank])-1, p[PoolC]
	dim := func(d, i int) int64 { return p[PoolDimAt(d)+i] }
	xs := make([]int64, nd)
	s := c
	for d := nd - 1; d >= 0; d-- {
		xs[d], s = s, s*dim(d, PoolIn)
	}
	out := make([]T, outLen)
	rows := int64(1)
	wins := int64(1)
	for d := range nd {
		rows *= dim(d, PoolOut)
		wins *= dim(d, PoolWindow)
	}
	o, w := make([]int64, nd), make([]int64, nd)
	for r := range rows {
		for d, rr := nd-1, r; d >= 0; d-- {
			o[d], rr = rr%dim(d, PoolOut), rr/dim(d, PoolOut)
		}
		for ch := range c {
			acc := init
			for wi := range wins {
				for d, ww := nd-1, wi; d >= 0; d-- {
					w[d], ww = ww%dim(d, PoolWindow), ww/dim(d, PoolWindow)
				}
				e, off := init, ch
				for d := range nd {
					pos := o[d]*dim(d, PoolStride) + w[d]*dim(d, PoolWinDil) - dim(d, PoolPadLow)
					bd := dim(d, PoolBaseDil)
					if pos < 0 || pos%bd != 0 || pos/bd >= dim(d, PoolIn) {
						off = -1
						break
					}
					off += pos / bd * xs[d]
				}
				if off >= 0 {
					e = x[off]
				}
				if p[PoolSwap] == 1 {
					acc = poolSel(p[PoolOp], e, acc)
				} else {
					acc = poolSel(p[PoolOp], acc, e)
				}
			}
			out[r*c+ch] = acc
		}
	}
	return out
}

// poolInputs are random values with NaNs of two payloads and zeros of
// both signs among them.
func poolInputs[T float32 | float64](rng *rand.Rand, n int64) []T {
	x := randVals[T](rng, n)
	for i := range x {
		switch rng.IntN(12) {
		case 0:
			x[i] = T(math.NaN())
		case 1:
			if _, ok := any(x[i]).(float32); ok {
				x[i] = T(math.Float32frombits(0x7fc00123))
			} else {
				x[i] = T(math.Float64frombits(0x7ff8000000000123))
			}
		case 2:
			x[i] = T(math.Copysign(0, -1))
		case 3:
			x[i] = 0
		}
	}
	return x
}

// sameBits reports whether a and b hold the same bits, NaN payloads
// included, and the first index where they differ.
func sameBits[T float32 | float64](a, b []T) (int, bool) {
	if len(a) != len(b) {
		return -1, false
	}
	for i := range a {
		var same bool
		switch v := any(a[i]).(type) {
		case float32:
			same = math.Float32bits(v) == math.Float32bits(any(b[i]).(float32))
		default:
			same = math.Float64bits(any(a[i]).(float64)) == math.Float64bits(any(b[i]).(float64))
		}
		if !same {
			return i, false
		}
	}
	return 0, true
}

func testPool[T float32 | float64](t *testing.T, name string) {
	rng := rand.New(rand.NewPCG(7, 9))
	for _, pc := range poolCases {
		t.Run(pc.name, func(t *testing.T) {
			p, xLen, outLen := pc.params()
			x := poolInputs[T](rng, xLen)
			init := []T{T(math.Inf(-1))}
			if pc.op == 1 {
				init[0] = T(math.Inf(1))
			}
			want := poolReference(p, x, init[0], outLen)
			for _, parts := range []int{0, 1, 3} {
				got := run(t, name, p, x, init, outLen, parts)
				if i, ok := sameBits(got, want); !ok {
					t.Fatalf("%d parts: element %d is %v, want %v", parts, i, got[i], want[i])
				}
			}
		})
	}
}

func TestPoolF32(t *testing.T) { testPool[float32](t, PoolF32) }
func TestPoolF64(t *testing.T) { testPool[float64](t, PoolF64) }

func TestCheckPool(t *testing.T) {
	ok, xLen, outLen := poolCases[0].params()
	with := withParam
	d0 := PoolDimAt(0)
	for _, c := range []struct {
		name            string
		p               []int64
		x, init, outLen int64
		ok              bool
	}{
		{"exact", ok, xLen, 1, outLen, true},
		{"short", ok[:PoolParams-1], xLen, 1, outLen, false},
		{"operand too small", ok, xLen - 1, 1, outLen, false},
		{"operand too large", ok, xLen + 1, 1, outLen, false},
		{"result size", ok, xLen, 1, outLen - 1, false},
		{"no init value", ok, xLen, 0, outLen, false},
		{"rank 1", with(ok, PoolRank, 1), xLen, 1, outLen, false},
		{"rank past the block", with(ok, PoolRank, int64(MaxPoolRank)+1), xLen, 1, outLen, false},
		{"op 2", with(ok, PoolOp, 2), xLen, 1, outLen, false},
		{"swap -1", with(ok, PoolSwap, -1), xLen, 1, outLen, false},
		{"negative innermost", with(ok, PoolC, -16), xLen, 1, outLen, false},
		{"empty window", with(ok, d0+PoolWindow, 0), xLen, 1, outLen, false},
		{"zero stride", with(ok, d0+PoolStride, 0), xLen, 1, outLen, false},
		{"zero base dilation", with(ok, d0+PoolBaseDil, 0), xLen, 1, outLen, false},
		{"negative size", with(ok, d0+PoolIn, -2), -xLen, 1, outLen, false},
		{"huge padding", with(ok, d0+PoolPadLow, -(1 << 41)), xLen, 1, outLen, false},
		{"negative padding", with(ok, d0+PoolPadLow, -3), xLen, 1, outLen, true},
		{"far positions times the operand overflow", with(with(ok, d0+PoolStride, 1<<40), d0+PoolWindow, 1<<40), xLen, 1, outLen, false},
		{"far positions", with(ok, d0+PoolStride, 1<<30), xLen, 1, outLen, true},
		{"overflowing positions", with(with(ok, d0+PoolStride, 1<<40), d0+PoolOut, 1<<21), xLen, 1, outLen / 2 << 21, false},
		{"overflowing positions, control", with(ok, d0+PoolOut, 1<<21), xLen, 1, outLen / 2 << 21, true},
		{"a value past the rank", with(ok, PoolDimAt(int(ok[PoolRank])-1), 1), xLen, 1, outLen, false},
	} {
		err := CheckPool(c.p, c.x, c.init, c.outLen)
		if (err == nil) != c.ok {
			t.Errorf("%s: CheckPool = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// FuzzCheckPool: the routine, on a block CheckPool accepts, reads and
// writes only inside its buffers (poolReference, which indexes Go slices
// of the accepted sizes, would panic first) and gives the reference's
// bits.
func FuzzCheckPool(f *testing.F) {
	for _, pc := range poolCases {
		p, x, o := pc.params()
		f.Add(EncodeParams(p), x, int64(1), o)
	}
	f.Fuzz(func(t *testing.T, data []byte, xLen, initLen, outLen int64) {
		p, err := DecodeParams(data)
		if err != nil || CheckPool(p, xLen, initLen, outLen) != nil {
			return
		}
		if xLen > 1<<16 || outLen > 1<<16 || initLen > 16 {
			return
		}
		wins := int64(1)
		for d := range int(p[PoolRank]) - 1 {
			wins *= p[PoolDimAt(d)+PoolWindow]
			if wins > 1<<10 {
				return
			}
		}
		if outLen*wins > 1<<22 {
			return
		}
		rng := rand.New(rand.NewPCG(1, 1))
		x, init := poolInputs[float32](rng, xLen), randVals[float32](rng, initLen)
		want := poolReference(p, x, init[0], outLen)
		got := run(t, PoolF32, p, x, init, outLen, 0)
		if i, ok := sameBits(got, want); !ok {
			t.Fatalf("block %v: element %d is %v, want %v", p, i, got[i], want[i])
		}
	})
}

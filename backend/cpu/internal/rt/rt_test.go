package rt

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
	"unsafe"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
)

// gemmCase is one product: its dims and whether A and B are read
// transposed (A as [b][k][m], B as [b][n][k]) through the strides.
type gemmCase struct {
	b, m, k, n int64
	ta, tb     bool
}

func (g gemmCase) params() []int64 {
	p := []int64{g.b, g.m, g.k, g.n, g.m * g.k, g.k, 1, g.k * g.n, g.n, 1}
	if g.ta {
		p[5], p[6] = 1, g.m
	}
	if g.tb {
		p[8], p[9] = 1, g.k
	}
	return p
}

// cbuf is C memory holding n elements of T, filled from vals.
func cbuf[T float32 | float64 | byte](t testing.TB, vals []T) unsafe.Pointer {
	t.Helper()
	var z T
	p := cc.Alloc(max(len(vals), 1) * int(unsafe.Sizeof(z)))
	if p == nil {
		t.Fatal("out of memory")
	}
	t.Cleanup(func() { cc.Free(p) })
	copy(unsafe.Slice((*T)(p), len(vals)), vals)
	return p
}

// run runs the routine on a, b and the block in n parts (0: the serial
// entry point) and returns its output of outLen elements.
func run[T float32 | float64](t *testing.T, name string, p []int64, a, b []T, outLen int64, parts int) []T {
	t.Helper()
	r, ok := Lookup(name)
	if !ok {
		t.Fatalf("no routine %s", name)
	}
	if err := r.Check(p, int64(len(a)), int64(len(b)), outLen); err != nil {
		t.Fatal(err)
	}
	out := make([]T, outLen)
	for i := range out {
		out[i] = T(math.NaN()) // the routine must write every element
	}
	cp := cbuf(t, out)
	bufs := cc.Alloc(4 * 8)
	defer cc.Free(bufs)
	ptrs := unsafe.Slice((*unsafe.Pointer)(bufs), 4)
	ptrs[0], ptrs[1], ptrs[2], ptrs[3] = cbuf(t, a), cbuf(t, b), cbuf(t, EncodeParams(p)), cp
	if parts == 0 {
		cc.Call(r.Serial, bufs)
	} else {
		// Out of order, as the pool may run them.
		for i := parts - 1; i >= 0; i-- {
			cc.CallPart(r.Part, bufs, i, parts)
		}
	}
	return append([]T(nil), unsafe.Slice((*T)(cp), outLen)...)
}

// reference computes C in float64 and each element's bound on the
// rounding error of summing in T: K * eps * sum |a||b|.
func reference[T float32 | float64](g gemmCase, a, b []T, eps float64) (want, tol []float64) {
	p := g.params()
	for bi := range g.b {
		for i := range g.m {
			for j := range g.n {
				var s, mag float64
				for q := range g.k {
					x := float64(a[bi*p[4]+i*p[5]+q*p[6]])
					y := float64(b[bi*p[7]+q*p[8]+j*p[9]])
					s += x * y
					mag += math.Abs(x * y)
				}
				want = append(want, s)
				tol = append(tol, float64(g.k+1)*eps*mag+1e-30)
			}
		}
	}
	return want, tol
}

func randVals[T float32 | float64](rng *rand.Rand, n int64) []T {
	v := make([]T, n)
	for i := range v {
		v[i] = T(rng.Float64()*2 - 1)
	}
	return v
}

var gemmCases = []gemmCase{
	{1, 1, 1, 1, false, false},
	{1, 6, 3, 16, false, false},  // one full register block
	{1, 7, 5, 17, false, false},  // one past it each way
	{2, 13, 9, 5, true, false},   // batch, A transposed
	{3, 5, 300, 33, false, true}, // k over one packed panel, B transposed
	{1, 80, 70, 600, true, true}, // rows over one A block, columns over one B block
	{1, 64, 512, 10, false, false},
	{2, 3, 40, 700, false, true}, // wider than tall: a split by columns, across B's 512-column blocks
	{4, 4, 0, 4, false, false},   // k = 0: zeros
	{1, 0, 3, 4, false, false},   // nothing to write
}

func testGemm[T float32 | float64](t *testing.T, name string, eps float64) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, naive := range []bool{false, true} {
		for _, g := range gemmCases {
			t.Run(fmt.Sprintf("%v/naive=%v", g, naive), func(t *testing.T) {
				setNaive(naive)
				defer setNaive(false)
				a := randVals[T](rng, g.b*g.m*g.k)
				b := randVals[T](rng, g.b*g.k*g.n)
				got := run(t, name, g.params(), a, b, g.b*g.m*g.n, 0)
				want, tol := reference(g, a, b, eps)
				for i := range got {
					if d := math.Abs(float64(got[i]) - want[i]); !(d <= tol[i]) {
						t.Fatalf("element %d: got %v, want %v (tolerance %g)", i, got[i], want[i], tol[i])
					}
				}
				// Any split gives the same bits: every element is summed in
				// k order whatever part computes it.
				sameSplits(t, name, g.params(), a, b, got, 1, 2, 3, 7)
			})
		}
	}
}

// sameSplits runs routine name on p, a and b cut into each of parts and
// fails unless every run gives got's bits.
func sameSplits[T float32 | float64](t *testing.T, name string, p []int64, a, b, got []T, parts ...int) {
	t.Helper()
	for _, n := range parts {
		split := run(t, name, p, a, b, int64(len(got)), n)
		for i := range got {
			if math.Float64bits(float64(split[i])) != math.Float64bits(float64(got[i])) {
				t.Fatalf("%d parts: element %d is %v, serial %v", n, i, split[i], got[i])
			}
		}
	}
}

func TestGemmF32(t *testing.T) { testGemm[float32](t, GemmF32, 0x1p-24) }
func TestGemmF64(t *testing.T) { testGemm[float64](t, GemmF64, 0x1p-53) }

// TestGeneric runs the gemm and convolution tests on the variant for any
// CPU, which a machine with AVX2 never picks by itself.
func TestGeneric(t *testing.T) {
	setGeneric(true)
	defer setGeneric(false)
	if v := Variant(); v != "generic" {
		t.Fatalf("variant %q with the generic one forced", v)
	}
	t.Run("gemm/f32", func(t *testing.T) { testGemm[float32](t, GemmF32, 0x1p-24) })
	t.Run("gemm/f64", func(t *testing.T) { testGemm[float64](t, GemmF64, 0x1p-53) })
	t.Run("conv/f32", func(t *testing.T) { testConv[float32](t, ConvF32, 0x1p-24) })
	t.Run("conv/f64", func(t *testing.T) { testConv[float64](t, ConvF64, 0x1p-53) })
	t.Run("wino/f32", func(t *testing.T) { testWino[float32](t, WinoF32, 0x1p-24) })
	t.Run("wino/f64", func(t *testing.T) { testWino[float64](t, WinoF64, 0x1p-53) })
}

// TestGemmPathsAgree: the packed path and the no-scratch path give the
// same bits (both sum each element in k order, one multiply-add at a
// time from zero), with A transposed (packed) and in place (its row
// panels read where they lie, a last short one packed), and B's panels
// copied by vectors or element by element.
func TestGemmPathsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, g := range []gemmCase{
		{2, 31, 517, 45, true, false},
		{2, 83, 517, 45, false, false}, // A in place over two row blocks, a short last panel; k over two panels
		{1, 80, 70, 600, false, false}, // B's columns over one packed block
		{1, 12, 40, 33, false, true},   // B transposed: copied element by element
	} {
		t.Run(fmt.Sprint(g), func(t *testing.T) {
			a := randVals[float32](rng, g.b*g.m*g.k)
			b := randVals[float32](rng, g.b*g.k*g.n)
			packed := run(t, GemmF32, g.params(), a, b, g.b*g.m*g.n, 0)
			setNaive(true)
			defer setNaive(false)
			naive := run(t, GemmF32, g.params(), a, b, g.b*g.m*g.n, 0)
			for i := range packed {
				if math.Float32bits(packed[i]) != math.Float32bits(naive[i]) {
					t.Fatalf("element %d: packed %v, no-scratch %v", i, packed[i], naive[i])
				}
			}
		})
	}
}

// withParam is a copy of parameter block p with value i set to v.
func withParam(p []int64, i int, v int64) []int64 {
	q := append([]int64(nil), p...)
	q[i] = v
	return q
}

func TestCheckGemm(t *testing.T) {
	ok := gemmCase{2, 3, 4, 5, false, false}.params()
	tr := gemmCase{2, 3, 4, 5, true, true}.params()
	with := withParam
	for _, c := range []struct {
		name       string
		p          []int64
		a, b, cLen int64
		ok         bool
	}{
		{"exact", ok, 24, 40, 30, true},
		{"transposed", tr, 24, 40, 30, true},
		{"short", ok[:9], 24, 40, 30, false},
		{"A too small", ok, 23, 40, 30, false},
		{"B too small", ok, 24, 39, 30, false},
		{"output size", ok, 24, 40, 29, false},
		{"negative stride", with(ok, 6, -1), 24, 40, 30, false},
		{"stride past A", with(ok, 5, 100), 24, 40, 30, false},
		{"huge dim", with(ok, 2, 1<<41), 1 << 50, 1 << 50, 30, false},
		{"overflowing strides", with(with(ok, 5, 1<<40), 6, 1<<40), 1 << 62, 40, 30, false},
		{"k zero reads nothing", with(ok, 2, 0), 0, 0, 30, true},
		{"empty", with(ok, 1, 0), 0, 0, 0, true},
	} {
		err := CheckGemm(c.p, c.a, c.b, c.cLen)
		if (err == nil) != c.ok {
			t.Errorf("%s: CheckGemm = %v, want ok=%v", c.name, err, c.ok)
		}
	}
}

// FuzzCheckGemm: a block CheckGemm accepts reads only inside A and B and
// writes exactly C, computed independently with big integers.
func FuzzCheckGemm(f *testing.F) {
	f.Add(EncodeParams(gemmCase{2, 3, 4, 5, false, false}.params()), int64(24), int64(40), int64(30))
	f.Add(EncodeParams(gemmCase{2, 3, 4, 5, true, true}.params()), int64(24), int64(40), int64(30))
	f.Add(EncodeParams([]int64{1, 1, 1, 1, 0, 0, 0, 0, 0, 0}), int64(1), int64(1), int64(1))
	f.Add([]byte{1, 2, 3}, int64(1), int64(1), int64(1))
	f.Fuzz(func(t *testing.T, data []byte, aLen, bLen, cLen int64) {
		p, err := DecodeParams(data)
		if err != nil {
			return
		}
		if CheckGemm(p, aLen, bLen, cLen) != nil {
			return
		}
		bi := func(v int64) *big.Int { return big.NewInt(v) }
		out := new(big.Int).Mul(bi(p[0]), new(big.Int).Mul(bi(p[1]), bi(p[3])))
		if out.Cmp(bi(cLen)) != 0 {
			t.Fatalf("accepted %v writing %v elements into %d", p, out, cLen)
		}
		if out.Sign() == 0 || p[2] == 0 {
			return
		}
		last := func(s []int64, e ...int64) *big.Int {
			r := new(big.Int)
			for i := range e {
				r.Add(r, new(big.Int).Mul(bi(e[i]-1), bi(s[i])))
			}
			return r
		}
		for _, c := range []struct {
			l *big.Int
			n int64
		}{{last(p[4:7], p[0], p[1], p[2]), aLen}, {last(p[7:10], p[0], p[2], p[3]), bLen}} {
			if c.l.Sign() < 0 || c.l.Cmp(bi(c.n)) >= 0 {
				t.Fatalf("accepted %v reading element %v of %d", p, c.l, c.n)
			}
		}
	})
}

func TestVersionAndVariant(t *testing.T) {
	if len(Version) != 16 {
		t.Errorf("Version = %q", Version)
	}
	t.Logf("routines %s, variant %s", Version, Variant())
}

// BenchmarkGemm times the f32 routine on one thread, on a 512³ product
// and on the transformer example's (M x K x N), and reports GFLOPS
// (compare BenchmarkDot512 in package cpu, the generated kernels'
// default and tuned configurations, and BenchmarkKernelProfile there).
func BenchmarkGemm(b *testing.B) {
	type shape struct {
		m, k, n int64
		ta, tb  bool
	}
	for _, s := range []shape{{512, 512, 512, false, false}, {128, 256, 256, false, false}, {128, 256, 1024, false, false},
		{128, 1024, 256, false, false}, {64, 784, 512, false, false},
		// transformer4l's backward products: A or B transposed.
		{512, 512, 2048, false, false}, {512, 512, 2048, true, false}, {512, 512, 2048, false, true},
		{2048, 512, 512, false, false}, {2048, 512, 512, true, false}, {2048, 512, 512, false, true},
		{512, 512, 512, true, false}, {512, 512, 512, false, true},
		// embedding's products: short k.
		{256, 128, 512, false, false}, {256, 512, 128, false, false}, {256, 128, 128, false, false}} {
		m, k, n := s.m, s.k, s.n
		name := fmt.Sprintf("%dx%dx%d", m, k, n)
		if s.ta {
			name += "/At"
		}
		if s.tb {
			name += "/Bt"
		}
		for _, cold := range []bool{false, true} {
			name := name
			if cold {
				// Operands out of the caches, as in a program where they
				// were written long before: sets of operands rotated
				// through, 64 MiB in all.
				name += "/cold"
			}
			b.Run(name, func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				g := gemmCase{1, m, k, n, s.ta, s.tb}
				a, bm := randVals[float32](rng, m*k), randVals[float32](rng, k*n)
				r, _ := Lookup(GemmF32)
				sets := 1
				if cold {
					sets = max(1, int(64<<20/(4*(m*k+k*n+m*n))))
				}
				params := cbuf(b, EncodeParams(g.params()))
				var bufs []unsafe.Pointer
				for range sets {
					p := cc.Alloc(4 * 8)
					defer cc.Free(p)
					ptrs := unsafe.Slice((*unsafe.Pointer)(p), 4)
					ptrs[0], ptrs[1], ptrs[2], ptrs[3] = cbuf(b, a), cbuf(b, bm), params, cbuf(b, make([]float32, m*n))
					bufs = append(bufs, p)
				}
				i := 0
				for b.Loop() {
					cc.Call(r.Serial, bufs[i%sets])
					i++
				}
				b.ReportMetric(2*float64(m*k*n)*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOPS")
			})
		}
	}
}

package gomlx_test

import (
	"math"
	"math/cmplx"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
)

// cclose fails unless got and want agree to tol (absolute, or relative
// for large values); NaN parts must be NaN in both.
func cclose(t *testing.T, what string, got, want []complex128, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	near := func(g, w float64) bool {
		if math.IsNaN(w) || math.IsInf(w, 0) {
			return math.IsNaN(w) && math.IsNaN(g) || g == w
		}
		return math.Abs(g-w) <= tol*math.Max(1, math.Abs(w))
	}
	for i := range got {
		if !near(real(got[i]), real(want[i])) || !near(imag(got[i]), imag(want[i])) {
			t.Errorf("%s[%d]: got %v, want %v (±%g)", what, i, got[i], want[i], tol)
		}
	}
}

// flatC returns a tensor's values as complex128, whatever its dtype.
func flatC(t *testing.T, x *tensors.Tensor) []complex128 {
	t.Helper()
	var out []complex128
	switch v := x.Value().(type) {
	case []complex64:
		for _, c := range v {
			out = append(out, complex128(c))
		}
	case []complex128:
		out = v
	case []float32:
		for _, f := range v {
			out = append(out, complex(float64(f), 0))
		}
	case []float64:
		for _, f := range v {
			out = append(out, complex(f, 0))
		}
	case []bool:
		for _, b := range v {
			if b {
				out = append(out, 1)
			} else {
				out = append(out, 0)
			}
		}
	case complex64:
		out = []complex128{complex128(v)}
	case complex128:
		out = []complex128{v}
	case float32:
		out = []complex128{complex(float64(v), 0)}
	case float64:
		out = []complex128{complex(v, 0)}
	default:
		t.Fatalf("unexpected value %T", v)
	}
	return out
}

// dft is the discrete Fourier transform computed here, by its definition
// (sign -1 forward, +1 inverse with the 1/n factor).
func dft(x []complex128, inverse bool) []complex128 {
	n := len(x)
	out := make([]complex128, n)
	sign := -1.0
	if inverse {
		sign = 1
	}
	for k := range out {
		var s complex128
		for j, v := range x {
			s += v * cmplx.Exp(complex(0, sign*2*math.Pi*float64(j*k%n)/float64(n)))
		}
		if inverse {
			s /= complex(float64(n), 0)
		}
		out[k] = s
	}
	return out
}

// TestComplexOps runs every complex op against values computed here. If
// the cpu backend cannot compile complex programs (complexCompiles is
// false in the package), it checks that compiling fails with an error
// instead: the test fails as soon as the cpu backend gains complex
// numbers, so the capabilities cannot stay behind.
func TestComplexOps(t *testing.T) {
	b := newBackend(t)
	caps := b.Capabilities()
	compiles := caps.DTypes[dtypes.Complex64]
	for _, op := range []backends.OpType{backends.OpTypeComplex, backends.OpTypeReal, backends.OpTypeImag,
		backends.OpTypeConj, backends.OpTypeFFT} {
		if caps.Operations[op] != compiles {
			t.Errorf("Capabilities: %s = %v but complex64 = %v", op, caps.Operations[op], compiles)
		}
	}
	if caps.DTypes[dtypes.Complex128] != compiles {
		t.Errorf("Capabilities: complex128 = %v but complex64 = %v", caps.DTypes[dtypes.Complex128], compiles)
	}

	type tcase struct {
		name string
		fn   func(g *graph.Graph) []*graph.Node
		want [][]complex128
		tol  float64
	}
	c64 := []complex64{1 + 2i, -3 + 0.5i, 0, 4 - 4i}
	re32, im32 := []float32{1, -3}, []float32{-5, 7}
	f64 := []float64{11, -17.5}
	signal := []complex128{1, 2 - 1i, 0.5i, -3, 4 + 4i, -1 - 2i, 0.25} // n=7: not a power of two
	realSignal := []float32{0.5, -1, 2, 3, -0.25, 1, 0, 4}             // n=8
	var signal7 []complex128
	for _, v := range realSignal {
		signal7 = append(signal7, complex(float64(v), 0))
	}
	rfft := dft(signal7, false)[:len(realSignal)/2+1]
	abs := func(cs []complex64) []complex128 {
		var out []complex128
		for _, c := range cs {
			out = append(out, complex(cmplx.Abs(complex128(c)), 0))
		}
		return out
	}
	widen := func(cs []complex64) []complex128 {
		var out []complex128
		for _, c := range cs {
			out = append(out, complex128(c))
		}
		return out
	}
	inf, nan := math.Inf(1), math.NaN()
	cases := []tcase{
		{"Complex (and a broadcast scalar part)", func(g *graph.Graph) []*graph.Node {
			return []*graph.Node{graph.Complex(graph.Const(g, re32), graph.Const(g, im32)),
				graph.Complex(graph.Const(g, f64), graph.ScalarOne(g, dtypes.Float64))}
		}, [][]complex128{{1 - 5i, -3 + 7i}, {11 + 1i, -17.5 + 1i}}, 0},
		{"Real, Imag, Conj", func(g *graph.Graph) []*graph.Node {
			x := graph.Const(g, c64)
			return []*graph.Node{graph.Real(x), graph.Imag(x), graph.Conj(x)}
		}, [][]complex128{{1, -3, 0, 4}, {2, 0.5, 0, -4}, {1 - 2i, -3 - 0.5i, 0, 4 + 4i}}, 0},
		{"Abs", func(g *graph.Graph) []*graph.Node {
			x := graph.Const(g, c64)
			return []*graph.Node{graph.Abs(x), graph.Abs(graph.ConvertDType(x, dtypes.Complex128))}
		}, [][]complex128{abs(c64), abs(c64)}, 1e-6},
		{"arithmetic and ReduceSum", func(g *graph.Graph) []*graph.Node {
			x := graph.Const(g, c64)
			y := graph.Const(g, []complex64{2, 1i, 1 + 1i, -1})
			return []*graph.Node{graph.Mul(x, y), graph.Div(x, graph.Const(g, []complex64{1, 1i, 2, 2i})),
				graph.Sub(x, y), graph.ReduceAllSum(x), graph.MulScalar(x, 0.5)}
		}, [][]complex128{{2 + 4i, -0.5 - 3i, 0, -4 + 4i}, {1 + 2i, 0.5 + 3i, 0, -2 - 2i},
			{-1 + 2i, -3 - 0.5i, -1 - 1i, 5 - 4i}, {2 - 1.5i}, {0.5 + 1i, -1.5 + 0.25i, 0, 2 - 2i}}, 1e-6},
		{"transcendental", func(g *graph.Graph) []*graph.Node {
			x := graph.Const(g, []complex128{1 + 2i, -0.5 + 0.25i, 3 - 4i})
			return []*graph.Node{graph.Exp(x), graph.Log(x), graph.Sqrt(x), graph.Rsqrt(x)}
		}, func() [][]complex128 {
			xs := []complex128{1 + 2i, -0.5 + 0.25i, 3 - 4i}
			var out [][]complex128
			for _, f := range []func(complex128) complex128{cmplx.Exp, cmplx.Log, cmplx.Sqrt, func(z complex128) complex128 { return 1 / cmplx.Sqrt(z) }} {
				var row []complex128
				for _, x := range xs {
					row = append(row, f(x))
				}
				out = append(out, row)
			}
			return out
		}(), 1e-12},
		{"Pow, Sign, Expm1, Log1p, Dot", func(g *graph.Graph) []*graph.Node {
			x := graph.Const(g, []complex128{1 + 2i, -0.5 + 0.25i, 3 - 4i})
			y := graph.Const(g, []complex128{0.5, 2 - 1i, 1i})
			return []*graph.Node{graph.Pow(x, y), graph.Sign(x), graph.Expm1(x), graph.Log1P(x), graph.Dot(x, y)}
		}, [][]complex128{
			{cmplx.Pow(1+2i, 0.5), cmplx.Pow(-0.5+0.25i, 2-1i), cmplx.Pow(3-4i, 1i)},
			{(1 + 2i) / complex(math.Sqrt(5), 0), (-0.5 + 0.25i) / complex(math.Sqrt(0.3125), 0), 0.6 - 0.8i},
			{cmplx.Exp(1+2i) - 1, cmplx.Exp(-0.5+0.25i) - 1, cmplx.Exp(3-4i) - 1},
			{cmplx.Log(2 + 2i), cmplx.Log(0.5 + 0.25i), cmplx.Log(4 - 4i)},
			{(1+2i)*0.5 + (-0.5+0.25i)*(2-1i) + (3-4i)*1i},
		}, 1e-12},
		{"Equal and IsZero", func(g *graph.Graph) []*graph.Node {
			x := graph.Const(g, []complex64{1e-10, 0, -1e-10i, 1 + 2i})
			return []*graph.Node{graph.IsZero(x), graph.Equal(x, graph.Const(g, []complex64{1e-10, 1, 0, 1 + 2i}))}
		}, [][]complex128{{0, 1, 0, 0}, {1, 0, 0, 1}}, 0},
		{"ConvertDType", func(g *graph.Graph) []*graph.Node {
			x := graph.Const(g, c64)
			return []*graph.Node{graph.ConvertDType(graph.Const(g, re32), dtypes.Complex64),
				graph.ConvertDType(graph.Const(g, []int32{7, -2}), dtypes.Complex128),
				graph.ConvertDType(x, dtypes.Complex128), graph.ConvertDType(x, dtypes.Float32),
				graph.ConvertDType(graph.ConvertDType(x, dtypes.Complex128), dtypes.Complex64)}
		}, [][]complex128{{1, -3}, {7, -2}, widen(c64), {1, -3, 0, 4}, widen(c64)}, 0},
		{"constants with non-finite parts", func(g *graph.Graph) []*graph.Node {
			return []*graph.Node{graph.Const(g, []complex64{complex(float32(inf), 1), complex(2, float32(nan))}),
				graph.Const(g, complex(-inf, 0))}
		}, [][]complex128{{complex(inf, 1), complex(2, nan)}, {complex(-inf, 0)}}, 0},
		{"FFT and InverseFFT (n=7)", func(g *graph.Graph) []*graph.Node {
			x := graph.Const(g, signal)
			return []*graph.Node{graph.FFT(x), graph.InverseFFT(x)}
		}, [][]complex128{dft(signal, false), dft(signal, true)}, 1e-9},
		{"RealFFT and InverseRealFFT (n=8)", func(g *graph.Graph) []*graph.Node {
			f := graph.RealFFT(graph.Const(g, realSignal))
			return []*graph.Node{f, graph.InverseRealFFT(f)}
		}, [][]complex128{rfft, signal7}, 1e-5},
	}
	var failures int
	for _, c := range cases {
		exec, err := graph.NewExec(b, func(g *graph.Graph) []*graph.Node { return c.fn(g) })
		var outs []*tensors.Tensor
		if err == nil {
			outs, err = exec.Exec()
		}
		if err != nil {
			failures++
			if compiles {
				t.Errorf("%s: %v", c.name, err)
			} else if t.Logf("%s: %v", c.name, err); !strings.Contains(err.Error(), "xlacache") {
				t.Errorf("%s: error %v does not come from the backend", c.name, err)
			}
			continue
		}
		for i, want := range c.want {
			cclose(t, c.name, flatC(t, outs[i]), want, c.tol)
		}
	}
	if !compiles && failures == 0 {
		t.Errorf("every complex program compiled, but Capabilities leaves complex out: set complexCompiles")
	}
}

// TestComplexBuffers checks that complex tensors cross the buffer
// interface unchanged (real part first, as Go stores them).
func TestComplexBuffers(t *testing.T) {
	b := newBackend(t)
	in := []complex128{1 + 2i, complex(math.Inf(-1), math.SmallestNonzeroFloat64)}
	buf, err := b.BufferFromFlatData(0, in, tensors.FromValue(in).Shape())
	if err != nil {
		t.Fatal(err)
	}
	out := make([]complex128, 2)
	if err := b.BufferToFlatData(buf, out); err != nil {
		t.Fatal(err)
	}
	cclose(t, "round trip", out, in, 0)
	data, err := b.BufferData(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got, ok := data.([]complex128); !ok || got[0] != in[0] {
		t.Errorf("BufferData: %T %v", data, data)
	}
	if _, err := b.BufferFromFlatData(0, []float64{1, 2}, tensors.FromValue(in).Shape()); err == nil {
		t.Errorf("float64 data for a complex128 shape: no error")
	}
}

// TestComplexUnsupportedNamesOp checks that ops with no meaning for
// complex numbers (they need an ordering, rounding or a bit layout), and
// convolution, which the cpu backend lacks for them, fail with an error
// naming the GoMLX op, never a panic or an error about some StableHLO op
// the backend emitted for it.
func TestComplexUnsupportedNamesOp(t *testing.T) {
	b := newDevices(t, "2")
	s := shapes.Make(dtypes.Complex64, 4)
	cases := map[string]func(bld backends.Builder, x backends.Op) ([]backends.Op, error){
		"Max":            func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.Max(x, x)) },
		"Min":            func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.Min(x, x)) },
		"Rem":            func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.Rem(x, x)) },
		"LessThan":       func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.LessThan(x, x)) },
		"GreaterOrEqual": func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.GreaterOrEqual(x, x)) },
		"Floor":          func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.Floor(x)) },
		"Ceil":           func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.Ceil(x)) },
		"Round":          func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.Round(x)) },
		"ReduceMax":      func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.ReduceMax(x, 0)) },
		"ReduceMin":      func(bld backends.Builder, x backends.Op) ([]backends.Op, error) { return one(bld.ReduceMin(x, 0)) },
		"ArgMinMax": func(bld backends.Builder, x backends.Op) ([]backends.Op, error) {
			return one(bld.ArgMinMax(x, 0, dtypes.Int32, false))
		},
		"Bitcast": func(bld backends.Builder, x backends.Op) ([]backends.Op, error) {
			return one(bld.Bitcast(x, dtypes.Uint64))
		},
		"ReduceWindow": func(bld backends.Builder, x backends.Op) ([]backends.Op, error) {
			return one(bld.ReduceWindow(x, backends.ReduceOpMax, []int{2}, nil, nil, nil, nil))
		},
		"ScatterMax": func(bld backends.Builder, x backends.Op) ([]backends.Op, error) {
			idx := must(bld.Constant([]int32{1}, 1, 1))
			upd := must(bld.Constant([]complex64{5}, 1))
			return one(bld.ScatterMax(x, idx, upd, 1, nil, []int{0}, []int{0}, true, true))
		},
		"SelectAndScatterMax": func(bld backends.Builder, x backends.Op) ([]backends.Op, error) {
			src := must(bld.Constant([]complex64{1, 2}, 2))
			return one(bld.SelectAndScatterMax(x, src, []int{2}, []int{2}, nil))
		},
		"ConvGeneral": func(bld backends.Builder, x backends.Op) ([]backends.Op, error) {
			in := must(bld.Reshape(x, 1, 1, 4))
			k := must(bld.Constant([]complex64{1, 1i}, 1, 1, 2))
			return one(bld.ConvGeneral(in, k, backends.ConvolveAxesConfig{InputSpatial: []int{2}, InputChannels: 1,
				KernelOutputChannels: 1, KernelSpatial: []int{2}, OutputChannels: 1, OutputSpatial: []int{2}},
				nil, nil, nil, nil, 1, 1))
		},
		"AllReduce": func(bld backends.Builder, x backends.Op) ([]backends.Op, error) {
			return bld.AllReduce([]backends.Op{x}, backends.ReduceOpMax, nil)
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			defer func() {
				if r := recover(); r != nil {
					t.Fatalf("panic: %v", r)
				}
			}()
			bld := b.Builder(name)
			if name == "AllReduce" {
				if err := bld.DistributedSPMD(2); err != nil {
					t.Fatal(err)
				}
				if err := bld.DeviceAssignment(0, 1); err != nil {
					t.Fatal(err)
				}
			}
			x := must(bld.Parameter("x", s, nil))
			out, err := f(bld, x)
			if err == nil {
				var exe backends.Executable
				if exe, err = bld.Compile(out, nil); err == nil {
					exe.Finalize()
					t.Fatalf("%s on complex64 compiled", name)
				}
			}
			if !strings.Contains(err.Error(), "xlacache backend: "+name+":") || !strings.Contains(err.Error(), "Complex64") {
				t.Errorf("%s on complex64: error %q does not name the op and the dtype", name, err)
			}
		})
	}
}

// one is a single op result as a list.
func one(x backends.Op, err error) ([]backends.Op, error) {
	if err != nil {
		return nil, err
	}
	return []backends.Op{x}, nil
}

// TestFFTForms checks the FFT forms GoMLX's graph package does not
// reach but its backend interface allows: a batch of transforms, a 2-D
// transform (fft_length of two axes) and an inverse real transform of
// odd length, against transforms computed here.
func TestFFTForms(t *testing.T) {
	b := newBackend(t)
	run := func(name string, in []complex128, dims []int, f func(bld backends.Builder, x backends.Op) (backends.Op, error)) []complex128 {
		t.Helper()
		bld := b.Builder(name)
		s := shapes.Make(dtypes.Complex128, dims...)
		x := must(bld.Parameter("x", s, nil))
		y, err := f(bld, x)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		exe, err := bld.Compile([]backends.Op{y}, nil)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		defer exe.Finalize()
		out := must(exe.Execute([]backends.Buffer{must(b.BufferFromFlatData(0, in, s))}, nil, 0))
		os := must(b.BufferShape(out[0]))
		var got []complex128
		switch v := must(b.BufferData(out[0])).(type) {
		case []complex128:
			got = slices.Clone(v)
		case []float64:
			for _, f := range v {
				got = append(got, complex(f, 0))
			}
		default:
			t.Fatalf("%s: result %s", name, os)
		}
		return got
	}
	batch := []complex128{1, 2i, -1, 3, 0.5, 1 - 1i, 2, 0, -2i, 4}
	want := slices.Concat(dft(batch[:5], false), dft(batch[5:], false))
	cclose(t, "batch of 2 FFTs of 5", run("batch", batch, []int{2, 5}, func(bld backends.Builder, x backends.Op) (backends.Op, error) {
		return bld.FFT(x, backends.FFTForward, []int{5})
	}), want, 1e-12)

	// 2-D: the transform of every row, then of every column.
	grid := []complex128{1, 2, 3, 4, 1i, -1i, 2 + 2i, 0, -1, 0.5, 0, 3}
	rows := slices.Concat(dft(grid[0:4], false), dft(grid[4:8], false), dft(grid[8:12], false))
	want2 := make([]complex128, 12)
	for c := range 4 {
		col := dft([]complex128{rows[c], rows[4+c], rows[8+c]}, false)
		for r := range 3 {
			want2[r*4+c] = col[r]
		}
	}
	cclose(t, "2-D FFT of 3x4", run("2d", grid, []int{3, 4}, func(bld backends.Builder, x backends.Op) (backends.Op, error) {
		return bld.FFT(x, backends.FFTForward, []int{3, 4})
	}), want2, 1e-12)

	// An odd-length real signal from its 4 bins (fft_length 7).
	sig := []complex128{0.5, -1, 2, 3, -0.25, 1, 4}
	bins := dft(sig, false)[:4]
	cclose(t, "inverse real FFT of length 7", run("irfft7", bins, []int{4}, func(bld backends.Builder, x backends.Op) (backends.Op, error) {
		return bld.FFT(x, backends.FFTInverseReal, []int{7})
	}), sig, 1e-12)
}

// TestComplexShapes checks the result dtypes and shapes of the complex
// ops as the builder reports them (GoMLX checks them against its own
// shape inference), and extreme finite constants.
func TestComplexShapes(t *testing.T) {
	b := newBackend(t)
	bld := b.Builder("shapes")
	c64 := must(bld.Parameter("c64", shapes.Make(dtypes.Complex64, 2, 8), nil))
	c128 := must(bld.Parameter("c128", shapes.Make(dtypes.Complex128, 3), nil))
	f32 := must(bld.Parameter("f32", shapes.Make(dtypes.Float32, 2, 8), nil))
	f64 := must(bld.Parameter("f64", shapes.Make(dtypes.Float64, 3), nil))
	for _, c := range []struct {
		name  string
		build func() (backends.Op, error)
		want  shapes.Shape
	}{
		{"Abs(c64)", func() (backends.Op, error) { return bld.Abs(c64) }, shapes.Make(dtypes.Float32, 2, 8)},
		{"Abs(c128)", func() (backends.Op, error) { return bld.Abs(c128) }, shapes.Make(dtypes.Float64, 3)},
		{"Real(c64)", func() (backends.Op, error) { return bld.Real(c64) }, shapes.Make(dtypes.Float32, 2, 8)},
		{"Imag(c128)", func() (backends.Op, error) { return bld.Imag(c128) }, shapes.Make(dtypes.Float64, 3)},
		{"Complex(f64, f64)", func() (backends.Op, error) { return bld.Complex(f64, f64) }, shapes.Make(dtypes.Complex128, 3)},
		{"Conj(c64)", func() (backends.Op, error) { return bld.Conj(c64) }, shapes.Make(dtypes.Complex64, 2, 8)},
		{"RFFT(f32)", func() (backends.Op, error) { return bld.FFT(f32, backends.FFTForwardReal, []int{8}) },
			shapes.Make(dtypes.Complex64, 2, 5)},
		{"IRFFT(c64)", func() (backends.Op, error) { return bld.FFT(c64, backends.FFTInverseReal, []int{14}) },
			shapes.Make(dtypes.Float32, 2, 14)},
		{"ConvertDType(c128, int32)", func() (backends.Op, error) { return bld.ConvertDType(c128, dtypes.Int32) },
			shapes.Make(dtypes.Int32, 3)},
	} {
		op, err := c.build()
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if s := must(bld.OpShape(op)); !s.Equal(c.want) {
			t.Errorf("%s: shape %s, want %s", c.name, s, c.want)
		}
	}

	g := graph.NewGraph(b, "extremes")
	c64s := []complex64{complex(math.MaxFloat32, math.SmallestNonzeroFloat32), complex(float32(math.Copysign(0, -1)), -1e-38)}
	c128s := []complex128{complex(math.MaxFloat64, math.SmallestNonzeroFloat64), complex(-2.5e-308, math.Copysign(0, -1))}
	g.Compile(graph.Const(g, c64s), graph.Const(g, c128s))
	outs := g.Run()
	got64, got128 := outs[0].Value().([]complex64), outs[1].Value().([]complex128)
	for i := range c64s {
		if math.Float32bits(real(got64[i])) != math.Float32bits(real(c64s[i])) ||
			math.Float32bits(imag(got64[i])) != math.Float32bits(imag(c64s[i])) {
			t.Errorf("complex64 constant %v came back %v", c64s[i], got64[i])
		}
	}
	for i := range c128s {
		if math.Float64bits(real(got128[i])) != math.Float64bits(real(c128s[i])) ||
			math.Float64bits(imag(got128[i])) != math.Float64bits(imag(c128s[i])) {
			t.Errorf("complex128 constant %v came back %v", c128s[i], got128[i])
		}
	}
}

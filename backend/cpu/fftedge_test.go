package cpu

import (
	"context"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// fftFloor is the largest modulus among the outputs of want: fft errors
// are relative to the transform's scale, not to each element.
func fftFloor(want *stablehlo.Tensor) float64 {
	floor := 0.0
	for j := int64(0); j < want.Type.NumElements(); j++ {
		v := cmplx.Abs(complex(partAt(want, j, 0), partAt(want, j, 1)))
		if !math.IsInf(v, 0) && !math.IsNaN(v) {
			floor = math.Max(floor, v)
		}
	}
	return floor
}

// TestFFTEdgeCases compares fft with the interpreter where the
// differential test does not go: empty batches, odd IRFFT lengths on
// every path (direct sums, Bluestein) and in several dimensions, and
// inputs holding infinities and NaN, which must give NaN and infinities
// exactly where the interpreter does (both run the same algorithm for a
// given length, so the special values spread the same way).
func TestFFTEdgeCases(t *testing.T) {
	type tc struct {
		typ, in, out string
		lens         []int64
		specials     bool
	}
	var cs []tc
	c := func(typ, in, out string, specials bool, lens ...int64) {
		cs = append(cs, tc{typ, in, out, lens, specials})
	}
	// Empty batches and empty transforms.
	c("FFT", "tensor<0x8xcomplex<f32>>", "tensor<0x8xcomplex<f32>>", false, 8)
	c("RFFT", "tensor<0x5xf32>", "tensor<0x3xcomplex<f32>>", false, 5)
	c("IRFFT", "tensor<2x0x3xcomplex<f64>>", "tensor<2x0x5xf64>", false, 5)
	c("IFFT", "tensor<3x0x4xcomplex<f64>>", "tensor<3x0x4xcomplex<f64>>", false, 0, 4)
	// Odd IRFFT lengths: direct, on both sides of the direct/Bluestein
	// boundary, Bluestein, and in two dimensions.
	for _, n := range []int64{3, 7, 31, 33, 45, 63, 65, 101} {
		h := n/2 + 1
		c("IRFFT", fmt.Sprintf("tensor<2x%dxcomplex<f64>>", h), fmt.Sprintf("tensor<2x%dxf64>", n), false, n)
		c("IRFFT", fmt.Sprintf("tensor<%dxcomplex<f32>>", h), fmt.Sprintf("tensor<%dxf32>", n), false, n)
	}
	c("IRFFT", "tensor<3x4xcomplex<f64>>", "tensor<3x7xf64>", false, 3, 7)
	c("IRFFT", "tensor<5x18xcomplex<f32>>", "tensor<5x35xf32>", false, 5, 35)
	// Infinities and NaN, on every path.
	for _, n := range []int64{2, 5, 8, 31, 33, 40, 64, 100} {
		c("FFT", fmt.Sprintf("tensor<4x%dxcomplex<f64>>", n), fmt.Sprintf("tensor<4x%dxcomplex<f64>>", n), true, n)
		c("IFFT", fmt.Sprintf("tensor<4x%dxcomplex<f32>>", n), fmt.Sprintf("tensor<4x%dxcomplex<f32>>", n), true, n)
		c("RFFT", fmt.Sprintf("tensor<4x%dxf64>", n), fmt.Sprintf("tensor<4x%dxcomplex<f64>>", n/2+1), true, n)
		c("IRFFT", fmt.Sprintf("tensor<4x%dxcomplex<f64>>", n/2+1), fmt.Sprintf("tensor<4x%dxf64>", n), true, n)
	}
	// Several dimensions with special values: the dimensions must be
	// transformed in the interpreter's order (RFFT: the last one first).
	c("RFFT", "tensor<2x6x8xf64>", "tensor<2x6x5xcomplex<f64>>", true, 6, 8)
	c("RFFT", "tensor<5x40xf32>", "tensor<5x21xcomplex<f32>>", true, 5, 40)
	c("IRFFT", "tensor<2x6x5xcomplex<f64>>", "tensor<2x6x8xf64>", true, 6, 8)
	c("FFT", "tensor<3x5x7xcomplex<f64>>", "tensor<3x5x7xcomplex<f64>>", true, 5, 7)
	c("IFFT", "tensor<4x6xcomplex<f32>>", "tensor<4x6xcomplex<f32>>", true, 4, 6)
	rng := rand.New(rand.NewPCG(14, 15))
	randomDifferential(t, len(cs), func(i int) (string, string) {
		k := cs[i]
		return fmt.Sprintf("%s_%v_%s_%v", k.typ, k.lens, strings.NewReplacer("<", "", ">", "").Replace(k.in), k.specials),
			fftProgram(fftCase{typ: k.typ, in: k.in, out: k.out, lengths: k.lens})
	}, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		tol := 1e-11
		if strings.Contains(cs[i].in, "f32") {
			tol = 1e-5
		}
		args := complexArgs(m.Main(), rng, 1, cs[i].specials)
		got, want := runBoth(t, exe, m, args)
		assertCloseComplex(t, got, want, tol, fftFloor(want[0]))
	})
}

// TestFFTLongBluestein checks the precision of Bluestein's algorithm at a
// length just past a power of two (the worst case: the convolution is
// almost four times as long), against the interpreter. Both compute in
// double precision with twiddles from exactly reduced angles, so they
// agree far better than single precision.
func TestFFTLongBluestein(t *testing.T) {
	n := int64(1<<20 + 1)
	if testing.Short() {
		n = 1<<14 + 1
	}
	ct := fmt.Sprintf("tensor<%dxcomplex<f64>>", n)
	m, exe := compileText(t, fftProgram(fftCase{typ: "FFT", in: ct, out: ct, lengths: []int64{n}}))
	args := complexArgs(m.Main(), rand.New(rand.NewPCG(14, 16)), 1, false)
	got, want := runBoth(t, exe, m, args)
	assertCloseComplex(t, got, want, 1e-10, fftFloor(want[0]))
	// And against the definition at a few bins, computed in long sums
	// with exactly reduced angles.
	x := args[0]
	for _, k := range []int64{0, 1, n / 3, n - 1} {
		var s complex128
		for j := int64(0); j < n; j++ {
			jk := (j * k) % n
			sn, cs := math.Sincos(-2 * math.Pi * float64(jk) / float64(n))
			s += complex(partAt(x, j, 0), partAt(x, j, 1)) * complex(cs, sn)
		}
		g := complex(partAt(got[0], k, 0), partAt(got[0], k, 1))
		if d := cmplx.Abs(g - s); d > 1e-9*fftFloor(want[0]) {
			t.Errorf("bin %d: cpu %v, direct sum %v (|diff| %g)", k, g, s, d)
		}
	}
}

// TestFFTMalformedIsAnError mutates a parsed fft op past what the front
// end accepts (negative, too many or mismatched lengths, an unknown kind)
// and checks that compiling it is an error, never a panic or C that
// indexes out of range.
func TestFFTMalformedIsAnError(t *testing.T) {
	const src = `func.func @main(%x: tensor<2x3xcomplex<f64>>) -> tensor<2x4xf64> {
  %0 = stablehlo.fft %x, type = IRFFT, length = [4] : (tensor<2x3xcomplex<f64>>) -> tensor<2x4xf64>
  return %0 : tensor<2x4xf64>
}
`
	muts := map[string]func(op *stablehlo.Op){
		"negative length": func(op *stablehlo.Op) {
			op.Attrs.FftLength = []int64{-1}
			op.Operands[0].Type.Shape = []int64{2, 1}
			op.Results[0].Type.Shape = []int64{2, -1}
		},
		"negative inner length": func(op *stablehlo.Op) {
			op.Attrs.FftLength = []int64{-2, 4}
			op.Operands[0].Type.Shape = []int64{-2, 3}
			op.Results[0].Type.Shape = []int64{-2, 4}
		},
		"too many lengths": func(op *stablehlo.Op) { op.Attrs.FftLength = []int64{2, 3, 4} },
		"no lengths":       func(op *stablehlo.Op) { op.Attrs.FftLength = nil },
		"wrong half":       func(op *stablehlo.Op) { op.Attrs.FftLength = []int64{6} },
		"unknown kind":     func(op *stablehlo.Op) { op.Attrs.FftType = "DCT" },
		"wrong result":     func(op *stablehlo.Op) { op.Results[0].Type.DType = stablehlo.F32 },
	}
	for name, mut := range muts {
		t.Run(name, func(t *testing.T) {
			m := parseText(t, src)
			mut(m.Main().Body.Ops[0])
			var err error
			func() {
				defer func() {
					if r := recover(); r != nil {
						t.Fatalf("compile panicked: %v", r)
					}
				}()
				var exe *Executable
				exe, err = New().CompileModule(context.Background(), m, nil)
				if exe != nil {
					exe.Close()
				}
			}()
			if err == nil {
				t.Fatal("a malformed fft compiled")
			}
		})
	}
}

// TestFFTRadix2NoFMA checks that the radix-2 transform rounds every
// product as Go does (the interpreter's radix2, compiled by Go for amd64,
// never fuses a multiply-add), although kernels are compiled with
// -ffp-contract=fast and -march=native. libm's cos and sin need not round
// the twiddle factors as Go's math.Sincos does, so the test reads the
// kernel's own ones (the transform of an impulse at 1 is exactly
// tw[k] = X[k] for k < n/2, every product in it being by 0 or 1), runs
// the interpreter's algorithm on them in Go, and wants the same bits.
func TestFFTRadix2NoFMA(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("Go fuses multiply-adds on " + runtime.GOARCH)
	}
	const rows = 64
	for _, n := range []int64{8, 16, 64, 256} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			ct := fmt.Sprintf("tensor<%dx%dxcomplex<f64>>", rows, n)
			m, exe := compileText(t, fftProgram(fftCase{typ: "FFT", in: ct, out: ct, lengths: []int64{n}}))
			imp := stablehlo.NewTensor(m.Main().Args[0].Type)
			fillPart(imp, 1, 0, 1)
			out, err := exe.Run(context.Background(), []*stablehlo.Tensor{imp})
			if err != nil {
				t.Fatal(err)
			}
			tw := make([]complex128, n/2)
			for k := range tw {
				tw[k] = complex(partAt(out[0], int64(k), 0), partAt(out[0], int64(k), 1))
			}
			args := complexArgs(m.Main(), rand.New(rand.NewPCG(14, 17)), 1, false)
			got, err := exe.Run(context.Background(), args)
			if err != nil {
				t.Fatal(err)
			}
			x := args[0]
			for r := int64(0); r < rows; r++ {
				a := make([]complex128, n)
				for j := range a {
					a[j] = complex(partAt(x, r*n+int64(j), 0), partAt(x, r*n+int64(j), 1))
				}
				goRadix2(a, tw)
				for j, v := range a {
					e := r*n + int64(j)
					g := complex(partAt(got[0], e, 0), partAt(got[0], e, 1))
					if math.Float64bits(real(g)) != math.Float64bits(real(v)) || math.Float64bits(imag(g)) != math.Float64bits(imag(v)) {
						t.Fatalf("row %d bin %d: cpu %v, Go %v", r, j, g, v)
					}
				}
			}
		})
	}
}

// goRadix2 is the interpreter's radix2 (stablehlo/fft.go), with Go's
// unfused complex products.
func goRadix2(a, tw []complex128) {
	n := len(a)
	for i, j := 1, 0; i < n; i++ {
		bit := n >> 1
		for ; j&bit != 0; bit >>= 1 {
			j ^= bit
		}
		j ^= bit
		if i < j {
			a[i], a[j] = a[j], a[i]
		}
	}
	for size := 2; size <= n; size <<= 1 {
		half, step := size/2, n/size
		for start := 0; start < n; start += size {
			for j := 0; j < half; j++ {
				t := a[start+j+half] * tw[j*step]
				u := a[start+j]
				a[start+j] = u + t
				a[start+j+half] = u - t
			}
		}
	}
}

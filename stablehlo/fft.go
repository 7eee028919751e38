package stablehlo

import (
	"math"
	"math/bits"
	"math/cmplx"
	"slices"
)

// evalFFT evaluates fft (StableHLO spec §fft; XLA's operation semantics
// "Fft") over the innermost len(L) dimensions. Every type computes in
// complex128 and rounds once to the result type, so complex<f32> results
// are as accurate as f32 can hold, for any length (not only powers of
// two). The forward transform is X[k] = Σ x[j]·e^(-2πi·jk/n); the
// inverse ones divide by n, as XLA and NumPy do. RFFT keeps the
// n/2+1 non-negative frequencies of the last dimension; IRFFT rebuilds
// the rest by Hermitian symmetry, so the imaginary parts of the zero and
// (for even n) Nyquist frequencies are ignored, as in XLA's CPU runtime.
func evalFFT(x *Tensor, rt TensorType, typ string, L []int64) *Tensor {
	shape := slices.Clone(x.Type.Shape)
	buf := make([]complex128, x.Type.NumElements())
	switch x.Type.DType {
	case C64:
		for i, v := range x.Complex64s() {
			buf[i] = complex128(v)
		}
	case C128:
		copy(buf, x.Complex128s())
	case F32:
		for i, v := range x.Float32s() {
			buf[i] = complex(float64(v), 0)
		}
	case F64:
		for i, v := range x.Float64s() {
			buf[i] = complex(v, 0)
		}
	}
	r, k := len(shape), len(L)
	switch typ {
	case "FFT", "IFFT":
		for d := r - k; d < r; d++ {
			transformDim(buf, shape, d, typ == "IFFT")
		}
	case "RFFT":
		// The last dimension first, so the others transform only the
		// kept half.
		transformDim(buf, shape, r-1, false)
		buf, shape = resizeLast(buf, shape, rt.Shape[r-1], false)
		for d := r - k; d < r-1; d++ {
			transformDim(buf, shape, d, false)
		}
	case "IRFFT":
		for d := r - k; d < r-1; d++ {
			transformDim(buf, shape, d, true)
		}
		buf, shape = resizeLast(buf, shape, rt.Shape[r-1], true)
		transformDim(buf, shape, r-1, true)
	}
	out := NewTensor(rt)
	switch rt.DType {
	case C64:
		os := out.Complex64s()
		for i, v := range buf {
			os[i] = complex64(v)
		}
	case C128:
		copy(out.Complex128s(), buf)
	case F32:
		os := out.Float32s()
		for i, v := range buf {
			os[i] = float32(real(v))
		}
	case F64:
		os := out.Float64s()
		for i, v := range buf {
			os[i] = real(v)
		}
	}
	return out
}

// resizeLast changes the last dimension of buf (row-major, shape) to n:
// truncating keeps the first n entries of each row (RFFT); with hermitian
// set, the row holding frequencies 0..m-1 grows to all n frequencies,
// X[n-j] = conj(X[j]) (IRFFT).
func resizeLast(buf []complex128, shape []int64, n int64, hermitian bool) ([]complex128, []int64) {
	r := len(shape)
	m := shape[r-1]
	rows := int64(0)
	if m > 0 {
		rows = int64(len(buf)) / m
	}
	out := make([]complex128, rows*n)
	for row := int64(0); row < rows; row++ {
		src, dst := buf[row*m:(row+1)*m], out[row*n:(row+1)*n]
		copy(dst, src)
		if hermitian {
			// m = n/2+1, so n-idx < m for every idx >= m.
			for idx := m; idx < n; idx++ {
				dst[idx] = cmplx.Conj(src[n-idx])
			}
		}
	}
	ns := slices.Clone(shape)
	ns[r-1] = n
	return out, ns
}

// transformDim applies the 1-D transform along dimension d of buf.
func transformDim(buf []complex128, shape []int64, d int, inverse bool) {
	n := shape[d]
	if n <= 1 || len(buf) == 0 {
		return // a length-1 transform (forward or inverse) is the identity
	}
	inner := int64(1)
	for _, s := range shape[d+1:] {
		inner *= s
	}
	outer := int64(len(buf)) / (n * inner)
	plan := newFFTPlan(int(n))
	line := make([]complex128, n)
	for o := int64(0); o < outer; o++ {
		for in := int64(0); in < inner; in++ {
			base := o*n*inner + in
			for j := int64(0); j < n; j++ {
				line[j] = buf[base+j*inner]
			}
			plan.run(line, inverse)
			for j := int64(0); j < n; j++ {
				buf[base+j*inner] = line[j]
			}
		}
	}
}

// fftPlan transforms sequences of one length n: radix-2 for powers of
// two, a direct sum for short other lengths, Bluestein's chirp-z
// algorithm (a power-of-two convolution) for long ones.
type fftPlan struct {
	n       int
	tw      []complex128 // radix-2: e^(-2πi j/n), j < n/2; direct: e^(-2πi j/n), j < n
	chirp   []complex128 // Bluestein: e^(-πi j²/n), j < n
	conv    *fftPlan     // Bluestein: the power-of-two plan of length m
	kernelF []complex128 // Bluestein: FFT of the conjugate chirp, length m
	work    []complex128
}

// directMax is the longest non-power-of-two length summed directly.
const directMax = 32

// unitRoot is e^(-2πi·j/n), with j reduced mod n so the angle stays
// small and exact.
func unitRoot(j, n int64) complex128 {
	j %= n
	s, c := math.Sincos(-2 * math.Pi * float64(j) / float64(n))
	return complex(c, s)
}

func newFFTPlan(n int) *fftPlan {
	p := &fftPlan{n: n}
	switch {
	case n&(n-1) == 0:
		p.tw = make([]complex128, n/2)
		for j := range p.tw {
			p.tw[j] = unitRoot(int64(j), int64(n))
		}
	case n <= directMax:
		p.tw = make([]complex128, n)
		for j := range p.tw {
			p.tw[j] = unitRoot(int64(j), int64(n))
		}
		p.work = make([]complex128, n)
	default:
		m := 1 << bits.Len(uint(2*n-2))
		p.conv = newFFTPlan(m)
		p.chirp = make([]complex128, n)
		for j := range p.chirp {
			// e^(-πi j²/n) = e^(-2πi (j² mod 2n) / 2n).
			jj := int64(j) * int64(j) % int64(2*n)
			p.chirp[j] = unitRoot(jj, int64(2*n))
		}
		p.kernelF = make([]complex128, m)
		p.kernelF[0] = cmplx.Conj(p.chirp[0])
		for j := 1; j < n; j++ {
			p.kernelF[j] = cmplx.Conj(p.chirp[j])
			p.kernelF[m-j] = cmplx.Conj(p.chirp[j])
		}
		p.conv.run(p.kernelF, false)
		p.work = make([]complex128, m)
	}
	return p
}

// run transforms a (length n) in place; the inverse divides by n.
func (p *fftPlan) run(a []complex128, inverse bool) {
	if inverse {
		// ifft(x) = conj(fft(conj(x))) / n.
		for i := range a {
			a[i] = cmplx.Conj(a[i])
		}
		p.forward(a)
		s := 1 / float64(p.n)
		for i := range a {
			a[i] = complex(real(a[i])*s, -imag(a[i])*s)
		}
		return
	}
	p.forward(a)
}

func (p *fftPlan) forward(a []complex128) {
	n := p.n
	switch {
	case n&(n-1) == 0:
		radix2(a, p.tw)
	case p.conv == nil:
		for k := 0; k < n; k++ {
			var s complex128
			for j, v := range a {
				s += v * p.tw[(j*k)%n]
			}
			p.work[k] = s
		}
		copy(a, p.work)
	default:
		// X[k] = c[k] · Σ_j (x[j] c[j]) conj(c[k-j]) with c[j] = e^(-πi j²/n).
		w := p.work
		clear(w)
		for j, v := range a {
			w[j] = v * p.chirp[j]
		}
		p.conv.run(w, false)
		for i := range w {
			w[i] *= p.kernelF[i]
		}
		p.conv.run(w, true)
		for k := range a {
			a[k] = w[k] * p.chirp[k]
		}
	}
}

// radix2 is an iterative decimation-in-time FFT; tw holds e^(-2πi j/n)
// for j < n/2.
func radix2(a []complex128, tw []complex128) {
	n := len(a)
	if n <= 1 {
		return
	}
	shift := 64 - bits.Len(uint(n-1))
	for i := 0; i < n; i++ {
		j := int(bits.Reverse64(uint64(i)) >> shift)
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

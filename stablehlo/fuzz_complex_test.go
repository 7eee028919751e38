package stablehlo

import (
	"errors"
	"fmt"
	"slices"
	"testing"
)

// FuzzTensorLiteral feeds arbitrary text to ParseTensorLiteral (complex
// elements among the seeds): it must never panic, and whatever it accepts
// must print to a literal that parses back to the same bytes and prints
// identically.
func FuzzTensorLiteral(f *testing.F) {
	for _, s := range []string{
		`dense<(1.000000e+00,2.000000e+00)> : tensor<complex<f32>>`,
		`dense<[(1.0,2.0), (3.0,-4.0)]> : tensor<2xcomplex<f64>>`,
		`dense<[[(1, 2)], [(0x7FC00000, 0xFF800000)]]> : tensor<2x1xcomplex<f32>>`,
		`dense<(0x7ff8000000000000, 1.0e-06)> : tensor<3xcomplex<f32>>`,
		`dense<"0x0000803F00000040"> : tensor<complex<f32>>`,
		`dense<[1, 2]> : tensor<2xi32>`,
	} {
		f.Add(s)
	}
	saved := maxConstantBytes
	maxConstantBytes = 1 << 12
	f.Cleanup(func() { maxConstantBytes = saved })
	f.Fuzz(func(t *testing.T, s string) {
		x, err := ParseTensorLiteral(s)
		if err != nil {
			return
		}
		printed := x.String()
		y, err := ParseTensorLiteral(printed)
		if err != nil {
			t.Fatalf("%q prints as %q, which does not parse: %v", s, printed, err)
		}
		if !y.Equal(x) || y.String() != printed {
			t.Fatalf("%q: round trip %q -> %q", s, printed, y.String())
		}
	})
}

// fftShapeRule is the spec's fft type rule (§fft (C1)-(C5), with XLA's
// requirement that FFT and IFFT operands end in fft_length), written
// independently of inferFFT: it reports whether (in, out) is valid.
func fftShapeRule(typ string, in, out TensorType, L []int64) bool {
	k, r := len(L), in.Rank()
	if k < 1 || k > 3 || k > r || out.Rank() != r {
		return false
	}
	half := func(n int64) int64 {
		if n == 0 {
			return 0
		}
		return n/2 + 1
	}
	wantIn, wantOut := slices.Clone(in.Shape), slices.Clone(in.Shape)
	copy(wantIn[r-k:], L)
	copy(wantOut[r-k:], L)
	var inOK, outOK bool
	switch typ {
	case "FFT", "IFFT":
		inOK, outOK = in.DType.IsComplex(), out.DType == in.DType
	case "RFFT":
		inOK = in.DType == F32 || in.DType == F64
		outOK = out.DType.IsComplex() && out.DType.ComplexElem() == in.DType
		wantOut[r-1] = half(L[k-1])
	case "IRFFT":
		inOK = in.DType.IsComplex()
		outOK = out.DType == in.DType.ComplexElem()
		wantIn[r-1] = half(L[k-1])
	}
	return inOK && outOK && slices.Equal(in.Shape, wantIn) && slices.Equal(out.Shape, wantOut)
}

// FuzzFFT checks fft's verifier against fftShapeRule on arbitrary types,
// shapes and lengths, and that every accepted program evaluates (no
// internal error, the declared result type).
func FuzzFFT(f *testing.F) {
	f.Add(uint8(0), uint8(2), uint8(2), uint8(3), uint8(4), uint8(0), uint8(1), uint8(4), uint8(0), uint8(0), uint8(0))
	f.Add(uint8(2), uint8(1), uint8(3), uint8(2), uint8(6), uint8(0), uint8(2), uint8(2), uint8(6), uint8(0), uint8(0))
	f.Add(uint8(3), uint8(2), uint8(2), uint8(2), uint8(4), uint8(0), uint8(1), uint8(6), uint8(0), uint8(0), uint8(0))
	f.Add(uint8(1), uint8(3), uint8(3), uint8(0), uint8(5), uint8(7), uint8(3), uint8(0), uint8(5), uint8(7), uint8(1))
	types := []string{"FFT", "IFFT", "RFFT", "IRFFT"}
	dts := []DType{F32, F64, C64, C128, I32}
	f.Fuzz(func(t *testing.T, typ, dt, rank, d0, d1, d2, k, l0, l1, l2, perturb uint8) {
		fftType := types[int(typ)%len(types)]
		in := TensorType{DType: dts[int(dt)%len(dts)], Shape: []int64{int64(d0 % 10), int64(d1 % 10), int64(d2 % 10)}[:rank%4]}
		L := []int64{int64(l0 % 10), int64(l1 % 10), int64(l2 % 10), 1}[:k%5]
		// The result the rule expects (when it can say), then perturbed.
		out := TensorType{DType: in.DType, Shape: slices.Clone(in.Shape)}
		switch fftType {
		case "RFFT":
			out.DType = complexOf(in.DType)
		case "IRFFT":
			out.DType = in.DType.ComplexElem()
		}
		if r := out.Rank(); r > 0 && len(L) > 0 && len(L) <= r {
			copy(out.Shape[r-len(L):], L)
			if n := L[len(L)-1]; fftType == "RFFT" && n > 0 {
				out.Shape[r-1] = n/2 + 1
			} else if fftType == "RFFT" {
				out.Shape[r-1] = 0
			}
		}
		switch {
		case perturb%7 == 1 && out.Rank() > 0:
			out.Shape[0]++
		case perturb%7 == 2:
			out.DType = dts[int(perturb/7)%len(dts)]
		}
		if out.DType == InvalidDType {
			out.DType = F32
		}
		src := fmt.Sprintf(`func.func @main(%%x: %s) -> %s {
  %%0 = "stablehlo.fft"(%%x) {fft_type = #stablehlo<fft_type %s>, fft_length = %s} : (%s) -> %s
  return %%0 : %s
}`, in, out, fftType, arrayI64(L), in, out, out)
		m, err := Parse([]byte(src), "fuzz.mlir")
		valid := fftShapeRule(fftType, in, out, L)
		if (err == nil) != valid {
			t.Fatalf("verifier says %v, the rule says valid=%v:\n%s", err, valid, src)
		}
		if err != nil {
			return
		}
		x := RandomArgs(m.Main(), 1)
		res, err := Eval(m, "", x)
		if err != nil {
			if errors.Is(err, ErrInternal) {
				t.Fatalf("%v\n%s", err, src)
			}
			t.Fatalf("eval: %v\n%s", err, src)
		}
		if !res[0].Type.Equal(out) {
			t.Fatalf("result %s, declared %s", res[0].Type, out)
		}
	})
}

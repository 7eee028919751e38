package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// complexSpecials are part values that exercise the special cases of
// complex arithmetic: signed zeros, infinities, NaN, and magnitudes where
// naive formulas overflow or underflow.
var complexSpecials = []float64{0, math.Copysign(0, -1), math.Inf(1), math.Inf(-1), math.NaN(), 1, -1, 1e30, -1e-30, 3e38, 1e-40}

// fillPart writes v into element i of a float or complex tensor (part 0
// real, 1 imaginary), or of an integer tensor (truncated).
func fillPart(t *stablehlo.Tensor, i int64, part int, v float64) {
	d := t.Type.DType
	switch d {
	case stablehlo.F32:
		binary.LittleEndian.PutUint32(t.Data[4*i:], math.Float32bits(float32(v)))
	case stablehlo.F64:
		binary.LittleEndian.PutUint64(t.Data[8*i:], math.Float64bits(v))
	case stablehlo.C64:
		binary.LittleEndian.PutUint32(t.Data[8*i+4*int64(part):], math.Float32bits(float32(v)))
	case stablehlo.C128:
		binary.LittleEndian.PutUint64(t.Data[16*i+8*int64(part):], math.Float64bits(v))
	case stablehlo.I32:
		binary.LittleEndian.PutUint32(t.Data[4*i:], uint32(int32(v)))
	}
}

// complexArgs makes arguments for fn: parts uniform in [-scale, scale]
// with random magnitudes down to 2^-20 of that, and, with specials, the
// special values in the first half of the elements of every float or
// complex argument (real and imaginary parts paired in every combination
// as the argument index shifts them).
func complexArgs(fn *stablehlo.Func, rng *rand.Rand, scale float64, specials bool) []*stablehlo.Tensor {
	args := make([]*stablehlo.Tensor, len(fn.Args))
	for a, v := range fn.Args {
		t := stablehlo.NewTensor(v.Type)
		n := t.Type.NumElements()
		for i := int64(0); i < n; i++ {
			for p := 0; p < 2; p++ {
				x := (rng.Float64()*2 - 1) * scale
				if rng.IntN(4) == 0 {
					x *= math.Pow(2, -float64(rng.IntN(20)))
				}
				if t.Type.DType == stablehlo.I32 {
					x = float64(rng.IntN(9) - 4)
				}
				ns := int64(len(complexSpecials))
				if specials && i < min(ns*ns/2, n/2) && t.Type.DType != stablehlo.I32 {
					k := (i + int64(a)*3) % (ns * ns)
					if p == 0 {
						x = complexSpecials[k%ns]
					} else {
						x = complexSpecials[(k/ns)%ns]
					}
				}
				fillPart(t, i, p, x)
			}
		}
		args[a] = t
	}
	return args
}

// partAt returns part p (0 real, 1 imaginary; a real type's imaginary
// part is 0) of element i of t as a float64.
func partAt(t *stablehlo.Tensor, i int64, p int) float64 {
	switch t.Type.DType {
	case stablehlo.C64:
		return float64(math.Float32frombits(binary.LittleEndian.Uint32(t.Data[8*i+4*int64(p):])))
	case stablehlo.C128:
		return math.Float64frombits(binary.LittleEndian.Uint64(t.Data[16*i+8*int64(p):]))
	}
	if p == 1 {
		return 0
	}
	return t.Float64At(i)
}

// closeComplex compares cpu and interpreter outputs: integers and
// booleans exactly; floats and complex values part by part, NaN matching
// any NaN and infinities exactly, finite values bit for bit when tol is 0
// and otherwise within tol relative to the element's modulus (scaled by
// floor, for results whose modulus is tiny but whose error is set by the
// operands).
func closeComplex(got, want *stablehlo.Tensor, tol, floor float64) (int64, bool) {
	if !got.Type.Equal(want.Type) {
		return -1, false
	}
	d := got.Type.DType
	n := got.Type.NumElements()
	if !d.IsFloat() && !d.IsComplex() {
		es := int64(d.Size())
		for i := int64(0); i < n; i++ {
			if string(got.Data[i*es:(i+1)*es]) != string(want.Data[i*es:(i+1)*es]) {
				return i, false
			}
		}
		return 0, true
	}
	for i := int64(0); i < n; i++ {
		gr, gi, wr, wi := partAt(got, i, 0), partAt(got, i, 1), partAt(want, i, 0), partAt(want, i, 1)
		mod := math.Max(math.Hypot(wr, wi), floor)
		for _, pq := range [][2]float64{{gr, wr}, {gi, wi}} {
			g, w := pq[0], pq[1]
			switch {
			case math.IsNaN(g) || math.IsNaN(w):
				if !(math.IsNaN(g) && math.IsNaN(w)) {
					return i, false
				}
			case math.IsInf(g, 0) || math.IsInf(w, 0) || tol == 0:
				if math.Float64bits(g) != math.Float64bits(w) {
					return i, false
				}
			case math.Abs(g-w) > tol*mod:
				return i, false
			}
		}
	}
	return 0, true
}

func assertCloseComplex(t *testing.T, got, want []*stablehlo.Tensor, tol, floor float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d outputs, want %d", len(got), len(want))
	}
	for j := range got {
		if i, ok := closeComplex(got[j], want[j], tol, floor); !ok {
			t.Errorf("output %d differs at element %d:\ncpu    %v\ninterp %v", j, i, got[j], want[j])
		}
	}
}

// complexMovementProgram covers every op whose complex result must match
// the interpreter bit for bit: movement, select, arithmetic (Go's complex
// +, -, *, / rules, abs as hypot), conversions, comparisons, reductions
// and dot_general.
func complexMovementProgram(ct, ft, other string) string {
	C := func(shape string) string { return "tensor<" + shape + "x" + ct + ">" }
	F := func(shape string) string { return "tensor<" + shape + "x" + ft + ">" }
	var b strings.Builder
	w := func(format string, args ...any) { fmt.Fprintf(&b, "  "+format+"\n", args...) }
	fmt.Fprintf(&b, "func.func @main(%%a: %s, %%b: %s, %%r: %s, %%s: %s, %%n: tensor<4x6xi32>) -> (", C("4x6"), C("4x6"), F("4x6"), F("4x6"))
	var rets, types []string
	ret := func(v, ty string) { rets = append(rets, v); types = append(types, ty) }
	w("%%add = stablehlo.add %%a, %%b : %s", C("4x6"))
	ret("%add", C("4x6"))
	w("%%sub = stablehlo.subtract %%a, %%b : %s", C("4x6"))
	ret("%sub", C("4x6"))
	w("%%mul = stablehlo.multiply %%a, %%b : %s", C("4x6"))
	ret("%mul", C("4x6"))
	w("%%div = stablehlo.divide %%a, %%b : %s", C("4x6"))
	ret("%div", C("4x6"))
	w("%%neg = stablehlo.negate %%a : %s", C("4x6"))
	ret("%neg", C("4x6"))
	w("%%abs = stablehlo.abs %%a : (%s) -> %s", C("4x6"), F("4x6"))
	ret("%abs", F("4x6"))
	w("%%mk = stablehlo.complex %%r, %%s : %s", C("4x6"))
	ret("%mk", C("4x6"))
	w("%%re = stablehlo.real %%div : (%s) -> %s", C("4x6"), F("4x6"))
	ret("%re", F("4x6"))
	w("%%im = stablehlo.imag %%mul : (%s) -> %s", C("4x6"), F("4x6"))
	ret("%im", F("4x6"))
	w("%%imr = stablehlo.imag %%r : (%s) -> %s", F("4x6"), F("4x6"))
	ret("%imr", F("4x6"))
	w("%%cn = stablehlo.convert %%n : (tensor<4x6xi32>) -> %s", C("4x6"))
	ret("%cn", C("4x6"))
	w("%%cr = stablehlo.convert %%r : (%s) -> %s", F("4x6"), C("4x6"))
	ret("%cr", C("4x6"))
	w("%%ci = stablehlo.convert %%a : (%s) -> tensor<4x6xi32>", C("4x6"))
	ret("%ci", "tensor<4x6xi32>")
	w("%%cf = stablehlo.convert %%a : (%s) -> tensor<4x6xf16>", C("4x6"))
	ret("%cf", "tensor<4x6xf16>")
	w("%%co = stablehlo.convert %%a : (%s) -> tensor<4x6x%s>", C("4x6"), other)
	ret("%co", "tensor<4x6x"+other+">")
	for _, dir := range []string{"EQ", "NE", "LT", "GE"} {
		v := "%cmp" + dir
		w("%s = stablehlo.compare %s, %%a, %%mk, FLOAT : (%s, %s) -> tensor<4x6xi1>", v, dir, C("4x6"), C("4x6"))
		ret(v, "tensor<4x6xi1>")
	}
	w("%%eqs = stablehlo.compare EQ, %%a, %%a : (%s, %s) -> tensor<4x6xi1>", C("4x6"), C("4x6"))
	w("%%sel = stablehlo.select %%cmpLT, %%a, %%mul : tensor<4x6xi1>, %s", C("4x6"))
	ret("%sel", C("4x6"))
	ret("%eqs", "tensor<4x6xi1>")
	// Movement.
	w("%%tr = stablehlo.transpose %%mul, dims = [1, 0] : (%s) -> %s", C("4x6"), C("6x4"))
	ret("%tr", C("6x4"))
	w("%%rv = stablehlo.reverse %%add, dims = [1] : %s", C("4x6"))
	ret("%rv", C("4x6"))
	w("%%sl = stablehlo.slice %%sub [1:4, 0:6:2] : (%s) -> %s", C("4x6"), C("3x3"))
	ret("%sl", C("3x3"))
	w("%%rs = stablehlo.reshape %%a : (%s) -> %s", C("4x6"), C("3x8"))
	ret("%rs", C("3x8"))
	w("%%k = stablehlo.constant dense<(1.5, -2.25)> : %s", C("4x6"))
	w("%%kv = stablehlo.constant dense<[(1.0, 2.0), (-0.0, 3.5), (0.25, -1.0)]> : %s", C("3"))
	w("%%bc = stablehlo.broadcast_in_dim %%kv, dims = [1] : (%s) -> %s", C("3"), C("2x3"))
	ret("%bc", C("2x3"))
	w("%%ka = stablehlo.add %%a, %%k : %s", C("4x6"))
	ret("%ka", C("4x6"))
	w("%%cc = stablehlo.concatenate %%a, %%neg, dim = 0 : (%s, %s) -> %s", C("4x6"), C("4x6"), C("8x6"))
	ret("%cc", C("8x6"))
	scal := strings.Replace(C(""), "<x", "<", 1)
	w("%%pv = stablehlo.constant dense<(0.5, -0.5)> : %s", scal)
	w("%%pd = stablehlo.pad %%b, %%pv, low = [1, 0], high = [0, 2], interior = [1, 0] : (%s, %s) -> %s", C("4x6"), scal, C("8x8"))
	ret("%pd", C("8x8"))
	w("%%io = stablehlo.iota dim = 1 : %s", C("4x6"))
	ret("%io", C("4x6"))
	// Reductions in order, and a dot_general.
	w("%%z = stablehlo.constant dense<(0.0, 0.0)> : %s", scal)
	w("%%one = stablehlo.constant dense<(1.0, 0.0)> : %s", scal)
	w("%%sum = stablehlo.reduce(%%mul init: %%z) applies stablehlo.add across dimensions = [1] : (%s, %s) -> %s", C("4x6"), scal, C("4"))
	ret("%sum", C("4"))
	w("%%prd = stablehlo.reduce(%%b init: %%one) applies stablehlo.multiply across dimensions = [0] : (%s, %s) -> %s", C("4x6"), scal, C("6"))
	ret("%prd", C("6"))
	w("%%dot = stablehlo.dot_general %%a, %%tr, contracting_dims = [1] x [0] : (%s, %s) -> %s", C("4x6"), C("6x4"), C("4x4"))
	ret("%dot", C("4x4"))
	w("%%bdot = stablehlo.dot_general %%a, %%b, batching_dims = [0] x [0], contracting_dims = [1] x [1] : (%s, %s) -> %s", C("4x6"), C("4x6"), C("4"))
	ret("%bdot", C("4"))
	fmt.Fprintf(&b, "%s) {\n", strings.Join(types, ", "))
	return assembleProgram(b.String(), rets, types)
}

// assembleProgram turns a "func.func @main(args) -> (" header, body
// lines and a trailing "types) {" line into a complete module with a
// return of rets.
func assembleProgram(text string, rets, types []string) string {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	header, last := lines[0], lines[len(lines)-1]
	// header ends with "-> (" + the first body line; split it.
	i := strings.Index(header, "-> (")
	sig := header[:i+len("-> (")]
	first := header[i+len("-> ("):]
	body := append([]string{first}, lines[1:len(lines)-1]...)
	return sig + strings.TrimSuffix(last, " {") + " {\n" + strings.Join(body, "\n") + "\n  return " +
		strings.Join(rets, ", ") + " : " + strings.Join(types, ", ") + "\n}\n"
}

// complexMathProgram applies every transcendental op on complex values
// (compared with a tolerance: libm and Go's math package may differ in
// the last ulp).
func complexMathProgram(ct string) string {
	T := "tensor<8x16x" + ct + ">"
	var b strings.Builder
	fmt.Fprintf(&b, "func.func @main(%%a: %s, %%b: %s) -> (", T, T)
	var rets, types []string
	for _, op := range []string{"exponential", "log", "log_plus_one", "exponential_minus_one", "sqrt", "rsqrt",
		"sine", "cosine", "tan", "tanh", "sign", "logistic"} {
		v := "%" + op
		fmt.Fprintf(&b, "  %s = stablehlo.%s %%a : %s\n", v, op, T)
		rets, types = append(rets, v), append(types, T)
	}
	fmt.Fprintf(&b, "  %%pow = stablehlo.power %%a, %%b : %s\n", T)
	rets, types = append(rets, "%pow"), append(types, T)
	fmt.Fprintf(&b, "%s) {\n", strings.Join(types, ", "))
	return assembleProgram(b.String(), rets, types)
}

// TestDifferentialComplex compares the cpu backend with the interpreter
// on complex<f32> and complex<f64> programs, seeded: data movement,
// arithmetic, conversions, comparisons, reductions and dot_general bit
// for bit (with infinities, NaN and signed zeros among the inputs), the
// transcendental ops within a tolerance.
func TestDifferentialComplex(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 11))
	type prog struct {
		src        string
		tol, scale float64
		specials   bool
	}
	var progs []prog
	for _, ct := range []struct{ c, f, other string }{{"complex<f32>", "f32", "complex<f64>"}, {"complex<f64>", "f64", "complex<f32>"}} {
		progs = append(progs, prog{src: complexMovementProgram(ct.c, ct.f, ct.other), scale: 100, specials: true})
		tol := 1e-6
		if ct.c == "complex<f64>" {
			tol = 1e-12
		}
		progs = append(progs, prog{src: complexMathProgram(ct.c), tol: tol, scale: 3})
		progs = append(progs, prog{src: complexMathProgram(ct.c), tol: tol, scale: 3, specials: true})
	}
	randomDifferential(t, len(progs), func(i int) (string, string) {
		return fmt.Sprint(i), progs[i].src
	}, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		p := progs[i]
		for run := 0; run < 3; run++ {
			args := complexArgs(m.Main(), rng, p.scale, p.specials && run > 0)
			got, want := runBoth(t, exe, m, args)
			assertCloseComplex(t, got, want, p.tol, 1e-30)
		}
	})
}

// fftCase is one fft op: its type, operand and result types, lengths.
type fftCase struct {
	typ      string
	in, out  string
	lengths  []int64
	elemType string
}

func fftCases() []fftCase {
	var cs []fftCase
	shape := func(batch []int64, dims []int64, et string) string {
		var s []string
		for _, d := range append(append([]int64(nil), batch...), dims...) {
			s = append(s, fmt.Sprint(d))
		}
		return "tensor<" + strings.Join(append(s, et), "x") + ">"
	}
	add := func(batch, lens []int64, ct, ft string) {
		k := len(lens)
		half := append([]int64(nil), lens...)
		half[k-1] = lens[k-1]/2 + 1
		cs = append(cs,
			fftCase{"FFT", shape(batch, lens, ct), shape(batch, lens, ct), lens, ct},
			fftCase{"IFFT", shape(batch, lens, ct), shape(batch, lens, ct), lens, ct},
			fftCase{"RFFT", shape(batch, lens, ft), shape(batch, half, ct), lens, ct},
			fftCase{"IRFFT", shape(batch, half, ct), shape(batch, lens, ft), lens, ct})
	}
	for _, n := range []int64{1, 2, 5, 8, 12, 16, 100} {
		add([]int64{3}, []int64{n}, "complex<f32>", "f32")
		add(nil, []int64{n}, "complex<f64>", "f64")
	}
	add([]int64{2}, []int64{4, 6}, "complex<f64>", "f64")
	add(nil, []int64{5, 8}, "complex<f32>", "f32")
	add([]int64{2}, []int64{3, 2, 4}, "complex<f64>", "f64")
	add([]int64{2, 3}, []int64{12}, "complex<f32>", "f32")
	return cs
}

func fftProgram(c fftCase) string {
	var l []string
	for _, n := range c.lengths {
		l = append(l, fmt.Sprint(n))
	}
	return fmt.Sprintf("func.func @main(%%x: %s) -> %s {\n  %%0 = stablehlo.fft %%x, type = %s, length = [%s] : (%s) -> %s\n  return %%0 : %s\n}\n",
		c.in, c.out, c.typ, strings.Join(l, ", "), c.in, c.out, c.out)
}

// TestDifferentialFFT compares the cpu backend's fft with the
// interpreter's for FFT, IFFT, RFFT and IRFFT over one to three
// dimensions, lengths that take each of its paths (1, powers of two,
// direct sums, and Bluestein's algorithm at 100), with and without batch
// dimensions. Both compute in double precision by different algorithms,
// so the results agree to rounding, relative to the largest output of
// the transform.
func TestDifferentialFFT(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 12))
	cs := fftCases()
	randomDifferential(t, len(cs), func(i int) (string, string) {
		c := cs[i]
		return fmt.Sprintf("%s_%v_%s", c.typ, c.lengths, strings.NewReplacer("<", "", ">", "").Replace(c.in)), fftProgram(c)
	}, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		tol := 1e-5
		if cs[i].elemType == "complex<f64>" {
			tol = 1e-11
		}
		args := complexArgs(m.Main(), rng, 1, false)
		got, want := runBoth(t, exe, m, args)
		floor := 0.0
		for j := int64(0); j < want[0].Type.NumElements(); j++ {
			floor = math.Max(floor, cmplx.Abs(complex(partAt(want[0], j, 0), partAt(want[0], j, 1))))
		}
		assertCloseComplex(t, got, want, tol, floor)
	})
}

// complexIndexProgram has the indexing, window, sort and control-flow
// ops on complex values (CT stands for the complex type), with regions
// that compute on them.
const complexIndexProgram = `func.func @main(%x: tensor<5x4xCT>, %ii: tensor<3x1xi32>, %si: tensor<6x1xi32>, %su: tensor<6x2xCT>, %d0: tensor<i32>, %w: tensor<5x4xCT>, %k: tensor<5x4xCT>) ->
    (tensor<3x3xCT>, tensor<5x4xCT>, tensor<3x2xCT>, tensor<5x4xCT>, tensor<4x3xCT>, tensor<5x4xCT>, tensor<5x4xCT>, tensor<5x4xCT>, tensor<5xCT>) {
  %g0 = "stablehlo.gather"(%x, %ii) <{dimension_numbers = #stablehlo.gather<offset_dims = [1], collapsed_slice_dims = [0], start_index_map = [0], index_vector_dim = 1>, slice_sizes = array<i64: 1, 3>}> : (tensor<5x4xCT>, tensor<3x1xi32>) -> tensor<3x3xCT>
  %s0 = "stablehlo.scatter"(%x, %si, %su) <{scatter_dimension_numbers = #stablehlo.scatter<update_window_dims = [1], inserted_window_dims = [0], scatter_dims_to_operand_dims = [0], index_vector_dim = 1>}> ({
  ^bb0(%a: tensor<CT>, %b: tensor<CT>):
    %t = stablehlo.multiply %a, %b : tensor<CT>
    %u = stablehlo.add %t, %b : tensor<CT>
    stablehlo.return %u : tensor<CT>
  }) : (tensor<5x4xCT>, tensor<6x1xi32>, tensor<6x2xCT>) -> tensor<5x4xCT>
  %ds = stablehlo.dynamic_slice %x, %d0, %d0, sizes = [3, 2] : (tensor<5x4xCT>, tensor<i32>, tensor<i32>) -> tensor<3x2xCT>
  %du = stablehlo.dynamic_update_slice %x, %ds, %d0, %d0 : (tensor<5x4xCT>, tensor<3x2xCT>, tensor<i32>, tensor<i32>) -> tensor<5x4xCT>
  %zero = stablehlo.constant dense<(0.0, 0.0)> : tensor<CT>
  %rw = "stablehlo.reduce_window"(%x, %zero) <{window_dimensions = array<i64: 2, 2>, window_strides = array<i64: 1, 1>}> ({
  ^bb0(%a: tensor<CT>, %b: tensor<CT>):
    %p = stablehlo.add %a, %b : tensor<CT>
    stablehlo.return %p : tensor<CT>
  }) : (tensor<5x4xCT>, tensor<CT>) -> tensor<4x3xCT>
  %st:2 = "stablehlo.sort"(%k, %w) <{dimension = 0 : i64, is_stable = true}> ({
  ^bb0(%a: tensor<CT>, %b: tensor<CT>, %c: tensor<CT>, %d: tensor<CT>):
    %p = stablehlo.compare LT, %a, %b, FLOAT : (tensor<CT>, tensor<CT>) -> tensor<i1>
    stablehlo.return %p : tensor<i1>
  }) : (tensor<5x4xCT>, tensor<5x4xCT>) -> (tensor<5x4xCT>, tensor<5x4xCT>)
  %i0 = stablehlo.constant dense<0> : tensor<i32>
  %lp:2 = stablehlo.while(%i = %i0, %z = %x) : tensor<i32>, tensor<5x4xCT>
  cond {
    %n = stablehlo.constant dense<3> : tensor<i32>
    %c = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  } do {
    %one = stablehlo.constant dense<1> : tensor<i32>
    %i1 = stablehlo.add %i, %one : tensor<i32>
    %zw = stablehlo.multiply %z, %w : tensor<5x4xCT>
    %z1 = stablehlo.divide %zw, %x : tensor<5x4xCT>
    stablehlo.return %i1, %z1 : tensor<i32>, tensor<5x4xCT>
  }
  %rd:2 = stablehlo.reduce(%x init: %zero), (%w init: %zero) across dimensions = [1] : (tensor<5x4xCT>, tensor<5x4xCT>, tensor<CT>, tensor<CT>) -> (tensor<5xCT>, tensor<5xCT>)
   reducer(%a: tensor<CT>, %c: tensor<CT>) (%b: tensor<CT>, %d: tensor<CT>) {
    %m = stablehlo.multiply %c, %d : tensor<CT>
    %s = stablehlo.add %a, %m : tensor<CT>
    stablehlo.return %s, %b : tensor<CT>, tensor<CT>
  }
  return %g0, %s0, %ds, %du, %rw, %st#0, %st#1, %lp#1, %rd#0 : tensor<3x3xCT>, tensor<5x4xCT>, tensor<3x2xCT>, tensor<5x4xCT>, tensor<4x3xCT>, tensor<5x4xCT>, tensor<5x4xCT>, tensor<5x4xCT>, tensor<5xCT>
}
`

// TestDifferentialComplexIndex compares gather, scatter, dynamic_slice,
// dynamic_update_slice, reduce_window, sort (ordering complex keys),
// while and a variadic reduce whose body multiplies, on complex values,
// bit for bit.
func TestDifferentialComplexIndex(t *testing.T) {
	rng := rand.New(rand.NewPCG(14, 13))
	cts := []string{"complex<f32>", "complex<f64>"}
	randomDifferential(t, len(cts), func(i int) (string, string) {
		return cts[i], strings.ReplaceAll(complexIndexProgram, "CT", cts[i])
	}, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		for run := 0; run < 3; run++ {
			args := complexArgs(m.Main(), rng, 10, run > 0)
			// Sort keys without NaN (which no order ranks) but with
			// ties, infinities and signed zeros.
			k := args[len(args)-1]
			for j := int64(0); j < k.Type.NumElements(); j++ {
				for p := 0; p < 2; p++ {
					if v := partAt(k, j, p); math.IsNaN(v) || j%3 == 0 {
						fillPart(k, j, p, float64(rng.IntN(3)-1))
					}
				}
			}
			got, want := runBoth(t, exe, m, args)
			assertCloseComplex(t, got, want, 0, 0)
		}
	})
}

// TestComplexLogAccuracyMatchesInterpreter pins log and log_plus_one at
// the points where math/cmplx's formulas lose (the interpreter's clog and
// clog1p): near |z| = 1, where log|z| must not cancel to 0, and on the
// branch cut, where log1p(-2 - 0i) is -πi (the -0 must survive 1 + z).
func TestComplexLogAccuracyMatchesInterpreter(t *testing.T) {
	for _, ct := range []string{"complex<f32>", "complex<f64>"} {
		t.Run(ct, func(t *testing.T) {
			src := fmt.Sprintf(`func.func @main(%%x: tensor<8x%[1]s>) -> (tensor<8x%[1]s>, tensor<8x%[1]s>) {
  %%0 = stablehlo.log %%x : tensor<8x%[1]s>
  %%1 = stablehlo.log_plus_one %%x : tensor<8x%[1]s>
  return %%0, %%1 : tensor<8x%[1]s>, tensor<8x%[1]s>
}
`, ct)
			m, exe := compileText(t, src)
			x := stablehlo.NewTensor(m.Main().Args[0].Type)
			negZero := math.Copysign(0, -1)
			for i, v := range [][2]float64{{1, 1e-9}, {0.6, 0.8}, {1.0000001, 0}, {-2, negZero}, {-3, negZero}, {-2, 0}, {0.5, 1e-3}, {3e38, 1e-30}} {
				fillPart(x, int64(i), 0, v[0])
				fillPart(x, int64(i), 1, v[1])
			}
			got, want := runBoth(t, exe, m, []*stablehlo.Tensor{x})
			assertCloseComplex(t, got, want, 1e-6, 0)
		})
	}
}

package stablehlo

import (
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"

	"github.com/xlacache/xlacache/internal/sysmem"
)

// Need is the memory a function needs to run, worked out from its types
// alone so that a caller can refuse a program that cannot fit before
// allocating anything: Go cannot recover from a failed allocation, it
// ends the process with "fatal error: out of memory".
//
// The figures are upper bounds for the reference interpreter, which keeps
// every value of an activation until the function returns; a compiled
// backend that fuses and reuses buffers needs less.
type Need struct {
	// Inputs is the bytes of the function's arguments.
	Inputs int64
	// Outputs is the bytes of the function's results.
	Outputs int64
	// Intermediates bounds the bytes of values created while the
	// function runs: every op result (a while loop's body twice, since an
	// iteration's values live on while the next one computes its own),
	// plus the largest temporary a single op or callee makes on the side
	// (relaid operands of dot_general and reduce, f32 copies of f16 and
	// bf16 operands, padded window operands, sort orders).
	Intermediates int64
	// Largest is the biggest single tensor among arguments and op results.
	Largest TensorNeed
}

// TensorNeed describes one tensor of a Need.
type TensorNeed struct {
	// Name is the SSA name as written ("%arg0", "%3").
	Name string
	// Desc says where the tensor comes from ("argument #0 of @main",
	// "result of stablehlo.add at 4:8 in @main").
	Desc string
	// Type is the tensor's type.
	Type TensorType
	// Bytes is the tensor's size.
	Bytes int64
}

// String formats the tensor as "argument #0 of @main (%x: tensor<4xf32>, 16 B)".
func (t TensorNeed) String() string {
	return fmt.Sprintf("%s (%s: %s, %d bytes)", t.Desc, t.Name, t.Type, t.Bytes)
}

// Total is Inputs + Outputs + Intermediates, saturating at MaxInt64 rather
// than wrapping (a wrapped sum would make a huge program look small).
func (n Need) Total() int64 {
	return memAdd(memAdd(n.Inputs, n.Outputs), n.Intermediates)
}

// MemoryNeed estimates the memory function fn ("" means Main) of m needs to
// run. It does not need a verified module but fails on types that no
// verified module has (negative dimensions, unknown element types).
// Sizes that overflow int64 saturate at MaxInt64, so a shape of huge
// dimensions reads as too big, never as small.
func (m *Module) MemoryNeed(fn string) (Need, error) {
	var f *Func
	if fn == "" {
		f = m.Main()
		if f == nil {
			return Need{}, fmt.Errorf("%s: no main function", m.File)
		}
	} else if f = m.Func(fn); f == nil {
		return Need{}, fmt.Errorf("%s: no function @%s", m.File, fn)
	}
	est := &memEstimator{m: m, peak: map[*Func]int64{}, active: map[*Func]bool{}}
	var n Need
	for i, a := range f.Args {
		b, err := memTypeBytes(a.Type)
		if err != nil {
			return Need{}, fmt.Errorf("%s: @%s argument #%d (%s): %w", m.File, f.Name, i, a, err)
		}
		n.Inputs = memAdd(n.Inputs, b)
		est.consider(a, b, fmt.Sprintf("argument #%d of @%s", i, f.Name))
	}
	for i, t := range f.ResultTypes {
		b, err := memTypeBytes(t)
		if err != nil {
			return Need{}, fmt.Errorf("%s: @%s result #%d: %w", m.File, f.Name, i, err)
		}
		n.Outputs = memAdd(n.Outputs, b)
	}
	peak, err := est.funcPeak(f)
	if err != nil {
		return Need{}, err
	}
	n.Intermediates = peak
	n.Largest = est.largest
	return n, nil
}

// memEstimator walks a module's functions, memoising each callee's peak so
// that a function called from many places is walked once.
type memEstimator struct {
	m       *Module
	peak    map[*Func]int64
	active  map[*Func]bool // on the walk's call stack, to stop at recursion
	largest TensorNeed
	fn      *Func // function being walked, for descriptions
}

func (e *memEstimator) consider(v *Value, b int64, desc string) {
	if b > e.largest.Bytes || e.largest.Desc == "" {
		e.largest = TensorNeed{Name: v.String(), Desc: desc, Type: v.Type, Bytes: b}
	}
}

// funcPeak bounds the bytes f's activation creates besides its arguments:
// the values it holds plus the largest temporary of any one op (callees'
// activations are temporaries: they are dropped when the call returns).
func (e *memEstimator) funcPeak(f *Func) (int64, error) {
	if p, ok := e.peak[f]; ok {
		return p, nil
	}
	if e.active[f] {
		// Recursion has no static bound; the interpreter stops it at a
		// fixed depth. Count the function's own values once.
		return 0, nil
	}
	e.active[f] = true
	defer delete(e.active, f)
	outer := e.fn
	e.fn = f
	defer func() { e.fn = outer }()
	held, temp, err := e.block(f.Body)
	if err != nil {
		return 0, err
	}
	p := memAdd(held, temp)
	e.peak[f] = p
	return p, nil
}

// block returns the bytes b's ops hold once run (results, and the values
// of nested regions, which share the enclosing activation) and the largest
// temporary one of its ops needs on top.
func (e *memEstimator) block(b *Block) (held, temp int64, err error) {
	for _, op := range b.Ops {
		if op.Name == "return" {
			continue
		}
		results := int64(0)
		for _, r := range op.Results {
			rb, err := memTypeBytes(r.Type)
			if err != nil {
				return 0, 0, fmt.Errorf("%s:%s: %s result %s: %w", e.m.File, op.Pos, op.Name, r, err)
			}
			results = memAdd(results, rb)
			e.consider(r, rb, fmt.Sprintf("result of %s at %s in @%s", memOpSpelling(op.Name), op.Pos, e.fn.Name))
		}
		held = memAdd(held, results)
		t, err := memScratchBytes(op)
		if err != nil {
			return 0, 0, fmt.Errorf("%s:%s: %s: %w", e.m.File, op.Pos, op.Name, err)
		}
		times := int64(1)
		if op.Name == "while" {
			times = 2
		}
		for _, r := range op.Regions {
			rh, rt, err := e.block(r)
			if err != nil {
				return 0, 0, err
			}
			held = memAdd(held, memMul(rh, times))
			t = max(t, rt)
		}
		if op.Name == "call" {
			if g := e.m.Func(op.Attrs.Callee); g != nil {
				p, err := e.funcPeak(g)
				if err != nil {
					return 0, 0, err
				}
				t = max(t, p)
			}
		}
		temp = max(temp, t)
	}
	return held, temp, nil
}

// memScratchBytes bounds what op allocates besides its results while it runs
// in the interpreter.
func memScratchBytes(op *Op) (int64, error) {
	var inElems, inBytes, outElems, maxElems int64
	half := false
	for _, v := range op.Operands {
		n, err := memTypeElements(v.Type)
		if err != nil {
			return 0, fmt.Errorf("operand %s: %w", v, err)
		}
		inElems = memAdd(inElems, n)
		inBytes = memAdd(inBytes, memMul(n, int64(v.Type.DType.Size())))
		maxElems = max(maxElems, n)
		half = half || isHalf(v.Type.DType)
	}
	for _, v := range op.Results {
		n, err := memTypeElements(v.Type)
		if err != nil {
			return 0, fmt.Errorf("result %s: %w", v, err)
		}
		outElems = memAdd(outElems, n)
		maxElems = max(maxElems, n)
		half = half || isHalf(v.Type.DType)
	}
	var s int64
	if half {
		// f16 and bf16 are computed on f32 copies of operands and result.
		s = memMul(memAdd(inElems, outElems), 4)
	}
	switch op.Name {
	case "dot_general":
		// Operands converted to the result type, then relaid: twice the
		// larger element size of operands and result, at least 8 bytes
		// each time (32 for complex<f64>, also from complex<f32>
		// operands).
		per := int64(16)
		for _, v := range append(slices.Clone(op.Operands), op.Results...) {
			per = max(per, 2*int64(v.Type.DType.Size()))
		}
		s = memAdd(s, memMul(inElems, per))
	case "fft":
		// In complex128 (16 bytes) units of the larger of operand and
		// result: the working copy and its resized copy (RFFT, IRFFT): 2;
		// one line and a Bluestein plan for it (chirp n, work and kernel
		// of m < 4n each, the length-m radix-2 twiddles m/2): under 12;
		// Go's allocation size classes round each up by at most 1/8: 16
		// in all (TestMemoryScratchFFT measures it).
		s = memAdd(s, memMul(max(inElems, outElems), 16*16))
	case "reduce":
		s = memAdd(s, inBytes) // inputs relaid with reduced dimensions innermost
	case "sort", "chlo.top_k":
		s = memAdd(s, memMul(maxElems, 8)) // index order along the dimension
	case "reduce_window", "select_and_scatter":
		p, err := memPaddedBytes(op)
		if err != nil {
			return 0, err
		}
		s = memAdd(s, p)
	case "convert", "iota":
		// Converting between a complex and a real type, and a complex
		// iota, go through part-typed temporaries (complex.go
		// convertComplex): at most the operand and twice the result.
		// complex to complex converts the parts in place.
		if len(op.Results) != 1 {
			break
		}
		in, out := InvalidDType, op.Results[0].Type.DType
		if len(op.Operands) > 0 {
			in = op.Operands[0].Type.DType
		}
		if in.IsComplex() != out.IsComplex() {
			outBytes, err := memTypeBytes(op.Results[0].Type)
			if err != nil {
				return 0, err
			}
			s = memAdd(s, memAdd(inBytes, memMul(outBytes, 2)))
		}
	case "constant", "reshape", "broadcast_in_dim", "transpose", "slice", "concatenate", "pad",
		"bitcast_convert", "reverse", "dynamic_slice", "dynamic_update_slice", "gather", "scatter",
		"select", "clamp", "compare", "is_finite", "reduce_precision", "custom_call", "call", "while", "if", "case", "return",
		"real", "imag", "complex":
		// Results only (counted by the caller).
	default:
		if info, ok := opTable[op.Name]; ok && (info.class == classUnary || info.class == classBinary || info.class == classLogical) {
			break
		}
		// An op this estimate does not know: assume a copy of its
		// operands on the side.
		s = memAdd(s, inBytes)
	}
	return s, nil
}

// memPaddedBytes is the size of the padded operands reduce_window and
// select_and_scatter build (§reduce_window: (d-1)·base_dilation + 1 + lo +
// hi per dimension). Padding comes from attributes, so it is computed with
// overflow checks: it is not bounded by any tensor type.
func memPaddedBytes(op *Op) (int64, error) {
	w := op.Attrs.Window
	n := len(op.Operands)
	if op.Name == "reduce_window" {
		n /= 2 // inputs, then init values
	} else {
		n = min(n, 1) // select_and_scatter pads its operand only
	}
	var total int64
	for _, v := range op.Operands[:n] {
		elems := int64(1)
		for i, d := range v.Type.Shape {
			if d < 0 {
				return 0, fmt.Errorf("operand %s has a negative dimension", v)
			}
			p := d
			if i < len(w.PadLow) && i < len(w.PadHigh) {
				dil := int64(1)
				if i < len(w.BaseDilations) && w.BaseDilations[i] > 0 {
					dil = w.BaseDilations[i]
				}
				if d > 0 {
					p = memAdd(memMul(d-1, dil), 1)
				}
				p = memAdd(p, max(w.PadLow[i], 0))
				p = memAdd(p, max(w.PadHigh[i], 0))
			}
			elems = memMul(elems, p)
		}
		total = memAdd(total, memMul(elems, int64(v.Type.DType.Size())))
	}
	return total, nil
}

// memTypeElements is t's element count, saturating at MaxInt64.
func memTypeElements(t TensorType) (int64, error) {
	n := int64(1)
	for _, d := range t.Shape {
		if d < 0 {
			return 0, fmt.Errorf("negative dimension in %s", t)
		}
		n = memMul(n, d)
	}
	return n, nil
}

// memTypeBytes is t's buffer size, saturating at MaxInt64 (ByteSize wraps).
func memTypeBytes(t TensorType) (int64, error) {
	if t.DType.Size() == 0 {
		return 0, fmt.Errorf("invalid element type in %s", t)
	}
	n, err := memTypeElements(t)
	if err != nil {
		return 0, err
	}
	return memMul(n, int64(t.DType.Size())), nil
}

// memAdd adds non-negative a and b, saturating at MaxInt64.
func memAdd(a, b int64) int64 {
	s, carry := bits.Add64(uint64(a), uint64(b), 0)
	if carry != 0 || s > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(s)
}

// memMul multiplies non-negative a and b, saturating at MaxInt64.
func memMul(a, b int64) int64 {
	hi, lo := bits.Mul64(uint64(a), uint64(b))
	if hi != 0 || lo > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(lo)
}

// memOpSpelling returns the op's name as written in source.
func memOpSpelling(name string) string {
	switch {
	case name == "call":
		return "func.call"
	case len(name) > 5 && name[:5] == "chlo.":
		return name
	}
	return "stablehlo." + name
}

// Extra is memory a caller needs besides a Need (its own buffers), named
// for the error Check returns.
type Extra struct {
	What  string
	Bytes int64
}

// Check returns an error when n plus extras is more than avail bytes: it
// names the program and function, every part of the total, where avail
// comes from (source) and the largest tensor, so that a user sees what
// does not fit before anything was allocated. It returns the total too.
func (n Need) Check(program, fn string, avail int64, source string, extras ...Extra) (int64, error) {
	total := n.Total()
	parts := []string{"inputs " + formatBytes(n.Inputs), "outputs " + formatBytes(n.Outputs),
		"intermediates up to " + formatBytes(n.Intermediates)}
	for _, x := range extras {
		total = memAdd(total, x.Bytes)
		parts = append(parts, x.What+" "+formatBytes(x.Bytes))
	}
	if total <= avail {
		return total, nil
	}
	return total, fmt.Errorf("%s: @%s needs %s but only %s is available (%s): %s; largest tensor: %s %s: %s, %s",
		program, fn, formatBytes(total), formatBytes(avail), source, strings.Join(parts, ", "),
		n.Largest.Desc, n.Largest.Name, n.Largest.Type, formatBytes(n.Largest.Bytes))
}

func formatBytes(n int64) string { return sysmem.FormatBytes(n) }

// Fit fails, naming the largest tensor and the sizes, when a run of fn of
// m (the program's file name is program) needs more memory than avail
// reports, with the extras the caller's run adds to what fn needs
// (sysmem.Fit: it may also lower Go's memory limit until restore is
// called). A run checked first ends with an error instead of Go's
// unrecoverable "fatal error: out of memory".
func (m *Module) Fit(fn, program string, avail func() (sysmem.Limit, bool), extras func(Need) []Extra) (restore func(), err error) {
	need, err := m.MemoryNeed(fn)
	if err != nil {
		return func() {}, err
	}
	more := extras(need)
	return sysmem.Fit(avail, func(lim sysmem.Limit) error {
		_, err := need.Check(program, fn, lim.Bytes, lim.Source, more...)
		return err
	})
}

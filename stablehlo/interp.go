package stablehlo

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
)

// CheckError is returned by Eval when a check.expect_* assertion fails.
type CheckError struct {
	Target string // "check.expect_close"
	Pos    Pos
	File   string
	Index  []int64 // multi-index of the first mismatch
	Got    string
	Want   string
	Detail string // e.g. "ULP difference 7 > 3"
}

// Error formats the failure as "file:line:col: target failed at index ...".
func (e *CheckError) Error() string {
	return fmt.Sprintf("%s:%d:%d: %s failed at index %v: got %s, want %s (%s)",
		e.File, e.Pos.Line, e.Pos.Col, e.Target, e.Index, e.Got, e.Want, e.Detail)
}

// Eval runs function fn (by name; "" means Main) of m on args with the
// reference interpreter and returns its results. check.expect_* custom
// calls are evaluated as assertions: the first failure stops evaluation
// and is returned as a *CheckError naming the index, actual and expected
// values. The module should have been verified (Parse does this).
func Eval(m *Module, fn string, args []*Tensor) ([]*Tensor, error) {
	return EvalContext(context.Background(), m, fn, args)
}

// ErrInternal marks interpreter bugs caught at run time (a recovered
// panic); it never stands for a problem with the program or its inputs.
var ErrInternal = errors.New("internal interpreter error")

// EvalContext is Eval with cancellation, checked between ops. The module
// is verified first, so hand-built or transformed modules get the same
// checks as parsed ones.
func EvalContext(ctx context.Context, m *Module, fn string, args []*Tensor) (res []*Tensor, err error) {
	if m == nil {
		return nil, errors.New("eval: nil module")
	}
	defer func() {
		// Defence in depth: a bug in a kernel must surface as an error
		// for this program, never crash the caller (a cache, a server).
		if r := recover(); r != nil {
			res, err = nil, fmt.Errorf("%s: %w: %v", m.File, ErrInternal, r)
		}
	}()
	if err := Verify(m); err != nil {
		return nil, err
	}
	var f *Func
	if fn == "" {
		f = m.Main()
		if f == nil {
			return nil, fmt.Errorf("%s: no main function", m.File)
		}
	} else if f = m.Func(fn); f == nil {
		return nil, fmt.Errorf("%s: no function @%s", m.File, fn)
	}
	if len(args) != len(f.Args) {
		return nil, fmt.Errorf("@%s takes %d arguments, %d given", f.Name, len(f.Args), len(args))
	}
	for i, a := range args {
		if a == nil || !a.Type.Equal(f.Args[i].Type) || int64(len(a.Data)) != a.Type.ByteSize() {
			got := "nil"
			if a != nil {
				got = a.Type.String()
			}
			return nil, fmt.Errorf("@%s argument #%d: got %s, want %s", f.Name, i, got, f.Args[i].Type)
		}
	}
	in := &interp{ctx: ctx, m: m}
	return in.call(f, args, 0)
}

type interp struct {
	ctx context.Context
	m   *Module
}

// env maps value IDs to tensors for one function activation.
type env struct {
	vals []*Tensor
}

func (e *env) get(v *Value) *Tensor { return e.vals[v.ID] }

func (e *env) set(v *Value, t *Tensor) {
	for v.ID >= len(e.vals) {
		e.vals = append(e.vals, nil)
	}
	e.vals[v.ID] = t
}

func numValues(f *Func) int {
	n := f.NumValues
	var visit func(b *Block)
	visit = func(b *Block) {
		for _, a := range b.Args {
			n = max(n, a.ID+1)
		}
		for _, op := range b.Ops {
			for _, r := range op.Results {
				n = max(n, r.ID+1)
			}
			for _, r := range op.Regions {
				visit(r)
			}
		}
	}
	visit(f.Body)
	return n
}

func (in *interp) call(f *Func, args []*Tensor, depth int) ([]*Tensor, error) {
	if depth > 1000 {
		return nil, fmt.Errorf("call depth exceeded at @%s", f.Name)
	}
	e := &env{vals: make([]*Tensor, numValues(f))}
	for i, a := range f.Args {
		e.set(a, args[i])
	}
	return in.block(f.Body, e, depth)
}

// block evaluates ops in order and returns the operands of the final
// return.
func (in *interp) block(b *Block, e *env, depth int) ([]*Tensor, error) {
	for _, op := range b.Ops {
		if err := in.ctx.Err(); err != nil {
			return nil, err
		}
		if op.Name == "return" {
			out := make([]*Tensor, len(op.Operands))
			for i, v := range op.Operands {
				out[i] = e.get(v)
			}
			return out, nil
		}
		ins := make([]*Tensor, len(op.Operands))
		for i, v := range op.Operands {
			ins[i] = e.get(v)
			if ins[i] == nil {
				return nil, in.errorf(op, "operand %s has no value", v)
			}
		}
		var outs []*Tensor
		var err error
		if op.Name == "call" {
			g := in.m.Func(op.Attrs.Callee)
			if g == nil {
				return nil, in.errorf(op, "call to unknown function @%s", op.Attrs.Callee)
			}
			outs, err = in.call(g, ins, depth+1)
		} else if capturingOps[op.Name] {
			outs, err = in.control(op, ins, e, depth)
		} else {
			outs, err = in.op(op, ins, depth)
		}
		if err != nil {
			return nil, err
		}
		if len(outs) != len(op.Results) {
			return nil, in.errorf(op, "produced %d results, %d expected", len(outs), len(op.Results))
		}
		for i, r := range op.Results {
			e.set(r, outs[i])
		}
	}
	return nil, fmt.Errorf("block without return")
}

// wrap passes results through and positions errors that are not already
// positioned (check failures, cancellation pass unchanged).
func (in *interp) wrap(op *Op) func([]*Tensor, error) ([]*Tensor, error) {
	return func(out []*Tensor, err error) ([]*Tensor, error) {
		if err == nil {
			return out, nil
		}
		var pe *ParseError
		var ce *CheckError
		if errors.As(err, &pe) || errors.As(err, &ce) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
			return nil, err
		}
		return nil, in.errorf(op, "%v", err)
	}
}

func (in *interp) errorf(op *Op, format string, args ...any) error {
	return &ParseError{File: in.m.File, Pos: op.Pos, Msg: op.Name + ": " + fmt.Sprintf(format, args...)}
}

// op evaluates one non-call op.
func (in *interp) op(op *Op, x []*Tensor, depth int) ([]*Tensor, error) {
	info := opTable[op.Name]
	var rt TensorType
	if len(op.Results) > 0 {
		rt = op.Results[0].Type
	}
	one := func(t *Tensor, err error) ([]*Tensor, error) {
		if err != nil {
			return nil, in.errorf(op, "%v", err)
		}
		return []*Tensor{t}, nil
	}
	switch info.class {
	case classUnary:
		return one(evalUnary(op.Name, x[0]))
	case classBinary:
		return one(evalBinary(op.Name, x[0], x[1]))
	case classLogical:
		if op.Name == "not" {
			return one(evalNot(x[0]), nil)
		}
		return one(evalBinary(op.Name, x[0], x[1]))
	}
	a := &op.Attrs
	switch op.Name {
	case "constant":
		return one(a.Constant.Clone(), nil)
	case "iota":
		return one(evalIota(rt, a.Dimension), nil)
	case "compare":
		return one(evalCompare(a.ComparisonDirection, a.CompareType, x[0], x[1]))
	case "select":
		return one(evalSelect(x[0], x[1], x[2]), nil)
	case "clamp":
		return one(evalClamp(x[0], x[1], x[2]))
	case "convert":
		return one(evalConvert(x[0], rt.DType), nil)
	case "reshape":
		out := NewTensor(rt)
		copy(out.Data, x[0].Data)
		return one(out, nil)
	case "broadcast_in_dim":
		out := NewTensor(rt)
		xs := x[0].Type.Strides()
		src := make([]int64, rt.Rank())
		for i, d := range a.BroadcastDims {
			if x[0].Type.Shape[i] != 1 {
				src[d] = xs[i]
			}
		}
		copyStrided(out, 0, out.Type.Strides(), x[0], 0, src, rt.Shape)
		return one(out, nil)
	case "transpose":
		return one(transposeTensor(x[0], a.Permutation), nil)
	case "slice":
		out := NewTensor(rt)
		xs := x[0].Type.Strides()
		src := make([]int64, len(xs))
		off := int64(0)
		for i := range xs {
			src[i] = xs[i] * a.Strides[i]
			off += a.StartIndices[i] * xs[i]
		}
		copyStrided(out, 0, out.Type.Strides(), x[0], off, src, rt.Shape)
		return one(out, nil)
	case "concatenate":
		out := NewTensor(rt)
		os := out.Type.Strides()
		off := int64(0)
		for _, t := range x {
			copyStrided(out, off*os[a.Dimension], os, t, 0, t.Type.Strides(), t.Type.Shape)
			off += t.Type.Shape[a.Dimension]
		}
		return one(out, nil)
	case "pad":
		return one(evalPad(x[0], x[1], rt, a), nil)
	case "dot_general":
		return one(evalDot(x[0], x[1], rt, a.Dot))
	case "reduce":
		outs, err := in.reduce(op, x, depth)
		if err != nil {
			return nil, err
		}
		return outs, nil
	case "custom_call":
		if err := evalCheck(op, x[0], x[1]); err != nil {
			err.File = in.m.File
			return nil, err
		}
		return []*Tensor{}, nil
	case "chlo.top_k":
		v, i := evalTopK(x[0], a.K)
		return []*Tensor{v, i}, nil
	case "is_finite":
		return one(evalIsFinite(x[0]), nil)
	case "bitcast_convert":
		return one(evalBitcast(x[0], rt), nil)
	case "reduce_precision":
		return one(evalReducePrecision(x[0], a.ExponentBits, a.MantissaBits), nil)
	case "reverse":
		return one(evalReverse(x[0], a.Dims), nil)
	case "dynamic_slice":
		return one(evalDynamicSlice(x[0], x[1:], a.SliceSizes), nil)
	case "dynamic_update_slice":
		return one(evalDynamicUpdateSlice(x[0], x[1], x[2:]), nil)
	case "gather":
		return one(evalGather(x[0], x[1], rt, a.Gather, a.SliceSizes), nil)
	case "convolution":
		return one(evalConv(x[0], x[1], rt, a.Conv), nil)
	case "triangular_solve":
		return one(evalTriSolve(x[0], x[1], a.TriSolve), nil)
	case "cholesky":
		return one(evalCholesky(x[0], a.Lower), nil)
	case "complex":
		return one(evalMakeComplex(x[0], x[1]), nil)
	case "real":
		return one(evalRealImag(x[0], 0), nil)
	case "imag":
		return one(evalRealImag(x[0], 1), nil)
	case "fft":
		return one(evalFFT(x[0], rt, a.FftType, a.FftLength), nil)
	case "rng_bit_generator":
		return evalRngBitGenerator(a.RngAlgorithm, x[0], op.Results[1].Type), nil
	case "scatter":
		return in.wrap(op)(in.evalScatter(op, x, depth))
	case "sort":
		return in.wrap(op)(in.evalSort(op, x, depth))
	case "reduce_window":
		return in.wrap(op)(in.evalReduceWindow(op, x, depth))
	case "select_and_scatter":
		return in.wrap(op)(in.evalSelectAndScatter(op, x, depth))
	}
	return nil, in.errorf(op, "not supported by the interpreter")
}

func evalIota(t TensorType, dim int64) *Tensor {
	if t.DType.IsComplex() {
		// §iota: complex results count in the real part.
		return convertComplex(evalIota(realTypeOf(t), dim), t.DType)
	}
	out := NewTensor(t)
	n := t.NumElements()
	if n == 0 {
		return out
	}
	st := t.Strides()[dim]
	size := t.Shape[dim]
	for i := int64(0); i < n; i++ {
		v := (i / st) % size
		out.setInt(i, v)
	}
	return out
}

func evalPad(x, pv *Tensor, rt TensorType, a *Attrs) *Tensor {
	out := NewTensor(rt)
	// Fill with the padding value.
	es := int64(rt.DType.Size())
	for i := int64(0); i < rt.NumElements(); i++ {
		copy(out.Data[i*es:(i+1)*es], pv.Data[:es])
	}
	// Copy the valid part of x: along each dimension, element i lands at
	// low + i*(interior+1); negative low/high crop, so keep only the
	// contiguous range of i that lands inside the result.
	rank := rt.Rank()
	xs, os := x.Type.Strides(), rt.Strides()
	shape := make([]int64, rank)
	src := make([]int64, rank)
	dst := make([]int64, rank)
	srcOff, dstOff := int64(0), int64(0)
	for d := 0; d < rank; d++ {
		step := a.InteriorPadding[d] + 1
		low := a.EdgePaddingLow[d]
		first := int64(0)
		if low < 0 {
			first = (-low + step - 1) / step
		}
		last := x.Type.Shape[d] - 1 // inclusive
		for last >= first && low+last*step >= rt.Shape[d] {
			last--
		}
		if last < first {
			return out
		}
		shape[d] = last - first + 1
		src[d] = xs[d]
		dst[d] = os[d] * step
		srcOff += first * xs[d]
		dstOff += (low + first*step) * os[d]
	}
	copyStrided(out, dstOff, dst, x, srcOff, src, shape)
	return out
}

// reduce evaluates stablehlo.reduce. The inputs are relaid so reduced
// dimensions are innermost; common single-op bodies use typed loops, any
// other body is interpreted per element.
func (in *interp) reduce(op *Op, x []*Tensor, depth int) ([]*Tensor, error) {
	n := len(x) / 2
	inputs, inits := x[:n], x[n:]
	dims := op.Attrs.ReduceDims
	shape := inputs[0].Type.Shape
	reduced := make([]bool, len(shape))
	for _, d := range dims {
		reduced[d] = true
	}
	var perm []int64
	outer, inner := int64(1), int64(1)
	for i := range shape {
		if !reduced[i] {
			perm = append(perm, int64(i))
			outer *= shape[i]
		}
	}
	for _, d := range slices.Sorted(slices.Values(dims)) {
		perm = append(perm, d)
		inner *= shape[d]
	}
	rel := make([]*Tensor, n)
	for i := range inputs {
		rel[i] = transposeTensor(inputs[i], perm)
	}
	outs := make([]*Tensor, n)
	for i := range outs {
		outs[i] = NewTensor(op.Results[i].Type)
	}
	if n == 1 {
		if name, ok := simpleBody(op.Regions[0]); ok {
			if err := reduceFast(name, rel[0], inits[0], outs[0], outer, inner); err == nil {
				return outs, nil
			}
		}
	}
	// Generic path: run the body on scalar tensors.
	body := op.Regions[0]
	scalar := make([]TensorType, n)
	for i := range scalar {
		scalar[i] = TensorType{DType: inits[i].Type.DType, Shape: []int64{}}
	}
	elem := make([]*Tensor, n)
	for i := range elem {
		elem[i] = NewTensor(scalar[i])
	}
	e := &env{}
	for o := int64(0); o < outer; o++ {
		acc := make([]*Tensor, n)
		for i := range acc {
			acc[i] = inits[i]
		}
		for k := int64(0); k < inner; k++ {
			if err := in.ctx.Err(); err != nil {
				return nil, err
			}
			for i := range elem {
				es := int64(scalar[i].DType.Size())
				elem[i] = NewTensor(scalar[i])
				copy(elem[i].Data, rel[i].Data[(o*inner+k)*es:(o*inner+k+1)*es])
			}
			for i := 0; i < n; i++ {
				e.set(body.Args[i], acc[i])
				e.set(body.Args[n+i], elem[i])
			}
			res, err := in.block(body, e, depth)
			if err != nil {
				return nil, err
			}
			acc = res
		}
		for i := range acc {
			es := int64(scalar[i].DType.Size())
			copy(outs[i].Data[o*es:(o+1)*es], acc[i].Data)
		}
	}
	return outs, nil
}

// simpleBody recognises "return op(arg0, arg1)" bodies.
func simpleBody(b *Block) (string, bool) {
	if len(b.Ops) != 2 || len(b.Args) != 2 {
		return "", false
	}
	op, ret := b.Ops[0], b.Ops[1]
	if len(op.Operands) != 2 || len(op.Results) != 1 || len(ret.Operands) != 1 || ret.Operands[0] != op.Results[0] {
		return "", false
	}
	a, c := op.Operands[0], op.Operands[1]
	if !((a == b.Args[0] && c == b.Args[1]) || (a == b.Args[1] && c == b.Args[0])) {
		return "", false
	}
	switch op.Name {
	case "add", "multiply", "maximum", "minimum", "and", "or", "xor":
		return op.Name, true
	}
	return "", false
}

// evalTopK returns the k largest elements along the last dimension (stable:
// ties keep the lower index first) and their i32 indices.
func evalTopK(x *Tensor, k int64) (*Tensor, *Tensor) {
	shape := x.Type.Shape
	last := shape[len(shape)-1]
	oshape := slices.Clone(shape)
	oshape[len(oshape)-1] = k
	vals := NewTensor(TensorType{DType: x.Type.DType, Shape: oshape})
	idxs := NewTensor(TensorType{DType: I32, Shape: slices.Clone(oshape)})
	rows := int64(0)
	if last > 0 {
		rows = x.Type.NumElements() / last
	}
	es := int64(x.Type.DType.Size())
	order := make([]int64, last)
	iv := idxs.Int32s()
	for r := int64(0); r < rows; r++ {
		for i := range order {
			order[i] = int64(i)
		}
		base := r * last
		slices.SortStableFunc(order, func(a, b int64) int {
			if greater(x, base+a, base+b) {
				return -1
			}
			if greater(x, base+b, base+a) {
				return 1
			}
			return 0
		})
		for j := int64(0); j < k; j++ {
			src := base + order[j]
			copy(vals.Data[(r*k+j)*es:(r*k+j+1)*es], x.Data[src*es:(src+1)*es])
			iv[r*k+j] = int32(order[j])
		}
	}
	return vals, idxs
}

// greater orders elements for top_k as XLA's TopK does: floats in IEEE
// 754 total order (-NaN < -Inf < … < -0 < +0 < … < +Inf < +NaN), so a
// NaN with its sign bit clear comes first and one with it set last.
func greater(x *Tensor, i, j int64) bool {
	dt := x.Type.DType
	if dt.IsFloat() {
		return totalOrderKey(x.Float64At(i)) > totalOrderKey(x.Float64At(j))
	}
	if dt.IsUnsigned() || dt == I1 {
		return uint64(x.Int64At(i)) > uint64(x.Int64At(j))
	}
	return x.Int64At(i) > x.Int64At(j)
}

// totalOrderKey maps f to an integer that orders as IEEE 754's
// totalOrder: negative values (sign bit set, NaNs included) have their
// magnitude bits flipped so that larger magnitudes sort lower. Widening a
// float32 to float64 keeps a NaN's sign, so one key serves every width.
func totalOrderKey(f float64) int64 {
	k := int64(math.Float64bits(f))
	if k < 0 {
		k ^= math.MaxInt64
	}
	return k
}

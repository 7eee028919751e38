package stablehlo

import (
	"errors"
	"fmt"
	"slices"
)

// Verify checks a module: every op is in the supported set, operand and
// result types agree with the op's type and shape rules, region bodies
// have the right signature, calls name existing functions with matching
// types, and call graphs are acyclic. Parse already calls Verify; call it
// again after building or transforming a Module by hand.
func Verify(m *Module) error {
	if m == nil {
		return fmt.Errorf("nil module")
	}
	v := &verifier{m: m}
	seen := map[string]bool{}
	for _, f := range m.Funcs {
		if seen[f.Name] {
			return v.errorf(f.Pos, "function @%s defined twice", f.Name)
		}
		seen[f.Name] = true
	}
	for _, f := range m.Funcs {
		if err := v.verifyFunc(f); err != nil {
			return err
		}
	}
	return v.checkCycles()
}

type verifier struct {
	m *Module
}

func (v *verifier) errorf(pos Pos, format string, args ...any) error {
	return &ParseError{File: v.m.File, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (v *verifier) verifyFunc(f *Func) error {
	if f.Body == nil {
		return v.errorf(f.Pos, "function @%s has no body", f.Name)
	}
	for _, a := range f.Args {
		if err := checkType(a.Type); err != nil {
			return v.errorf(f.Pos, "@%s argument %s: %v", f.Name, a, err)
		}
	}
	return v.verifyBlock(f.Body, f.ResultTypes, fmt.Sprintf("function @%s", f.Name), f.Pos)
}

func checkType(t TensorType) error {
	if t.DType.Size() == 0 {
		return fmt.Errorf("invalid element type in %s", t)
	}
	n := int64(1)
	for _, d := range t.Shape {
		if d < 0 {
			return fmt.Errorf("negative dimension in %s", t)
		}
		if d > 0 && n > maxElements/d {
			return fmt.Errorf("%s has more than %d elements", t, maxElements)
		}
		n *= d
	}
	return nil
}

// verifyBlock checks the ops of a block and that it ends in a return of
// the given types.
func (v *verifier) verifyBlock(b *Block, results []TensorType, what string, pos Pos) error {
	if len(b.Ops) == 0 {
		return v.errorf(pos, "%s: body is empty (missing return)", what)
	}
	for i, op := range b.Ops {
		if op.Name == "return" && i != len(b.Ops)-1 {
			return v.errorf(op.Pos, "return is not the last op of %s", what)
		}
		if err := v.verifyOp(op); err != nil {
			return err
		}
	}
	last := b.Ops[len(b.Ops)-1]
	if last.Name != "return" {
		return v.errorf(last.Pos, "%s does not end with return", what)
	}
	if len(last.Operands) != len(results) {
		return v.errorf(last.Pos, "%s returns %d values but declares %d results", what, len(last.Operands), len(results))
	}
	for i, r := range last.Operands {
		if !r.Type.Equal(results[i]) {
			return v.errorf(last.Pos, "%s result #%d: value %s has type %s but %s is declared", what, i, r, r.Type, results[i])
		}
	}
	return nil
}

func (v *verifier) verifyOp(op *Op) error {
	info, ok := opTable[op.Name]
	if !ok {
		return &ParseError{File: v.m.File, Pos: op.Pos, Msg: "unknown op " + op.Name, Unsupported: true}
	}
	for _, r := range op.Results {
		if err := checkType(r.Type); err != nil {
			return v.errorf(op.Pos, "%s result %s: %v", op.Name, r, err)
		}
	}
	for i, o := range op.Operands {
		if o == nil {
			return v.errorf(op.Pos, "%s operand #%d is nil", op.Name, i)
		}
	}
	if n, ok := regionOps[op.Name]; !ok && len(op.Regions) > 0 {
		return v.errorf(op.Pos, "%s does not take regions", op.Name)
	} else if ok && n >= 0 && len(op.Regions) != n {
		return v.errorf(op.Pos, "%s takes %d regions, has %d", op.Name, n, len(op.Regions))
	}
	inferred, err := v.infer(op, info)
	if err != nil {
		e := &ParseError{File: v.m.File, Pos: op.Pos, Msg: fmt.Sprintf("%s: %v", op.Name, err), Unsupported: errors.Is(err, ErrUnsupported)}
		return e
	}
	if inferred == nil {
		return nil // return: checked by verifyBlock
	}
	if len(inferred) != len(op.Results) {
		return v.errorf(op.Pos, "%s produces %d results but %d are declared", op.Name, len(inferred), len(op.Results))
	}
	for i, r := range op.Results {
		if !r.Type.Equal(inferred[i]) {
			return v.errorf(op.Pos, "%s: result %s is declared %s but the operands give %s", op.Name, r, r.Type, inferred[i])
		}
	}
	return nil
}

// checkArity fails unless there are n operands.
func checkArity(ops []*Value, n int) error {
	if len(ops) != n {
		return fmt.Errorf("expects %d operands, got %d", n, len(ops))
	}
	return nil
}

// declaredResult checks that op has n operands and one declared result,
// and returns that result's type (for ops whose type rule checks the
// declared type rather than deriving it).
func declaredResult(op *Op, n int) (TensorType, error) {
	if err := checkArity(op.Operands, n); err != nil {
		return TensorType{}, err
	}
	if len(op.Results) != 1 {
		return TensorType{}, fmt.Errorf("must have one result")
	}
	return op.Results[0].Type, nil
}

// checkInputsAndInits checks the operands of a reduction over n inputs
// (reduce, reduce_window): n inputs of one shape, then n scalar init
// values of the inputs' element types.
func checkInputsAndInits(op *Op, n int) error {
	in0 := op.Operands[0].Type
	for i := 0; i < n; i++ {
		in, init := op.Operands[i].Type, op.Operands[n+i].Type
		if !in.SameShape(in0) {
			return fmt.Errorf("input %s (%s) shape differs from %s", op.Operands[i], in, in0)
		}
		if init.Rank() != 0 || init.DType != in.DType {
			return fmt.Errorf("init value %s (%s) must be a scalar of %s", op.Operands[n+i], init, in.DType)
		}
	}
	return nil
}

func (v *verifier) infer(op *Op, info opInfo) ([]TensorType, error) {
	ops := op.Operands
	a := &op.Attrs
	need := func(n int) error { return checkArity(ops, n) }
	sameTypes := func() error {
		for _, o := range ops[1:] {
			if !o.Type.Equal(ops[0].Type) {
				return fmt.Errorf("operands %s (%s) and %s (%s) must have the same type", ops[0], ops[0].Type, o, o.Type)
			}
		}
		return nil
	}
	elemCheck := func(t TensorType) error {
		if t.DType.IsComplex() {
			switch {
			case info.intOnly:
				return fmt.Errorf("requires an integer or i1 operand, got %s", t)
			case info.complex == complexUnsupported:
				return fmt.Errorf("complex operands (%s): %w", t, ErrUnsupported)
			case info.floatOnly && info.complex != complexYes:
				return fmt.Errorf("requires a floating-point operand, got %s", t)
			}
			return nil
		}
		if info.floatOnly && !t.DType.IsFloat() {
			return fmt.Errorf("requires a floating-point operand, got %s", t)
		}
		if info.intOnly && t.DType.IsFloat() {
			return fmt.Errorf("requires an integer or i1 operand, got %s", t)
		}
		if info.noBool && t.DType == I1 {
			return fmt.Errorf("requires an integer operand, got %s", t)
		}
		return nil
	}
	switch info.class {
	case classUnary, classBinary, classLogical:
		n := 2
		if info.class == classUnary || op.Name == "not" {
			n = 1
		}
		if err := need(n); err != nil {
			return nil, err
		}
		if err := sameTypes(); err != nil {
			return nil, err
		}
		if err := elemCheck(ops[0].Type); err != nil {
			return nil, err
		}
		if ops[0].Type.DType == I1 && info.class != classLogical {
			switch op.Name {
			case "maximum", "minimum", "add", "multiply", "subtract":
				// JAX uses maximum/minimum/add/multiply on booleans; the
				// result follows the i1 ring / lattice.
			default:
				return nil, fmt.Errorf("does not accept i1 operands")
			}
		}
		if op.Name == "sign" && ops[0].Type.DType.IsUnsigned() {
			return nil, fmt.Errorf("does not accept unsigned operands")
		}
		if op.Name == "abs" && ops[0].Type.DType.IsComplex() {
			// §abs (C1): the modulus has the complex type's part type.
			return []TensorType{realTypeOf(ops[0].Type)}, nil
		}
		return []TensorType{ops[0].Type}, nil
	}
	switch op.Name {
	case "constant":
		if err := need(0); err != nil {
			return nil, err
		}
		if a.Constant == nil {
			return nil, fmt.Errorf("missing value")
		}
		if int64(len(a.Constant.Data)) != a.Constant.Type.ByteSize() {
			return nil, fmt.Errorf("literal buffer has %d bytes, %s needs %d", len(a.Constant.Data), a.Constant.Type, a.Constant.Type.ByteSize())
		}
		return []TensorType{a.Constant.Type}, nil
	case "iota":
		t, err := declaredResult(op, 0)
		if err != nil {
			return nil, err
		}
		if a.Dimension < 0 || a.Dimension >= int64(t.Rank()) {
			return nil, fmt.Errorf("iota dimension %d out of range for %s", a.Dimension, t)
		}
		if t.DType == I1 {
			return nil, fmt.Errorf("iota of i1 is not supported")
		}
		return []TensorType{t}, nil
	case "compare":
		if err := need(2); err != nil {
			return nil, err
		}
		if err := sameTypes(); err != nil {
			return nil, err
		}
		switch a.ComparisonDirection {
		case "EQ", "NE", "GE", "GT", "LE", "LT":
		default:
			return nil, fmt.Errorf("bad comparison direction %q", a.ComparisonDirection)
		}
		dt := ops[0].Type.DType
		switch a.CompareType {
		case "":
		case "FLOAT", "TOTALORDER":
			// §compare (C3): FLOAT for complex operands, which compare
			// (real, imag) lexicographically; TOTALORDER is floats only.
			if !dt.IsFloat() && !(dt.IsComplex() && a.CompareType == "FLOAT") {
				return nil, fmt.Errorf("compare type %s needs float operands, got %s", a.CompareType, ops[0].Type)
			}
		case "SIGNED":
			if !dt.IsSigned() && dt != I1 {
				return nil, fmt.Errorf("compare type SIGNED needs signed integer operands, got %s", ops[0].Type)
			}
		case "UNSIGNED":
			if !dt.IsUnsigned() && dt != I1 {
				return nil, fmt.Errorf("compare type UNSIGNED needs unsigned or i1 operands, got %s", ops[0].Type)
			}
		default:
			return nil, fmt.Errorf("bad compare type %q", a.CompareType)
		}
		return []TensorType{{DType: I1, Shape: ops[0].Type.Shape}}, nil
	case "select":
		if err := need(3); err != nil {
			return nil, err
		}
		if ops[0].Type.DType != I1 {
			return nil, fmt.Errorf("predicate %s must be i1, got %s", ops[0], ops[0].Type)
		}
		if !ops[1].Type.Equal(ops[2].Type) {
			return nil, fmt.Errorf("operands %s (%s) and %s (%s) must have the same type", ops[1], ops[1].Type, ops[2], ops[2].Type)
		}
		if ops[0].Type.Rank() != 0 && !ops[0].Type.SameShape(ops[1].Type) {
			return nil, fmt.Errorf("predicate %s shape %s does not match %s", ops[0], ops[0].Type, ops[1].Type)
		}
		return []TensorType{ops[1].Type}, nil
	case "clamp":
		if err := need(3); err != nil {
			return nil, err
		}
		x := ops[1].Type
		if x.DType.IsComplex() {
			// XLA defines no order on complex numbers to clamp with.
			return nil, fmt.Errorf("clamp of %s: %w", x, ErrUnsupported)
		}
		for _, o := range []*Value{ops[0], ops[2]} {
			if o.Type.DType != x.DType || (o.Type.Rank() != 0 && !o.Type.SameShape(x)) {
				return nil, fmt.Errorf("bound %s (%s) must be a scalar or match operand %s (%s)", o, o.Type, ops[1], x)
			}
		}
		return []TensorType{x}, nil
	case "convert":
		r, err := declaredResult(op, 1)
		if err != nil {
			return nil, err
		}
		if !r.SameShape(ops[0].Type) {
			return nil, fmt.Errorf("cannot convert %s to %s: shapes differ", ops[0].Type, r)
		}
		return []TensorType{r}, nil
	case "reshape":
		r, err := declaredResult(op, 1)
		if err != nil {
			return nil, err
		}
		if r.DType != ops[0].Type.DType || r.NumElements() != ops[0].Type.NumElements() {
			return nil, fmt.Errorf("cannot reshape %s (%s) to %s", ops[0], ops[0].Type, r)
		}
		return []TensorType{r}, nil
	case "broadcast_in_dim":
		r, err := declaredResult(op, 1)
		if err != nil {
			return nil, err
		}
		in := ops[0].Type
		if r.DType != in.DType {
			return nil, fmt.Errorf("element type changes from %s to %s", in, r)
		}
		if len(a.BroadcastDims) != in.Rank() {
			return nil, fmt.Errorf("broadcast_dimensions %v has %d entries for operand %s", a.BroadcastDims, len(a.BroadcastDims), in)
		}
		seen := map[int64]bool{}
		for i, d := range a.BroadcastDims {
			if d < 0 || d >= int64(r.Rank()) || seen[d] {
				return nil, fmt.Errorf("bad broadcast dimension %d for result %s", d, r)
			}
			seen[d] = true
			if in.Shape[i] != 1 && in.Shape[i] != r.Shape[d] {
				return nil, fmt.Errorf("operand dimension %d (size %d) cannot broadcast to result dimension %d (size %d)", i, in.Shape[i], d, r.Shape[d])
			}
		}
		return []TensorType{r}, nil
	case "transpose":
		if err := need(1); err != nil {
			return nil, err
		}
		in := ops[0].Type
		if !isPermutation(a.Permutation, in.Rank()) {
			return nil, fmt.Errorf("permutation %v is not a permutation of rank %d", a.Permutation, in.Rank())
		}
		shape := make([]int64, in.Rank())
		for i, p := range a.Permutation {
			shape[i] = in.Shape[p]
		}
		return []TensorType{{DType: in.DType, Shape: shape}}, nil
	case "slice":
		if err := need(1); err != nil {
			return nil, err
		}
		in := ops[0].Type
		if len(a.Strides) == 0 && len(a.StartIndices) == in.Rank() {
			a.Strides = slices.Repeat([]int64{1}, in.Rank())
		}
		if len(a.StartIndices) != in.Rank() || len(a.LimitIndices) != in.Rank() || len(a.Strides) != in.Rank() {
			return nil, fmt.Errorf("start/limit/strides must have %d entries", in.Rank())
		}
		shape := make([]int64, in.Rank())
		for i := range shape {
			s, l, st := a.StartIndices[i], a.LimitIndices[i], a.Strides[i]
			if s < 0 || l > in.Shape[i] || s > l || st <= 0 {
				return nil, fmt.Errorf("bad slice %d:%d:%d for dimension %d of size %d", s, l, st, i, in.Shape[i])
			}
			shape[i] = (l - s + st - 1) / st
		}
		return []TensorType{{DType: in.DType, Shape: shape}}, nil
	case "concatenate":
		if len(ops) == 0 {
			return nil, fmt.Errorf("needs at least one operand")
		}
		t0 := ops[0].Type
		d := a.Dimension
		if d < 0 || d >= int64(t0.Rank()) {
			return nil, fmt.Errorf("dimension %d out of range for %s", d, t0)
		}
		shape := slices.Clone(t0.Shape)
		shape[d] = 0
		for _, o := range ops {
			t := o.Type
			if t.DType != t0.DType || t.Rank() != t0.Rank() {
				return nil, fmt.Errorf("operand %s (%s) does not match %s", o, t, t0)
			}
			for i := range t.Shape {
				if int64(i) != d && t.Shape[i] != t0.Shape[i] {
					return nil, fmt.Errorf("operand %s (%s) does not match %s outside dimension %d", o, t, t0, d)
				}
			}
			shape[d] += t.Shape[d]
		}
		return []TensorType{{DType: t0.DType, Shape: shape}}, nil
	case "pad":
		if err := need(2); err != nil {
			return nil, err
		}
		in, pv := ops[0].Type, ops[1].Type
		if pv.Rank() != 0 || pv.DType != in.DType {
			return nil, fmt.Errorf("padding value %s (%s) must be a scalar of %s", ops[1], pv, in.DType)
		}
		r := in.Rank()
		if len(a.InteriorPadding) == 0 {
			a.InteriorPadding = make([]int64, r)
		}
		if len(a.EdgePaddingLow) != r || len(a.EdgePaddingHigh) != r || len(a.InteriorPadding) != r {
			return nil, fmt.Errorf("low/high/interior padding must have %d entries", r)
		}
		shape := make([]int64, r)
		for i := range shape {
			if a.InteriorPadding[i] < 0 {
				return nil, fmt.Errorf("negative interior padding %d", a.InteriorPadding[i])
			}
			n := in.Shape[i]
			sz := a.EdgePaddingLow[i] + a.EdgePaddingHigh[i] + n
			if n > 0 {
				sz += (n - 1) * a.InteriorPadding[i]
			}
			if sz < 0 {
				return nil, fmt.Errorf("padding makes dimension %d negative", i)
			}
			shape[i] = sz
		}
		t := TensorType{DType: in.DType, Shape: shape}
		if err := checkType(t); err != nil {
			return nil, err
		}
		return []TensorType{t}, nil
	case "is_finite", "bitcast_convert", "reduce_precision", "reverse", "dynamic_slice", "dynamic_update_slice":
		return inferIndexOrBits(op)
	case "dot_general":
		if err := need(2); err != nil {
			return nil, err
		}
		if _, ok := a.Other["algorithm"]; ok {
			return nil, fmt.Errorf("algorithm attribute is not supported: %w", ErrUnsupported)
		}
		return inferDot(ops[0].Type, ops[1].Type, a.Dot, op.Results)
	case "reduce":
		return v.inferReduce(op)
	case "while", "if", "case":
		return v.inferControl(op)
	case "gather":
		return inferGather(op)
	case "convolution":
		return inferConv(op)
	case "triangular_solve":
		return inferTriSolve(op)
	case "rng_bit_generator":
		return inferRngBitGenerator(op)
	case "cholesky":
		return inferCholesky(op)
	case "scatter":
		return v.inferScatter(op)
	case "sort":
		return v.inferSort(op)
	case "reduce_window":
		return v.inferReduceWindow(op)
	case "select_and_scatter":
		return v.inferSelectAndScatter(op)
	case "custom_call":
		if !CheckOps[a.Callee] {
			return nil, fmt.Errorf("custom_call target %q: %w", a.Callee, ErrUnsupported)
		}
		if err := need(2); err != nil {
			return nil, err
		}
		if !ops[0].Type.Equal(ops[1].Type) {
			return nil, fmt.Errorf("%s compares %s (%s) with %s (%s): types differ", a.Callee, ops[0], ops[0].Type, ops[1], ops[1].Type)
		}
		if dt := ops[0].Type.DType; a.Callee != "check.expect_eq" && !dt.IsFloat() && !dt.IsComplex() {
			return nil, fmt.Errorf("%s needs float operands, got %s", a.Callee, ops[0].Type)
		}
		return []TensorType{}, nil
	case "call":
		f := v.m.Func(a.Callee)
		if f == nil {
			return nil, fmt.Errorf("call to unknown function @%s", a.Callee)
		}
		if len(ops) != len(f.Args) {
			return nil, fmt.Errorf("@%s takes %d arguments, %d given", a.Callee, len(f.Args), len(ops))
		}
		for i, o := range ops {
			if !o.Type.Equal(f.Args[i].Type) {
				return nil, fmt.Errorf("argument #%d of @%s: value %s has type %s, parameter is %s", i, a.Callee, o, o.Type, f.Args[i].Type)
			}
		}
		return slices.Clone(f.ResultTypes), nil
	case "return":
		if len(op.Results) != 0 {
			return nil, fmt.Errorf("return has no results")
		}
		return nil, nil
	case "complex", "real", "imag", "fft":
		return inferComplexOp(op)
	case "chlo.top_k":
		if err := need(1); err != nil {
			return nil, err
		}
		in := ops[0].Type
		if in.DType.IsComplex() {
			return nil, fmt.Errorf("operand %s: complex numbers have no order", in)
		}
		if in.Rank() < 1 {
			return nil, fmt.Errorf("operand must have rank >= 1")
		}
		if a.K < 0 || a.K > in.Shape[in.Rank()-1] {
			return nil, fmt.Errorf("k = %d out of range for %s", a.K, in)
		}
		shape := slices.Clone(in.Shape)
		shape[len(shape)-1] = a.K
		return []TensorType{{DType: in.DType, Shape: shape}, {DType: I32, Shape: slices.Clone(shape)}}, nil
	}
	return nil, fmt.Errorf("no type rule")
}

func isPermutation(p []int64, n int) bool {
	if len(p) != n {
		return false
	}
	seen := make([]bool, n)
	for _, d := range p {
		if d < 0 || d >= int64(n) || seen[d] {
			return false
		}
		seen[d] = true
	}
	return true
}

// inferDot computes dot_general's result type: batch dims, then lhs free
// dims, then rhs free dims. The element type is taken from the declared
// result when present (StableHLO allows a wider accumulator type).
func inferDot(l, r TensorType, d DotDims, results []*Value) ([]TensorType, error) {
	if len(d.LhsBatch) != len(d.RhsBatch) || len(d.LhsContracting) != len(d.RhsContracting) {
		return nil, fmt.Errorf("lhs and rhs batch/contracting dimension lists differ in length")
	}
	if l.DType != r.DType {
		return nil, fmt.Errorf("operand element types differ: %s vs %s", l, r)
	}
	used := func(t TensorType, lists ...[]int64) ([]bool, error) {
		u := make([]bool, t.Rank())
		for _, ls := range lists {
			for _, x := range ls {
				if x < 0 || x >= int64(t.Rank()) || u[x] {
					return nil, fmt.Errorf("bad or repeated dimension %d for %s", x, t)
				}
				u[x] = true
			}
		}
		return u, nil
	}
	lu, err := used(l, d.LhsBatch, d.LhsContracting)
	if err != nil {
		return nil, err
	}
	ru, err := used(r, d.RhsBatch, d.RhsContracting)
	if err != nil {
		return nil, err
	}
	var shape []int64
	for i := range d.LhsBatch {
		if l.Shape[d.LhsBatch[i]] != r.Shape[d.RhsBatch[i]] {
			return nil, fmt.Errorf("batch dimension sizes differ: %s vs %s", l, r)
		}
		shape = append(shape, l.Shape[d.LhsBatch[i]])
	}
	for i := range d.LhsContracting {
		if l.Shape[d.LhsContracting[i]] != r.Shape[d.RhsContracting[i]] {
			return nil, fmt.Errorf("contracting dimension sizes differ: %s vs %s", l, r)
		}
	}
	for i, u := range lu {
		if !u {
			shape = append(shape, l.Shape[i])
		}
	}
	for i, u := range ru {
		if !u {
			shape = append(shape, r.Shape[i])
		}
	}
	dt := l.DType
	if len(results) == 1 {
		dt = results[0].Type.DType
		if dt.IsFloat() != l.DType.IsFloat() || dt.IsComplex() != l.DType.IsComplex() || dt == I1 {
			return nil, fmt.Errorf("result element type %s incompatible with operands %s", dt, l.DType)
		}
	}
	if shape == nil {
		shape = []int64{}
	}
	return []TensorType{{DType: dt, Shape: shape}}, nil
}

// inferReduce checks reduce's operands, dimensions and body signature.
func (v *verifier) inferReduce(op *Op) ([]TensorType, error) {
	if len(op.Operands)%2 != 0 || len(op.Operands) == 0 {
		return nil, fmt.Errorf("needs N inputs followed by N init values")
	}
	n := len(op.Operands) / 2
	in0 := op.Operands[0].Type
	dims := op.Attrs.ReduceDims
	seen := map[int64]bool{}
	for _, d := range dims {
		if d < 0 || d >= int64(in0.Rank()) || seen[d] {
			return nil, fmt.Errorf("bad or repeated reduce dimension %d for %s", d, in0)
		}
		seen[d] = true
	}
	var outShape []int64
	for i, s := range in0.Shape {
		if !seen[int64(i)] {
			outShape = append(outShape, s)
		}
	}
	if outShape == nil {
		outShape = []int64{}
	}
	if err := checkInputsAndInits(op, n); err != nil {
		return nil, err
	}
	var out []TensorType
	for i := 0; i < n; i++ {
		out = append(out, TensorType{DType: op.Operands[i].Type.DType, Shape: outShape})
	}
	if len(op.Regions) != 1 {
		return nil, fmt.Errorf("needs exactly one body region")
	}
	body := op.Regions[0]
	if len(body.Args) != 2*n {
		return nil, fmt.Errorf("body takes %d arguments, needs %d", len(body.Args), 2*n)
	}
	scalars := make([]TensorType, n)
	for i := 0; i < n; i++ {
		scalars[i] = TensorType{DType: out[i].DType, Shape: []int64{}}
		for _, a := range []*Value{body.Args[i], body.Args[n+i]} {
			if !a.Type.Equal(scalars[i]) {
				return nil, fmt.Errorf("body argument %s has type %s, expected %s", a, a.Type, scalars[i])
			}
		}
	}
	if err := v.verifyBlock(body, scalars, "reduce body", op.Pos); err != nil {
		return nil, err
	}
	return out, nil
}

// checkCycles rejects recursive call graphs (which Inline and Eval could
// not finish).
func (v *verifier) checkCycles() error {
	state := map[string]int{} // 1 visiting, 2 done
	var visit func(f *Func) error
	visit = func(f *Func) error {
		switch state[f.Name] {
		case 1:
			return v.errorf(f.Pos, "recursive call involving @%s", f.Name)
		case 2:
			return nil
		}
		state[f.Name] = 1
		var err error
		walkOps(f.Body, func(op *Op) {
			if err != nil || op.Name != "call" {
				return
			}
			if g := v.m.Func(op.Attrs.Callee); g != nil {
				err = visit(g)
			}
		})
		state[f.Name] = 2
		return err
	}
	for _, f := range v.m.Funcs {
		if err := visit(f); err != nil {
			return err
		}
	}
	return nil
}

// walkOps calls fn for every op in b and its nested regions.
func walkOps(b *Block, fn func(*Op)) {
	for _, op := range b.Ops {
		fn(op)
		for _, r := range op.Regions {
			walkOps(r, fn)
		}
	}
}

package stablehlo

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

func sortStrings(s []string) { sort.Strings(s) }

// parsePrettyOp parses an op in the custom (pretty) assembly format that
// stablehlo-opt and JAX print. The current token is the op name.
func (p *parser) parsePrettyOp() (*Op, []TensorType, error) {
	nameTok := p.tok
	name := canonicalOpName(nameTok.text)
	if nameTok.text == "func.func" || nameTok.text == "module" {
		return nil, nil, p.errorf(nameTok.pos, "unexpected %s: the enclosing block is missing its closing '}'", nameTok.text)
	}
	if !knownOp(name) || (!strings.HasPrefix(nameTok.text, "stablehlo.") && !strings.HasPrefix(nameTok.text, "chlo.") &&
		!strings.HasPrefix(nameTok.text, "func.") && nameTok.text != "call" && nameTok.text != "return") {
		if !strings.Contains(nameTok.text, ".") {
			// Not a dialect op name at all: malformed text.
			return nil, nil, p.errorf(nameTok.pos, "unknown op %s", nameTok.text)
		}
		return nil, nil, p.unsupportedf(nameTok.pos, "unknown op %s", nameTok.text)
	}
	op := &Op{Name: name}
	if err := p.advance(); err != nil {
		return nil, nil, err
	}
	switch name {
	case "constant":
		return p.prettyConstant(op)
	case "iota":
		if err := p.expectSeq("dim", "="); err != nil {
			return nil, nil, err
		}
		n, err := p.parseIntTok()
		if err != nil {
			return nil, nil, err
		}
		op.Attrs.Dimension = n
		return p.prettyTail(op, nameTok)
	case "compare":
		return p.prettyCompare(op, nameTok)
	case "slice":
		return p.prettySlice(op, nameTok)
	case "reduce":
		return p.prettyReduce(op, nameTok)
	case "custom_call", "call":
		return p.prettyCall(op, nameTok)
	case "return":
		return p.prettyReturn(op, nameTok)
	case "chlo.top_k":
		return p.prettyTopK(op, nameTok)
	case "while":
		return p.prettyWhile(op, nameTok)
	case "convolution":
		return p.prettyConvolution(op, nameTok)
	}
	// Operand list followed by op-specific keyword attributes.
	if err := p.parseOperandsUntilKeyword(op); err != nil {
		return nil, nil, err
	}
	for p.tok.is(",") {
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		if err := p.prettyKeyword(op); err != nil {
			return nil, nil, err
		}
	}
	return p.prettyTail(op, nameTok)
}

// parseOperandsUntilKeyword parses a comma-separated list of operands as
// op's operands and stops (leaving the comma as the current token) when a comma is followed
// by something other than an operand.
func (p *parser) parseOperandsUntilKeyword(op *Op) error {
	var out []*Value
	for p.tok.kind == tValue {
		v, err := p.lookup(p.tok)
		if err != nil {
			return err
		}
		out = append(out, v)
		if err := p.advance(); err != nil {
			return err
		}
		if !p.tok.is(",") {
			break
		}
		// Peek: is the next token an operand?
		save := *p.lx
		saveTok := p.tok
		if err := p.advance(); err != nil {
			return err
		}
		if p.tok.kind != tValue {
			*p.lx = save
			p.tok = saveTok
			break
		}
	}
	op.Operands = out
	return nil
}

func (p *parser) parseIntTok() (int64, error) {
	if p.tok.kind != tInt {
		return 0, p.errorf(p.tok.pos, "expected integer, found %s", p.tok.describe())
	}
	n, err := parseIntLit(p.tok.text)
	if err != nil {
		return 0, p.errorf(p.tok.pos, "bad integer %q", p.tok.text)
	}
	return n, p.advance()
}

// parseIntList parses "[1, 2, 3]".
func (p *parser) parseIntList() ([]int64, error) {
	if err := p.expect("["); err != nil {
		return nil, err
	}
	out := []int64{}
	for !p.tok.is("]") {
		if len(out) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		n, err := p.parseIntTok()
		if err != nil {
			return nil, err
		}
		out = append(out, n)
	}
	return out, p.advance()
}

// prettyKeyword parses one "name = value" keyword attribute of the pretty
// form (dims = [..], dim = 1, low = [..], contracting_dims = [..] x [..]).
func (p *parser) prettyKeyword(op *Op) error {
	kw, err := p.parseIdent("attribute keyword")
	if err != nil {
		return err
	}
	if err := p.expect("="); err != nil {
		return err
	}
	switch op.Name + "/" + kw.text {
	case "broadcast_in_dim/dims":
		op.Attrs.BroadcastDims, err = p.parseIntList()
	case "transpose/dims":
		op.Attrs.Permutation, err = p.parseIntList()
	case "concatenate/dim":
		op.Attrs.Dimension, err = p.parseIntTok()
	case "pad/low":
		op.Attrs.EdgePaddingLow, err = p.parseIntList()
	case "pad/high":
		op.Attrs.EdgePaddingHigh, err = p.parseIntList()
	case "pad/interior":
		op.Attrs.InteriorPadding, err = p.parseIntList()
	case "dot_general/batching_dims", "dot_general/contracting_dims":
		var l, r []int64
		if l, err = p.parseIntList(); err != nil {
			return err
		}
		if err = p.expectIdent("x"); err != nil {
			return err
		}
		if r, err = p.parseIntList(); err != nil {
			return err
		}
		if kw.text == "batching_dims" {
			op.Attrs.Dot.LhsBatch, op.Attrs.Dot.RhsBatch = l, r
		} else {
			op.Attrs.Dot.LhsContracting, op.Attrs.Dot.RhsContracting = l, r
		}
	case "dot_general/precision":
		if err = p.expect("["); err != nil {
			return err
		}
		op.Attrs.Precision = []string{}
		for !p.tok.is("]") {
			if len(op.Attrs.Precision) > 0 {
				if err = p.expect(","); err != nil {
					return err
				}
			}
			t, err := p.parseIdent("precision")
			if err != nil {
				return err
			}
			op.Attrs.Precision = append(op.Attrs.Precision, t.text)
		}
		err = p.advance()
	case "reverse/dims":
		op.Attrs.Dims, err = p.parseIntList()
	case "fft/type":
		t, e := p.parseIdent("fft type")
		if e != nil {
			return e
		}
		op.Attrs.FftType = t.text
	case "fft/length":
		op.Attrs.FftLength, err = p.parseIntList()
	case "dynamic_slice/sizes":
		op.Attrs.SliceSizes, err = p.parseIntList()
	case "rng_bit_generator/algorithm":
		t, e := p.parseIdent("rng algorithm")
		if e != nil {
			return e
		}
		op.Attrs.RngAlgorithm = t.text
	case "cholesky/lower":
		t, e := p.parseIdent("true or false")
		if e != nil {
			return e
		}
		if t.text != "true" && t.text != "false" {
			return p.errorf(t.pos, "lower must be true or false, found %q", t.text)
		}
		op.Attrs.Lower = t.text == "true"
	case "reduce_precision/format":
		// e5m10: exponent and mantissa bit counts.
		t, e := p.parseIdent("format such as e5m10")
		if e != nil {
			return e
		}
		var eb, mb int64
		if n, _ := fmt.Sscanf(t.text, "e%dm%d", &eb, &mb); n != 2 || fmt.Sprintf("e%dm%d", eb, mb) != t.text {
			return p.errorf(t.pos, "bad reduce_precision format %q", t.text)
		}
		op.Attrs.ExponentBits, op.Attrs.MantissaBits = eb, mb
	case "dot_general/algorithm":
		// The algorithm fixes operand and accumulation precisions; computing
		// with other ones would be a silently different result.
		return p.unsupportedf(kw.pos, "dot_general algorithm attribute is not supported")
	default:
		// Any other keyword is kept verbatim.
		v, verr := p.parseAttrValue()
		if verr != nil {
			return verr
		}
		if op.Attrs.Other == nil {
			op.Attrs.Other = map[string]string{}
		}
		op.Attrs.Other[kw.text] = v.text
	}
	return err
}

// prettyTail parses the optional attribute dictionary and the type
// signature, checks operand types and returns the result types.
func (p *parser) prettyTail(op *Op, nameTok token) (*Op, []TensorType, error) {
	if err := p.parseOptionalAttrs(op); err != nil {
		return nil, nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, nil, err
	}
	ins, outs, err := p.parseSignature(op)
	if err != nil {
		return nil, nil, err
	}
	if err := p.checkOperandTypes(nameTok.pos, nameTok.text, op.Operands, ins); err != nil {
		return nil, nil, err
	}
	return op, outs, nil
}

// parseOptionalAttrs parses and applies the extra attribute dictionary a
// pretty op may carry before its type.
func (p *parser) parseOptionalAttrs(op *Op) error {
	if !p.tok.is("{") {
		return nil
	}
	fields, err := p.parseAttrDict()
	if err != nil {
		return err
	}
	return p.applyAttrs(op, fields)
}

// parseFuncTypeTail parses "{attrs}? : (ins) -> outs" for the pretty ops
// whose type must be a full function type, and returns the result types.
func (p *parser) parseFuncTypeTail(op *Op, nameTok token) ([]TensorType, error) {
	if err := p.parseOptionalAttrs(op); err != nil {
		return nil, err
	}
	return p.parseCheckedFuncType(op, nameTok)
}

// parseSignature parses the pretty type signature: a function type, the
// chlo "T, T -> T" form, or the abbreviated forms "T" (all operands and
// the result share T) and "Tpred, T" (select).
func (p *parser) parseSignature(op *Op) (ins, outs []TensorType, err error) {
	if p.tok.is("(") {
		return p.parseFuncType()
	}
	types, err := p.parseTypeList()
	if err != nil {
		return nil, nil, err
	}
	if p.tok.is("->") {
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		outs, err := p.parseResultTypes()
		return types, outs, err
	}
	n := len(op.Operands)
	switch {
	case len(types) == 1 && op.Name == "complex" && n == 2:
		// MLIR's ComplexOpType form: the result type alone, the
		// operands being its parts.
		rt := realTypeOf(types[0])
		return []TensorType{rt, rt}, []TensorType{types[0]}, nil
	case len(types) == 1 && (op.Name == "real" || op.Name == "imag") && n == 1:
		// The operand type alone; the result is its part type.
		return []TensorType{types[0]}, []TensorType{realTypeOf(types[0])}, nil
	case len(types) == 1:
		ins = make([]TensorType, n)
		for i := range ins {
			ins[i] = types[0]
		}
		return ins, []TensorType{types[0]}, nil
	case len(types) == 2 && op.Name == "select" && n == 3:
		return []TensorType{types[0], types[1], types[1]}, []TensorType{types[1]}, nil
	}
	return nil, nil, p.errorf(p.tok.pos, "cannot interpret type signature of %s", op.Name)
}

func (p *parser) prettyConstant(op *Op) (*Op, []TensorType, error) {
	var fields []attrField
	if p.tok.is("{") {
		f, err := p.parseAttrDict()
		if err != nil {
			return nil, nil, err
		}
		fields = f
	}
	if !p.isIdent("dense") {
		return nil, nil, p.errorf(p.tok.pos, "expected dense<...> constant, found %s", p.tok.describe())
	}
	t, err := p.parseDenseAttr()
	if err != nil {
		return nil, nil, err
	}
	op.Attrs.Constant = t
	if err := p.applyAttrs(op, fields); err != nil {
		return nil, nil, err
	}
	return op, []TensorType{t.Type}, nil
}

func (p *parser) prettyCompare(op *Op, nameTok token) (*Op, []TensorType, error) {
	dir, err := p.parseIdent("comparison direction")
	if err != nil {
		return nil, nil, err
	}
	op.Attrs.ComparisonDirection = dir.text
	if err := p.expect(","); err != nil {
		return nil, nil, err
	}
	if err := p.parseOperandsUntilKeyword(op); err != nil {
		return nil, nil, err
	}
	if p.tok.is(",") {
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		ct, err := p.parseIdent("comparison type")
		if err != nil {
			return nil, nil, err
		}
		op.Attrs.CompareType = ct.text
	}
	return p.prettyTail(op, nameTok)
}

// prettySlice parses "%x [0:10, 2:3:1, ...]".
func (p *parser) prettySlice(op *Op, nameTok token) (*Op, []TensorType, error) {
	if err := p.parseOperandsUntilKeyword(op); err != nil {
		return nil, nil, err
	}
	if p.tok.is(",") {
		// Older keyword form: starts/limits/strides lists are not printed
		// by current tools; fall through to the generic keyword parser.
		return nil, nil, p.unsupportedf(p.tok.pos, "unsupported slice syntax")
	}
	if err := p.expect("["); err != nil {
		return nil, nil, err
	}
	a := &op.Attrs
	a.StartIndices, a.LimitIndices, a.Strides = []int64{}, []int64{}, []int64{}
	for !p.tok.is("]") {
		if len(a.StartIndices) > 0 {
			if err := p.expect(","); err != nil {
				return nil, nil, err
			}
		}
		s, err := p.parseIntTok()
		if err != nil {
			return nil, nil, err
		}
		if err := p.expect(":"); err != nil {
			return nil, nil, err
		}
		l, err := p.parseIntTok()
		if err != nil {
			return nil, nil, err
		}
		st := int64(1)
		if p.tok.is(":") {
			if err := p.advance(); err != nil {
				return nil, nil, err
			}
			if st, err = p.parseIntTok(); err != nil {
				return nil, nil, err
			}
		}
		a.StartIndices = append(a.StartIndices, s)
		a.LimitIndices = append(a.LimitIndices, l)
		a.Strides = append(a.Strides, st)
	}
	if err := p.advance(); err != nil {
		return nil, nil, err
	}
	return p.prettyTail(op, nameTok)
}

// prettyReduce parses both pretty reduce forms:
//
//	stablehlo.reduce(%a init: %b) applies stablehlo.add across dimensions = [0] : (...) -> ...
//	stablehlo.reduce(%a init: %b), (%c init: %d) across dimensions = [0] : (...) -> (...)
//	  reducer(%x: T, %y: T) (%x2: T, %y2: T) { ... stablehlo.return ... }
func (p *parser) prettyReduce(op *Op, nameTok token) (*Op, []TensorType, error) {
	var inputs, inits []*Value
	for {
		if err := p.expect("("); err != nil {
			return nil, nil, err
		}
		in, err := p.parseValueUse("reduce operand")
		if err != nil {
			return nil, nil, err
		}
		if err := p.expectSeq("init", ":"); err != nil {
			return nil, nil, err
		}
		init, err := p.parseValueUse("reduce init value")
		if err != nil {
			return nil, nil, err
		}
		if err := p.expect(")"); err != nil {
			return nil, nil, err
		}
		inputs = append(inputs, in)
		inits = append(inits, init)
		if !p.tok.is(",") {
			break
		}
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
	}
	op.Operands = append(append([]*Value{}, inputs...), inits...)
	var applyTok *token
	if p.isIdent("applies") {
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		t, err := p.parseIdent("op name after applies")
		if err != nil {
			return nil, nil, err
		}
		applyTok = &t
	}
	if err := p.expectSeq("across", "dimensions", "="); err != nil {
		return nil, nil, err
	}
	dims, err := p.parseIntList()
	if err != nil {
		return nil, nil, err
	}
	op.Attrs.ReduceDims = dims
	outs, err := p.parseFuncTypeTail(op, nameTok)
	if err != nil {
		return nil, nil, err
	}
	n := len(inputs)
	if applyTok != nil {
		body, err := p.appliesBody(*applyTok, inits)
		if err != nil {
			return nil, nil, err
		}
		op.Regions = []*Block{body}
		return op, outs, nil
	}
	// reducer(%lhs_i: T, %rhs_i: T) per input, then a body block.
	if err := p.skipLoc(); err != nil {
		return nil, nil, err
	}
	if err := p.expectIdent("reducer"); err != nil {
		return nil, nil, err
	}
	p.pushScope(false)
	defer p.popScope()
	lhs := make([]*Value, 0, n)
	rhs := make([]*Value, 0, n)
	for p.tok.is("(") {
		args, err := p.parseBlockArgs()
		if err != nil {
			return nil, nil, err
		}
		if len(args) != 2 {
			return nil, nil, p.errorf(p.tok.pos, "reducer argument group must have 2 arguments, has %d", len(args))
		}
		lhs = append(lhs, args[0])
		rhs = append(rhs, args[1])
	}
	if len(lhs) != n {
		return nil, nil, p.errorf(p.tok.pos, "reducer has %d argument groups for %d inputs", len(lhs), n)
	}
	b := &Block{Args: append(lhs, rhs...)}
	for i, a := range b.Args {
		a.Index = i
	}
	if err := p.parseBlockBody(b); err != nil {
		return nil, nil, err
	}
	op.Regions = []*Block{b}
	return op, outs, nil
}

// appliesBody builds the region for the "applies stablehlo.add" short
// form: block args (acc, elem) of the init element types and one op.
func (p *parser) appliesBody(t token, inits []*Value) (*Block, error) {
	name := canonicalOpName(t.text)
	info, ok := opTable[name]
	if !ok || (info.class != classBinary && !(info.class == classLogical && name != "not")) || len(inits) != 1 {
		return nil, p.unsupportedf(t.pos, "unsupported reduce body op %s", t.text)
	}
	ty := TensorType{DType: inits[0].Type.DType, Shape: []int64{}}
	a := &Value{Type: ty, ID: p.nextID, Index: 0, Name: "lhs"}
	b := &Value{Type: ty, ID: p.nextID + 1, Index: 1, Name: "rhs"}
	r := &Value{Type: ty, ID: p.nextID + 2, Name: "acc"}
	p.nextID += 3
	body := &Op{Name: name, Operands: []*Value{a, b}, Results: []*Value{r}, Pos: t.pos}
	r.Def = body
	ret := &Op{Name: "return", Operands: []*Value{r}, Pos: t.pos}
	return &Block{Args: []*Value{a, b}, Ops: []*Op{body, ret}}, nil
}

// prettyCall parses "@target(%a, %b) {attrs} : functype" for call and
// custom_call.
func (p *parser) prettyCall(op *Op, nameTok token) (*Op, []TensorType, error) {
	if p.tok.kind != tSymbol {
		return nil, nil, p.errorf(p.tok.pos, "expected @callee, found %s", p.tok.describe())
	}
	op.Attrs.Callee = p.tok.text
	if err := p.advance(); err != nil {
		return nil, nil, err
	}
	if err := p.parseParenOperands(op); err != nil {
		return nil, nil, err
	}
	outs, err := p.parseFuncTypeTail(op, nameTok)
	if err != nil {
		return nil, nil, err
	}
	return op, outs, nil
}

// prettyReturn parses "return %a, %b : T, T" (or a bare "return").
func (p *parser) prettyReturn(op *Op, nameTok token) (*Op, []TensorType, error) {
	if err := p.parseOperandsUntilKeyword(op); err != nil {
		return nil, nil, err
	}
	if len(op.Operands) == 0 {
		return op, nil, nil
	}
	if err := p.expect(":"); err != nil {
		return nil, nil, err
	}
	types, err := p.parseTypeList()
	if err != nil {
		return nil, nil, err
	}
	if err := p.checkOperandTypes(nameTok.pos, nameTok.text, op.Operands, types); err != nil {
		return nil, nil, err
	}
	return op, nil, nil
}

// prettyTopK parses "chlo.top_k(%x, k = 2) : T -> (T, T)".
func (p *parser) prettyTopK(op *Op, nameTok token) (*Op, []TensorType, error) {
	if err := p.expect("("); err != nil {
		return nil, nil, err
	}
	if err := p.parseOperandsUntilKeyword(op); err != nil {
		return nil, nil, err
	}
	if err := p.expectSeq(",", "k", "="); err != nil {
		return nil, nil, err
	}
	k, err := p.parseIntTok()
	if err != nil {
		return nil, nil, err
	}
	op.Attrs.K = k
	if err := p.expect(")"); err != nil {
		return nil, nil, err
	}
	return p.prettyTail(op, nameTok)
}

// applyAttrs interprets attribute dictionaries (generic-form attributes
// and pretty-form extra dictionaries) into the typed Attrs fields.
// kindAttr fails unless attribute f's value is of kind k, described as
// what in the message.
func (p *parser) kindAttr(f attrField, k attrKind, what string) error {
	if f.val.kind != k {
		return p.errorf(f.val.pos, "%s must be %s", f.name, what)
	}
	return nil
}

// boolAttr is attribute f's boolean value.
func (p *parser) boolAttr(f attrField) (bool, error) {
	return f.val.b, p.kindAttr(f, aBool, "a boolean")
}

// textAttr is the text of attribute f's value of kind k (an enum, string
// or symbol), described as what in the message.
func (p *parser) textAttr(f attrField, k attrKind, what string) (string, error) {
	return f.val.s, p.kindAttr(f, k, what)
}

func (p *parser) applyAttrs(op *Op, fields []attrField) error {
	a := &op.Attrs
	ints := func(f attrField) ([]int64, error) {
		v, ok := f.val.asInts()
		if !ok {
			return nil, p.errorf(f.val.pos, "attribute %s of %s must be a list of integers, got %s", f.name, op.Name, f.val.text)
		}
		return slices.Clone(v), nil
	}
	one := func(f attrField) (int64, error) {
		if f.val.kind != aInt {
			return 0, p.errorf(f.val.pos, "attribute %s of %s must be an integer, got %s", f.name, op.Name, f.val.text)
		}
		return f.val.i, nil
	}
	var err error
	for _, f := range fields {
		if op.Name == "convolution" {
			if ok, err := p.applyConvAttr(op, f.name, f); ok {
				if err != nil {
					return err
				}
				continue
			}
		}
		switch op.Name + "/" + f.name {
		case "constant/value":
			if f.val.kind != aDense {
				return p.errorf(f.val.pos, "constant value must be a dense literal")
			}
			a.Constant = f.val.tensor
		case "iota/iota_dimension":
			a.Dimension, err = one(f)
		case "concatenate/dimension":
			a.Dimension, err = one(f)
		case "broadcast_in_dim/broadcast_dimensions":
			a.BroadcastDims, err = ints(f)
		case "transpose/permutation":
			a.Permutation, err = ints(f)
		case "slice/start_indices":
			a.StartIndices, err = ints(f)
		case "slice/limit_indices":
			a.LimitIndices, err = ints(f)
		case "slice/strides":
			a.Strides, err = ints(f)
		case "pad/edge_padding_low":
			a.EdgePaddingLow, err = ints(f)
		case "pad/edge_padding_high":
			a.EdgePaddingHigh, err = ints(f)
		case "pad/interior_padding":
			a.InteriorPadding, err = ints(f)
		case "reduce/dimensions":
			a.ReduceDims, err = ints(f)
		case "chlo.top_k/k":
			a.K, err = one(f)
		case "reverse/dimensions":
			a.Dims, err = ints(f)
		case "dynamic_slice/slice_sizes":
			a.SliceSizes, err = ints(f)
		case "gather/dimension_numbers":
			err = p.applyGatherDims(f.val, &a.Gather)
		case "gather/slice_sizes":
			a.SliceSizes, err = ints(f)
		case "scatter/scatter_dimension_numbers":
			err = p.applyScatterDims(f.val, &a.Scatter)
		case "gather/indices_are_sorted", "scatter/indices_are_sorted":
			a.IndicesAreSorted, err = p.boolAttr(f)
		case "scatter/unique_indices":
			a.UniqueIndices, err = p.boolAttr(f)
		case "sort/is_stable":
			a.IsStable, err = p.boolAttr(f)
		case "triangular_solve/left_side":
			a.TriSolve.LeftSide, err = p.boolAttr(f)
		case "triangular_solve/lower":
			a.TriSolve.Lower, err = p.boolAttr(f)
		case "triangular_solve/unit_diagonal":
			a.TriSolve.UnitDiagonal, err = p.boolAttr(f)
		case "cholesky/lower":
			a.Lower, err = p.boolAttr(f)
		case "fft/fft_type":
			a.FftType, err = p.textAttr(f, aEnum, "#stablehlo<fft_type X>")
		case "fft/fft_length":
			a.FftLength, err = ints(f)
		case "rng_bit_generator/rng_algorithm":
			a.RngAlgorithm, err = p.textAttr(f, aEnum, "#stablehlo<rng_algorithm X>")
		case "triangular_solve/transpose_a":
			a.TriSolve.TransposeA, err = p.textAttr(f, aEnum, "#stablehlo<transpose X>")
		case "sort/dimension":
			a.Dimension, err = one(f)
		case "reduce_window/window_dimensions", "select_and_scatter/window_dimensions":
			a.Window.Dimensions, err = ints(f)
		case "reduce_window/window_strides", "select_and_scatter/window_strides":
			a.Window.Strides, err = ints(f)
		case "reduce_window/base_dilations":
			a.Window.BaseDilations, err = ints(f)
		case "reduce_window/window_dilations":
			a.Window.WindowDilations, err = ints(f)
		case "reduce_window/padding", "select_and_scatter/padding":
			a.Window.PadLow, a.Window.PadHigh, err = p.paddingAttr(f)
		case "reduce_precision/exponent_bits":
			a.ExponentBits, err = one(f)
		case "reduce_precision/mantissa_bits":
			a.MantissaBits, err = one(f)
		case "compare/comparison_direction":
			a.ComparisonDirection, err = p.textAttr(f, aEnum, "#stablehlo<comparison_direction X>")
		case "compare/compare_type":
			a.CompareType, err = p.textAttr(f, aEnum, "#stablehlo<comparison_type X>")
		case "dot_general/dot_dimension_numbers":
			err = p.applyDimFields(f.val, f.name, "dot", nil, map[string]*[]int64{
				"lhs_batching_dimensions":    &a.Dot.LhsBatch,
				"rhs_batching_dimensions":    &a.Dot.RhsBatch,
				"lhs_contracting_dimensions": &a.Dot.LhsContracting,
				"rhs_contracting_dimensions": &a.Dot.RhsContracting,
			})
		case "dot_general/precision_config":
			if err := p.kindAttr(f, aList, "a list"); err != nil {
				return err
			}
			a.Precision = []string{}
			for _, e := range f.val.list {
				if e.kind != aEnum {
					return p.errorf(e.pos, "precision_config entries must be #stablehlo<precision X>")
				}
				a.Precision = append(a.Precision, e.s)
			}
		case "dot_general/algorithm":
			return p.unsupportedf(f.val.pos, "dot_general algorithm attribute is not supported")
		case "custom_call/call_target_name":
			a.Callee, err = p.textAttr(f, aString, "a string")
		case "call/callee":
			a.Callee, err = p.textAttr(f, aSymbol, "a symbol")
		case "custom_call/has_side_effect":
			a.HasSideEffect, err = p.boolAttr(f)
		case "custom_call/min_ulp_difference", "custom_call/max_ulp_difference":
			n, e := one(f)
			if e != nil {
				return e
			}
			if f.name == "min_ulp_difference" {
				a.MinULP = &n
			} else {
				a.MaxULP = &n
			}
		case "custom_call/tolerance":
			var tol float64
			switch f.val.kind {
			case aFloat:
				tol = f.val.f
			case aInt:
				tol = float64(f.val.i)
			default:
				return p.errorf(f.val.pos, "tolerance must be a number")
			}
			a.Tolerance = &tol
		default:
			if a.Other == nil {
				a.Other = map[string]string{}
			}
			a.Other[f.name] = f.val.text
		}
		if err != nil {
			return err
		}
	}
	return nil
}

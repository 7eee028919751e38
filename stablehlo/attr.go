package stablehlo

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/xlacache/xlacache/internal/sysmem"
)

// attrKind classifies parsed MLIR attribute values.
type attrKind int

const (
	aRaw    attrKind = iota // anything not interpreted; text only
	aInt                    // 3 : i64
	aFloat                  // 1.5 : f32
	aBool                   // true / false
	aString                 // "text"
	aSymbol                 // @callee
	aList                   // [a, b]
	aInts                   // array<i64: 1, 2> (or an int list)
	aDense                  // dense<...> : tensor<...>
	aEnum                   // #stablehlo<comparison_direction GT>
	aStruct                 // #stablehlo.dot<key = value, ...>
	aDict                   // {key = value}
	aUnit                   // a name without value in a dict
)

// attrVal is a parsed attribute. text is a whitespace-normalised
// rendering used for the canonical form of attributes this package does
// not interpret.
type attrVal struct {
	kind   attrKind
	i      int64
	f      float64
	b      bool
	s      string // string, symbol, enum value, struct/enum dialect name
	list   []attrVal
	ints   []int64
	tensor *Tensor
	fields []attrField
	text   string
	pos    Pos
}

type attrField struct {
	name string
	val  attrVal
}

// asInts converts an int list in any of its spellings (array<i64: ...>,
// [1, 2], dense<[1, 2]> : tensor<2xi64>) to []int64.
func (a attrVal) asInts() ([]int64, bool) {
	switch a.kind {
	case aInts:
		return a.ints, true
	case aList:
		out := make([]int64, 0, len(a.list))
		for _, e := range a.list {
			if e.kind != aInt {
				return nil, false
			}
			out = append(out, e.i)
		}
		return out, true
	case aDense:
		if a.tensor.Type.DType.IsFloat() || a.tensor.Type.DType.IsComplex() || a.tensor.Type.Rank() > 1 {
			return nil, false
		}
		n := a.tensor.Type.NumElements()
		out := make([]int64, n)
		for i := range out {
			out[i] = a.tensor.Int64At(int64(i))
		}
		return out, true
	case aInt:
		return []int64{a.i}, true
	}
	return nil, false
}

// parseAttrDict parses "{name = value, name2, ...}" with the current token
// at '{'.
func (p *parser) parseAttrDict() ([]attrField, error) {
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	var out []attrField
	for !p.tok.is("}") {
		if len(out) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		var name string
		switch p.tok.kind {
		case tIdent, tString:
			name = p.tok.text
		default:
			return nil, p.errorf(p.tok.pos, "expected attribute name, found %s", p.tok.describe())
		}
		pos := p.tok.pos
		if err := p.advance(); err != nil {
			return nil, err
		}
		if !p.tok.is("=") {
			out = append(out, attrField{name: name, val: attrVal{kind: aUnit, text: "unit", pos: pos}})
			continue
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
		v, err := p.parseAttrValue()
		if err != nil {
			return nil, err
		}
		out = append(out, attrField{name: name, val: v})
	}
	return out, p.advance()
}

func dictText(fields []attrField) string {
	parts := make([]string, len(fields))
	for i, f := range fields {
		parts[i] = f.name + " = " + f.val.text
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// parseAttrValue parses one attribute value at the current token.
func (p *parser) parseAttrValue() (attrVal, error) {
	if err := p.enter(); err != nil {
		return attrVal{}, err
	}
	defer p.leave()
	t := p.tok
	switch t.kind {
	case tInt, tFloat:
		v, err := p.parseNumberAttr()
		return v, err
	case tString:
		if err := p.advance(); err != nil {
			return attrVal{}, err
		}
		v := attrVal{kind: aString, s: t.text, text: mlirQuote(t.text), pos: t.pos}
		if p.tok.is(":") { // typed string attrs are rare; keep the type in text
			ty, err := p.parseTypeAfterColon()
			if err != nil {
				return attrVal{}, err
			}
			v.text += " : " + ty
		}
		return v, nil
	case tSymbol:
		if err := p.advance(); err != nil {
			return attrVal{}, err
		}
		return attrVal{kind: aSymbol, s: t.text, text: symbolText(t.text), pos: t.pos}, nil
	case tPunct:
		switch t.text {
		case "[":
			if err := p.advance(); err != nil {
				return attrVal{}, err
			}
			v := attrVal{kind: aList, pos: t.pos}
			var texts []string
			for !p.tok.is("]") {
				if len(v.list) > 0 {
					if err := p.expect(","); err != nil {
						return attrVal{}, err
					}
				}
				e, err := p.parseAttrValue()
				if err != nil {
					return attrVal{}, err
				}
				v.list = append(v.list, e)
				texts = append(texts, e.text)
			}
			v.text = "[" + strings.Join(texts, ", ") + "]"
			return v, p.advance()
		case "{":
			fields, err := p.parseAttrDict()
			if err != nil {
				return attrVal{}, err
			}
			return attrVal{kind: aDict, fields: fields, text: dictText(fields), pos: t.pos}, nil
		case "(":
			// A function type used as an attribute value.
			ins, outs, err := p.parseFuncType()
			if err != nil {
				return attrVal{}, err
			}
			return attrVal{kind: aRaw, text: funcTypeText(ins, outs), pos: t.pos}, nil
		}
	case tIdent:
		switch t.text {
		case "true", "false":
			if err := p.advance(); err != nil {
				return attrVal{}, err
			}
			return attrVal{kind: aBool, b: t.text == "true", text: t.text, pos: t.pos}, nil
		case "dense":
			tensor, err := p.parseDenseAttr()
			if err != nil {
				return attrVal{}, err
			}
			return attrVal{kind: aDense, tensor: tensor, text: tensor.String(), pos: t.pos}, nil
		case "array":
			return p.parseArrayAttr()
		case "tensor":
			ty, err := p.parseType()
			if err != nil {
				return attrVal{}, err
			}
			return attrVal{kind: aRaw, text: ty.String(), pos: t.pos}, nil
		case "unit":
			if err := p.advance(); err != nil {
				return attrVal{}, err
			}
			return attrVal{kind: aUnit, text: "unit", pos: t.pos}, nil
		}
		// Bare scalar types (i32, f32) and keywords.
		if err := p.advance(); err != nil {
			return attrVal{}, err
		}
		return attrVal{kind: aRaw, s: t.text, text: t.text, pos: t.pos}, nil
	case tHash:
		return p.parseHashAttr()
	}
	return attrVal{}, p.errorf(t.pos, "expected attribute value, found %s", t.describe())
}

func (p *parser) parseNumberAttr() (attrVal, error) {
	t := p.tok
	if err := p.advance(); err != nil {
		return attrVal{}, err
	}
	v := attrVal{pos: t.pos}
	if t.kind == tInt {
		n, err := parseIntLit(t.text)
		if err != nil {
			return attrVal{}, p.errorf(t.pos, "bad integer %q", t.text)
		}
		v.kind, v.i, v.text = aInt, n, strconv.FormatInt(n, 10)
	} else {
		f, err := strconv.ParseFloat(t.text, 64)
		if err != nil {
			return attrVal{}, p.errorf(t.pos, "bad number %q", t.text)
		}
		v.kind, v.f, v.text = aFloat, f, strconv.FormatFloat(f, 'g', -1, 64)
	}
	if p.tok.is(":") {
		ty, err := p.parseTypeAfterColon()
		if err != nil {
			return attrVal{}, err
		}
		if v.kind == aInt && strings.HasPrefix(ty, "f") {
			v.kind, v.f = aFloat, float64(v.i)
		}
		v.text += " : " + ty
	}
	return v, nil
}

// parseTypeAfterColon parses ": type" and returns the type's text.
func (p *parser) parseTypeAfterColon() (string, error) {
	if err := p.expect(":"); err != nil {
		return "", err
	}
	if p.tok.kind == tIdent && p.tok.text == "tensor" {
		ty, err := p.parseType()
		if err != nil {
			return "", err
		}
		return ty.String(), nil
	}
	t, err := p.parseIdent("a type")
	return t.text, err
}

// parseIntLit parses decimal or 0x-hex integers (hex as a bit pattern).
func parseIntLit(s string) (int64, error) {
	neg := false
	body := s
	if strings.HasPrefix(body, "-") {
		neg, body = true, body[1:]
	} else if strings.HasPrefix(body, "+") {
		body = body[1:]
	}
	var u uint64
	var err error
	if strings.HasPrefix(body, "0x") || strings.HasPrefix(body, "0X") {
		u, err = strconv.ParseUint(body[2:], 16, 64)
	} else {
		u, err = strconv.ParseUint(body, 10, 64)
	}
	if err != nil {
		return 0, err
	}
	if neg {
		if u > 1<<63 {
			return 0, fmt.Errorf("integer %s out of range", s)
		}
		return -int64(u), nil
	}
	return int64(u), nil
}

// parseArrayAttr parses array<i64: 1, 2> / array<i1: true> / array<i64>.
func (p *parser) parseArrayAttr() (attrVal, error) {
	start := p.tok.pos
	if err := p.advance(); err != nil {
		return attrVal{}, err
	}
	if err := p.expect("<"); err != nil {
		return attrVal{}, err
	}
	if p.tok.kind != tIdent {
		return attrVal{}, p.errorf(p.tok.pos, "expected element type in array attribute")
	}
	et := p.tok.text
	if err := p.advance(); err != nil {
		return attrVal{}, err
	}
	v := attrVal{kind: aInts, ints: []int64{}, pos: start}
	var parts []string
	if p.tok.is(":") {
		if err := p.advance(); err != nil {
			return attrVal{}, err
		}
		for !p.tok.is(">") {
			if len(parts) > 0 {
				if err := p.expect(","); err != nil {
					return attrVal{}, err
				}
			}
			t := p.tok
			var n int64
			switch {
			case t.kind == tInt:
				var err error
				if n, err = parseIntLit(t.text); err != nil {
					return attrVal{}, p.errorf(t.pos, "bad integer %q", t.text)
				}
			case t.kind == tIdent && (t.text == "true" || t.text == "false"):
				if t.text == "true" {
					n = 1
				}
			default:
				return attrVal{}, p.errorf(t.pos, "expected integer in array attribute, found %s", t.describe())
			}
			v.ints = append(v.ints, n)
			parts = append(parts, strconv.FormatInt(n, 10))
			if err := p.advance(); err != nil {
				return attrVal{}, err
			}
		}
	}
	if err := p.expect(">"); err != nil {
		return attrVal{}, err
	}
	v.text = "array<" + et
	if len(parts) > 0 {
		v.text += ": " + strings.Join(parts, ", ")
	}
	v.text += ">"
	return v, nil
}

// parseHashAttr parses dialect attributes: #stablehlo<comparison_direction
// GT>, #stablehlo.dot<lhs_batching_dimensions = [], ...>, and an alias
// reference (#loc3) which is kept as raw text.
func (p *parser) parseHashAttr() (attrVal, error) {
	t := p.tok
	if err := p.advance(); err != nil {
		return attrVal{}, err
	}
	if !p.tok.is("<") || p.tok.off != t.off+len(t.text)+1 {
		return attrVal{kind: aRaw, text: "#" + t.text, pos: t.pos}, nil
	}
	if err := p.advance(); err != nil {
		return attrVal{}, err
	}
	// Enum form: "#stablehlo<comparison_direction GT>".
	if p.tok.kind == tIdent {
		first := p.tok
		if err := p.advance(); err != nil {
			return attrVal{}, err
		}
		if p.tok.kind == tIdent {
			val := p.tok.text
			if err := p.advance(); err != nil {
				return attrVal{}, err
			}
			if err := p.expect(">"); err != nil {
				return attrVal{}, err
			}
			return attrVal{kind: aEnum, s: val, text: fmt.Sprintf("#%s<%s %s>", t.text, first.text, val), pos: t.pos, fields: []attrField{{name: first.text}}}, nil
		}
		if p.tok.is("=") || p.tok.is(",") || p.tok.is(">") {
			// Struct form: key = value pairs.
			v := attrVal{kind: aStruct, s: t.text, pos: t.pos}
			name := first.text
			for {
				if p.tok.is("=") {
					if err := p.advance(); err != nil {
						return attrVal{}, err
					}
					fv, err := p.parseAttrValue()
					if err != nil {
						return attrVal{}, err
					}
					v.fields = append(v.fields, attrField{name: name, val: fv})
				} else {
					v.fields = append(v.fields, attrField{name: name, val: attrVal{kind: aUnit, text: "unit"}})
				}
				if p.tok.is(">") {
					break
				}
				if err := p.expect(","); err != nil {
					return attrVal{}, err
				}
				nt, err := p.parseIdent("field name in #" + t.text)
				if err != nil {
					return attrVal{}, err
				}
				name = nt.text
			}
			if err := p.advance(); err != nil {
				return attrVal{}, err
			}
			parts := make([]string, len(v.fields))
			for i, f := range v.fields {
				parts[i] = f.name + " = " + f.val.text
			}
			v.text = "#" + t.text + "<" + strings.Join(parts, ", ") + ">"
			return v, nil
		}
		return p.rawUntilClose(t, first.text)
	}
	return p.rawUntilClose(t, "")
}

// rawUntilClose collects tokens up to the matching '>' as raw text so
// unknown dialect attributes still round-trip into the canonical form.
func (p *parser) rawUntilClose(hash token, prefix string) (attrVal, error) {
	parts := []string{}
	if prefix != "" {
		parts = append(parts, prefix)
	}
	depth := 1
	for {
		t := p.tok
		switch {
		case t.kind == tEOF:
			return attrVal{}, p.errorf(hash.pos, "unterminated attribute #%s<", hash.text)
		case t.is("<") || t.is("(") || t.is("[") || t.is("{"):
			depth++
		case t.is(">") || t.is(")") || t.is("]") || t.is("}"):
			depth--
		}
		if depth == 0 {
			if err := p.advance(); err != nil {
				return attrVal{}, err
			}
			return attrVal{kind: aRaw, text: "#" + hash.text + "<" + strings.Join(parts, " ") + ">", pos: hash.pos}, nil
		}
		parts = append(parts, tokenText(t))
		if err := p.advance(); err != nil {
			return attrVal{}, err
		}
	}
}

func tokenText(t token) string {
	switch t.kind {
	case tValue:
		return "%" + t.text
	case tSymbol:
		return symbolText(t.text)
	case tCaret:
		return "^" + t.text
	case tHash:
		return "#" + t.text
	case tString:
		return mlirQuote(t.text)
	}
	return t.text
}

// denseLit is a dense<...> literal before its type is known.
type denseLit struct {
	hex   []byte  // "0x..." form
	splat *token  // single scalar
	elems []token // flattened nested list
	shape []int64 // shape of the nested list
	pos   Pos
	// complex marks (re, im) elements: splat and elems hold the real
	// parts, splatImag and imags the imaginary ones.
	complex   bool
	splatImag *token
	imags     []token
}

// parseComplexLit parses one "(re, im)" element of a dense literal, as
// MLIR prints complex values (StableHLO spec, "Constants": complex
// constants are (real, imaginary) pairs).
func (p *parser) parseComplexLit() (re, im token, err error) {
	if err = p.expect("("); err != nil {
		return
	}
	for i, dst := range []*token{&re, &im} {
		if i == 1 {
			if err = p.expect(","); err != nil {
				return
			}
		}
		t := p.tok
		if !isScalarLit(t) || t.text == "true" || t.text == "false" {
			err = p.errorf(t.pos, "expected a number in a complex literal, found %s", t.describe())
			return
		}
		*dst = t
		if err = p.advance(); err != nil {
			return
		}
	}
	err = p.expect(")")
	return
}

// parseDenseAttr parses dense<...> : tensor<...> with the current token at
// "dense".
func (p *parser) parseDenseAttr() (*Tensor, error) {
	lit, err := p.parseDenseLit()
	if err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	tpos := p.tok.pos
	ty, err := p.parseType()
	if err != nil {
		return nil, err
	}
	if err := p.chargeConstant(ty); err != nil {
		return nil, p.errorf(tpos, "%v", err)
	}
	t, err := lit.materialize(ty)
	if err != nil {
		return nil, p.errorf(tpos, "%v", err)
	}
	return t, nil
}

// maxModuleConstantBytes bounds what all dense literals of one module may
// expand to together. Each literal is bounded by maxConstantBytes, but a
// module of many splats (a few bytes of text each) would otherwise end the
// process in Go's unrecoverable "out of memory" while it is being parsed,
// before any check of the program's memory needs can run.
var maxModuleConstantBytes = int64(4) << 30

// constantCheckFrom is how many bytes of constants a module may hold
// before parsing asks the system how much memory is left: small programs
// never pay for the look.
var constantCheckFrom = int64(64 << 20)

// chargeConstant adds a literal of type ty to the module's total and fails
// when the total exceeds maxModuleConstantBytes or half the memory this
// process can still allocate.
func (p *parser) chargeConstant(ty TensorType) error {
	n := ty.ByteSize()
	if n < 0 || p.constBytes > math.MaxInt64-n {
		p.constBytes = math.MaxInt64
	} else {
		p.constBytes += n
	}
	if p.constBytes <= constantCheckFrom {
		return nil
	}
	limit, why := maxModuleConstantBytes, "the parser's bound"
	if avail, ok := sysmem.Available(); ok && avail.Bytes/2 < limit {
		limit, why = avail.Bytes/2, "half of "+avail.String()
	}
	if p.constBytes > limit {
		return fmt.Errorf("constant %s brings the module's constants to %s, more than %s (%s)",
			ty, sysmem.FormatBytes(p.constBytes), sysmem.FormatBytes(limit), why)
	}
	return nil
}

func (p *parser) parseDenseLit() (*denseLit, error) {
	lit := &denseLit{pos: p.tok.pos}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expect("<"); err != nil {
		return nil, err
	}
	switch {
	case p.tok.is(">"):
		lit.shape = []int64{0}
	case p.tok.kind == tString:
		s := p.tok.text
		if !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0X") || len(s)%2 != 0 {
			return nil, p.errorf(p.tok.pos, "dense string literal must be 0x followed by hex byte pairs")
		}
		b := make([]byte, (len(s)-2)/2)
		for i := range b {
			hi, lo := s[2+2*i], s[3+2*i]
			if !isHex(hi) || !isHex(lo) {
				return nil, p.errorf(p.tok.pos, "bad hex digit in dense literal at byte %d", i)
			}
			b[i] = unhex(hi)<<4 | unhex(lo)
		}
		lit.hex = b
		if err := p.advance(); err != nil {
			return nil, err
		}
	case p.tok.is("["):
		shape, err := p.parseNestedList(lit, 0)
		if err != nil {
			return nil, err
		}
		lit.shape = shape
	case p.tok.is("("):
		re, im, err := p.parseComplexLit()
		if err != nil {
			return nil, err
		}
		lit.complex, lit.splat, lit.splatImag = true, &re, &im
	default:
		t := p.tok
		if !isScalarLit(t) {
			return nil, p.errorf(t.pos, "expected dense literal element, found %s", t.describe())
		}
		lit.splat = &t
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if err := p.expect(">"); err != nil {
		return nil, err
	}
	return lit, nil
}

func isScalarLit(t token) bool {
	if t.kind == tInt || t.kind == tFloat {
		return true
	}
	return t.kind == tIdent && (t.text == "true" || t.text == "false" || t.text == "nan" || t.text == "inf")
}

// parseNestedList parses [[1, 2], [3, 4]] and returns its shape; all
// sublists must agree.
func (p *parser) parseNestedList(lit *denseLit, depth int) ([]int64, error) {
	if depth > 64 {
		return nil, p.errorf(p.tok.pos, "dense literal nested too deeply")
	}
	open := p.tok.pos
	if err := p.expect("["); err != nil {
		return nil, err
	}
	var inner []int64
	n := int64(0)
	for !p.tok.is("]") {
		if n > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		if p.tok.is("[") {
			s, err := p.parseNestedList(lit, depth+1)
			if err != nil {
				return nil, err
			}
			if n > 0 && !equalInts(s, inner) {
				return nil, p.errorf(open, "ragged dense literal")
			}
			inner = s
		} else {
			if n > 0 && inner != nil {
				return nil, p.errorf(p.tok.pos, "ragged dense literal")
			}
			t := p.tok
			if t.is("(") {
				if len(lit.elems) > len(lit.imags) {
					return nil, p.errorf(t.pos, "dense literal mixes complex and real elements")
				}
				re, im, err := p.parseComplexLit()
				if err != nil {
					return nil, err
				}
				lit.complex = true
				lit.elems = append(lit.elems, re)
				lit.imags = append(lit.imags, im)
				n++
				continue
			}
			if lit.complex {
				return nil, p.errorf(t.pos, "dense literal mixes complex and real elements")
			}
			if !isScalarLit(t) {
				return nil, p.errorf(t.pos, "expected dense literal element, found %s", t.describe())
			}
			lit.elems = append(lit.elems, t)
			if err := p.advance(); err != nil {
				return nil, err
			}
		}
		n++
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	return append([]int64{n}, inner...), nil
}

func equalInts(a, b []int64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// maxConstantBytes bounds the buffer a single dense literal may expand to
// (a splat can describe a huge tensor in a few bytes of text).
var maxConstantBytes = int64(1) << 30

// materialize builds the tensor for the literal with its declared type.
func (lit *denseLit) materialize(ty TensorType) (*Tensor, error) {
	if err := checkType(ty); err != nil {
		return nil, err
	}
	if ty.ByteSize() > maxConstantBytes {
		return nil, fmt.Errorf("constant %s is larger than %d bytes", ty, maxConstantBytes)
	}
	t := NewTensor(ty)
	n := ty.NumElements()
	switch {
	case lit.hex != nil:
		es := int64(ty.DType.Size())
		switch int64(len(lit.hex)) {
		case n * es:
			copy(t.Data, lit.hex)
		case es:
			for i := int64(0); i < n; i++ {
				copy(t.Data[i*es:], lit.hex)
			}
		default:
			return nil, fmt.Errorf("hex dense literal has %d bytes, %s needs %d", len(lit.hex), ty, n*es)
		}
		if ty.DType == I1 {
			for i := range t.Data {
				if t.Data[i] != 0 {
					t.Data[i] = 1
				}
			}
		}
		return t, nil
	case lit.splat != nil:
		if n == 0 {
			return t, nil
		}
		if err := lit.set(t, 0, *lit.splat, lit.splatImag); err != nil {
			return nil, err
		}
		es := int64(ty.DType.Size())
		for i := int64(1); i < n; i++ {
			copy(t.Data[i*es:(i+1)*es], t.Data[:es])
		}
		return t, nil
	}
	if int64(len(lit.elems)) != n || (n > 0 && !equalInts(lit.shape, ty.Shape)) {
		if !(n == 0 && len(lit.elems) == 0) {
			return nil, fmt.Errorf("dense literal of shape %v does not match %s", lit.shape, ty)
		}
	}
	for i, e := range lit.elems {
		var im *token
		if lit.complex {
			im = &lit.imags[i]
		}
		if err := lit.set(t, int64(i), e, im); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// set stores element i of t from its literal: a scalar token, or for
// complex types the (re, im) pair, each part parsed as the part's type.
func (lit *denseLit) set(t *Tensor, i int64, re token, im *token) error {
	dt := t.Type.DType
	if !dt.IsComplex() {
		if im != nil {
			return fmt.Errorf("%s: complex literal for %s", re.pos, dt)
		}
		return setLit(t, i, re)
	}
	if im == nil {
		return fmt.Errorf("%s: %s needs (real, imaginary) literals, found %s", re.pos, dt, re.describe())
	}
	parts := t.parts()
	for k, tok := range []token{re, *im} {
		if v, ok := wideHex(tok); ok && dt == C64 {
			// go-xla v0.1.4 (pkg/stablehlo/statement.go podToStableHLO)
			// widens complex64 to complex128 before printing, so a
			// non-finite f32 part arrives as f64 bits. NaN and ±Inf
			// narrow exactly; any other wide pattern would be narrowed
			// or zeroed silently, so it is an error as for an f32.
			f := math.Float64frombits(v)
			if !math.IsNaN(f) && !math.IsInf(f, 0) {
				return fmt.Errorf("%s: hex literal %q too wide for %s", tok.pos, tok.text, dt)
			}
			parts.Float32s()[2*i+int64(k)] = float32(f)
			continue
		}
		if err := setLit(parts, 2*i+int64(k), tok); err != nil {
			return err
		}
	}
	return nil
}

// wideHex returns the value of tok when it is a hex literal (0x...)
// whose value needs more than 32 bits and fits in 64.
func wideHex(tok token) (uint64, bool) {
	if tok.kind != tInt || !strings.HasPrefix(tok.text, "0x") && !strings.HasPrefix(tok.text, "0X") {
		return 0, false
	}
	v, err := strconv.ParseUint(tok.text[2:], 16, 64)
	return v, err == nil && v>>32 != 0
}

// setLit stores a literal token into element i of t.
func setLit(t *Tensor, i int64, tok token) error {
	dt := t.Type.DType
	switch tok.kind {
	case tIdent:
		switch tok.text {
		case "true", "false":
			if dt != I1 {
				return fmt.Errorf("%s: boolean literal for %s", tok.pos, dt)
			}
			if tok.text == "true" {
				t.Data[i] = 1
			}
			return nil
		case "nan":
			if !dt.IsFloat() {
				return fmt.Errorf("%s: nan for %s", tok.pos, dt)
			}
			t.setFloat(i, math.NaN())
			return nil
		case "inf":
			if !dt.IsFloat() {
				return fmt.Errorf("%s: inf for %s", tok.pos, dt)
			}
			t.setFloat(i, math.Inf(1))
			return nil
		}
	case tInt:
		if strings.HasPrefix(strings.TrimLeft(tok.text, "+-"), "0x") || strings.HasPrefix(strings.TrimLeft(tok.text, "+-"), "0X") {
			v, err := strconv.ParseUint(strings.TrimLeft(tok.text, "+")[2:], 16, 64)
			if err != nil || strings.HasPrefix(tok.text, "-") {
				return fmt.Errorf("%s: bad hex literal %q", tok.pos, tok.text)
			}
			if dt.Size() < 8 && v>>(8*uint(dt.Size())) != 0 {
				return fmt.Errorf("%s: hex literal %q too wide for %s", tok.pos, tok.text, dt)
			}
			t.setBits(i, v)
			return nil
		}
		if dt.IsFloat() {
			f, err := strconv.ParseFloat(tok.text, 64)
			if err != nil {
				return fmt.Errorf("%s: bad number %q", tok.pos, tok.text)
			}
			t.setFloat(i, f)
			return nil
		}
		if dt == I1 {
			switch tok.text {
			case "0", "1":
				t.Data[i] = tok.text[0] - '0'
				return nil
			}
			return fmt.Errorf("%s: bad i1 literal %q", tok.pos, tok.text)
		}
		if dt.IsUnsigned() {
			v, err := strconv.ParseUint(tok.text, 10, dt.Size()*8)
			if err != nil {
				return fmt.Errorf("%s: integer %q out of range for %s", tok.pos, tok.text, dt)
			}
			t.setInt(i, int64(v))
			return nil
		}
		v, err := strconv.ParseInt(tok.text, 10, dt.Size()*8)
		if err != nil {
			return fmt.Errorf("%s: integer %q out of range for %s", tok.pos, tok.text, dt)
		}
		t.setInt(i, v)
		return nil
	case tFloat:
		if !dt.IsFloat() {
			return fmt.Errorf("%s: float literal %q for %s", tok.pos, tok.text, dt)
		}
		// Parse at the element's own precision: parsing an f32 literal
		// as f64 and rounding again could land one ULP off.
		bits := 64
		if dt == F32 {
			bits = 32
		}
		f, err := strconv.ParseFloat(tok.text, bits)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			return fmt.Errorf("%s: bad number %q", tok.pos, tok.text)
		}
		t.setFloat(i, f)
		return nil
	}
	return fmt.Errorf("%s: bad literal %s for %s", tok.pos, tok.describe(), dt)
}

// formatDense renders t as dense<...>: a splat when all elements are
// equal, otherwise a hex string of the raw buffer. Both forms are exact,
// which the canonical form needs.
func formatDense(t *Tensor) string {
	es := t.Type.DType.Size()
	n := len(t.Data)
	if n == 0 {
		return "dense<>"
	}
	splat := true
	for i := es; i < n; i += es {
		for j := 0; j < es; j++ {
			if t.Data[i+j] != t.Data[j] {
				splat = false
				break
			}
		}
		if !splat {
			break
		}
	}
	if splat {
		return "dense<" + formatScalar(t, 0) + ">"
	}
	if t.Type.DType == I1 {
		// MLIR's hex form for i1 is bit-packed in some versions; a
		// nested list is unambiguous everywhere.
		var b strings.Builder
		b.WriteString("dense<")
		i := int64(0)
		formatNested(&b, t, 0, &i)
		b.WriteString(">")
		return b.String()
	}
	var b strings.Builder
	b.WriteString("dense<\"0x")
	const digits = "0123456789ABCDEF"
	for _, c := range t.Data {
		b.WriteByte(digits[c>>4])
		b.WriteByte(digits[c&15])
	}
	b.WriteString("\">")
	return b.String()
}

// formatScalar prints element i exactly (floats as bit patterns when not
// exactly representable by the shortest decimal, which never happens for
// finite values, so only NaN and Inf use hex).
func formatScalar(t *Tensor, i int64) string {
	switch dt := t.Type.DType; {
	case dt.IsComplex():
		// MLIR's spelling, each part exactly as its float type prints.
		parts := t.parts()
		return "(" + formatScalar(parts, 2*i) + ", " + formatScalar(parts, 2*i+1) + ")"
	case dt == I1:
		if t.Data[i] != 0 {
			return "true"
		}
		return "false"
	case dt == F32:
		f := t.Float32s()[i]
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Sprintf("0x%08X", math.Float32bits(f))
		}
		s := strconv.FormatFloat(float64(f), 'e', -1, 32)
		return s
	case isHalf(dt):
		b := t.halfBits()[i]
		f := halfToFloat32(b, dt)
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return fmt.Sprintf("0x%04X", b)
		}
		// The shortest f32 decimal of the exactly widened value parses
		// back to the same 16-bit value.
		return strconv.FormatFloat(float64(f), 'e', -1, 32)
	case dt == F64:
		f := t.Float64s()[i]
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Sprintf("0x%016X", math.Float64bits(f))
		}
		return strconv.FormatFloat(f, 'e', -1, 64)
	case dt.IsUnsigned():
		v := t.Int64At(i)
		if dt == UI64 {
			return strconv.FormatUint(uint64(v), 10)
		}
		return strconv.FormatInt(v, 10)
	default:
		return strconv.FormatInt(t.Int64At(i), 10)
	}
}

// ParseTensorLiteral parses a dense literal with its type, e.g.
// "dense<[[1, 2], [3, 4]]> : tensor<2x2xi32>" (decimal, splat and hex
// forms), as printed by Tensor.String.
func ParseTensorLiteral(s string) (*Tensor, error) {
	p := &parser{file: "literal", lx: newLexer(s)}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if !p.isIdent("dense") {
		return nil, p.errorf(p.tok.pos, "expected dense<...>, found %s", p.tok.describe())
	}
	t, err := p.parseDenseAttr()
	if err != nil {
		return nil, err
	}
	if p.tok.kind != tEOF {
		return nil, p.errorf(p.tok.pos, "unexpected %s after literal", p.tok.describe())
	}
	return t, nil
}

// formatNested writes the elements of t as nested lists starting at
// dimension d; i is the running flat index.
func formatNested(b *strings.Builder, t *Tensor, d int, i *int64) {
	if d == t.Type.Rank() {
		b.WriteString(formatScalar(t, *i))
		*i++
		return
	}
	b.WriteByte('[')
	for k := int64(0); k < t.Type.Shape[d]; k++ {
		if k > 0 {
			b.WriteString(", ")
		}
		formatNested(b, t, d+1, i)
	}
	b.WriteByte(']')
}

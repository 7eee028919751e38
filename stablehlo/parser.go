package stablehlo

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// maxDepth bounds recursion (nested regions, lists, attributes) so hostile
// input cannot exhaust the stack.
const maxDepth = 200

// maxElements bounds the size of any tensor type the parser accepts (1<<31
// elements, 16 GiB of f64) so a hostile file cannot make the verifier or
// the interpreter allocate absurd buffers.
const maxElements = int64(1) << 31

// parser is a recursive-descent parser over the on-demand lexer. tok is
// the current (already scanned) token; the lexer sits right after it.
type parser struct {
	file  string
	lx    *lexer
	tok   token
	depth int
	// constBytes adds up what the module's dense literals expand to.
	constBytes int64

	// Per-function state.
	nextID int
	scopes []map[string]*Value
	// capture[i] reports whether scope i may use values of the scopes
	// around it (the regions of while, if and case); other regions are
	// isolated from above.
	capture []bool
}

// pushScope opens the value scope of a region; capture lets it use the
// enclosing scopes' values.
func (p *parser) pushScope(capture bool) {
	p.scopes = append(p.scopes, map[string]*Value{})
	p.capture = append(p.capture, capture)
}

func (p *parser) popScope() {
	p.scopes = p.scopes[:len(p.scopes)-1]
	p.capture = p.capture[:len(p.capture)-1]
}

// Parse parses StableHLO MLIR text in the pretty form (as printed by JAX /
// stablehlo-opt) or the generic form (as written by GoMLX's builder), or a
// mix of both, and verifies the result (Parse calls Verify). filename is
// used in error messages ("file.mlir:12:5: ...").
func Parse(src []byte, filename string) (*Module, error) {
	p := &parser{file: filename, lx: newLexer(string(src))}
	if err := p.advance(); err != nil {
		return nil, err
	}
	m, err := p.parseTop()
	if err != nil {
		return nil, err
	}
	m.File = filename
	if err := Verify(m); err != nil {
		return nil, err
	}
	return m, nil
}

// ParseError is returned for malformed text and verification failures; it
// carries the position so tools can point at the offending op.
type ParseError struct {
	File string
	Pos  Pos
	Msg  string
	// Unsupported marks valid StableHLO outside the supported subset
	// (an unknown op, a dynamic shape); errors.Is(err, ErrUnsupported)
	// reports it.
	Unsupported bool
}

// ErrUnsupported classifies errors about programs outside the supported
// subset, as opposed to malformed or wrong programs. Backends may wrap it
// too (fmt.Errorf("...: %w", stablehlo.ErrUnsupported)) so the
// conformance runner reports "unsupported" instead of "fail".
var ErrUnsupported = errors.New("unsupported")

// Is lets errors.Is(err, ErrUnsupported) match unsupported-feature errors.
func (e *ParseError) Is(target error) bool { return target == ErrUnsupported && e.Unsupported }

func (p *parser) unsupportedf(pos Pos, format string, args ...any) error {
	return &ParseError{File: p.file, Pos: pos, Msg: fmt.Sprintf(format, args...), Unsupported: true}
}

// Error formats the error as "file:line:col: message".
func (e *ParseError) Error() string {
	if e.Pos.Line == 0 {
		return fmt.Sprintf("%s: %s", e.File, e.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", e.File, e.Pos.Line, e.Pos.Col, e.Msg)
}

func (p *parser) errorf(pos Pos, format string, args ...any) error {
	return &ParseError{File: p.file, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

func (p *parser) enter() error {
	p.depth++
	if p.depth > maxDepth {
		return p.errorf(p.tok.pos, "nesting deeper than %d", maxDepth)
	}
	return nil
}

func (p *parser) leave() { p.depth-- }

func (p *parser) advance() error {
	t, err := p.lx.next()
	if err != nil {
		var le *lexError
		if errors.As(err, &le) {
			return &ParseError{File: p.file, Pos: le.pos, Msg: le.msg, Unsupported: le.unsupported}
		}
		return &ParseError{File: p.file, Pos: p.tok.pos, Msg: err.Error()}
	}
	p.tok = t
	return nil
}

func (p *parser) expect(punct string) error {
	if !p.tok.is(punct) {
		return p.errorf(p.tok.pos, "expected %q, found %s", punct, p.tok.describe())
	}
	return p.advance()
}

func (p *parser) expectIdent(word string) error {
	if p.tok.kind != tIdent || p.tok.text != word {
		return p.errorf(p.tok.pos, "expected %q, found %s", word, p.tok.describe())
	}
	return p.advance()
}

// expectSeq expects words in turn: keywords (identifiers such as dim or
// across) and punctuation (such as = or :).
func (p *parser) expectSeq(words ...string) error {
	for _, w := range words {
		expect := p.expect
		if r := w[0]; r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' {
			expect = p.expectIdent
		}
		if err := expect(w); err != nil {
			return err
		}
	}
	return nil
}

// parseIdent returns the identifier token at the current position and
// moves past it; what names the expected identifier in the error otherwise.
func (p *parser) parseIdent(what string) (token, error) {
	t := p.tok
	if t.kind != tIdent {
		return t, p.errorf(t.pos, "expected %s, found %s", what, t.describe())
	}
	return t, p.advance()
}

func (p *parser) isIdent(word string) bool { return p.tok.kind == tIdent && p.tok.text == word }

// skipLoc skips an optional loc(...) annotation.
func (p *parser) skipLoc() error {
	if !p.isIdent("loc") {
		return nil
	}
	if err := p.advance(); err != nil {
		return err
	}
	return p.skipBalanced("(", ")")
}

// skipBalanced skips a balanced open...close group starting at open.
func (p *parser) skipBalanced(open, close string) error {
	start := p.tok.pos
	if err := p.expect(open); err != nil {
		return err
	}
	depth := 1
	for depth > 0 {
		switch {
		case p.tok.kind == tEOF:
			return p.errorf(start, "unbalanced %q", open)
		case p.tok.is(open):
			depth++
		case p.tok.is(close):
			depth--
		}
		if err := p.advance(); err != nil {
			return err
		}
	}
	return nil
}

// parseTop parses top-level content: #alias = ... definitions, an optional
// module wrapper, and functions.
func (p *parser) parseTop() (*Module, error) {
	m := &Module{Attrs: map[string]string{}}
	sawModule := false
	for p.tok.kind != tEOF {
		switch {
		case p.tok.kind == tHash:
			// "#loc1 = loc(...)" or other attribute alias definitions.
			if err := p.advance(); err != nil {
				return nil, err
			}
			if err := p.expect("="); err != nil {
				return nil, err
			}
			if p.isIdent("loc") {
				if err := p.skipLoc(); err != nil {
					return nil, err
				}
			} else if _, err := p.parseAttrValue(); err != nil {
				return nil, err
			}
		case p.isIdent("module"):
			if sawModule {
				return nil, p.errorf(p.tok.pos, "more than one module")
			}
			sawModule = true
			if err := p.parseModule(m); err != nil {
				return nil, err
			}
		case p.isIdent("func.func"):
			if sawModule {
				return nil, p.errorf(p.tok.pos, "func.func after the module")
			}
			f, err := p.parseFunc()
			if err != nil {
				return nil, err
			}
			m.Funcs = append(m.Funcs, f)
		case p.tok.is("{") && p.tok.off+1 < len(p.lx.src) && p.lx.src[p.tok.off+1] == '-':
			return nil, p.unsupportedf(p.tok.pos, "dialect resource blocks ({-# ... #-}) are not supported")
		default:
			return nil, p.errorf(p.tok.pos, "expected module or func.func, found %s", p.tok.describe())
		}
	}
	if len(m.Funcs) == 0 {
		return nil, p.errorf(p.tok.pos, "no functions in module")
	}
	return m, nil
}

func (p *parser) parseModule(m *Module) error {
	if err := p.advance(); err != nil {
		return err
	}
	if p.tok.kind == tSymbol {
		m.Name = p.tok.text
		if err := p.advance(); err != nil {
			return err
		}
	}
	if p.isIdent("attributes") {
		if err := p.advance(); err != nil {
			return err
		}
		fields, err := p.parseAttrDict()
		if err != nil {
			return err
		}
		for _, f := range fields {
			m.Attrs[f.name] = f.val.text
		}
	}
	if err := p.expect("{"); err != nil {
		return err
	}
	for !p.tok.is("}") {
		switch {
		case p.isIdent("func.func"):
			f, err := p.parseFunc()
			if err != nil {
				return err
			}
			m.Funcs = append(m.Funcs, f)
		case p.tok.kind == tEOF:
			return p.errorf(p.tok.pos, "unexpected end of file: module is not closed")
		default:
			return p.errorf(p.tok.pos, "expected func.func in module, found %s", p.tok.describe())
		}
	}
	if err := p.advance(); err != nil {
		return err
	}
	return p.skipLoc()
}

func (p *parser) parseFunc() (*Func, error) {
	f := &Func{Pos: p.tok.pos, Public: true, Body: &Block{}}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.isIdent("public") || p.isIdent("private") || p.isIdent("nested") {
		f.Public = p.tok.text == "public"
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	if p.tok.kind != tSymbol {
		return nil, p.errorf(p.tok.pos, "expected function name, found %s", p.tok.describe())
	}
	f.Name = p.tok.text
	if err := p.advance(); err != nil {
		return nil, err
	}
	p.nextID = 0
	p.scopes = []map[string]*Value{{}}
	p.capture = []bool{false}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	for !p.tok.is(")") {
		if len(f.Args) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		v, err := p.parseTypedArg(len(f.Args), "argument name")
		if err != nil {
			return nil, err
		}
		attrs, err := p.parseOptionalAttrMap()
		if err != nil {
			return nil, err
		}
		if err := p.skipLoc(); err != nil {
			return nil, err
		}
		f.Args = append(f.Args, v)
		f.ArgAttrs = append(f.ArgAttrs, attrs)
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if p.tok.is("->") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.is("(") {
			if err := p.advance(); err != nil {
				return nil, err
			}
			for !p.tok.is(")") {
				if len(f.ResultTypes) > 0 {
					if err := p.expect(","); err != nil {
						return nil, err
					}
				}
				ty, err := p.parseType()
				if err != nil {
					return nil, err
				}
				attrs, err := p.parseOptionalAttrMap()
				if err != nil {
					return nil, err
				}
				f.ResultTypes = append(f.ResultTypes, ty)
				f.ResultAttrs = append(f.ResultAttrs, attrs)
			}
			if err := p.advance(); err != nil {
				return nil, err
			}
		} else {
			// A lone unparenthesised result cannot carry attributes, so a
			// following '{' opens the body.
			ty, err := p.parseType()
			if err != nil {
				return nil, err
			}
			f.ResultTypes = append(f.ResultTypes, ty)
			f.ResultAttrs = append(f.ResultAttrs, nil)
		}
	}
	if p.isIdent("attributes") {
		if err := p.advance(); err != nil {
			return nil, err
		}
		fields, err := p.parseAttrDict()
		if err != nil {
			return nil, err
		}
		f.Attrs = fieldsToMap(fields)
	}
	f.Body.Args = f.Args
	if err := p.parseBlockBody(f.Body); err != nil {
		return nil, err
	}
	f.NumValues = p.nextID
	if err := p.skipLoc(); err != nil {
		return nil, err
	}
	return f, nil
}

func fieldsToMap(fields []attrField) map[string]string {
	if len(fields) == 0 {
		return nil
	}
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		m[f.name] = f.val.text
	}
	return m
}

// parseBlockBody parses "{ op* }" into b.
func (p *parser) parseBlockBody(b *Block) error {
	if err := p.enter(); err != nil {
		return err
	}
	defer p.leave()
	open := p.tok.pos
	if err := p.expect("{"); err != nil {
		return err
	}
	for !p.tok.is("}") {
		if p.tok.kind == tEOF {
			return p.errorf(open, "unexpected end of file: '{' is not closed")
		}
		op, err := p.parseOp()
		if err != nil {
			return err
		}
		b.Ops = append(b.Ops, op)
	}
	return p.advance()
}

// defineValue creates a value for a definition token, rejecting
// redefinition in the current scope. Region bodies are isolated and get
// their own scope, so they may reuse outer names (GoMLX and MLIR's own
// printer number region values independently).
func (p *parser) defineValue(t token, index int) (*Value, error) {
	name := t.text
	if _, ok := p.scopes[len(p.scopes)-1][name]; ok {
		return nil, p.errorf(t.pos, "redefinition of value %%%s", name)
	}
	v := &Value{ID: p.nextID, Index: index, Name: name}
	p.nextID++
	p.scopes[len(p.scopes)-1][name] = v
	return v, nil
}

// lookup resolves a value use. Regions are isolated from above (as in
// StableHLO), so only the innermost scope is searched.
func (p *parser) lookup(t token) (*Value, error) {
	i := len(p.scopes) - 1
	for ; i >= 0; i-- {
		s := p.scopes[i]
		if v, ok := s[t.text]; ok {
			return v, nil
		}
		if strings.HasSuffix(t.text, "#0") {
			if v, ok := s[strings.TrimSuffix(t.text, "#0")]; ok {
				return v, nil
			}
		}
		if !p.capture[i] {
			break
		}
	}
	for i--; i >= 0; i-- {
		if _, ok := p.scopes[i][t.text]; ok {
			return nil, p.errorf(t.pos, "value %%%s is defined outside the region (regions are isolated from above)", t.text)
		}
	}
	return nil, p.errorf(t.pos, "unknown value %%%s", t.text)
}

// parseType parses tensor<...> (or a bare element type, meaning a scalar
// tensor, as it appears inside some attributes).
func (p *parser) parseType() (TensorType, error) {
	t := p.tok
	if t.kind != tIdent {
		return TensorType{}, p.errorf(t.pos, "expected a type, found %s", t.describe())
	}
	if t.text != "tensor" {
		if dt, ok := ParseDType(t.text); ok {
			return TensorType{DType: dt}, p.advance()
		}
		if t.text == "complex" {
			// A bare complex<f32>: the lexer sits right after "complex".
			inner, pos, err := p.lx.rawAngle()
			if err != nil {
				return TensorType{}, p.errorf(pos, "%v", err)
			}
			name := "complex<" + strings.Join(strings.Fields(inner), "") + ">"
			if dt, ok := ParseDType(name); ok {
				return TensorType{DType: dt}, p.advance()
			}
			return TensorType{}, p.unsupportedf(t.pos, "unsupported type %q", clip(name))
		}
		return TensorType{}, p.unsupportedf(t.pos, "unsupported type %q", t.text)
	}
	// The lexer sits right after "tensor"; dims are not token-regular.
	inner, pos, err := p.lx.rawAngle()
	if err != nil {
		var le *lexError
		if errors.As(err, &le) {
			return TensorType{}, &ParseError{File: p.file, Pos: le.pos, Msg: le.msg, Unsupported: le.unsupported}
		}
		return TensorType{}, &ParseError{File: p.file, Pos: pos, Msg: err.Error()}
	}
	ty, err := parseTensorInner(inner)
	if err != nil {
		if errors.Is(err, ErrUnsupported) {
			return TensorType{}, p.unsupportedf(pos, "tensor<%s>: %v", clip(inner), err)
		}
		return TensorType{}, p.errorf(pos, "bad tensor type tensor<%s>: %v", clip(inner), err)
	}
	return ty, p.advance()
}

// unsupportedMsg is an error about valid MLIR outside the supported subset;
// errors.Is(err, ErrUnsupported) reports it without ": unsupported" in the
// text.
type unsupportedMsg string

func (e unsupportedMsg) Error() string { return string(e) }

// Is makes errors.Is(e, ErrUnsupported) true.
func (e unsupportedMsg) Is(target error) bool { return target == ErrUnsupported }

func parseTensorInner(s string) (TensorType, error) {
	s = strings.TrimSpace(s)
	// Dimensions are the leading "N x" groups; everything after the last
	// one is the element type, which may itself contain an 'x'
	// (complex<f64>) or angle brackets, so it is not split further.
	ty := TensorType{Shape: []int64{}}
	total := int64(1)
	rest := s
	for {
		i := 0
		for i < len(rest) && (isDigit(rest[i]) || rest[i] == '?' || rest[i] == '*' || rest[i] == ' ') {
			i++
		}
		if i == 0 || i >= len(rest) || rest[i] != 'x' {
			break
		}
		d := strings.TrimSpace(rest[:i])
		rest = rest[i+1:]
		if d == "?" || d == "*" {
			return TensorType{}, unsupportedMsg("dynamic shapes are not supported")
		}
		n, err := strconv.ParseInt(d, 10, 64)
		if err != nil || n < 0 {
			return TensorType{}, fmt.Errorf("bad dimension %q", clip(d))
		}
		if n > 0 && total > maxElements/n {
			return TensorType{}, fmt.Errorf("more than %d elements", maxElements)
		}
		total *= n
		ty.Shape = append(ty.Shape, n)
	}
	elem := strings.TrimSpace(rest)
	if strings.HasPrefix(elem, "complex") {
		// MLIR prints complex<f32>, but spaces inside are legal.
		elem = strings.Join(strings.Fields(elem), "")
	}
	if i := strings.IndexByte(elem, ','); i >= 0 {
		if _, ok := ParseDType(strings.TrimSpace(elem[:i])); ok {
			return TensorType{}, unsupportedMsg("tensor encodings are not supported")
		}
	}
	dt, ok := ParseDType(elem)
	if !ok {
		if elem == "" || !(isIdentStart(elem[0]) || elem[0] == '!') {
			return TensorType{}, fmt.Errorf("bad element type %q", clip(elem))
		}
		return TensorType{}, unsupportedMsg("element type " + clip(elem) + " is not supported")
	}
	ty.DType = dt
	return ty, nil
}

// parseTypeList parses "T, T, ..." (at least one type).
func (p *parser) parseTypeList() ([]TensorType, error) {
	var out []TensorType
	for {
		ty, err := p.parseType()
		if err != nil {
			return nil, err
		}
		out = append(out, ty)
		if !p.tok.is(",") {
			return out, nil
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
}

// parseFuncType parses "(T, T) -> T", "(T) -> (T, T)", "() -> ()" and the
// unparenthesised chlo spelling "T, T -> T".
func (p *parser) parseFuncType() (ins, outs []TensorType, err error) {
	if p.tok.is("(") {
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		if !p.tok.is(")") {
			if ins, err = p.parseTypeList(); err != nil {
				return nil, nil, err
			}
		}
		if err := p.expect(")"); err != nil {
			return nil, nil, err
		}
	} else if ins, err = p.parseTypeList(); err != nil {
		return nil, nil, err
	}
	if err := p.expect("->"); err != nil {
		return nil, nil, err
	}
	outs, err = p.parseResultTypes()
	return ins, outs, err
}

// parseResultTypes parses "T" or "(T, ...)" or "()".
func (p *parser) parseResultTypes() ([]TensorType, error) {
	if !p.tok.is("(") {
		ty, err := p.parseType()
		if err != nil {
			return nil, err
		}
		return []TensorType{ty}, nil
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	var outs []TensorType
	if !p.tok.is(")") {
		var err error
		if outs, err = p.parseTypeList(); err != nil {
			return nil, err
		}
	}
	return outs, p.expect(")")
}

func funcTypeText(ins, outs []TensorType) string {
	a := make([]string, len(ins))
	for i, t := range ins {
		a[i] = t.String()
	}
	b := make([]string, len(outs))
	for i, t := range outs {
		b[i] = t.String()
	}
	return "(" + strings.Join(a, ", ") + ") -> (" + strings.Join(b, ", ") + ")"
}

// resultDef is one "%name" or "%name:N" on the left of '='.
type resultDef struct {
	tok   token
	count int
}

// parseOp parses one operation line.
func (p *parser) parseOp() (*Op, error) {
	var defs []resultDef
	nres := 0
	if p.tok.kind == tValue {
		for {
			if p.tok.kind != tValue || strings.Contains(p.tok.text, "#") {
				return nil, p.errorf(p.tok.pos, "expected result name, found %s", p.tok.describe())
			}
			d := resultDef{tok: p.tok, count: 1}
			if err := p.advance(); err != nil {
				return nil, err
			}
			if p.tok.is(":") {
				if err := p.advance(); err != nil {
					return nil, err
				}
				if p.tok.kind != tInt {
					return nil, p.errorf(p.tok.pos, "expected result count, found %s", p.tok.describe())
				}
				n, err := strconv.Atoi(p.tok.text)
				if err != nil || n < 1 || n > 1<<16 {
					return nil, p.errorf(p.tok.pos, "bad result count %q", p.tok.text)
				}
				d.count = n
				if err := p.advance(); err != nil {
					return nil, err
				}
			}
			defs = append(defs, d)
			nres += d.count
			if p.tok.is("=") {
				break
			}
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		if err := p.advance(); err != nil {
			return nil, err
		}
	}
	opTok := p.tok
	var op *Op
	var resTypes []TensorType
	var err error
	switch opTok.kind {
	case tString:
		op, resTypes, err = p.parseGenericOp()
	case tIdent:
		op, resTypes, err = p.parsePrettyOp()
	default:
		return nil, p.errorf(opTok.pos, "expected an operation, found %s", opTok.describe())
	}
	if err != nil {
		return nil, err
	}
	op.Pos = opTok.pos
	if len(resTypes) != nres {
		return nil, p.errorf(opTok.pos, "%s declares %d results but %d are named", opTok.text, len(resTypes), nres)
	}
	// Bind result values.
	k := 0
	for _, d := range defs {
		for j := 0; j < d.count; j++ {
			name := d.tok
			if d.count > 1 {
				name.text = d.tok.text + "#" + strconv.Itoa(j)
			}
			v, err := p.defineValue(name, k)
			if err != nil {
				return nil, err
			}
			v.Type = resTypes[k]
			v.Def = op
			op.Results = append(op.Results, v)
			k++
		}
	}
	if err := p.skipLoc(); err != nil {
		return nil, err
	}
	return op, nil
}

// parseOperandList parses "%a, %b, ..." (possibly empty when stop is the
// current token).
func (p *parser) parseOperandList(stop string) ([]*Value, error) {
	var out []*Value
	for !p.tok.is(stop) {
		if len(out) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		v, err := p.parseValueUse("operand")
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, nil
}

// parseValueUse resolves the %name at the current token and moves past it;
// what names the expected value in the error when the token is not one.
func (p *parser) parseValueUse(what string) (*Value, error) {
	if p.tok.kind != tValue {
		return nil, p.errorf(p.tok.pos, "expected %s, found %s", what, p.tok.describe())
	}
	v, err := p.lookup(p.tok)
	if err != nil {
		return nil, err
	}
	return v, p.advance()
}

// parseParenOperands parses "(%a, %b, ...)", the operand list shared by
// the generic form and the pretty call forms, into op's operands.
func (p *parser) parseParenOperands(op *Op) error {
	if err := p.expect("("); err != nil {
		return err
	}
	operands, err := p.parseOperandList(")")
	if err != nil {
		return err
	}
	op.Operands = operands
	return p.advance()
}

// checkOperandTypes compares the types an op declares for its operands
// with the operands' actual types.
func (p *parser) checkOperandTypes(pos Pos, name string, operands []*Value, types []TensorType) error {
	if len(types) != len(operands) {
		return p.errorf(pos, "%s has %d operands but its type lists %d", name, len(operands), len(types))
	}
	for i, v := range operands {
		if !v.Type.Equal(types[i]) {
			return p.errorf(pos, "%s operand #%d: value %s has type %s but the op declares %s", name, i, v, v.Type, types[i])
		}
	}
	return nil
}

// parseCheckedFuncType parses ": (ins) -> outs", the strict function-type
// signature (no abbreviated pretty forms), checks the operand types against
// ins and returns the result types.
func (p *parser) parseCheckedFuncType(op *Op, nameTok token) ([]TensorType, error) {
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	ins, outs, err := p.parseFuncType()
	if err != nil {
		return nil, err
	}
	if err := p.checkOperandTypes(nameTok.pos, nameTok.text, op.Operands, ins); err != nil {
		return nil, err
	}
	return outs, nil
}

// canonicalOpName maps a source op name to the IR name.
func canonicalOpName(src string) string {
	switch src {
	case "func.return", "stablehlo.return", "return":
		return "return"
	case "func.call", "call":
		return "call"
	}
	return strings.TrimPrefix(src, "stablehlo.")
}

// parseGenericOp parses "name"(operands) <{props}>? ({regions})? {attrs}?
// : functype, with the current token at the quoted name.
func (p *parser) parseGenericOp() (*Op, []TensorType, error) {
	nameTok := p.tok
	name := canonicalOpName(nameTok.text)
	if !knownOp(name) {
		return nil, nil, p.unsupportedf(nameTok.pos, "unknown op %s", nameTok.text)
	}
	op := &Op{Name: name}
	if err := p.advance(); err != nil {
		return nil, nil, err
	}
	if err := p.parseParenOperands(op); err != nil {
		return nil, nil, err
	}
	var fields []attrField
	if p.tok.is("<") {
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		f, err := p.parseAttrDict()
		if err != nil {
			return nil, nil, err
		}
		fields = append(fields, f...)
		if err := p.expect(">"); err != nil {
			return nil, nil, err
		}
	}
	if p.tok.is("(") {
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		for !p.tok.is(")") {
			if len(op.Regions) > 0 {
				if err := p.expect(","); err != nil {
					return nil, nil, err
				}
			}
			blk, err := p.parseGenericRegion(capturingOps[name])
			if err != nil {
				return nil, nil, err
			}
			op.Regions = append(op.Regions, blk)
		}
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
	}
	if p.tok.is("{") {
		f, err := p.parseAttrDict()
		if err != nil {
			return nil, nil, err
		}
		fields = append(fields, f...)
	}
	outs, err := p.parseCheckedFuncType(op, nameTok)
	if err != nil {
		return nil, nil, err
	}
	if err := p.applyAttrs(op, fields); err != nil {
		return nil, nil, err
	}
	return op, outs, nil
}

// parseGenericRegion parses "{ ^bb(%a: T, ...): ops }" (the block label is
// optional when the block has no arguments). GoMLX writes the label as
// "^name(%a: T) :" with a space before the colon.
func (p *parser) parseGenericRegion(capture bool) (*Block, error) {
	if err := p.enter(); err != nil {
		return nil, err
	}
	defer p.leave()
	open := p.tok.pos
	if err := p.expect("{"); err != nil {
		return nil, err
	}
	p.pushScope(capture)
	defer p.popScope()
	b := &Block{}
	if p.tok.kind == tCaret {
		if err := p.advance(); err != nil {
			return nil, err
		}
		if p.tok.is("(") {
			args, err := p.parseBlockArgs()
			if err != nil {
				return nil, err
			}
			b.Args = args
		}
		if err := p.expect(":"); err != nil {
			return nil, err
		}
	}
	for !p.tok.is("}") {
		if p.tok.kind == tEOF {
			return nil, p.errorf(open, "unexpected end of file: region is not closed")
		}
		op, err := p.parseOp()
		if err != nil {
			return nil, err
		}
		b.Ops = append(b.Ops, op)
	}
	return b, p.advance()
}

// parseBlockArgs parses "(%a: T, %b: T)" in the current scope.
func (p *parser) parseBlockArgs() ([]*Value, error) {
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var args []*Value
	for !p.tok.is(")") {
		if len(args) > 0 {
			if err := p.expect(","); err != nil {
				return nil, err
			}
		}
		v, err := p.parseTypedArg(len(args), "block argument")
		if err != nil {
			return nil, err
		}
		if err := p.skipLoc(); err != nil {
			return nil, err
		}
		args = append(args, v)
	}
	return args, p.advance()
}

// parseOptionalAttrMap parses the attribute dictionary that may follow a
// function argument or result type; nil when there is none.
func (p *parser) parseOptionalAttrMap() (map[string]string, error) {
	if !p.tok.is("{") {
		return nil, nil
	}
	fields, err := p.parseAttrDict()
	if err != nil {
		return nil, err
	}
	return fieldsToMap(fields), nil
}

// parseTypedArg parses "%name: type", defining %name as the index'th
// argument of the function or block being parsed; what names the expected
// token in the error when the current one is not a %name.
func (p *parser) parseTypedArg(index int, what string) (*Value, error) {
	if p.tok.kind != tValue {
		return nil, p.errorf(p.tok.pos, "expected %s, found %s", what, p.tok.describe())
	}
	v, err := p.defineValue(p.tok, index)
	if err != nil {
		return nil, err
	}
	if err := p.advance(); err != nil {
		return nil, err
	}
	if err := p.expect(":"); err != nil {
		return nil, err
	}
	if v.Type, err = p.parseType(); err != nil {
		return nil, err
	}
	return v, nil
}

// clip shortens echoed input in error messages: a hostile or broken file
// can hold a type megabytes long, and one line of context is enough.
func clip(s string) string {
	const max = 80
	if len(s) <= max {
		return s
	}
	return s[:max] + "…"
}

package stablehlo

import (
	"fmt"
	"strings"
)

// tokKind classifies MLIR tokens.
type tokKind int

const (
	tEOF    tokKind = iota
	tValue          // %name or %name#3 (text holds "name", suffix after '#' in num)
	tSymbol         // @name or @"quoted"
	tCaret          // ^bb0
	tHash           // #stablehlo, #stablehlo.dot, #loc3
	tIdent          // bare identifier: stablehlo.add, dense, tensor, x, f32, true
	tInt            // 12, -3, 0x7FC00000
	tFloat          // 1.5, -2.0e+00
	tString         // "..." (text holds the unquoted value)
	tPunct          // ( ) [ ] { } < > , : = ? * + and "->"
)

// token is one lexed token; text is the literal source except for
// strings (unescaped) and values (name without '%').
type token struct {
	kind tokKind
	text string
	pos  Pos
	off  int // byte offset of the token start
}

func (t token) is(p string) bool { return t.kind == tPunct && t.text == p }

func (t token) describe() string {
	switch t.kind {
	case tEOF:
		return "end of file"
	case tValue:
		return "%" + t.text
	case tString:
		return fmt.Sprintf("%q", t.text)
	}
	return fmt.Sprintf("%q", t.text)
}

// lexer scans src on demand so the parser can switch to raw scanning for
// the few MLIR constructs that are not token-regular (tensor<2x3xf32>).
type lexer struct {
	src  string
	off  int
	line int
	col  int
}

func newLexer(src string) *lexer { return &lexer{src: src, line: 1, col: 1} }

func (l *lexer) pos() Pos { return Pos{Line: l.line, Col: l.col} }

func (l *lexer) advance(n int) {
	for i := 0; i < n && l.off < len(l.src); i++ {
		if l.src[l.off] == '\n' {
			l.line++
			l.col = 1
		} else {
			l.col++
		}
		l.off++
	}
}

func (l *lexer) skipSpace() {
	for l.off < len(l.src) {
		c := l.src[l.off]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			l.advance(1)
		case c == '/' && l.off+1 < len(l.src) && l.src[l.off+1] == '/':
			for l.off < len(l.src) && l.src[l.off] != '\n' {
				l.advance(1)
			}
		default:
			return
		}
	}
}

func isIdentStart(c byte) bool {
	return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
}

func isIdentChar(c byte) bool {
	return isIdentStart(c) || (c >= '0' && c <= '9') || c == '.' || c == '$' || c == '-'
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

func isHex(c byte) bool {
	return isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// next scans one token.
func (l *lexer) next() (token, error) {
	l.skipSpace()
	start := l.pos()
	off := l.off
	if l.off >= len(l.src) {
		return token{kind: tEOF, pos: start, off: off}, nil
	}
	c := l.src[l.off]
	mk := func(k tokKind, n int) token {
		t := token{kind: k, text: l.src[off : off+n], pos: start, off: off}
		l.advance(n)
		return t
	}
	switch {
	case c == '%' || c == '@' || c == '^' || c == '#':
		kind := map[byte]tokKind{'%': tValue, '@': tSymbol, '^': tCaret, '#': tHash}[c]
		if c == '@' && l.off+1 < len(l.src) && l.src[l.off+1] == '"' {
			l.advance(1)
			s, err := l.scanString()
			if err != nil {
				return token{}, err
			}
			return token{kind: tSymbol, text: s, pos: start, off: off}, nil
		}
		n := 1
		for l.off+n < len(l.src) && (isIdentChar(l.src[l.off+n]) && l.src[l.off+n] != '-' || (c == '%' || c == '^') && isDigit(l.src[l.off+n])) {
			n++
		}
		if n == 1 {
			return token{}, errAt(start, "expected a name after %q", string(c))
		}
		// %0#1: a result-number suffix belongs to the value token.
		if c == '%' && l.off+n+1 < len(l.src) && l.src[l.off+n] == '#' && isDigit(l.src[l.off+n+1]) {
			n++
			for l.off+n < len(l.src) && isDigit(l.src[l.off+n]) {
				n++
			}
		}
		t := mk(kind, n)
		t.text = t.text[1:]
		return t, nil
	case c == '"':
		s, err := l.scanString()
		if err != nil {
			return token{}, err
		}
		return token{kind: tString, text: s, pos: start, off: off}, nil
	case isIdentStart(c):
		n := 1
		for l.off+n < len(l.src) && isIdentChar(l.src[l.off+n]) {
			// A '-' only continues an identifier when it is not an arrow.
			if l.src[l.off+n] == '-' && (l.off+n+1 >= len(l.src) || l.src[l.off+n+1] == '>') {
				break
			}
			n++
		}
		return mk(tIdent, n), nil
	case isDigit(c) || ((c == '-' || c == '+') && l.off+1 < len(l.src) && isDigit(l.src[l.off+1])):
		return l.scanNumber(start, off)
	case c == '-' && l.off+1 < len(l.src) && l.src[l.off+1] == '>':
		return mk(tPunct, 2), nil
	case strings.IndexByte("()[]{}<>,:=?*+|", c) >= 0:
		return mk(tPunct, 1), nil
	case c == '!' && l.off+1 < len(l.src) && isIdentStart(l.src[l.off+1]):
		// A dialect type such as !stablehlo.token: valid MLIR, but no
		// tensor type the front end can hold.
		n := 1
		for l.off+n < len(l.src) && isIdentChar(l.src[l.off+n]) && l.src[l.off+n] != '-' {
			n++
		}
		return token{}, &lexError{pos: start, msg: fmt.Sprintf("type %s is not supported (only tensor types are)", clip(l.src[off:off+n])), unsupported: true}
	}
	return token{}, errAt(start, "unexpected character %q", string(c))
}

func (l *lexer) scanNumber(start Pos, off int) (token, error) {
	n := 0
	s := l.src[l.off:]
	if s[0] == '-' || s[0] == '+' {
		n++
	}
	if n+1 < len(s) && s[n] == '0' && (s[n+1] == 'x' || s[n+1] == 'X') {
		n += 2
		h := n
		for n < len(s) && isHex(s[n]) {
			n++
		}
		if n == h {
			return token{}, errAt(start, "malformed hex number")
		}
		t := token{kind: tInt, text: s[:n], pos: start, off: off}
		l.advance(n)
		return t, nil
	}
	for n < len(s) && isDigit(s[n]) {
		n++
	}
	kind := tInt
	if n < len(s) && s[n] == '.' {
		kind = tFloat
		n++
		for n < len(s) && isDigit(s[n]) {
			n++
		}
	}
	if n < len(s) && (s[n] == 'e' || s[n] == 'E') {
		m := n + 1
		if m < len(s) && (s[m] == '+' || s[m] == '-') {
			m++
		}
		if m < len(s) && isDigit(s[m]) {
			kind = tFloat
			n = m
			for n < len(s) && isDigit(s[n]) {
				n++
			}
		}
	}
	t := token{kind: kind, text: s[:n], pos: start, off: off}
	l.advance(n)
	return t, nil
}

// scanString scans a double-quoted MLIR string starting at the quote and
// returns its unescaped value.
func (l *lexer) scanString() (string, error) {
	start := l.pos()
	l.advance(1)
	var b strings.Builder
	for {
		if l.off >= len(l.src) {
			return "", errAt(start, "unterminated string")
		}
		c := l.src[l.off]
		switch {
		case c == '"':
			l.advance(1)
			return b.String(), nil
		case c == '\n':
			return "", errAt(start, "unterminated string")
		case c == '\\':
			if l.off+1 >= len(l.src) {
				return "", errAt(start, "unterminated string")
			}
			d := l.src[l.off+1]
			switch d {
			case '"', '\\':
				b.WriteByte(d)
				l.advance(2)
			case 'n':
				b.WriteByte('\n')
				l.advance(2)
			case 't':
				b.WriteByte('\t')
				l.advance(2)
			default:
				if l.off+2 < len(l.src) && isHex(d) && isHex(l.src[l.off+2]) {
					b.WriteByte(unhex(d)<<4 | unhex(l.src[l.off+2]))
					l.advance(3)
				} else {
					return "", errAt(l.pos(), "bad escape in string")
				}
			}
		default:
			b.WriteByte(c)
			l.advance(1)
		}
	}
}

func unhex(c byte) byte {
	switch {
	case c >= '0' && c <= '9':
		return c - '0'
	case c >= 'a' && c <= 'f':
		return c - 'a' + 10
	default:
		return c - 'A' + 10
	}
}

// rawAngle scans "<...>" at the current position (after optional spaces)
// and returns the inner text; nesting of <> is honoured.
func (l *lexer) rawAngle() (string, Pos, error) {
	l.skipSpace()
	start := l.pos()
	if l.off >= len(l.src) || l.src[l.off] != '<' {
		return "", start, errAt(start, "expected '<'")
	}
	depth := 0
	begin := l.off + 1
	for l.off < len(l.src) {
		c := l.src[l.off]
		if c == '<' {
			depth++
		} else if c == '>' && !(l.off > 0 && l.src[l.off-1] == '-') {
			depth--
			if depth == 0 {
				s := l.src[begin:l.off]
				l.advance(1)
				return s, start, nil
			}
		} else if c == '\n' {
			break
		}
		l.advance(1)
	}
	return "", start, errAt(start, "unterminated '<'")
}

// lexError is a positioned scanning error; the parser adds the file name.
type lexError struct {
	pos Pos
	msg string
	// unsupported marks valid MLIR outside the supported subset (a
	// dialect type such as !stablehlo.token), as ParseError.Unsupported.
	unsupported bool
}

func (e *lexError) Error() string { return e.pos.String() + ": " + e.msg }

func errAt(pos Pos, format string, args ...any) error {
	return &lexError{pos: pos, msg: fmt.Sprintf(format, args...)}
}

// mlirQuote writes s as an MLIR string literal: quotes and backslashes
// are escaped, newlines and tabs use \n and \t, and other bytes outside
// printable ASCII use MLIR's two-hex-digit escapes, so the result always
// lexes back to s.
func mlirQuote(s string) string {
	const hexDigits = "0123456789ABCDEF"
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case c == '\n':
			b.WriteString(`\n`)
		case c == '\t':
			b.WriteString(`\t`)
		case c < 0x20 || c >= 0x7f:
			b.WriteByte('\\')
			b.WriteByte(hexDigits[c>>4])
			b.WriteByte(hexDigits[c&15])
		default:
			b.WriteByte(c)
		}
	}
	b.WriteByte('"')
	return b.String()
}

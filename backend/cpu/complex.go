package cpu

import (
	"fmt"
	"strings"

	"github.com/xlacache/xlacache/stablehlo"
)

// Complex numbers are computed as C's float _Complex and double _Complex,
// whose layout (real part, then imaginary part) is StableHLO's. Data
// movement needs nothing special: every movement kernel reads and writes
// typed elements. The ops that compute go through the helpers of
// complexPrelude (complexc.go), which port Go's complex arithmetic and
// math/cmplx, the reference interpreter's.

// hasComplex reports whether an operand or result of op is complex.
func hasComplex(op *stablehlo.Op) bool {
	for _, v := range op.Operands {
		if v.Type.DType.IsComplex() {
			return true
		}
	}
	for _, v := range op.Results {
		if v.Type.DType.IsComplex() {
			return true
		}
	}
	return false
}

// checkComplex rejects, as unsupported, every op on complex values the
// backend does not lower (naming the op and the type), so that such a
// program never reaches the C compiler or gives a wrong result.
func (l *lowering) checkComplex(op *stablehlo.Op) error {
	if !hasComplex(op) {
		return nil
	}
	dt := stablehlo.InvalidDType
	for _, v := range append(append([]*stablehlo.Value(nil), op.Operands...), op.Results...) {
		if v.Type.DType.IsComplex() {
			dt = v.Type.DType
			break
		}
	}
	// Which ops move and which compute on complex values is the
	// complex field of their opTable row (ops.go).
	support := opTable[op.Name].complex
	switch {
	case support == complexMove:
		return nil
	case op.Name == "compare":
		if cmpOps[op.Attrs.ComparisonDirection] == "" {
			return l.unsupportedf(op, "compare %s on %s is not supported", op.Attrs.ComparisonDirection, dt)
		}
		return nil
	case support == complexCompute:
		return nil
	}
	return l.unsupportedf(op, "op %s on %s is not supported", op.Name, dt)
}

// complexValue builds a complex value from two expressions of its part
// type (C's __builtin_complex needs both of exactly that type).
func complexValue(re, im string) string {
	return fmt.Sprintf("__builtin_complex(%s, %s)", re, im)
}

// zcall applies a complex helper that works in double _Complex to
// values of type dt, narrowing the result for complex<f32>.
func zcall(fn string, dt stablehlo.DType, args ...string) string {
	s := fn + "("
	for i, a := range args {
		if i > 0 {
			s += ", "
		}
		if dt == stablehlo.C64 {
			s += "(double _Complex)" + a
		} else {
			s += a
		}
	}
	s += ")"
	if dt == stablehlo.C64 {
		return "((float _Complex)" + s + ")"
	}
	return s
}

// complexMul is the product of two values of complex type dt.
func complexMul(dt stablehlo.DType, a, b string) string {
	if dt == stablehlo.C64 {
		return fmt.Sprintf("xk_cmulf(%s, %s)", a, b)
	}
	return fmt.Sprintf("xk_zmul(%s, %s)", a, b)
}

// complexUnary maps the unary ops on complex values to their helpers.
var complexUnary = map[string]string{
	"sign": "xk_zsign", "exponential": "xk_zexp", "log": "xk_zlog", "log_plus_one": "xk_zlog1p",
	"exponential_minus_one": "xk_zexpm1", "sqrt": "xk_zsqrt", "rsqrt": "xk_zrsqrt", "sine": "xk_zsin",
	"cosine": "xk_zcos", "tan": "xk_ztan", "tanh": "xk_ztanh", "logistic": "xk_zlogistic",
}

// complexExpr returns the expression for element idx of an op that
// computes on complex values (and real/imag/complex on any operands), or
// false when op is not one (movement ops need nothing special).
func (g *gen) complexExpr(op *stablehlo.Op, idx []string) (string, bool) {
	r := op.Results[0]
	dt := r.Type.DType
	switch op.Name {
	case "real", "imag":
		o := op.Operands[0]
		a := g.val(o, idx)
		g.needComplex = true
		if !o.Type.DType.IsComplex() {
			if op.Name == "real" {
				return a, true
			}
			return fmt.Sprintf("((%s)0)", ctype(computeDT(dt))), true
		}
		return fmt.Sprintf("(__%s__ (%s))", op.Name, a), true
	case "complex":
		g.needComplex = true
		return complexValue(g.val(op.Operands[0], idx), g.val(op.Operands[1], idx)), true
	}
	if !hasComplex(op) {
		return "", false
	}
	g.needComplex = true
	switch op.Name {
	case "add", "subtract":
		sym := map[string]string{"add": "+", "subtract": "-"}[op.Name]
		return fmt.Sprintf("(%s %s %s)", g.val(op.Operands[0], idx), sym, g.val(op.Operands[1], idx)), true
	case "multiply":
		return complexMul(dt, g.val(op.Operands[0], idx), g.val(op.Operands[1], idx)), true
	case "divide":
		return zcall("xk_zdiv", dt, g.val(op.Operands[0], idx), g.val(op.Operands[1], idx)), true
	case "power":
		return zcall("xk_zpow", dt, g.val(op.Operands[0], idx), g.val(op.Operands[1], idx)), true
	case "negate":
		return fmt.Sprintf("(-%s)", g.val(op.Operands[0], idx)), true
	case "abs":
		o := op.Operands[0]
		a := g.val(o, idx)
		if o.Type.DType == stablehlo.C64 {
			return fmt.Sprintf("((float)xk_zabs((double _Complex)%s))", a), true
		}
		return fmt.Sprintf("xk_zabs(%s)", a), true
	case "compare":
		return complexCompare(op.Attrs.ComparisonDirection, g.val(op.Operands[0], idx), g.val(op.Operands[1], idx)), true
	case "convert":
		o := op.Operands[0]
		return convertExpr(g.val(o, idx), o.Type.DType, dt), true
	}
	if fn, ok := complexUnary[op.Name]; ok {
		return zcall(fn, dt, g.val(op.Operands[0], idx)), true
	}
	return "", false
}

// complexConvertExpr converts between a complex type and any other
// element type: complex to complex part by part; to a real type, the real
// part, converted by the real rules; from a real type, the value
// converted to the part type, with a +0 imaginary part.
func complexConvertExpr(a string, from, to stablehlo.DType) string {
	switch {
	case from.IsComplex() && to.IsComplex():
		return fmt.Sprintf("((%s)%s)", ctype(to), a)
	case from.IsComplex():
		return convertExpr(fmt.Sprintf("(__real__ (%s))", a), from.ComplexElem(), to)
	}
	e := to.ComplexElem()
	return complexValue(convertExpr(a, from, e), fmt.Sprintf("((%s)0)", ctype(e)))
}

// complexCompare compares complex values as the interpreter does
// (§compare): EQ and NE on both parts, the orders lexicographically on
// (real, imaginary).
func complexCompare(dir, a, b string) string {
	c := cmpOps[dir]
	switch dir {
	case "EQ", "NE":
		return fmt.Sprintf("((uint8_t)(%s %s %s))", a, c, b)
	}
	strict := strings.TrimSuffix(c, "=")
	return fmt.Sprintf("((uint8_t)(__real__ (%s) %s __real__ (%s) || (__real__ (%s) == __real__ (%s) && __imag__ (%s) %s __imag__ (%s))))",
		a, strict, b, a, b, a, c, b)
}

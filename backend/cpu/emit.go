package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/xlacache/xlacache/stablehlo"
)

// gen emits the C body of one kernel. Values are computed into named
// temporaries; a memo keyed by value and index expressions gives common
// subexpression elimination within a loop body, and scopes keep a
// temporary from being used outside the block that declared it.
type gen struct {
	l       *lowering
	inputs  []*stablehlo.Value
	inIdx   map[*stablehlo.Value]int
	fixedIn bool // inputs were fixed by the default configuration
	outputs []*stablehlo.Value
	b       strings.Builder
	ind     int
	tmp     int
	scopes  []map[string]string
	bound   map[*stablehlo.Value]string
	err     error
	// needComplex and needFFT ask for the C helpers of complex values
	// and of fft (complexc.go, fft.go) ahead of the kernel.
	needComplex, needFFT bool
	// selMinMax has maximum and minimum use the branch-free helpers
	// (xk_maxf_sel, prelude.go): set by window ops for their bodies.
	selMinMax bool
}

func newGen(l *lowering, fixed []*stablehlo.Value) *gen {
	g := &gen{l: l, inIdx: map[*stablehlo.Value]int{}, bound: map[*stablehlo.Value]string{}}
	g.scopes = []map[string]string{{}}
	for _, v := range fixed {
		g.inIdx[v] = len(g.inputs)
		g.inputs = append(g.inputs, v)
	}
	g.fixedIn = fixed != nil
	return g
}

func (g *gen) line(format string, args ...any) {
	g.b.WriteString(strings.Repeat("\t", g.ind+1))
	fmt.Fprintf(&g.b, format, args...)
	g.b.WriteByte('\n')
}

func (g *gen) fail(err error) {
	if g.err == nil {
		g.err = err
	}
}

func (g *gen) name(prefix string) string {
	g.tmp++
	return fmt.Sprintf("%s%d", prefix, g.tmp)
}

// openIf opens a C block, in a new scope, that runs when every condition
// holds; closeBlock ends it.
func (g *gen) openIf(conds []string) {
	g.openBlock("if (%s) {", allOf(conds))
}

// openBlock writes a line that opens a C block ("for (...) {", "else {")
// and starts the block's scope; closeBlock ends it.
func (g *gen) openBlock(format string, args ...any) {
	g.line(format, args...)
	g.ind++
	g.push()
}

// closeBlock ends a C block opened with a scope of its own (openBlock's,
// openIf's or a loop's).
func (g *gen) closeBlock() {
	g.pop()
	g.ind--
	g.line("}")
}

// allOf is the C conjunction of conds (true when there are none).
func allOf(conds []string) string {
	if len(conds) == 0 {
		return "1"
	}
	return strings.Join(conds, " && ")
}

func (g *gen) push() { g.scopes = append(g.scopes, map[string]string{}) }
func (g *gen) pop()  { g.scopes = g.scopes[:len(g.scopes)-1] }

func (g *gen) lookup(key string) (string, bool) {
	for i := len(g.scopes) - 1; i >= 0; i-- {
		if s, ok := g.scopes[i][key]; ok {
			return s, true
		}
	}
	return "", false
}

func (g *gen) remember(key, name string) { g.scopes[len(g.scopes)-1][key] = name }

// input returns the C name of a buffer the kernel reads.
func (g *gen) input(v *stablehlo.Value) string {
	i, ok := g.inIdx[v]
	if !ok {
		if g.fixedIn {
			g.fail(fmt.Errorf("cpu: internal error: kernel variant reads an input the default does not"))
			return "in0"
		}
		i = len(g.inputs)
		g.inIdx[v] = i
		g.inputs = append(g.inputs, v)
	}
	return fmt.Sprintf("in%d", i)
}

// output registers a value the kernel writes and returns its C name.
func (g *gen) output(v *stablehlo.Value) string {
	for i, o := range g.outputs {
		if o == v {
			return fmt.Sprintf("out%d", i)
		}
	}
	g.outputs = append(g.outputs, v)
	return fmt.Sprintf("out%d", len(g.outputs)-1)
}

// offset returns the row-major linear offset of idx in shape.
func offset(shape []int64, idx []string) string {
	var terms []string
	stride := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		if idx[d] != "0" && shape[d] != 1 {
			if stride == 1 {
				terms = append(terms, idx[d])
			} else {
				terms = append(terms, fmt.Sprintf("%s*%d", idx[d], stride))
			}
		}
		stride *= shape[d]
	}
	if len(terms) == 0 {
		return "0"
	}
	for i, j := 0, len(terms)-1; i < j; i, j = i+1, j-1 {
		terms[i], terms[j] = terms[j], terms[i]
	}
	return strings.Join(terms, " + ")
}

// loops opens nested loops over shape with index variables prefix0..n and
// returns their names; close with endLoops.
func (g *gen) loops(shape []int64, prefix string) []string {
	return g.openLoops(shape, prefix, false)
}

// unrolledLoops is loops with every loop of at most maxUnrolled
// iterations unrolled completely by the C compiler (#pragma GCC unroll,
// which clang accepts too): a small window's loops unrolled let the loop
// around them vectorize below -O3 (see genReduceWindow).
func (g *gen) unrolledLoops(shape []int64, prefix string) []string {
	return g.openLoops(shape, prefix, true)
}

func (g *gen) openLoops(shape []int64, prefix string, unroll bool) []string {
	idx := make([]string, len(shape))
	for d, n := range shape {
		idx[d] = fmt.Sprintf("%s%d", prefix, d)
		if unroll && n <= maxUnrolled {
			g.line("#pragma GCC unroll %d", maxUnrolled)
		}
		g.line("for (int64_t %s = 0; %s < %d; %s++) {", idx[d], idx[d], n, idx[d])
		g.ind++
	}
	g.push()
	return idx
}

// maxUnrolled bounds the loops unrolledLoops unrolls.
const maxUnrolled = 16

func (g *gen) endLoops(n int) {
	g.pop()
	for i := 0; i < n; i++ {
		g.ind--
		g.line("}")
	}
}

// val returns a C expression for element idx of v, emitting whatever
// statements compute it.
func (g *gen) val(v *stablehlo.Value, idx []string) string {
	if s, ok := g.bound[v]; ok {
		return s
	}
	key := fmt.Sprintf("%d@%s", v.ID, strings.Join(idx, ","))
	if s, ok := g.lookup(key); ok {
		return s
	}
	var expr string
	if g.l.mat[v] || v.Def == nil {
		if v.Def == nil && !g.l.mat[v] {
			g.fail(fmt.Errorf("cpu: internal error: unbound block argument %s", v))
			return "0"
		}
		expr = loadExpr(v.Type.DType, fmt.Sprintf("%s[%s]", g.input(v), offset(v.Type.Shape, idx)))
	} else {
		expr = g.compute(v.Def, idx)
	}
	if isSimple(expr) {
		return expr
	}
	t := g.name("t")
	g.line("const %s %s = %s;", ctype(v.Type.DType), t, expr)
	g.remember(key, t)
	return t
}

func isSimple(expr string) bool {
	if strings.HasPrefix(expr, "((") && strings.HasSuffix(expr, "))") && !strings.ContainsAny(expr[2:len(expr)-2], "()") {
		return true // a literal with a cast
	}
	for _, r := range expr {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
	}
	return true
}

// literal returns element i of a constant as a C expression of its type.
func literal(t *stablehlo.Tensor, i int) string {
	d := t.Type.DType
	size := d.Size()
	if (i+1)*size > len(t.Data) {
		return "0"
	}
	b := t.Data[i*size : (i+1)*size]
	switch d {
	case stablehlo.F32:
		return floatLit(float64(math.Float32frombits(binary.LittleEndian.Uint32(b))), "float")
	case stablehlo.F64:
		return floatLit(math.Float64frombits(binary.LittleEndian.Uint64(b)), "double")
	case stablehlo.F16, stablehlo.BF16:
		return floatLit(t.Float64At(int64(i)), "float") // exact in float
	case stablehlo.C64:
		re := float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))
		im := float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4:])))
		return complexValue(floatLit(re, "float"), floatLit(im, "float"))
	case stablehlo.C128:
		re := math.Float64frombits(binary.LittleEndian.Uint64(b))
		im := math.Float64frombits(binary.LittleEndian.Uint64(b[8:]))
		return complexValue(floatLit(re, "double"), floatLit(im, "double"))
	}
	var u uint64
	for j := size - 1; j >= 0; j-- {
		u = u<<8 | uint64(b[j])
	}
	return fmt.Sprintf("((%s)0x%xULL)", ctype(d), u)
}

func floatLit(f float64, ct string) string {
	switch {
	case math.IsNaN(f):
		if math.Signbit(f) {
			return fmt.Sprintf("((%s)-NAN)", ct)
		}
		return fmt.Sprintf("((%s)NAN)", ct)
	case math.IsInf(f, 1):
		return fmt.Sprintf("((%s)INFINITY)", ct)
	case math.IsInf(f, -1):
		return fmt.Sprintf("((%s)-INFINITY)", ct)
	}
	return fmt.Sprintf("((%s)%s)", ct, strconv.FormatFloat(f, 'x', -1, 64))
}

// sameIdx returns the index for an elementwise operand: the same index, or
// none for a rank-0 operand broadcast implicitly (select, clamp).
func sameIdx(o *stablehlo.Value, idx []string) []string {
	if o.Type.Rank() == 0 {
		return nil
	}
	return idx
}

// compute returns the expression for element idx of op's (single) result;
// a 16-bit float result is rounded to its type.
func (g *gen) compute(op *stablehlo.Op, idx []string) string {
	x := g.computeRaw(op, idx)
	if dt := op.Results[0].Type.DType; isHalf(dt) && !opTable[op.Name].exact {
		return roundExpr(dt, x)
	}
	return x
}

func (g *gen) computeRaw(op *stablehlo.Op, idx []string) string {
	if x, ok := g.complexExpr(op, idx); ok {
		return x
	}
	r := op.Results[0]
	dt := computeDT(r.Type.DType)
	ct := ctype(dt)
	switch op.Name {
	case "constant":
		return literal(op.Attrs.Constant, 0)
	case "iota":
		return fmt.Sprintf("((%s)%s)", ct, idx[op.Attrs.Dimension])
	case "broadcast_in_dim":
		o := op.Operands[0]
		oi := make([]string, o.Type.Rank())
		for j, d := range op.Attrs.BroadcastDims {
			if o.Type.Shape[j] == 1 && r.Type.Shape[d] != 1 {
				oi[j] = "0"
			} else {
				oi[j] = idx[d]
			}
		}
		return g.val(o, oi)
	case "transpose":
		o := op.Operands[0]
		oi := make([]string, o.Type.Rank())
		for i, p := range op.Attrs.Permutation {
			oi[p] = idx[i]
		}
		return g.val(o, oi)
	case "slice":
		o := op.Operands[0]
		oi := make([]string, o.Type.Rank())
		for d := range oi {
			start, stride := op.Attrs.StartIndices[d], int64(1)
			if d < len(op.Attrs.Strides) {
				stride = op.Attrs.Strides[d]
			}
			switch {
			case stride == 1 && start == 0:
				oi[d] = idx[d]
			case stride == 1:
				oi[d] = fmt.Sprintf("(%s + %d)", idx[d], start)
			default:
				oi[d] = fmt.Sprintf("(%s*%d + %d)", idx[d], stride, start)
			}
		}
		return g.val(o, oi)
	case "reshape":
		o := op.Operands[0]
		if o.Type.SameShape(r.Type) {
			return g.val(o, idx)
		}
		return g.val(o, g.reshapeIndex(o.Type.Shape, r.Type.Shape, idx))
	case "convert":
		o := op.Operands[0]
		return convertExpr(g.val(o, idx), o.Type.DType, r.Type.DType)
	case "select":
		p := g.val(op.Operands[0], sameIdx(op.Operands[0], idx))
		a := g.val(op.Operands[1], idx)
		b := g.val(op.Operands[2], idx)
		return fmt.Sprintf("(%s ? %s : %s)", p, a, b)
	case "clamp":
		lo := g.val(op.Operands[0], sameIdx(op.Operands[0], idx))
		x := g.val(op.Operands[1], idx)
		hi := g.val(op.Operands[2], sameIdx(op.Operands[2], idx))
		return binaryExpr("minimum", binaryExpr("maximum", x, lo, dt), hi, dt)
	case "compare":
		a := g.val(op.Operands[0], idx)
		b := g.val(op.Operands[1], idx)
		return compareExpr(op, a, b, computeDT(op.Operands[0].Type.DType))
	case "reverse":
		o := op.Operands[0]
		oi := slices.Clone(idx)
		for _, d := range op.Attrs.Dims {
			oi[d] = fmt.Sprintf("(%d - %s)", o.Type.Shape[d]-1, idx[d])
		}
		return g.val(o, oi)
	case "bitcast_convert":
		return g.bitcast(op, idx)
	case "dynamic_slice":
		return g.dynamicSlice(op, idx)
	case "gather":
		return g.gather(op, idx)
	case "is_finite":
		return fmt.Sprintf("((uint8_t)__builtin_isfinite(%s))", g.val(op.Operands[0], idx))
	case "reduce_precision":
		od := op.Operands[0].Type.DType
		a := g.val(op.Operands[0], idx)
		eb, mb := op.Attrs.ExponentBits, op.Attrs.MantissaBits
		switch od {
		case stablehlo.F32:
			return fmt.Sprintf("xk_u2f((uint32_t)xk_redprec(xk_f2u(%s), 8, 23, %d, %d))", a, eb, mb)
		case stablehlo.F64:
			return fmt.Sprintf("xk_u2d(xk_redprec(xk_d2u(%s), 11, 52, %d, %d))", a, eb, mb)
		case stablehlo.F16:
			return fmt.Sprintf("xk_h2f((uint16_t)xk_redprec(xk_f2h(%s), 5, 10, %d, %d))", a, eb, mb)
		case stablehlo.BF16:
			return fmt.Sprintf("xk_bf2f((uint16_t)xk_redprec(xk_f2bf(%s), 8, 7, %d, %d))", a, eb, mb)
		}
	case "shift_left", "shift_right_logical", "shift_right_arithmetic":
		fn := map[string]string{"shift_left": "shl", "shift_right_logical": "shrl", "shift_right_arithmetic": "shra"}[op.Name]
		return fmt.Sprintf("xk_%s_%s(%s, %s)", fn, ct, g.val(op.Operands[0], idx), g.val(op.Operands[1], idx))
	case "chlo.next_after":
		if d := r.Type.DType; isHalf(d) {
			// Step by one 16-bit ULP: nextafterf would step by an f32
			// one, which rounds back to the operand.
			exp, nan := 0x7C00, 0x7E00
			if d == stablehlo.BF16 {
				exp, nan = 0x7F80, 0x7FC0
			}
			x, y := storeExpr(d, g.val(op.Operands[0], idx)), storeExpr(d, g.val(op.Operands[1], idx))
			return loadExpr(d, fmt.Sprintf("xk_nextafter16(%s, %s, 0x%X, 0x%X)", x, y, exp, nan))
		}
	case "popcnt":
		return fmt.Sprintf("xk_popcnt_%s(%s)", ct, g.val(op.Operands[0], idx))
	case "count_leading_zeros":
		return fmt.Sprintf("xk_clz_%s(%s)", ct, g.val(op.Operands[0], idx))
	}
	switch len(op.Operands) {
	case 1:
		return unaryExpr(op.Name, g.val(op.Operands[0], idx), dt)
	case 2:
		a, b := g.val(op.Operands[0], idx), g.val(op.Operands[1], idx)
		if g.selMinMax && (op.Name == "maximum" || op.Name == "minimum") && (dt == stablehlo.F32 || dt == stablehlo.F64) {
			f := ""
			if dt == stablehlo.F32 {
				f = "f"
			}
			return fmt.Sprintf("xk_%s%s_sel(%s, %s)", op.Name[:3], f, a, b)
		}
		if e, ok := constMinMax(op, a, b, dt); ok {
			return e
		}
		return binaryExpr(op.Name, a, b, dt)
	}
	g.fail(g.l.errorf(op, "cannot generate code for %s", op.Name))
	return "0"
}

// bitsExpr is the bit pattern of a computed value of dtype d, as an
// unsigned integer expression.
func bitsExpr(d stablehlo.DType, x string) string {
	if isHalf(d) {
		return storeExpr(d, x)
	}
	if c, ok := floatBitCasts[d]; ok {
		return fmt.Sprintf(c[0], x)
	}
	return fmt.Sprintf("((uint%d_t)%s)", 8*d.Size(), x)
}

// fromBits converts an unsigned bit-pattern expression to a computed
// value of dtype d.
func fromBits(d stablehlo.DType, u string) string {
	if isHalf(d) {
		return loadExpr(d, "(uint16_t)"+u)
	}
	if c, ok := floatBitCasts[d]; ok {
		return fmt.Sprintf(c[1], u)
	}
	return fmt.Sprintf("((%s)(uint%d_t)%s)", ctype(d), 8*d.Size(), u)
}

// floatBitCasts are, per wide float type, the C formats that turn a
// computed value into its bit pattern and a bit pattern into a value.
var floatBitCasts = map[stablehlo.DType][2]string{
	stablehlo.F32: {"xk_f2u(%s)", "xk_u2f((uint32_t)%s)"},
	stablehlo.F64: {"xk_d2u(%s)", "xk_u2d((uint64_t)%s)"},
}

// bitcast implements bitcast_convert on little-endian buffers (as the
// interpreter): a narrower result's extra innermost dimension indexes the
// operand element's pieces from least significant up; a wider result
// joins the operand's innermost dimension the same way.
func (g *gen) bitcast(op *stablehlo.Op, idx []string) string {
	o := op.Operands[0]
	from, to := o.Type.DType, op.Results[0].Type.DType
	fs, ts := from.Size(), to.Size()
	switch {
	case fs == ts:
		return fromBits(to, bitsExpr(from, g.val(o, idx)))
	case fs > ts:
		k := idx[len(idx)-1]
		bits := bitsExpr(from, g.val(o, idx[:len(idx)-1]))
		return fromBits(to, fmt.Sprintf("((uint64_t)%s >> (%d * %s))", bits, 8*ts, k))
	}
	var parts []string
	for j := 0; j < ts/fs; j++ {
		oi := append(slices.Clone(idx), strconv.Itoa(j))
		parts = append(parts, fmt.Sprintf("((uint64_t)%s << %d)", bitsExpr(from, g.val(o, oi)), 8*fs*j))
	}
	return fromBits(to, "("+strings.Join(parts, " | ")+")")
}

// reshapeIndex maps index idx of a reshape's result (shape to) to the
// operand's index (shape from). The dims of size 1 aside, the two shapes
// split into groups of consecutive dims with equal products (8x32x128 ->
// 256x128 is {8,32}->{256} and {128}->{128}), and an element's index only
// moves within its group: a group of one dim on both sides keeps its index
// as it is, and the others go through the group's own linear index. Only
// the index arithmetic differs from linearizing the whole index, not the
// element read: but an innermost dim the reshape keeps stays a plain loop
// index, which the C compiler can vectorize, where a division of the whole
// linear index hid that.
func (g *gen) reshapeIndex(from, to []int64, idx []string) []string {
	oi := make([]string, len(from))
	var fd, td []int // the dims of size other than 1
	for d, n := range from {
		if n == 1 {
			oi[d] = "0"
		} else {
			fd = append(fd, d)
		}
		if n == 0 {
			return g.reshapeLinear(from, to, idx)
		}
	}
	for d, n := range to {
		if n != 1 {
			td = append(td, d)
		}
		if n == 0 {
			return g.reshapeLinear(from, to, idx)
		}
	}
	i, j := 0, 0
	for i < len(td) || j < len(fd) {
		if i >= len(td) || j >= len(fd) {
			return g.reshapeLinear(from, to, idx) // cannot happen for equal sizes
		}
		i0, j0 := i, j
		pt, pf := to[td[i]], from[fd[j]]
		i, j = i+1, j+1
		for pt != pf {
			switch {
			case pt < pf && i < len(td):
				pt *= to[td[i]]
				i++
			case pf < pt && j < len(fd):
				pf *= from[fd[j]]
				j++
			default:
				return g.reshapeLinear(from, to, idx)
			}
		}
		if i-i0 == 1 && j-j0 == 1 {
			oi[fd[j0]] = idx[td[i0]]
			continue
		}
		gs := make([]int64, 0, i-i0)
		gi := make([]string, 0, i-i0)
		for _, d := range td[i0:i] {
			gs = append(gs, to[d])
			gi = append(gi, idx[d])
		}
		sub := make([]int64, 0, j-j0)
		for _, d := range fd[j0:j] {
			sub = append(sub, from[d])
		}
		for k, e := range g.reshapeLinear(sub, gs, gi) {
			oi[fd[j0+k]] = e
		}
	}
	return oi
}

// reshapeLinear maps idx of shape to onto shape from through the linear
// (row-major) index, which both shapes share.
func (g *gen) reshapeLinear(from, to []int64, idx []string) []string {
	lin := offset(to, idx)
	if !isSimple(lin) {
		key := "lin:" + lin
		if s, ok := g.lookup(key); ok {
			lin = s
		} else {
			t := g.name("l")
			g.line("const int64_t %s = %s;", t, lin)
			g.remember(key, t)
			lin = t
		}
	}
	oi := make([]string, len(from))
	stride := int64(1)
	for d := len(from) - 1; d >= 0; d-- {
		n := from[d]
		switch {
		case n == 1:
			oi[d] = "0"
		case d == 0 && stride == 1:
			oi[d] = lin
		case d == 0:
			oi[d] = fmt.Sprintf("(%s/%d)", lin, stride)
		case stride == 1:
			oi[d] = fmt.Sprintf("(%s%%%d)", lin, n)
		default:
			oi[d] = fmt.Sprintf("((%s/%d)%%%d)", lin, stride, n)
		}
		stride *= n
	}
	return oi
}

func fsuffix(dt stablehlo.DType) string {
	if dt == stablehlo.F32 {
		return "f"
	}
	return ""
}

// libmUnary maps the unary ops that are one libm call to the function
// (f-suffixed for f32 by the caller).
var libmUnary = map[string]string{
	"floor": "floor", "ceil": "ceil", "cbrt": "cbrt", "tanh": "tanh", "sqrt": "sqrt",
	"log1p": "log1p", "expm1": "expm1", "erf": "erf", "erfc": "erfc", "lgamma": "lgamma",
	"round_nearest_even": "nearbyint", "round_nearest_afz": "round", "exponential": "exp",
	"exponential_minus_one": "expm1", "log": "log", "log_plus_one": "log1p", "cosine": "cos", "sine": "sin",
}

func unaryExpr(name, a string, dt stablehlo.DType) string {
	ct := ctype(dt)
	f := fsuffix(dt)
	math1 := func(fn string) string { return fmt.Sprintf("%s%s(%s)", fn, f, a) }
	if dt == stablehlo.F32 && (name == "tanh" || name == "exponential") {
		// The prelude's branch-free versions vectorize (prelude.go).
		return fmt.Sprintf("xk_%sf(%s)", libmUnary[name], a)
	}
	if fn, ok := libmUnary[name]; ok {
		return math1(fn)
	}
	switch name {
	case "negate":
		if dt == stablehlo.I1 {
			return a
		}
		return fmt.Sprintf("((%s)-%s)", ct, a)
	case "abs":
		if dt.IsFloat() {
			return math1("fabs")
		}
		if dt.IsSigned() {
			return fmt.Sprintf("((%s)(%s < 0 ? -%s : %s))", ct, a, a, a)
		}
		return a
	case "sign":
		switch {
		case dt == stablehlo.F32:
			return fmt.Sprintf("xk_signf(%s)", a)
		case dt == stablehlo.F64:
			return fmt.Sprintf("xk_sign(%s)", a)
		case dt.IsSigned():
			return fmt.Sprintf("((%s)((%s > 0) - (%s < 0)))", ct, a, a)
		}
		return fmt.Sprintf("((%s)(%s != 0))", ct, a)
	case "not":
		if dt == stablehlo.I1 {
			return fmt.Sprintf("((uint8_t)(%s ^ 1))", a)
		}
		return fmt.Sprintf("((%s)~%s)", ct, a)
	case "logistic":
		if dt == stablehlo.F32 {
			return fmt.Sprintf("xk_logisticf(%s)", a)
		}
		return fmt.Sprintf("xk_logistic(%s)", a)
	case "rsqrt":
		return fmt.Sprintf("((%s)1 / sqrt%s(%s))", ct, f, a)
	case "tan":
		if dt == stablehlo.F32 {
			return fmt.Sprintf("((float)tan((double)%s))", a)
		}
		return math1("tan")
	case "chlo.cosh", "chlo.sinh":
		if dt == stablehlo.F32 {
			return fmt.Sprintf("xk_%sf(%s)", strings.TrimPrefix(name, "chlo."), a)
		}
		return math1(strings.TrimPrefix(name, "chlo."))
	case "chlo.acos", "chlo.acosh", "chlo.asin", "chlo.asinh", "chlo.atan", "chlo.atanh",
		"chlo.tan", "chlo.erf", "chlo.erfc", "chlo.lgamma":
		if dt == stablehlo.F32 {
			// Evaluate in double and round once: the result is then
			// within half an ULP, which keeps us inside the reference's
			// tolerance where float libm versions can be several ULP off.
			return fmt.Sprintf("((float)%s((double)%s))", strings.TrimPrefix(name, "chlo."), a)
		}
		return math1(strings.TrimPrefix(name, "chlo."))
	case "chlo.digamma":
		return fmt.Sprintf("((%s)xk_digamma(%s))", ct, a)
	case "chlo.erf_inv":
		return fmt.Sprintf("((%s)xk_erfinv(%s))", ct, a)
	case "chlo.bessel_i0e", "chlo.bessel_i1e":
		return fmt.Sprintf("((%s)xk_%s((double)%s))", ct, strings.TrimPrefix(name, "chlo."), a)
	}
	return "0"
}

func binaryExpr(name, a, b string, dt stablehlo.DType) string {
	ct := ctype(dt)
	f := fsuffix(dt)
	isBool := dt == stablehlo.I1
	switch name {
	case "add":
		if isBool {
			return fmt.Sprintf("((uint8_t)(%s | %s))", a, b)
		}
		return fmt.Sprintf("((%s)(%s + %s))", ct, a, b)
	case "subtract":
		if isBool {
			return fmt.Sprintf("((uint8_t)(%s & !%s))", a, b)
		}
		return fmt.Sprintf("((%s)(%s - %s))", ct, a, b)
	case "multiply":
		if isBool {
			return fmt.Sprintf("((uint8_t)(%s & %s))", a, b)
		}
		if dt == stablehlo.UI16 || dt == stablehlo.UI8 {
			// Promotion to int could overflow; multiply as unsigned.
			return fmt.Sprintf("((%s)((uint32_t)%s * (uint32_t)%s))", ct, a, b)
		}
		return fmt.Sprintf("((%s)(%s * %s))", ct, a, b)
	case "divide":
		if dt.IsFloat() {
			return fmt.Sprintf("(%s / %s)", a, b)
		}
		if isBool {
			return a
		}
		return fmt.Sprintf("xk_div_%s(%s, %s)", ct, a, b)
	case "remainder":
		if dt.IsFloat() {
			return fmt.Sprintf("fmod%s(%s, %s)", f, a, b)
		}
		if isBool {
			return "((uint8_t)0)"
		}
		return fmt.Sprintf("xk_rem_%s(%s, %s)", ct, a, b)
	case "power":
		if dt.IsFloat() {
			return fmt.Sprintf("pow%s(%s, %s)", f, a, b)
		}
		if isBool {
			return fmt.Sprintf("((uint8_t)(%s | !%s))", a, b)
		}
		return fmt.Sprintf("xk_pow_%s(%s, %s)", ct, a, b)
	case "maximum":
		return minMaxExpr("max", ">", a, b, dt)
	case "minimum":
		return minMaxExpr("min", "<", a, b, dt)
	case "atan2":
		return fmt.Sprintf("atan2%s(%s, %s)", f, a, b)
	case "chlo.next_after":
		return fmt.Sprintf("nextafter%s(%s, %s)", f, a, b)
	case "and":
		return fmt.Sprintf("((%s)(%s & %s))", ct, a, b)
	case "or":
		return fmt.Sprintf("((%s)(%s | %s))", ct, a, b)
	case "xor":
		return fmt.Sprintf("((%s)(%s ^ %s))", ct, a, b)
	}
	return "0"
}

// constMinMax is a float maximum or minimum of a value and a splat
// constant (relu's max(x, 0), a clamp's bound) as one compare and select
// instead of the prelude's branchy helper: the branches for a NaN and for
// equal operands cost a 4-D relu a sixth of its compile. With c not a
// NaN the select gives what xk_maxf/xk_minf give: x where x is a NaN
// (the comparison is false), c where x equals c, -0 < +0 kept by a strict
// comparison where c is the zero that must lose a tie to the other
// (max(x, -0), min(x, +0)). ok is false where neither operand is such a
// constant.
func constMinMax(op *stablehlo.Op, a, b string, dt stablehlo.DType) (string, bool) {
	if (op.Name != "maximum" && op.Name != "minimum") || (dt != stablehlo.F32 && dt != stablehlo.F64) {
		return "", false
	}
	x, c := a, b
	v, ok := splatFloat(op.Operands[1])
	if !ok {
		x, c = b, a
		if v, ok = splatFloat(op.Operands[0]); !ok {
			return "", false
		}
	}
	if math.IsNaN(v) {
		return "", false
	}
	cmp := "<="
	if op.Name == "minimum" {
		cmp = ">="
	}
	if v == 0 && math.Signbit(v) == (op.Name == "maximum") {
		cmp = cmp[:1] // -0 for max, +0 for min: a tie keeps x
	}
	return fmt.Sprintf("(%s %s %s ? %s : %s)", x, cmp, c, c, x), true
}

// splatFloat returns the value of v if it is a splat float constant,
// directly or through broadcast_in_dim or reshape.
func splatFloat(v *stablehlo.Value) (float64, bool) {
	for v.Def != nil && (v.Def.Name == "broadcast_in_dim" || v.Def.Name == "reshape") {
		v = v.Def.Operands[0]
	}
	if v.Def == nil || v.Def.Name != "constant" {
		return 0, false
	}
	t := v.Def.Attrs.Constant
	if t == nil || (t.Type.DType != stablehlo.F32 && t.Type.DType != stablehlo.F64) || t.Type.NumElements() == 0 || !isSplat(t) {
		return 0, false
	}
	return t.Float64At(0), true
}

// minMaxExpr is maximum (fn "max", cmp ">") or minimum ("min", "<"):
// floats go through the prelude's helpers for StableHLO's NaN and
// signed-zero rules, other types compare.
func minMaxExpr(fn, cmp, a, b string, dt stablehlo.DType) string {
	switch dt {
	case stablehlo.F32:
		return fmt.Sprintf("xk_%sf(%s, %s)", fn, a, b)
	case stablehlo.F64:
		return fmt.Sprintf("xk_%s(%s, %s)", fn, a, b)
	}
	return fmt.Sprintf("(%s %s %s ? %s : %s)", a, cmp, b, a, b)
}

var cmpOps = map[string]string{"EQ": "==", "NE": "!=", "LT": "<", "LE": "<=", "GT": ">", "GE": ">="}

func compareExpr(op *stablehlo.Op, a, b string, dt stablehlo.DType) string {
	c := cmpOps[op.Attrs.ComparisonDirection]
	if c == "" {
		c = "=="
	}
	if op.Attrs.CompareType == "TOTALORDER" && dt.IsFloat() {
		if dt == stablehlo.F32 {
			return fmt.Sprintf("((uint8_t)(xk_tokf(%s) %s xk_tokf(%s)))", a, c, b)
		}
		return fmt.Sprintf("((uint8_t)(xk_tok(%s) %s xk_tok(%s)))", a, c, b)
	}
	return fmt.Sprintf("((uint8_t)(%s %s %s))", a, c, b)
}

func convertExpr(a string, from, to stablehlo.DType) string {
	ct := ctype(to)
	switch {
	case from == to:
		return a
	case from.IsComplex() || to.IsComplex():
		return complexConvertExpr(a, from, to)
	case isHalf(to) && from == stablehlo.F64:
		// Round to odd first so that the rounding to 16 bits (by
		// compute) is not a double rounding.
		return fmt.Sprintf("xk_d2f_odd(%s)", a)
	case isHalf(to) && (from == stablehlo.I64 || from == stablehlo.I32):
		return fmt.Sprintf("xk_d2f_odd(xk_i2d_odd((int64_t)%s))", a)
	case isHalf(to) && (from == stablehlo.UI64 || from == stablehlo.UI32):
		return fmt.Sprintf("xk_d2f_odd(xk_u2d_odd((uint64_t)%s))", a)
	case to == stablehlo.I1:
		return fmt.Sprintf("((uint8_t)(%s != 0))", a)
	case from.IsFloat() && !to.IsFloat():
		return fmt.Sprintf("xk_f2i_%s(%s)", ct, a)
	}
	return fmt.Sprintf("((%s)%s)", ct, a)
}

// regionBody emits region b with its arguments bound to C expressions and
// returns the expressions of its results; body values are computed inline.
func regionBody(g *gen, b *stablehlo.Block, args []string) []string {
	for i, a := range b.Args {
		g.bound[a] = args[i]
	}
	saved := g.l.mat
	g.l.mat = map[*stablehlo.Value]bool{}
	g.push()
	ret := b.Ops[len(b.Ops)-1].Operands
	res := make([]string, len(ret))
	for i := range ret {
		v := g.val(ret[i], nil)
		t := g.name("b")
		g.line("const %s %s = %s;", ctype(ret[i].Type.DType), t, v)
		res[i] = t
	}
	g.pop()
	g.l.mat = saved
	for _, a := range b.Args {
		delete(g.bound, a)
	}
	return res
}

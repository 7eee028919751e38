package gomlx

// The op → StableHLO mapping. Semantics follow GoMLX's XLA backend
// (github.com/gomlx/gomlx@v0.26.0/backends/xla), which builds the same
// StableHLO with the same builder; ops the cpu backend lacks a form for
// (batch norm, GoMLX's 3-word RNG state) are decomposed here.

import (
	"maps"
	"slices"

	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	xtypes "github.com/gomlx/go-xla/pkg/types"
	xdtypes "github.com/gomlx/go-xla/pkg/types/dtypes"
	xshapes "github.com/gomlx/go-xla/pkg/types/shapes"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"
)

type (
	unFn  = func(*shlo.Value) (*shlo.Value, error)
	binFn = func(x, y *shlo.Value) (*shlo.Value, error)
)

var unaryFns = map[backends.OpType]unFn{
	backends.OpTypeAbs: shlo.Abs, backends.OpTypeBitCount: shlo.Popcnt, backends.OpTypeBitwiseNot: shlo.Not,
	backends.OpTypeCeil: shlo.Ceil, backends.OpTypeClz: shlo.CountLeadingZeros, backends.OpTypeCos: shlo.Cosine,
	backends.OpTypeErf: shlo.Erf, backends.OpTypeExp: shlo.Exponential, backends.OpTypeExpm1: shlo.ExponentialMinusOne,
	backends.OpTypeFloor: shlo.Floor, backends.OpTypeIsFinite: shlo.IsFinite, backends.OpTypeLog: shlo.Log,
	backends.OpTypeLog1p: shlo.LogPlusOne, backends.OpTypeLogicalNot: shlo.Not, backends.OpTypeLogistic: shlo.Logistic,
	backends.OpTypeNeg: shlo.Negate, backends.OpTypeRound: shlo.RoundNearestEven, backends.OpTypeRsqrt: shlo.Rsqrt,
	backends.OpTypeSign: shlo.Sign, backends.OpTypeSin: shlo.Sine, backends.OpTypeSqrt: shlo.Sqrt,
	backends.OpTypeTanh: shlo.Tanh,
	backends.OpTypeIsNaN: func(x *shlo.Value) (*shlo.Value, error) {
		return shlo.Compare(x, x, xtypes.CompareNE, xtypes.CompareFloat)
	},
}

var binaryFns = map[backends.OpType]binFn{
	backends.OpTypeAdd: shlo.Add, backends.OpTypeSub: shlo.Subtract, backends.OpTypeMul: shlo.Multiply,
	backends.OpTypeDiv: shlo.Divide, backends.OpTypeRem: shlo.Remainder, backends.OpTypePow: shlo.Power,
	backends.OpTypeMax: shlo.Maximum, backends.OpTypeMin: shlo.Minimum,
	backends.OpTypeBitwiseAnd: shlo.And, backends.OpTypeBitwiseOr: shlo.Or, backends.OpTypeBitwiseXor: shlo.Xor,
	backends.OpTypeLogicalAnd: shlo.And, backends.OpTypeLogicalOr: shlo.Or, backends.OpTypeLogicalXor: shlo.Xor,
	backends.OpTypeShiftLeft: shlo.ShiftLeft, backends.OpTypeShiftRightArithmetic: shlo.ShiftRightArithmetic,
	backends.OpTypeShiftRightLogical: shlo.ShiftRightLogical,
}

// compareOps maps each comparison to its direction; the TotalOrder ones
// compare with the total order.
var compareOps = map[backends.OpType]struct {
	dir   xtypes.ComparisonDirection
	total bool
}{
	backends.OpTypeEqual: {xtypes.CompareEQ, false}, backends.OpTypeNotEqual: {xtypes.CompareNE, false},
	backends.OpTypeGreaterThan: {xtypes.CompareGT, false}, backends.OpTypeGreaterOrEqual: {xtypes.CompareGE, false},
	backends.OpTypeLessThan: {xtypes.CompareLT, false}, backends.OpTypeLessOrEqual: {xtypes.CompareLE, false},
	backends.OpTypeEqualTotalOrder: {xtypes.CompareEQ, true}, backends.OpTypeNotEqualTotalOrder: {xtypes.CompareNE, true},
	backends.OpTypeGreaterThanTotalOrder: {xtypes.CompareGT, true}, backends.OpTypeGreaterOrEqualTotalOrder: {xtypes.CompareGE, true},
	backends.OpTypeLessThanTotalOrder: {xtypes.CompareLT, true}, backends.OpTypeLessOrEqualTotalOrder: {xtypes.CompareLE, true},
}

// reductions maps each reduction to its combiner and initial value
// ("lowest"/"highest" of the dtype, "ones" for all bits set, or a number).
var reductions = map[backends.OpType]struct {
	fn   binFn
	init any
}{
	backends.OpTypeReduceSum: {shlo.Add, 0.0}, backends.OpTypeReduceProduct: {shlo.Multiply, 1.0},
	backends.OpTypeReduceMax: {shlo.Maximum, "lowest"}, backends.OpTypeReduceMin: {shlo.Minimum, "highest"},
	backends.OpTypeReduceBitwiseAnd: {shlo.And, "ones"}, backends.OpTypeReduceBitwiseOr: {shlo.Or, 0.0},
	backends.OpTypeReduceBitwiseXor: {shlo.Xor, 0.0}, backends.OpTypeReduceLogicalAnd: {shlo.And, 1.0},
	backends.OpTypeReduceLogicalOr: {shlo.Or, 0.0}, backends.OpTypeReduceLogicalXor: {shlo.Xor, 0.0},
}

// windowReductions maps ReduceWindow's reduction types to reductions.
var windowReductions = map[backends.ReduceOpType]backends.OpType{
	backends.ReduceOpSum: backends.OpTypeReduceSum, backends.ReduceOpProduct: backends.OpTypeReduceProduct,
	backends.ReduceOpMax: backends.OpTypeReduceMax, backends.ReduceOpMin: backends.OpTypeReduceMin,
}

// otherOps are the ops implemented by their own methods below.
var otherOps = []backends.OpType{
	backends.OpTypeParameter, backends.OpTypeConstant, backends.OpTypeIdentity, backends.OpTypeArgMinMax,
	backends.OpTypeBatchNormForInference, backends.OpTypeBatchNormForTraining, backends.OpTypeBatchNormGradient,
	backends.OpTypeBitcast, backends.OpTypeBroadcastInDim, backends.OpTypeClamp, backends.OpTypeConcatenate,
	backends.OpTypeConvertDType, backends.OpTypeConvGeneral, backends.OpTypeDynamicSlice,
	backends.OpTypeDynamicUpdateSlice, backends.OpTypeDot, backends.OpTypeDotGeneral, backends.OpTypeGather,
	backends.OpTypeIota, backends.OpTypePad, backends.OpTypeReduceWindow, backends.OpTypeReshape,
	backends.OpTypeReverse, backends.OpTypeRNGBitGenerator, backends.OpTypeScatterSum, backends.OpTypeScatterMax,
	backends.OpTypeScatterMin, backends.OpTypeSelectAndScatterMax, backends.OpTypeSelectAndScatterMin,
	backends.OpTypeSlice, backends.OpTypeTranspose, backends.OpTypeWhere, backends.OpTypeAllReduce,
}

// supportedOps lists every op the backend builds.
func supportedOps() []backends.OpType {
	ops := slices.Concat(otherOps, slices.Collect(maps.Keys(unaryFns)), slices.Collect(maps.Keys(binaryFns)),
		slices.Collect(maps.Keys(compareOps)), slices.Collect(maps.Keys(reductions)))
	if complexCompiles {
		ops = append(ops, complexOps...)
	}
	slices.Sort(ops)
	return ops
}

func (b *Builder) unary(op backends.OpType, x backends.Op) (backends.Op, error) {
	return b.op1(op, func() *shlo.Value {
		v := b.val(x)
		noComplex(op, v)
		return must(unaryFns[op](v))
	})
}

func (b *Builder) binary(op backends.OpType, x, y backends.Op) (backends.Op, error) {
	return b.op1(op, func() *shlo.Value {
		l, r := bcast2(b.val(x), b.val(y))
		noComplex(op, l)
		return must(binaryFns[op](l, r))
	})
}

func (b *Builder) compare(op backends.OpType, x, y backends.Op) (backends.Op, error) {
	return b.op1(op, func() *shlo.Value {
		l, r := bcast2(b.val(x), b.val(y))
		noComplex(op, l)
		c := compareOps[op]
		kind := compareType(dtypes.DType(l.Shape().DType))
		if c.total {
			kind = xtypes.CompareTotalOrder
		}
		return must(shlo.Compare(l, r, c.dir, kind))
	})
}

func compareType(dt dtypes.DType) xtypes.ComparisonType {
	switch {
	case dt.IsFloat() || dt.IsComplex():
		return xtypes.CompareFloat
	case dt.IsUnsigned() || dt == dtypes.Bool:
		return xtypes.CompareUnsigned
	}
	return xtypes.CompareSigned
}

// bcast2 applies GoMLX's implicit broadcasting of binary ops: a scalar
// to the other shape, or axes of size 1 to the other's size.
func bcast2(l, r *shlo.Value) (*shlo.Value, *shlo.Value) {
	ls, rs := l.Shape(), r.Shape()
	if ls.DType != rs.DType {
		fail("operands have different dtypes %s and %s", ls.DType, rs.DType)
	}
	switch {
	case ls.Equal(rs):
		return l, r
	case ls.IsScalar():
		return must(shlo.BroadcastInDim(l, rs, nil)), r
	case rs.IsScalar():
		return l, must(shlo.BroadcastInDim(r, ls, nil))
	case ls.Rank() != rs.Rank():
		fail("operand shapes %s and %s cannot be broadcast", ls, rs)
	}
	dims := make([]int, ls.Rank())
	for i := range dims {
		a, c := ls.Dimensions[i], rs.Dimensions[i]
		if a != c && a != 1 && c != 1 {
			fail("operand shapes %s and %s cannot be broadcast", ls, rs)
		}
		dims[i] = max(a, c)
	}
	out := xshapes.Make(ls.DType, dims...)
	axes := iota(len(dims))
	if !ls.Equal(out) {
		l = must(shlo.BroadcastInDim(l, out, axes))
	}
	if !rs.Equal(out) {
		r = must(shlo.BroadcastInDim(r, out, axes))
	}
	return l, r
}

func iota(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// closure returns the cached scalar function of kind for dt, building it
// with body on the first call.
func (b *Builder) closure(dt dtypes.DType, kind string, body func(c *shlo.Function, s xshapes.Shape) []*shlo.Value) *shlo.Function {
	key := closureKey{dt, kind}
	if c, ok := b.closures[key]; ok {
		return c
	}
	c := b.fn.Closure()
	if err := c.Return(body(c, xshapes.Make(xdtypes.DType(dt)))...); err != nil {
		panic(buildError{err})
	}
	b.closures[key] = c
	return c
}

// reducer is the closure combining two scalars with reduction op.
func (b *Builder) reducer(dt dtypes.DType, op backends.OpType) *shlo.Function {
	return b.closure(dt, op.String(), func(c *shlo.Function, s xshapes.Shape) []*shlo.Value {
		x, y := must(c.NamedInput("lhs", s)), must(c.NamedInput("rhs", s))
		return []*shlo.Value{must(reductions[op].fn(x, y))}
	})
}

// initValue is reduction op's initial value for dt.
func (b *Builder) initValue(dt dtypes.DType, op backends.OpType) *shlo.Value {
	switch v := reductions[op].init.(type) {
	case float64:
		return b.scalar(dt, v)
	case string:
		switch v {
		case "lowest":
			return b.constOf(dt.LowestValue())
		case "highest":
			return b.constOf(dt.HighestValue())
		}
	}
	return must(shlo.Not(b.scalar(dt, 0))) // "ones"
}

func (b *Builder) reduce(op backends.OpType, x backends.Op, axes []int) (backends.Op, error) {
	return b.op1(op, func() *shlo.Value {
		v := b.val(x)
		noComplex(op, v)
		return b.reduceVal(op, v, axes)
	})
}

func (b *Builder) reduceVal(op backends.OpType, v *shlo.Value, axes []int) *shlo.Value {
	if len(axes) == 0 {
		axes = iota(v.Shape().Rank())
	}
	dt := dtypes.DType(v.Shape().DType)
	return must(shlo.Reduce(v, b.initValue(dt, op), b.reducer(dt, op), axes...))
}

func (b *Builder) scatter(op backends.OpType, operand, indices, updates backends.Op, indexVectorAxis int,
	updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int, sorted, unique bool) (backends.Op, error) {
	reduceOp := map[backends.OpType]backends.OpType{backends.OpTypeScatterSum: backends.OpTypeReduceSum,
		backends.OpTypeScatterMax: backends.OpTypeReduceMax, backends.OpTypeScatterMin: backends.OpTypeReduceMin}[op]
	return b.op1(op, func() *shlo.Value {
		x := b.val(operand)
		noComplex(op, x)
		return must(shlo.Scatter(x, b.val(indices), b.val(updates), updateWindowAxes, insertedWindowAxes, nil, nil,
			scatterAxesToOperandAxes, indexVectorAxis, sorted, unique, b.reducer(dtypes.DType(x.Shape().DType), reduceOp)))
	})
}

func (b *Builder) selectAndScatter(op backends.OpType, operand, source backends.Op, window, strides []int, paddings [][2]int) (backends.Op, error) {
	return b.op1(op, func() *shlo.Value {
		x := b.val(operand)
		noComplex(op, x)
		dt := dtypes.DType(x.Shape().DType)
		dir := map[backends.OpType]xtypes.ComparisonDirection{backends.OpTypeSelectAndScatterMax: xtypes.CompareGE,
			backends.OpTypeSelectAndScatterMin: xtypes.CompareLE}[op]
		sel := b.closure(dt, op.String(), func(c *shlo.Function, s xshapes.Shape) []*shlo.Value {
			l, r := must(c.NamedInput("lhs", s)), must(c.NamedInput("rhs", s))
			return []*shlo.Value{must(shlo.Compare(l, r, dir, compareType(dt)))}
		})
		return must(shlo.SelectAndScatter(x, b.val(source), b.scalar(dt, 0), sel, b.reducer(dt, backends.OpTypeReduceSum),
			window, strides, paddings))
	})
}

// startIndices turns GoMLX's start indices (one scalar per axis, or one
// vector) into one scalar per axis.
func (b *Builder) startIndices(idx []backends.Op, rank int) []*shlo.Value {
	vs := b.vals(idx)
	if len(vs) != 1 || vs[0].Shape().Rank() != 1 {
		return vs
	}
	out := make([]*shlo.Value, rank)
	for i := range out {
		s := must(shlo.Slice(vs[0], []int{i}, []int{i + 1}, []int{1}))
		out[i] = must(shlo.Reshape(s, xshapes.Make(vs[0].Shape().DType)))
	}
	return out
}

// The StandardOps methods. Elementwise ones are one line each over the
// tables above.

// Abs implements backends.Builder; the absolute value of a complex number
// is its (real) modulus.
func (b *Builder) Abs(x backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeAbs, func() *shlo.Value {
		v := b.val(x)
		if isComplex(v) {
			return absComplex(v)
		}
		return must(shlo.Abs(v))
	})
}

// BitCount implements backends.Builder.
func (b *Builder) BitCount(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeBitCount, x)
}

// BitwiseNot implements backends.Builder.
func (b *Builder) BitwiseNot(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeBitwiseNot, x)
}

// Ceil implements backends.Builder.
func (b *Builder) Ceil(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeCeil, x) }

// Clz implements backends.Builder.
func (b *Builder) Clz(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeClz, x) }

// Cos implements backends.Builder.
func (b *Builder) Cos(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeCos, x) }

// Erf implements backends.Builder.
func (b *Builder) Erf(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeErf, x) }

// Exp implements backends.Builder.
func (b *Builder) Exp(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeExp, x) }

// Expm1 implements backends.Builder.
func (b *Builder) Expm1(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeExpm1, x) }

// Floor implements backends.Builder.
func (b *Builder) Floor(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeFloor, x) }

// IsFinite implements backends.Builder.
func (b *Builder) IsFinite(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeIsFinite, x)
}

// IsNaN implements backends.Builder.
func (b *Builder) IsNaN(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeIsNaN, x) }

// Log implements backends.Builder.
func (b *Builder) Log(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeLog, x) }

// Log1p implements backends.Builder.
func (b *Builder) Log1p(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeLog1p, x) }

// LogicalNot implements backends.Builder.
func (b *Builder) LogicalNot(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeLogicalNot, x)
}

// Logistic implements backends.Builder.
func (b *Builder) Logistic(x backends.Op) (backends.Op, error) {
	return b.unary(backends.OpTypeLogistic, x)
}

// Neg implements backends.Builder.
func (b *Builder) Neg(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeNeg, x) }

// Round implements backends.Builder (half to even).
func (b *Builder) Round(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeRound, x) }

// Rsqrt implements backends.Builder.
func (b *Builder) Rsqrt(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeRsqrt, x) }

// Sign implements backends.Builder.
func (b *Builder) Sign(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeSign, x) }

// Sin implements backends.Builder.
func (b *Builder) Sin(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeSin, x) }

// Sqrt implements backends.Builder.
func (b *Builder) Sqrt(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeSqrt, x) }

// Tanh implements backends.Builder.
func (b *Builder) Tanh(x backends.Op) (backends.Op, error) { return b.unary(backends.OpTypeTanh, x) }

// Add implements backends.Builder.
func (b *Builder) Add(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeAdd, x, y)
}

// Sub implements backends.Builder.
func (b *Builder) Sub(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeSub, x, y)
}

// Mul implements backends.Builder.
func (b *Builder) Mul(x, y backends.Op) (backends.Op, error) {
	out, err := b.binary(backends.OpTypeMul, x, y)
	if err == nil {
		// Both operands are this builder's nodes, or binary failed.
		out.(*Node).mul = [2]*Node{x.(*Node), y.(*Node)}
	}
	return out, err
}

// Div implements backends.Builder.
func (b *Builder) Div(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeDiv, x, y)
}

// Rem implements backends.Builder.
func (b *Builder) Rem(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeRem, x, y)
}

// Pow implements backends.Builder.
func (b *Builder) Pow(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypePow, x, y)
}

// Max implements backends.Builder.
func (b *Builder) Max(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeMax, x, y)
}

// Min implements backends.Builder.
func (b *Builder) Min(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeMin, x, y)
}

// BitwiseAnd implements backends.Builder.
func (b *Builder) BitwiseAnd(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeBitwiseAnd, x, y)
}

// BitwiseOr implements backends.Builder.
func (b *Builder) BitwiseOr(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeBitwiseOr, x, y)
}

// BitwiseXor implements backends.Builder.
func (b *Builder) BitwiseXor(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeBitwiseXor, x, y)
}

// LogicalAnd implements backends.Builder.
func (b *Builder) LogicalAnd(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeLogicalAnd, x, y)
}

// LogicalOr implements backends.Builder.
func (b *Builder) LogicalOr(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeLogicalOr, x, y)
}

// LogicalXor implements backends.Builder.
func (b *Builder) LogicalXor(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeLogicalXor, x, y)
}

// ShiftLeft implements backends.Builder.
func (b *Builder) ShiftLeft(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeShiftLeft, x, y)
}

// ShiftRightArithmetic implements backends.Builder.
func (b *Builder) ShiftRightArithmetic(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeShiftRightArithmetic, x, y)
}

// ShiftRightLogical implements backends.Builder.
func (b *Builder) ShiftRightLogical(x, y backends.Op) (backends.Op, error) {
	return b.binary(backends.OpTypeShiftRightLogical, x, y)
}

// Equal implements backends.Builder.
func (b *Builder) Equal(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeEqual, x, y)
}

// NotEqual implements backends.Builder.
func (b *Builder) NotEqual(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeNotEqual, x, y)
}

// GreaterThan implements backends.Builder.
func (b *Builder) GreaterThan(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeGreaterThan, x, y)
}

// GreaterOrEqual implements backends.Builder.
func (b *Builder) GreaterOrEqual(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeGreaterOrEqual, x, y)
}

// LessThan implements backends.Builder.
func (b *Builder) LessThan(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeLessThan, x, y)
}

// LessOrEqual implements backends.Builder.
func (b *Builder) LessOrEqual(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeLessOrEqual, x, y)
}

// EqualTotalOrder implements backends.Builder.
func (b *Builder) EqualTotalOrder(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeEqualTotalOrder, x, y)
}

// NotEqualTotalOrder implements backends.Builder.
func (b *Builder) NotEqualTotalOrder(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeNotEqualTotalOrder, x, y)
}

// GreaterThanTotalOrder implements backends.Builder.
func (b *Builder) GreaterThanTotalOrder(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeGreaterThanTotalOrder, x, y)
}

// GreaterOrEqualTotalOrder implements backends.Builder.
func (b *Builder) GreaterOrEqualTotalOrder(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeGreaterOrEqualTotalOrder, x, y)
}

// LessThanTotalOrder implements backends.Builder.
func (b *Builder) LessThanTotalOrder(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeLessThanTotalOrder, x, y)
}

// LessOrEqualTotalOrder implements backends.Builder.
func (b *Builder) LessOrEqualTotalOrder(x, y backends.Op) (backends.Op, error) {
	return b.compare(backends.OpTypeLessOrEqualTotalOrder, x, y)
}

// ReduceSum implements backends.Builder.
func (b *Builder) ReduceSum(x backends.Op, axes ...int) (backends.Op, error) {
	if d := b.reduceDot(x, axes); d != nil {
		return b.op1(backends.OpTypeReduceSum, d.build)
	}
	return b.reduce(backends.OpTypeReduceSum, x, axes)
}

// ReduceProduct implements backends.Builder.
func (b *Builder) ReduceProduct(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceProduct, x, axes)
}

// ReduceMax implements backends.Builder.
func (b *Builder) ReduceMax(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceMax, x, axes)
}

// ReduceMin implements backends.Builder.
func (b *Builder) ReduceMin(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceMin, x, axes)
}

// ReduceBitwiseAnd implements backends.Builder.
func (b *Builder) ReduceBitwiseAnd(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceBitwiseAnd, x, axes)
}

// ReduceBitwiseOr implements backends.Builder.
func (b *Builder) ReduceBitwiseOr(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceBitwiseOr, x, axes)
}

// ReduceBitwiseXor implements backends.Builder.
func (b *Builder) ReduceBitwiseXor(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceBitwiseXor, x, axes)
}

// ReduceLogicalAnd implements backends.Builder.
func (b *Builder) ReduceLogicalAnd(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceLogicalAnd, x, axes)
}

// ReduceLogicalOr implements backends.Builder.
func (b *Builder) ReduceLogicalOr(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceLogicalOr, x, axes)
}

// ReduceLogicalXor implements backends.Builder.
func (b *Builder) ReduceLogicalXor(x backends.Op, axes ...int) (backends.Op, error) {
	return b.reduce(backends.OpTypeReduceLogicalXor, x, axes)
}

// ScatterSum implements backends.Builder.
func (b *Builder) ScatterSum(operand, indices, updates backends.Op, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int, sorted, unique bool) (backends.Op, error) {
	return b.scatter(backends.OpTypeScatterSum, operand, indices, updates, indexVectorAxis, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes, sorted, unique)
}

// ScatterMax implements backends.Builder.
func (b *Builder) ScatterMax(operand, indices, updates backends.Op, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int, sorted, unique bool) (backends.Op, error) {
	return b.scatter(backends.OpTypeScatterMax, operand, indices, updates, indexVectorAxis, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes, sorted, unique)
}

// ScatterMin implements backends.Builder.
func (b *Builder) ScatterMin(operand, indices, updates backends.Op, indexVectorAxis int, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes []int, sorted, unique bool) (backends.Op, error) {
	return b.scatter(backends.OpTypeScatterMin, operand, indices, updates, indexVectorAxis, updateWindowAxes, insertedWindowAxes, scatterAxesToOperandAxes, sorted, unique)
}

// SelectAndScatterMax implements backends.Builder.
func (b *Builder) SelectAndScatterMax(operand, source backends.Op, window, strides []int, paddings [][2]int) (backends.Op, error) {
	return b.selectAndScatter(backends.OpTypeSelectAndScatterMax, operand, source, window, strides, paddings)
}

// SelectAndScatterMin implements backends.Builder.
func (b *Builder) SelectAndScatterMin(operand, source backends.Op, window, strides []int, paddings [][2]int) (backends.Op, error) {
	return b.selectAndScatter(backends.OpTypeSelectAndScatterMin, operand, source, window, strides, paddings)
}

// Identity implements backends.Builder.
func (b *Builder) Identity(x backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeIdentity, func() *shlo.Value { return b.val(x) })
}

// BroadcastInDim implements backends.Builder.
func (b *Builder) BroadcastInDim(x backends.Op, shape shapes.Shape, axes []int) (backends.Op, error) {
	out, err := b.op1(backends.OpTypeBroadcastInDim, func() *shlo.Value {
		return must(shlo.BroadcastInDim(b.val(x), shapeToXLA(shape), axes))
	})
	if err == nil {
		n := out.(*Node)
		n.bsrc, n.baxes = x.(*Node), slices.Clone(axes)
	}
	return out, err
}

// Iota implements backends.Builder.
func (b *Builder) Iota(shape shapes.Shape, axis int) (backends.Op, error) {
	return b.op1(backends.OpTypeIota, func() *shlo.Value { return must(b.fn.Iota(shapeToXLA(shape), axis)) })
}

// Reshape implements backends.Builder.
func (b *Builder) Reshape(x backends.Op, dims ...int) (backends.Op, error) {
	return b.op1(backends.OpTypeReshape, func() *shlo.Value {
		v := b.val(x)
		return must(shlo.Reshape(v, xshapes.Make(v.Shape().DType, dims...)))
	})
}

// Slice implements backends.Builder.
func (b *Builder) Slice(x backends.Op, starts, limits, strides []int) (backends.Op, error) {
	return b.op1(backends.OpTypeSlice, func() *shlo.Value { return must(shlo.Slice(b.val(x), starts, limits, strides)) })
}

// Transpose implements backends.Builder.
func (b *Builder) Transpose(x backends.Op, perm ...int) (backends.Op, error) {
	return b.op1(backends.OpTypeTranspose, func() *shlo.Value { return must(shlo.Transpose(b.val(x), perm...)) })
}

// Reverse implements backends.Builder.
func (b *Builder) Reverse(x backends.Op, axes ...int) (backends.Op, error) {
	return b.op1(backends.OpTypeReverse, func() *shlo.Value { return must(shlo.Reverse(b.val(x), axes...)) })
}

// Concatenate implements backends.Builder.
func (b *Builder) Concatenate(axis int, xs ...backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeConcatenate, func() *shlo.Value { return must(shlo.Concatenate(axis, b.vals(xs)...)) })
}

// ConvertDType implements backends.Builder.
func (b *Builder) ConvertDType(x backends.Op, dt dtypes.DType) (backends.Op, error) {
	return b.op1(backends.OpTypeConvertDType, func() *shlo.Value { return b.convert(b.val(x), dt) })
}

// Bitcast implements backends.Builder.
func (b *Builder) Bitcast(x backends.Op, dt dtypes.DType) (backends.Op, error) {
	return b.op1(backends.OpTypeBitcast, func() *shlo.Value {
		v := b.val(x)
		if isComplex(v) || dt.IsComplex() {
			// The cpu backend has no bitcast_convert for complex numbers.
			fail("bitcast from %s to %s is not supported: complex dtype", dtypes.DType(v.Shape().DType), dt)
		}
		return must(shlo.BitcastConvert(v, xdtypes.DType(dt)))
	})
}

// Clamp implements backends.Builder.
func (b *Builder) Clamp(lo, x, hi backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeClamp, func() *shlo.Value { return must(shlo.Clamp(b.val(lo), b.val(x), b.val(hi))) })
}

// Where implements backends.Builder; scalar branches are broadcast.
func (b *Builder) Where(cond, onTrue, onFalse backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeWhere, func() *shlo.Value {
		c, t, f := b.val(cond), b.val(onTrue), b.val(onFalse)
		dims := c.Shape().Dimensions
		for _, v := range []*shlo.Value{t, f} {
			if !v.Shape().IsScalar() {
				dims = v.Shape().Dimensions
			}
		}
		if len(dims) > 0 {
			if t.Shape().IsScalar() {
				t = must(shlo.BroadcastInDim(t, xshapes.Make(t.Shape().DType, dims...), nil))
			}
			if f.Shape().IsScalar() {
				f = must(shlo.BroadcastInDim(f, xshapes.Make(f.Shape().DType, dims...), nil))
			}
		}
		return must(shlo.Select(c, t, f))
	})
}

// Pad implements backends.Builder.
func (b *Builder) Pad(x, fill backends.Op, axes ...backends.PadAxis) (backends.Op, error) {
	return b.op1(backends.OpTypePad, func() *shlo.Value {
		v := b.val(x)
		rank := v.Shape().Rank()
		if len(axes) > rank {
			fail("%d axes configured for rank %d", len(axes), rank)
		}
		lo, hi, in := make([]int, rank), make([]int, rank), make([]int, rank)
		for i, a := range axes {
			lo[i], hi[i], in[i] = a.Start, a.End, a.Interior
		}
		if rank == 0 {
			return v
		}
		return must(shlo.Pad(v, b.val(fill), lo, hi, in))
	})
}

// Dot implements backends.Builder for vectors and matrices.
func (b *Builder) Dot(x, y backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeDot, func() *shlo.Value {
		l, r := b.val(x), b.val(y)
		lr, rr := l.Shape().Rank(), r.Shape().Rank()
		if lr < 1 || lr > 2 || rr < 1 || rr > 2 {
			fail("operand ranks %d and %d: want vectors or matrices", lr, rr)
		}
		return must(shlo.DotGeneral(l, []int{lr - 1}, nil, r, []int{0}, nil).Done())
	})
}

// DotGeneral implements backends.Builder.
func (b *Builder) DotGeneral(x backends.Op, xContract, xBatch []int, y backends.Op, yContract, yBatch []int) (backends.Op, error) {
	return b.op1(backends.OpTypeDotGeneral, func() *shlo.Value {
		return must(shlo.DotGeneral(b.val(x), xContract, xBatch, b.val(y), yContract, yBatch).Done())
	})
}

// Gather implements backends.Builder (no batching axes, as in GoMLX).
func (b *Builder) Gather(operand, indices backends.Op, indexVectorAxis int, offsetOutputAxes, collapsedSliceAxes, startIndexMap, sliceSizes []int, sorted bool) (backends.Op, error) {
	return b.op1(backends.OpTypeGather, func() *shlo.Value {
		return must(shlo.Gather(b.val(operand), b.val(indices), indexVectorAxis, offsetOutputAxes, collapsedSliceAxes,
			nil, nil, startIndexMap, sliceSizes, sorted))
	})
}

// DynamicSlice implements backends.Builder.
func (b *Builder) DynamicSlice(operand backends.Op, start []backends.Op, sizes []int) (backends.Op, error) {
	return b.op1(backends.OpTypeDynamicSlice, func() *shlo.Value {
		v := b.val(operand)
		return must(shlo.DynamicSlice(v, b.startIndices(start, v.Shape().Rank()), sizes))
	})
}

// DynamicUpdateSlice implements backends.Builder.
func (b *Builder) DynamicUpdateSlice(operand, update backends.Op, start []backends.Op) (backends.Op, error) {
	return b.op1(backends.OpTypeDynamicUpdateSlice, func() *shlo.Value {
		v := b.val(operand)
		return must(shlo.DynamicUpdateSlice(v, b.val(update), b.startIndices(start, v.Shape().Rank())))
	})
}

// ConvGeneral implements backends.Builder.
func (b *Builder) ConvGeneral(input, kernel backends.Op, axes backends.ConvolveAxesConfig, strides []int, paddings [][2]int,
	inputDilations, kernelDilations []int, channelGroups, batchGroups int) (backends.Op, error) {
	return b.op1(backends.OpTypeConvGeneral, func() *shlo.Value {
		in := b.val(input)
		if isComplex(in) {
			// XLA convolves complex numbers, but the cpu backend (and the
			// interpreter: stablehlo/conv.go) does not.
			fail("dtype %s is not supported: no complex convolution", dtypes.DType(in.Shape().DType))
		}
		return must(shlo.Convolution(in, b.val(kernel), strides, paddings, inputDilations, kernelDilations,
			axes.InputBatch, axes.InputChannels, axes.InputSpatial,
			axes.KernelInputChannels, axes.KernelOutputChannels, axes.KernelSpatial,
			axes.OutputBatch, axes.OutputChannels, axes.OutputSpatial,
			channelGroups, batchGroups, xtypes.DotGeneralPrecisionDefault, xtypes.DotGeneralPrecisionDefault))
	})
}

// ReduceWindow implements backends.Builder.
func (b *Builder) ReduceWindow(x backends.Op, kind backends.ReduceOpType, window, strides, baseDilations, windowDilations []int, paddings [][2]int) (backends.Op, error) {
	return b.op1(backends.OpTypeReduceWindow, func() *shlo.Value {
		op, ok := windowReductions[kind]
		if !ok {
			fail("reduction %s is not supported", kind)
		}
		v := b.val(x)
		noComplex(op, v)
		dt := dtypes.DType(v.Shape().DType)
		return must(shlo.ReduceWindow(v, b.initValue(dt, op), b.reducer(dt, op), window, strides, baseDilations, windowDilations, paddings))
	})
}

// ArgMinMax implements backends.Builder with a two-operand reduce over
// (index, value) that keeps NaNs and, on ties, the lower index.
func (b *Builder) ArgMinMax(x backends.Op, axis int, outDType dtypes.DType, isMin bool) (backends.Op, error) {
	return b.op1(backends.OpTypeArgMinMax, func() *shlo.Value {
		v := b.val(x)
		noComplex(backends.OpTypeArgMinMax, v)
		rank := v.Shape().Rank()
		if axis < 0 {
			axis += rank
		}
		if axis < 0 || axis >= rank {
			fail("axis %d out of range for rank %d", axis, rank)
		}
		dt := dtypes.DType(v.Shape().DType)
		dir, combine, init := xtypes.CompareGT, shlo.Maximum, b.constOf(dt.LowestValue())
		if isMin {
			dir, combine, init = xtypes.CompareLT, shlo.Minimum, b.constOf(dt.HighestValue())
		}
		kind := "argmax" + outDType.String()
		if isMin {
			kind = "argmin" + outDType.String()
		}
		fn := b.closure(dt, kind, func(c *shlo.Function, s xshapes.Shape) []*shlo.Value {
			is := xshapes.Make(xdtypes.DType(outDType))
			li, lv := must(c.NamedInput("lhs_idx", is)), must(c.NamedInput("lhs_v", s))
			ri, rv := must(c.NamedInput("rhs_idx", is)), must(c.NamedInput("rhs_v", s))
			left := must(shlo.Compare(lv, rv, dir, compareType(dt)))
			if dt.IsFloat() {
				left = must(shlo.Or(left, must(shlo.Compare(lv, lv, xtypes.CompareNE, xtypes.CompareFloat))))
			}
			eq := must(shlo.Compare(lv, rv, xtypes.CompareEQ, compareType(dt)))
			tie := must(shlo.Select(eq, must(shlo.Minimum(li, ri)), ri))
			return []*shlo.Value{must(shlo.Select(left, li, tie)), must(combine(lv, rv))}
		})
		idxShape := xshapes.Make(xdtypes.DType(outDType), v.Shape().Dimensions...)
		idx := must(b.fn.Iota(idxShape, axis))
		out := must(shlo.MultiReduce([]*shlo.Value{idx, v}, []*shlo.Value{b.scalar(outDType, 0), init}, fn, axis))
		return out[0]
	})
}

// RNGBitGenerator implements backends.Builder as GoMLX's XLA backend does
// (gomlx v0.26.0 backends/xla/ops.go): the whole state (three uint64
// words: key, then the 128-bit counter) goes to rng_bit_generator with
// the PHILOX algorithm, which the cpu backend and the interpreter compute
// bit for bit as XLA, so programs draw the same numbers as on XLA.
func (b *Builder) RNGBitGenerator(state backends.Op, shape shapes.Shape) (newState, values backends.Op, err error) {
	out, err := b.do(backends.OpTypeRNGBitGenerator, func() []*shlo.Value {
		st := b.val(state)
		ss := st.Shape()
		// PHILOX takes a uint64[2] or uint64[3] state (StableHLO spec,
		// rng_bit_generator C2).
		if ss.DType != xdtypes.Uint64 || ss.Rank() != 1 || (ss.Dimensions[0] != 2 && ss.Dimensions[0] != 3) {
			fail("state %s: want uint64[3] (or uint64[2])", ss)
		}
		if !shape.DType.IsInt() && !shape.DType.IsFloat() {
			fail("dtype %s is not supported", shape.DType)
		}
		ns, bits := must2(shlo.RNGBitGenerator(st, shapeToXLA(shape), xtypes.RNGPhilox))
		return []*shlo.Value{ns, bits}
	})
	if err != nil {
		return nil, nil, err
	}
	return out[0], out[1], nil
}

func must2(a, c *shlo.Value, err error) (*shlo.Value, *shlo.Value) {
	if err != nil {
		panic(buildError{err})
	}
	return a, c
}

// batchNorm holds what the batch-norm decompositions share: x's shape,
// the reduced axes (all but the feature axis) and their element count.
type batchNorm struct {
	b     *Builder
	shape xshapes.Shape
	dt    dtypes.DType
	feat  int
	axes  []int
	n     float64
}

func (b *Builder) batchNorm(x *shlo.Value, feat int) *batchNorm {
	s := x.Shape()
	if feat < 0 {
		feat += s.Rank()
	}
	if feat < 0 || feat >= s.Rank() {
		fail("feature axis %d out of range for %s", feat, s)
	}
	bn := &batchNorm{b: b, shape: s, dt: dtypes.DType(s.DType), feat: feat, n: 1}
	for i, d := range s.Dimensions {
		if i != feat {
			bn.axes = append(bn.axes, i)
			bn.n *= float64(d)
		}
	}
	return bn
}

// f broadcasts a per-feature vector (or scalar) to x's shape.
func (bn *batchNorm) f(v *shlo.Value) *shlo.Value {
	if v.Shape().IsScalar() {
		return must(shlo.BroadcastInDim(v, bn.shape, nil))
	}
	return must(shlo.BroadcastInDim(v, bn.shape, []int{bn.feat}))
}

// c is a scalar constant broadcast to shape like v's.
func (bn *batchNorm) c(v float64, like *shlo.Value) *shlo.Value {
	return must(shlo.BroadcastInDim(bn.b.scalar(bn.dt, v), like.Shape(), nil))
}

func (bn *batchNorm) sum(v *shlo.Value) *shlo.Value {
	return bn.b.reduceVal(backends.OpTypeReduceSum, v, bn.axes)
}

// rstd is 1/sqrt(variance + epsilon).
func (bn *batchNorm) rstd(variance *shlo.Value, eps float32) *shlo.Value {
	return must(shlo.Rsqrt(must(shlo.Add(variance, bn.c(float64(eps), variance)))))
}

// normalize is (x - mean) * rstd * scale + offset.
func (bn *batchNorm) normalize(x, scale, offset, mean, rstd *shlo.Value) *shlo.Value {
	xc := must(shlo.Subtract(x, bn.f(mean)))
	return must(shlo.Add(must(shlo.Multiply(xc, bn.f(must(shlo.Multiply(rstd, scale))))), bn.f(offset)))
}

// BatchNormForInference implements backends.Builder, decomposed.
func (b *Builder) BatchNormForInference(operand, scale, offset, mean, variance backends.Op, eps float32, featureAxis int) (backends.Op, error) {
	return b.op1(backends.OpTypeBatchNormForInference, func() *shlo.Value {
		x := b.val(operand)
		bn := b.batchNorm(x, featureAxis)
		return bn.normalize(x, b.val(scale), b.val(offset), b.val(mean), bn.rstd(b.val(variance), eps))
	})
}

// BatchNormForTraining implements backends.Builder, decomposed: it returns
// the normalized operand and the batch mean and (biased) variance.
func (b *Builder) BatchNormForTraining(operand, scale, offset backends.Op, eps float32, featureAxis int) (normalized, mean, variance backends.Op, err error) {
	out, err := b.do(backends.OpTypeBatchNormForTraining, func() []*shlo.Value {
		x := b.val(operand)
		bn := b.batchNorm(x, featureAxis)
		m := must(shlo.Divide(bn.sum(x), bn.c(bn.n, bn.sum(x))))
		xc := must(shlo.Subtract(x, bn.f(m)))
		v := bn.sum(must(shlo.Multiply(xc, xc)))
		v = must(shlo.Divide(v, bn.c(bn.n, v)))
		return []*shlo.Value{bn.normalize(x, b.val(scale), b.val(offset), m, bn.rstd(v, eps)), m, v}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return out[0], out[1], out[2], nil
}

// BatchNormGradient implements backends.Builder, decomposed (the formulas
// of XLA's BatchNormGrad).
func (b *Builder) BatchNormGradient(operand, scale, mean, variance, gradOutput backends.Op, eps float32, featureAxis int) (gradOperand, gradScale, gradOffset backends.Op, err error) {
	out, err := b.do(backends.OpTypeBatchNormGradient, func() []*shlo.Value {
		x, g := b.val(operand), b.val(gradOutput)
		bn := b.batchNorm(x, featureAxis)
		rstd := bn.rstd(b.val(variance), eps)
		xhat := must(shlo.Multiply(must(shlo.Subtract(x, bn.f(b.val(mean)))), bn.f(rstd)))
		gOffset := bn.sum(g)
		gScale := bn.sum(must(shlo.Multiply(g, xhat)))
		// gradOperand = scale*rstd/N * (N*g - gOffset - xhat*gScale)
		k := must(shlo.Divide(must(shlo.Multiply(b.val(scale), rstd)), bn.c(bn.n, rstd)))
		inner := must(shlo.Subtract(must(shlo.Multiply(g, bn.c(bn.n, g))), bn.f(gOffset)))
		inner = must(shlo.Subtract(inner, must(shlo.Multiply(xhat, bn.f(gScale)))))
		return []*shlo.Value{must(shlo.Multiply(bn.f(k), inner)), gScale, gOffset}
	})
	if err != nil {
		return nil, nil, nil, err
	}
	return out[0], out[1], out[2], nil
}

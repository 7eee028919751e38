package cpu

import (
	"fmt"
	"sort"
	"strings"

	"github.com/xlacache/xlacache/stablehlo"
)

// Fusion decides which SSA values live in memory (are "materialized") and
// which are recomputed inside the kernels that read them. A kernel is rooted
// at each materialized value that some op computes; everything it reads that
// is not materialized is generated inline in its loop body.
//
// The rules, in the order they are applied (what each op is, a root, an
// inline op or control flow, is its row of opTable, ops.go):
//   - function arguments and non-splat constants live in buffers;
//   - the ops of family famRoot (dot_general, reduce, concatenate, pad,
//     chlo.top_k, …) are kernel roots, so their results are materialized;
//   - roots marked readsMemory (dot_general, top_k, …) read their operands
//     from memory (their loops revisit every element many times), as do
//     check.* custom calls;
//   - returned values are materialized;
//   - while, if and case are not kernels but control steps of the plan
//     (control.go): their operands and results, their regions' arguments
//     and returned values, and every outer value a region reads are
//     materialized, and each region is analyzed like a function body;
//   - an elementwise or index op whose inline cost is above cheapCost is
//     materialized when it has several users, or when a broadcast consumer
//     would recompute it once per copy.

// cheapCost is the largest inline cost that may be recomputed by several
// consumers rather than stored once.
const cheapCost = 2

// lowering holds the analysis of one function.
type lowering struct {
	fn    *stablehlo.Func
	file  string
	uses  map[*stablehlo.Value]int
	mat   map[*stablehlo.Value]bool
	cost  map[*stablehlo.Value]int
	roots []*stablehlo.Op // ops whose results are materialized, every block, in program order
	// items lists, per block (the function body and the regions of
	// control-flow ops), the ops that become plan steps: kernel roots and
	// while/if/case, in program order.
	items map[*stablehlo.Block][]*stablehlo.Op
}

// errorf reports a malformed op (a broken invariant of the front end),
// with its source position.
func (l *lowering) errorf(op *stablehlo.Op, format string, args ...any) error {
	return fmt.Errorf("%s: cpu backend: %s", l.where(op), fmt.Sprintf(format, args...))
}

// unsupportedf reports a valid op or type the backend cannot compile; the
// error wraps stablehlo.ErrUnsupported so that callers (the conformance
// runner, the cache's fallbacks) can tell it from a failure.
func (l *lowering) unsupportedf(op *stablehlo.Op, format string, args ...any) error {
	return fmt.Errorf("%s: cpu backend: %s: %w", l.where(op), fmt.Sprintf(format, args...), stablehlo.ErrUnsupported)
}

func (l *lowering) where(op *stablehlo.Op) string {
	if op != nil && op.Pos.Line > 0 {
		return fmt.Sprintf("%s:%d:%d", l.file, op.Pos.Line, op.Pos.Col)
	}
	return l.file
}

func isSplat(t *stablehlo.Tensor) bool {
	size := t.Type.DType.Size()
	if size == 0 || len(t.Data) < size {
		return len(t.Data) == 0
	}
	first := t.Data[:size]
	for i := size; i+size <= len(t.Data); i += size {
		if string(t.Data[i:i+size]) != string(first) {
			return false
		}
	}
	return true
}

// analyze checks that every op can be compiled and computes the fusion
// decisions. It runs before any C is generated, so unsupported programs are
// rejected early with the op's position.
func analyze(fn *stablehlo.Func, file string) (*lowering, error) {
	l := &lowering{
		fn: fn, file: file,
		uses:  map[*stablehlo.Value]int{},
		mat:   map[*stablehlo.Value]bool{},
		cost:  map[*stablehlo.Value]int{},
		items: map[*stablehlo.Block][]*stablehlo.Op{},
	}
	for _, a := range fn.Args {
		if err := l.checkType(nil, a.Type); err != nil {
			return nil, err
		}
		l.mat[a] = true
	}
	ops := fn.Body.Ops
	if len(ops) == 0 || ops[len(ops)-1].Name != "return" {
		return nil, l.errorf(nil, "function %s has no return", fn.Name)
	}
	if err := l.analyzeBlock(fn.Body, true); err != nil {
		return nil, err
	}
	return l, nil
}

// analyzeBlock makes the fusion decisions for one block: the function
// body (top) or a region of while/if/case. Regions are analyzed where
// their op is met, before the block's cost pass, so that the values they
// capture are known to be materialized when that pass runs.
//
// Kernels never cross a region boundary: a control op's operands and
// results, its regions' arguments and returned values, and every value a
// region reads from outside live in buffers. A region's kernels then read
// only buffers that hold the right values whenever they run: arguments
// rewritten by the control steps, or outer values computed once before.
func (l *lowering) analyzeBlock(b *stablehlo.Block, top bool) error {
	ops := b.Ops
	for _, op := range ops {
		if err := l.checkOp(op); err != nil {
			return err
		}
		if !top && op.Name == "custom_call" {
			return l.unsupportedf(op, "custom_call %s inside a control-flow region is not supported", op.Attrs.Callee)
		}
		for _, v := range op.Operands {
			l.uses[v]++
		}
	}
	for _, op := range ops {
		switch {
		case op.Name == "return" || op.Name == "custom_call":
			for _, v := range op.Operands {
				l.mat[v] = true
			}
		case op.Name == "constant":
			if !isSplat(op.Attrs.Constant) {
				l.mat[op.Results[0]] = true
			}
		case opTable[op.Name].family == famControl:
			for _, v := range op.Operands {
				l.mat[v] = true
			}
			for _, r := range op.Results {
				l.mat[r] = true
			}
			for _, r := range op.Regions {
				for _, a := range r.Args {
					l.mat[a] = true
				}
				for _, v := range captured(r) {
					l.mat[v] = true
				}
				if err := l.analyzeBlock(r, false); err != nil {
					return err
				}
			}
		case opTable[op.Name].family == famRoot:
			for _, r := range op.Results {
				l.mat[r] = true
			}
			if opTable[op.Name].readsMemory {
				for _, v := range op.Operands {
					l.mat[v] = true
				}
			}
		}
	}
	// Cost-driven materialization, in program order so that operand costs
	// are final before their users are considered.
	for _, op := range ops {
		if f := opTable[op.Name].family; op.Name == "return" || op.Name == "custom_call" || f == famRoot || f == famControl {
			continue
		}
		v := op.Results[0]
		c := opTable[op.Name].cost
		for _, o := range op.Operands {
			if !l.mat[o] {
				c += l.cost[o]
			}
		}
		if op.Name == "broadcast_in_dim" {
			o := op.Operands[0]
			if !l.mat[o] && l.cost[o] > cheapCost && o.Type.NumElements() < v.Type.NumElements() {
				l.mat[o] = true
				c = opTable[op.Name].cost
			}
		}
		if l.uses[v] > 1 && c > cheapCost {
			l.mat[v] = true
		}
		l.cost[v] = c
	}
	var items []*stablehlo.Op
	for _, op := range ops {
		switch {
		case op.Name == "return" || op.Name == "custom_call":
		case opTable[op.Name].family == famControl:
			items = append(items, op)
		case op.Name == "constant" && l.mat[op.Results[0]]:
			// provided by the plan, not computed
		case l.mat[op.Results[0]]:
			l.roots = append(l.roots, op)
			items = append(items, op)
		}
	}
	l.items[b] = items
	return nil
}

// captured lists the values the ops of region r read that r does not
// define (its own nested regions are analyzed on their own).
func captured(r *stablehlo.Block) []*stablehlo.Value {
	own := map[*stablehlo.Value]bool{}
	for _, a := range r.Args {
		own[a] = true
	}
	for _, op := range r.Ops {
		for _, v := range op.Results {
			own[v] = true
		}
	}
	var out []*stablehlo.Value
	for _, op := range r.Ops {
		for _, v := range op.Operands {
			if !own[v] {
				out = append(out, v)
			}
		}
	}
	return out
}

func (l *lowering) checkType(op *stablehlo.Op, t stablehlo.TensorType) error {
	if ctype(t.DType) == "" {
		return l.unsupportedf(op, "element type %s is not supported", t.DType)
	}
	for _, d := range t.Shape {
		if d < 0 {
			return l.errorf(op, "dynamic or negative dimension in %s", t)
		}
	}
	return nil
}

func (l *lowering) checkOp(op *stablehlo.Op) error {
	for _, v := range op.Operands {
		if err := l.checkType(op, v.Type); err != nil {
			return err
		}
	}
	for _, v := range op.Results {
		if err := l.checkType(op, v.Type); err != nil {
			return err
		}
	}
	if err := l.checkComplex(op); err != nil {
		return err
	}
	spec, ok := opTable[op.Name]
	switch {
	case !ok:
		return l.unsupportedf(op, "op %s is not supported", op.Name)
	case spec.family == famElementwise || spec.family == famIndex:
		if len(op.Results) != 1 {
			return l.errorf(op, "%s with %d results", op.Name, len(op.Results))
		}
		if op.Name == "constant" && op.Attrs.Constant == nil {
			return l.errorf(op, "constant without a value")
		}
	case spec.check != nil:
		return spec.check(l, op)
	}
	return nil
}

// checkCustomCall accepts the check.* assertions, the only custom calls
// the plan evaluates.
func checkCustomCall(l *lowering, op *stablehlo.Op) error {
	if !stablehlo.CheckOps[op.Attrs.Callee] {
		return l.unsupportedf(op, "custom_call target %q is not supported (only check.* assertions)", op.Attrs.Callee)
	}
	if len(op.Operands) != 2 {
		return l.errorf(op, "custom_call %s needs 2 operands, has %d", op.Attrs.Callee, len(op.Operands))
	}
	return nil
}

// checkCall rejects a call: stablehlo.Inline removes every one before
// the lowering runs.
func checkCall(l *lowering, op *stablehlo.Op) error {
	return l.errorf(op, "call to @%s survived inlining", op.Attrs.Callee)
}

// checkResultsBody checks that op's first region is a scalar body
// returning one value per result (scatter, reduce_window).
func checkResultsBody(l *lowering, op *stablehlo.Op) error {
	return l.checkBody(op, 0, len(op.Results))
}

// checkBody checks that region r of op is a scalar body of elementwise
// ops (and scalar constants) returning want values.
func (l *lowering) checkBody(op *stablehlo.Op, r, want int) error {
	if r >= len(op.Regions) || op.Regions[r] == nil {
		return l.errorf(op, "%s without region %d", op.Name, r)
	}
	body := op.Regions[r]
	if len(body.Ops) == 0 || body.Ops[len(body.Ops)-1].Name != "return" || len(body.Ops[len(body.Ops)-1].Operands) != want {
		return l.errorf(op, "%s region %d must return %d values", op.Name, r, want)
	}
	for _, b := range body.Ops[:len(body.Ops)-1] {
		if opTable[b.Name].family != famElementwise && !(b.Name == "constant" && b.Attrs.Constant != nil && b.Attrs.Constant.Type.Rank() == 0) {
			return l.unsupportedf(b, "op %s in a %s body is not supported (only scalar elementwise ops)", b.Name, op.Name)
		}
		if err := l.checkComplex(b); err != nil {
			return err
		}
		for _, v := range b.Results {
			if v.Type.Rank() != 0 {
				return l.errorf(b, "non-scalar value in a %s body", op.Name)
			}
		}
	}
	return nil
}

// ctype is the C type a kernel computes a StableHLO dtype in ("" when
// unsupported): f16 and bf16 values are held in float (exactly) and
// rounded back to 16 bits after every op; stype is their storage type.
func ctype(d stablehlo.DType) string {
	switch d {
	case stablehlo.F32, stablehlo.F16, stablehlo.BF16:
		return "float"
	case stablehlo.F64:
		return "double"
	case stablehlo.I1, stablehlo.UI8:
		return "uint8_t"
	case stablehlo.I8:
		return "int8_t"
	case stablehlo.I16:
		return "int16_t"
	case stablehlo.I32:
		return "int32_t"
	case stablehlo.I64:
		return "int64_t"
	case stablehlo.UI16:
		return "uint16_t"
	case stablehlo.UI32:
		return "uint32_t"
	case stablehlo.UI64:
		return "uint64_t"
	case stablehlo.C64:
		return "float _Complex"
	case stablehlo.C128:
		return "double _Complex"
	}
	return ""
}

// stype is the C type of a buffer element of dtype d.
func stype(d stablehlo.DType) string {
	if isHalf(d) {
		return "uint16_t"
	}
	return ctype(d)
}

func isHalf(d stablehlo.DType) bool { return d == stablehlo.F16 || d == stablehlo.BF16 }

// computeDT is the dtype whose C expressions compute d: f32 for the
// 16-bit floats.
func computeDT(d stablehlo.DType) stablehlo.DType {
	if isHalf(d) {
		return stablehlo.F32
	}
	return d
}

// halfCall applies the prelude helper for the 16-bit type d (f16's or
// bf16's) to x; other types need no conversion.
func halfCall(d stablehlo.DType, f16, bf16, x string) string {
	switch d {
	case stablehlo.F16:
		return f16 + "(" + x + ")"
	case stablehlo.BF16:
		return bf16 + "(" + x + ")"
	}
	return x
}

// loadExpr converts a buffer element expression to the compute type.
func loadExpr(d stablehlo.DType, x string) string { return halfCall(d, "xk_h2f", "xk_bf2f", x) }

// storeExpr converts a computed value to the buffer element type (exact:
// 16-bit values are already rounded).
func storeExpr(d stablehlo.DType, x string) string { return halfCall(d, "xk_f2h", "xk_f2bf", x) }

// roundExpr rounds a computed float to the 16-bit type d (nearest-even).
func roundExpr(d stablehlo.DType, x string) string { return halfCall(d, "xk_rh", "xk_rbf", x) }

// opSummary names the ops a kernel covers, for --verbose and comments.
func opSummary(ops []*stablehlo.Op) string {
	seen := map[string]bool{}
	var names []string
	for _, op := range ops {
		if !seen[op.Name] {
			seen[op.Name] = true
			names = append(names, op.Name)
		}
	}
	sort.Strings(names)
	return strings.Join(names, "+")
}

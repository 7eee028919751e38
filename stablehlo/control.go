package stablehlo

import (
	"fmt"
	"slices"
)

// This file holds the control-flow ops while, if and case: the pretty
// while syntax, their type rules and their evaluation.

// capturingOps are the ops whose regions may use values defined around
// them (StableHLO's while, if and case regions are not isolated from
// above; JAX's branches read outer values directly).
var capturingOps = map[string]bool{"while": true, "if": true, "case": true}

// regionOps are the ops that carry regions, with how many: -1 means one
// or more (case's branches).
var regionOps = map[string]int{"reduce": 1, "while": 2, "if": 2, "case": -1,
	"scatter": 1, "sort": 1, "reduce_window": 1, "select_and_scatter": 2}

// prettyWhile parses
//
//	stablehlo.while(%iterArg = %init, ...) : T, ... cond { ... } do { ... }
//
// The iteration arguments are the block arguments of both regions.
func (p *parser) prettyWhile(op *Op, nameTok token) (*Op, []TensorType, error) {
	if err := p.expect("("); err != nil {
		return nil, nil, err
	}
	var names []token
	for !p.tok.is(")") {
		if len(names) > 0 {
			if err := p.expect(","); err != nil {
				return nil, nil, err
			}
		}
		if p.tok.kind != tValue {
			return nil, nil, p.errorf(p.tok.pos, "expected iteration argument, found %s", p.tok.describe())
		}
		names = append(names, p.tok)
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		if err := p.expect("="); err != nil {
			return nil, nil, err
		}
		v, err := p.parseValueUse("initial value")
		if err != nil {
			return nil, nil, err
		}
		op.Operands = append(op.Operands, v)
	}
	if err := p.advance(); err != nil {
		return nil, nil, err
	}
	var types []TensorType
	if len(names) > 0 {
		if err := p.expect(":"); err != nil {
			return nil, nil, err
		}
		var err error
		if types, err = p.parseTypeList(); err != nil {
			return nil, nil, err
		}
	}
	if err := p.checkOperandTypes(nameTok.pos, nameTok.text, op.Operands, types); err != nil {
		return nil, nil, err
	}
	if err := p.parseOptionalAttrs(op); err != nil {
		return nil, nil, err
	}
	for _, kw := range []string{"cond", "do"} {
		if err := p.expectIdent(kw); err != nil {
			return nil, nil, err
		}
		b, err := p.regionWithArgs(names, types)
		if err != nil {
			return nil, nil, err
		}
		op.Regions = append(op.Regions, b)
	}
	return op, slices.Clone(types), nil
}

// regionWithArgs parses "{ ops }" as a capturing region whose block
// arguments are the given names and types.
func (p *parser) regionWithArgs(names []token, types []TensorType) (*Block, error) {
	p.pushScope(true)
	defer p.popScope()
	b := &Block{}
	for i, n := range names {
		v, err := p.defineValue(n, i)
		if err != nil {
			return nil, err
		}
		v.Type = types[i]
		b.Args = append(b.Args, v)
	}
	if err := p.parseBlockBody(b); err != nil {
		return nil, err
	}
	return b, nil
}

// inferControl is the type rule of while (§while), if (§if) and case
// (§case).
func (v *verifier) inferControl(op *Op) ([]TensorType, error) {
	ops := op.Operands
	declared := make([]TensorType, len(op.Results))
	for i, r := range op.Results {
		declared[i] = r.Type
	}
	pred := TensorType{DType: I1, Shape: []int64{}}
	switch op.Name {
	case "while":
		types := make([]TensorType, len(ops))
		for i, o := range ops {
			types[i] = o.Type
		}
		if len(op.Regions) != 2 {
			return nil, fmt.Errorf("needs a cond and a body region")
		}
		for i, r := range op.Regions {
			what := []string{"while cond", "while body"}[i]
			if len(r.Args) != len(types) {
				return nil, fmt.Errorf("%s takes %d arguments, needs %d", what, len(r.Args), len(types))
			}
			for j, a := range r.Args {
				if !a.Type.Equal(types[j]) {
					return nil, fmt.Errorf("%s argument %s has type %s, operand is %s", what, a, a.Type, types[j])
				}
			}
			want := types
			if i == 0 {
				want = []TensorType{pred}
			}
			if err := v.verifyBlock(r, want, what, op.Pos); err != nil {
				return nil, err
			}
		}
		return types, nil
	case "if", "case":
		if len(ops) != 1 {
			return nil, fmt.Errorf("expects 1 operand, got %d", len(ops))
		}
		if op.Name == "if" {
			if !ops[0].Type.Equal(pred) {
				return nil, fmt.Errorf("predicate %s must be tensor<i1>, got %s", ops[0], ops[0].Type)
			}
			if len(op.Regions) != 2 {
				return nil, fmt.Errorf("needs a true and a false branch")
			}
		} else {
			if !ops[0].Type.Equal(TensorType{DType: I32, Shape: []int64{}}) {
				return nil, fmt.Errorf("index %s must be tensor<i32>, got %s", ops[0], ops[0].Type)
			}
			if len(op.Regions) == 0 {
				return nil, fmt.Errorf("needs at least one branch")
			}
		}
		for i, r := range op.Regions {
			if len(r.Args) != 0 {
				return nil, fmt.Errorf("branch %d takes arguments", i)
			}
			if err := v.verifyBlock(r, declared, fmt.Sprintf("%s branch %d", op.Name, i), op.Pos); err != nil {
				return nil, err
			}
		}
		return declared, nil
	}
	return nil, fmt.Errorf("no type rule")
}

// control evaluates while, if and case in the caller's environment e,
// since their regions may read values defined around them.
func (in *interp) control(op *Op, x []*Tensor, e *env, depth int) ([]*Tensor, error) {
	switch op.Name {
	case "if", "case":
		// §case: an index outside [0, N) selects the last branch.
		var k int64
		if op.Name == "if" {
			k = 1 - int64(x[0].Data[0]) // true: branch 0
		} else {
			k = x[0].Int64At(0)
			if k < 0 || k >= int64(len(op.Regions)) {
				k = int64(len(op.Regions)) - 1
			}
		}
		return in.block(op.Regions[k], e, depth)
	case "while":
		cond, body := op.Regions[0], op.Regions[1]
		vals := x
		for {
			for i, a := range cond.Args {
				e.set(a, vals[i])
			}
			c, err := in.block(cond, e, depth)
			if err != nil {
				return nil, err
			}
			if c[0].Data[0] == 0 {
				return vals, nil
			}
			for i, a := range body.Args {
				e.set(a, vals[i])
			}
			if vals, err = in.block(body, e, depth); err != nil {
				return nil, err
			}
		}
	}
	return nil, in.errorf(op, "not a control-flow op")
}

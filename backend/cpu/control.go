package cpu

import (
	"fmt"

	"github.com/xlacache/xlacache/stablehlo"
)

// This file lowers the control-flow ops while, if and case. Their regions
// are lowered like the function body (kernels fused within the region,
// never across its boundary; see analyzeBlock), and the op itself becomes
// control steps of the plan that the executor runs between kernels:
//
//	while:               copy init_i -> state_i
//	             loop:   <cond steps>
//	                     branch pred [exit, body]
//	             body:   <body steps>
//	                     copy result_i -> state_i   (staged when permuted)
//	                     jump loop
//	             exit:
//
//	if / case:           branch selector [branch starts]
//	                     <branch k steps>; copy result_i -> out_i; jump end
//	             end:
//
// A while's results are its state buffers, which both regions' arguments
// name as well, so a loop copies only what its body computes. Each
// iteration runs every kernel of the body on the same buffers, so nothing
// is allocated per iteration.

// checkControl checks the region structure the plan builder relies on
// (the verifier has checked the types).
func (l *lowering) checkControl(op *stablehlo.Op) error {
	want := 2
	switch op.Name {
	case "case":
		want = len(op.Regions)
		if want == 0 {
			return l.errorf(op, "case without branches")
		}
	}
	if len(op.Regions) != want || len(op.Operands) == 0 && op.Name != "while" {
		return l.errorf(op, "%s with %d regions and %d operands", op.Name, len(op.Regions), len(op.Operands))
	}
	for i, r := range op.Regions {
		if r == nil || len(r.Ops) == 0 || r.Ops[len(r.Ops)-1].Name != "return" {
			return l.errorf(op, "%s region %d has no return", op.Name, i)
		}
		ret := r.Ops[len(r.Ops)-1].Operands
		n := len(op.Results)
		if op.Name == "while" {
			if len(r.Args) != len(op.Operands) || len(op.Results) != len(op.Operands) {
				return l.errorf(op, "while with %d operands, %d results, %d region arguments", len(op.Operands), len(op.Results), len(r.Args))
			}
			if i == 0 {
				n = 1
			}
		}
		if len(ret) != n {
			return l.errorf(op, "%s region %d returns %d values, want %d", op.Name, i, len(ret), n)
		}
	}
	sel := op.Operands
	switch op.Name {
	case "if":
		if sel[0].Type.DType != stablehlo.I1 || sel[0].Type.Rank() != 0 {
			return l.errorf(op, "if predicate of type %s", sel[0].Type)
		}
	case "case":
		if sel[0].Type.DType != stablehlo.I32 || sel[0].Type.Rank() != 0 {
			return l.errorf(op, "case index of type %s", sel[0].Type)
		}
	case "while":
		p := op.Regions[0].Ops[len(op.Regions[0].Ops)-1].Operands[0]
		if p.Type.DType != stablehlo.I1 || p.Type.Rank() != 0 {
			return l.errorf(op, "while condition of type %s", p.Type)
		}
	}
	return nil
}

// while emits the steps of a while op (see the file comment).
func (b *planBuilder) while(op *stablehlo.Op) {
	cond, body := op.Regions[0], op.Regions[1]
	state := make([]int, len(op.Results))
	for i, r := range op.Results {
		state[i] = b.add(r, -1, nil)
		b.ids[cond.Args[i]] = state[i]
		b.ids[body.Args[i]] = state[i]
	}
	b.assign(state, op.Operands)
	loop := len(b.p.Steps)
	b.block(cond)
	pred := b.add(returned(cond)[0], -1, nil)
	br := len(b.p.Steps)
	b.p.Steps = append(b.p.Steps, Step{Op: stepBranch, Bufs: []int{pred}, Targets: []int{-1, br + 1}})
	b.block(body)
	b.assign(state, returned(body))
	b.p.Steps = append(b.p.Steps, Step{Op: stepJump, Targets: []int{loop}})
	b.p.Steps[br].Targets[0] = len(b.p.Steps)
}

// branches emits the steps of an if or case op (see the file comment).
// §if: a true predicate runs the first region; the branch step indexes
// its targets by the predicate's value, so if's targets are (false, true).
func (b *planBuilder) branches(op *stablehlo.Op) {
	out := make([]int, len(op.Results))
	for i, r := range op.Results {
		out[i] = b.add(r, -1, nil)
	}
	br := len(b.p.Steps)
	b.p.Steps = append(b.p.Steps, Step{Op: stepBranch, Bufs: []int{b.add(op.Operands[0], -1, nil)}})
	starts := make([]int, len(op.Regions))
	var jumps []int
	for i, r := range op.Regions {
		starts[i] = len(b.p.Steps)
		b.block(r)
		b.assign(out, returned(r))
		if i < len(op.Regions)-1 {
			jumps = append(jumps, len(b.p.Steps))
			b.p.Steps = append(b.p.Steps, Step{Op: stepJump, Targets: []int{-1}})
		}
	}
	for _, j := range jumps {
		b.p.Steps[j].Targets[0] = len(b.p.Steps)
	}
	if op.Name == "if" {
		starts[0], starts[1] = starts[1], starts[0]
	}
	b.p.Steps[br].Targets = starts
}

// returned lists the values region r returns.
func returned(r *stablehlo.Block) []*stablehlo.Value {
	return r.Ops[len(r.Ops)-1].Operands
}

// assign emits copies that give dst[i] the value of vals[i] for every i
// at once: a source that is another position's destination (a body that
// returns its arguments permuted) is first staged in a scratch buffer, so
// no copy overwrites a source still to be read.
func (b *planBuilder) assign(dst []int, vals []*stablehlo.Value) {
	pos := map[int]int{}
	for i, d := range dst {
		pos[d] = i
	}
	src := make([]int, len(vals))
	for j, v := range vals {
		src[j] = b.add(v, -1, nil)
		if i, ok := pos[src[j]]; ok && i != j {
			t := b.scratch(v.Type)
			b.copyStep(src[j], t)
			src[j] = t
		}
	}
	for j, s := range src {
		if s != dst[j] {
			b.copyStep(s, dst[j])
		}
	}
}

func (b *planBuilder) copyStep(src, dst int) {
	b.p.Steps = append(b.p.Steps, Step{Op: stepCopy, Bufs: []int{src, dst}})
}

// validateControl checks a control step of p, whose buffers are known to
// be in range and well typed: the executor may then run it without
// further checks.
func (p *Plan) validateControl(s Step) error {
	inRange := func() error {
		for _, t := range s.Targets {
			if t < 0 || t > len(p.Steps) {
				return fmt.Errorf("%s target %d out of range", s.Op, t)
			}
		}
		return nil
	}
	switch s.Op {
	case stepCopy:
		if len(s.Bufs) != 2 || len(s.Targets) != 0 {
			return fmt.Errorf("malformed copy")
		}
		from, to := p.Buffers[s.Bufs[0]], p.Buffers[s.Bufs[1]]
		ft, _ := from.tensorType()
		tt, _ := to.tensorType()
		if ft.ByteSize() != tt.ByteSize() {
			return fmt.Errorf("copy of %d bytes into %d", ft.ByteSize(), tt.ByteSize())
		}
		if to.Arg >= 0 || to.Const != nil {
			return fmt.Errorf("copy into an argument or constant")
		}
		return nil
	case stepJump:
		if len(s.Bufs) != 0 || len(s.Targets) != 1 {
			return fmt.Errorf("malformed jump")
		}
		return inRange()
	case stepBranch:
		if len(s.Bufs) != 1 || len(s.Targets) == 0 {
			return fmt.Errorf("malformed branch")
		}
		sel := p.Buffers[s.Bufs[0]]
		if (sel.DType != "i1" && sel.DType != "i32") || len(sel.Shape) != 0 {
			return fmt.Errorf("branch on a %s%v buffer", sel.DType, sel.Shape)
		}
		return inRange()
	}
	return fmt.Errorf("unknown step op %q", s.Op)
}

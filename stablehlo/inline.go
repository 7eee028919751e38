package stablehlo

import (
	"fmt"
	"maps"
	"slices"
)

// Inline returns a copy of m holding only its main function, with every
// call (including calls inside region bodies) replaced by the callee's
// body, so a backend sees one flat function plus reduce bodies. Values are
// fresh objects with dense IDs; attribute data (constants, index lists) is
// shared with m and must not be mutated. The result is verified.
func Inline(m *Module) (*Module, error) {
	main := m.Main()
	if main == nil {
		return nil, fmt.Errorf("%s: no main function to inline into", m.File)
	}
	in := &inliner{m: m}
	nf := &Func{
		Name:        main.Name,
		Public:      true,
		ResultTypes: slices.Clone(main.ResultTypes),
		ArgAttrs:    slices.Clone(main.ArgAttrs),
		ResultAttrs: slices.Clone(main.ResultAttrs),
		Attrs:       main.Attrs,
		Pos:         main.Pos,
	}
	vmap := map[*Value]*Value{}
	for i, a := range main.Args {
		v := in.newValue(a.Type, nil, i, a.Name)
		vmap[a] = v
		nf.Args = append(nf.Args, v)
	}
	ops, ret, err := in.block(main.Body, vmap, 0)
	if err != nil {
		return nil, err
	}
	ops = append(ops, &Op{Name: "return", Operands: ret, Pos: main.Body.Ops[len(main.Body.Ops)-1].Pos})
	nf.Body = &Block{Args: nf.Args, Ops: ops}
	nf.NumValues = in.next
	attrs := make(map[string]string, len(m.Attrs))
	for k, v := range m.Attrs {
		attrs[k] = v
	}
	out := &Module{Name: m.Name, Attrs: attrs, Funcs: []*Func{nf}, File: m.File}
	if err := Verify(out); err != nil {
		return nil, fmt.Errorf("inlined module: %w", err)
	}
	return out, nil
}

type inliner struct {
	m    *Module
	next int
}

func (in *inliner) newValue(t TensorType, def *Op, index int, name string) *Value {
	v := &Value{Type: t, ID: in.next, Def: def, Index: index, Name: name}
	in.next++
	return v
}

// block clones b's ops (inlining calls) and returns them with the values
// b returns, mapped into the new function.
func (in *inliner) block(b *Block, vmap map[*Value]*Value, depth int) ([]*Op, []*Value, error) {
	if depth > 1000 {
		return nil, nil, fmt.Errorf("%s: call nesting too deep while inlining", in.m.File)
	}
	var ops []*Op
	mapv := func(v *Value, op *Op) (*Value, error) {
		nv, ok := vmap[v]
		if !ok {
			return nil, fmt.Errorf("%s:%s: %s uses value %s that is not in scope", in.m.File, op.Pos, op.Name, v)
		}
		return nv, nil
	}
	for _, op := range b.Ops {
		operands := make([]*Value, len(op.Operands))
		for i, v := range op.Operands {
			nv, err := mapv(v, op)
			if err != nil {
				return nil, nil, err
			}
			operands[i] = nv
		}
		switch op.Name {
		case "return":
			return ops, operands, nil
		case "call":
			g := in.m.Func(op.Attrs.Callee)
			if g == nil {
				return nil, nil, fmt.Errorf("%s:%s: call to unknown function @%s", in.m.File, op.Pos, op.Attrs.Callee)
			}
			if len(g.Args) != len(operands) {
				return nil, nil, fmt.Errorf("%s:%s: @%s takes %d arguments, %d given", in.m.File, op.Pos, g.Name, len(g.Args), len(operands))
			}
			gmap := map[*Value]*Value{}
			for i, a := range g.Args {
				gmap[a] = operands[i]
			}
			body, ret, err := in.block(g.Body, gmap, depth+1)
			if err != nil {
				return nil, nil, err
			}
			if len(ret) != len(op.Results) {
				return nil, nil, fmt.Errorf("%s:%s: @%s returns %d values, call expects %d", in.m.File, op.Pos, g.Name, len(ret), len(op.Results))
			}
			ops = append(ops, body...)
			for i, r := range op.Results {
				vmap[r] = ret[i]
			}
			continue
		}
		nop := &Op{Name: op.Name, Operands: operands, Attrs: op.Attrs, Pos: op.Pos}
		for _, r := range op.Regions {
			rmap := map[*Value]*Value{}
			if capturingOps[op.Name] {
				// The region may read values defined around it.
				rmap = maps.Clone(vmap)
			}
			nb := &Block{}
			for i, a := range r.Args {
				v := in.newValue(a.Type, nil, i, a.Name)
				rmap[a] = v
				nb.Args = append(nb.Args, v)
			}
			rops, rret, err := in.block(r, rmap, depth+1)
			if err != nil {
				return nil, nil, err
			}
			nb.Ops = append(rops, &Op{Name: "return", Operands: rret, Pos: r.Ops[len(r.Ops)-1].Pos})
			nop.Regions = append(nop.Regions, nb)
		}
		for i, r := range op.Results {
			v := in.newValue(r.Type, nop, i, r.Name)
			vmap[r] = v
			nop.Results = append(nop.Results, v)
		}
		ops = append(ops, nop)
	}
	return nil, nil, fmt.Errorf("%s: block without return", in.m.File)
}

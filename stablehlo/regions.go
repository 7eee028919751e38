package stablehlo

// scalarBody evaluates a region on scalar tensors (the bodies of scatter,
// reduce_window, select_and_scatter and sort's comparator), with a fast
// path for the bodies JAX emits most: one binary op of the two arguments,
// or returning the second argument (scatter's "replace").
type scalarBody struct {
	in    *interp
	b     *Block
	depth int
	op    string // fast path: binary op name, "second", or "" for none
}

func newScalarBody(in *interp, b *Block, depth int) *scalarBody {
	s := &scalarBody{in: in, b: b, depth: depth}
	if name, ok := simpleBody(b); ok {
		s.op = name
	} else if len(b.Args) == 2 && len(b.Ops) == 1 && len(b.Ops[0].Operands) == 1 && b.Ops[0].Operands[0] == b.Args[1] {
		s.op = "second"
	}
	return s
}

// scalarAt copies element i of t into a new rank-0 tensor.
func scalarAt(t *Tensor, i int64) *Tensor {
	s := NewTensor(TensorType{DType: t.Type.DType, Shape: []int64{}})
	es := int64(len(s.Data))
	copy(s.Data, t.Data[i*es:(i+1)*es])
	return s
}

// call runs the body on args.
func (s *scalarBody) call(args []*Tensor) ([]*Tensor, error) {
	switch s.op {
	case "":
	case "second":
		return []*Tensor{args[1]}, nil
	default:
		r, err := evalBinary(s.op, args[0], args[1])
		if err != nil {
			return nil, err
		}
		return []*Tensor{r}, nil
	}
	if err := s.in.ctx.Err(); err != nil {
		return nil, err
	}
	e := &env{}
	for i, a := range s.b.Args {
		e.set(a, args[i])
	}
	return s.in.block(s.b, e, s.depth)
}

// combine sets acc[i][dst] = body(acc[0][dst], ..., upd[0][src], ...)[i].
func (s *scalarBody) combine(acc []*Tensor, dst int64, upd []*Tensor, src int64) error {
	args := make([]*Tensor, 0, 2*len(acc))
	for _, t := range acc {
		args = append(args, scalarAt(t, dst))
	}
	for _, t := range upd {
		args = append(args, scalarAt(t, src))
	}
	res, err := s.call(args)
	if err != nil {
		return err
	}
	for i, t := range acc {
		es := int64(len(res[i].Data))
		copy(t.Data[dst*es:(dst+1)*es], res[i].Data)
	}
	return nil
}

package stablehlo

import (
	"errors"
	"slices"
	"testing"
)

// fuzzBytes hands out fuzz input bytes, then zeros.
type fuzzBytes struct {
	b []byte
	i int
}

func (f *fuzzBytes) next() int {
	if f.i >= len(f.b) {
		return 0
	}
	f.i++
	return int(f.b[f.i-1])
}

// small returns a value in [lo, lo+n).
func (f *fuzzBytes) small(lo, n int) int64 { return int64(lo + f.next()%n) }

func (f *fuzzBytes) list(n, lo, span int) []int64 {
	out := make([]int64, n)
	for i := range out {
		out[i] = f.small(lo, span)
	}
	return out
}

func (f *fuzzBytes) shape(maxRank int) []int64 {
	return f.list(int(f.small(0, maxRank+1)), 0, 4)
}

// FuzzIndexOps builds one gather, scatter, reduce_window,
// select_and_scatter, dynamic_slice, dynamic_update_slice, sort, reverse
// or convolution op from the input (shapes, dimension numbers, windows, index
// values), infers its result type with the verifier's rule and, when the
// rule accepts it, evaluates it: no accepted op may make the interpreter
// fail internally (an index out of range is a recovered panic), and the
// results must have the inferred types.
func FuzzIndexOps(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 2, 3, 2, 1, 2, 1, 1, 0, 1, 1, 0, 1, 2, 2, 7, 250},
		{1, 1, 4, 2, 1, 1, 0, 1, 0, 1, 0, 1, 3, 9, 255},
		{2, 2, 3, 3, 2, 2, 1, 1, 1, 2, 1, 1, 255, 1, 0, 2},
		{3, 1, 3, 2, 1, 2, 0, 1, 1},
		{4, 2, 3, 2, 1, 1, 200, 3},
		{5, 2, 3, 2, 1, 1, 0, 254, 1},
		{6, 2, 2, 3, 1},
		{7, 3, 2, 2, 2, 1, 0, 2},
		{8, 0, 1, 3, 2, 1, 2, 1, 0, 0, 0, 0, 0, 0, 1, 1, 1, 0, 0, 0, 2, 0},
		{17, 1, 2, 4, 4, 1, 2, 2, 2, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 1, 3, 3, 0, 1, 1, 1, 1},
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		fb := &fuzzBytes{b: data}
		kind := fb.next() % 9
		id := 0
		val := func(ty TensorType) *Value {
			v := &Value{Type: ty, ID: id}
			id++
			return v
		}
		scalarAdd := func(d DType, n int) *Block {
			s := TensorType{DType: d, Shape: []int64{}}
			b := &Block{}
			for i := 0; i < 2*n; i++ {
				a := val(s)
				a.Index = i
				b.Args = append(b.Args, a)
			}
			var rets []*Value
			for i := 0; i < n; i++ {
				add := &Op{Name: "add", Operands: []*Value{b.Args[i], b.Args[n+i]}}
				r := val(s)
				r.Def = add
				add.Results = []*Value{r}
				b.Ops = append(b.Ops, add)
				rets = append(rets, r)
			}
			b.Ops = append(b.Ops, &Op{Name: "return", Operands: rets})
			return b
		}
		// scalarCompare is the region compare(a, b, dir) on i32 scalars.
		scalarCompare := func(dir string) *Block {
			s := TensorType{DType: I32, Shape: []int64{}}
			b := &Block{Args: []*Value{val(s), val(s)}}
			cmp := &Op{Name: "compare", Operands: b.Args, Attrs: Attrs{ComparisonDirection: dir}}
			c := val(TensorType{DType: I1, Shape: []int64{}})
			c.Def = cmp
			cmp.Results = []*Value{c}
			b.Ops = []*Op{cmp, {Name: "return", Operands: []*Value{c}}}
			return b
		}
		x := val(TensorType{DType: I32, Shape: fb.shape(3)})
		args := []*Value{x}
		op := &Op{Operands: []*Value{x}}
		rank := x.Type.Rank()
		switch kind {
		case 0:
			op.Name = "gather"
			idx := val(TensorType{DType: I32, Shape: fb.shape(3)})
			args = append(args, idx)
			op.Operands = append(op.Operands, idx)
			g := &op.Attrs.Gather
			g.IndexVectorDim = fb.small(0, idx.Type.Rank()+1)
			g.StartIndexMap = fb.list(int(fb.small(0, 3)), 0, rank+1)
			g.CollapsedSliceDims = fb.list(int(fb.small(0, 3)), 0, rank+1)
			g.OffsetDims = fb.list(int(fb.small(0, 4)), 0, 5)
			op.Attrs.SliceSizes = fb.list(rank, 0, 3)
		case 1:
			op.Name = "scatter"
			idx := val(TensorType{DType: I64, Shape: fb.shape(2)})
			up := val(TensorType{DType: I32, Shape: fb.shape(3)})
			args = append(args, idx, up)
			op.Operands = append(op.Operands, idx, up)
			s := &op.Attrs.Scatter
			s.IndexVectorDim = fb.small(0, idx.Type.Rank()+1)
			s.ScatterDimsToOperandDims = fb.list(int(fb.small(0, 3)), 0, rank+1)
			s.InsertedWindowDims = fb.list(int(fb.small(0, 3)), 0, rank+1)
			s.UpdateWindowDims = fb.list(int(fb.small(0, 4)), 0, 4)
			op.Regions = []*Block{scalarAdd(I32, 1)}
		case 2, 3:
			w := &op.Attrs.Window
			w.Dimensions = fb.list(rank, 1, 3)
			w.Strides = fb.list(rank, 1, 3)
			w.PadLow, w.PadHigh = fb.list(rank, -1, 3), fb.list(rank, -1, 3)
			init := val(TensorType{DType: I32, Shape: []int64{}})
			if kind == 2 {
				op.Name = "reduce_window"
				w.BaseDilations = fb.list(rank, 1, 3)
				w.WindowDilations = fb.list(rank, 1, 3)
				args = append(args, init)
				op.Operands = append(op.Operands, init)
				op.Regions = []*Block{scalarAdd(I32, 1)}
				break
			}
			op.Name = "select_and_scatter"
			src := val(TensorType{DType: I32, Shape: fb.shape(3)})
			args = append(args, src, init)
			op.Operands = append(op.Operands, src, init)
			op.Regions = []*Block{scalarCompare("GE"), scalarAdd(I32, 1)}
		case 4, 5:
			if kind == 5 {
				op.Name = "dynamic_update_slice"
				up := val(TensorType{DType: I32, Shape: fb.list(rank, 0, 4)})
				args = append(args, up)
				op.Operands = append(op.Operands, up)
			} else {
				op.Name = "dynamic_slice"
				op.Attrs.SliceSizes = fb.list(rank, 0, 4)
			}
			for i := 0; i < rank; i++ {
				s := val(TensorType{DType: []DType{I8, UI8, I64, UI64}[fb.next()%4], Shape: []int64{}})
				args = append(args, s)
				op.Operands = append(op.Operands, s)
			}
		case 6:
			op.Name = "sort"
			op.Attrs.Dimension = fb.small(-1, 4)
			op.Regions = []*Block{scalarCompare("LT")}
		case 8:
			// A rank-3 or rank-4 convolution with permuted layouts.
			op.Name = "convolution"
			r := 3 + fb.next()%2
			x = val(TensorType{DType: F32, Shape: fb.list(r, 0, 5)})
			k := val(TensorType{DType: F32, Shape: fb.list(r, 1, 4)})
			args = []*Value{x, k}
			op.Operands = []*Value{x, k}
			perm := func() []int64 {
				p := make([]int64, r)
				for i := range p {
					p[i] = int64(i)
				}
				for i := r - 1; i > 0; i-- {
					j := fb.next() % (i + 1)
					p[i], p[j] = p[j], p[i]
				}
				return p
			}
			d := &op.Attrs.Conv.Dims
			pi, pk, po := perm(), perm(), perm()
			d.InputBatch, d.InputFeature, d.InputSpatial = pi[0], pi[1], pi[2:]
			d.KernelInputFeature, d.KernelOutputFeature, d.KernelSpatial = pk[0], pk[1], pk[2:]
			d.OutputBatch, d.OutputFeature, d.OutputSpatial = po[0], po[1], po[2:]
			c := &op.Attrs.Conv
			c.Strides, c.LhsDilation, c.RhsDilation = fb.list(r-2, 1, 3), fb.list(r-2, 1, 3), fb.list(r-2, 1, 3)
			c.PadLow, c.PadHigh = fb.list(r-2, -2, 5), fb.list(r-2, -2, 5)
			c.FeatureGroupCount, c.BatchGroupCount = fb.small(1, 2), fb.small(1, 2)
			for i := 0; i < r-2; i++ {
				c.Reversal = append(c.Reversal, fb.next()%2 == 1)
			}
		default:
			op.Name = "reverse"
			op.Attrs.Dims = fb.list(int(fb.small(0, 3)), 0, rank+1)
		}
		for _, a := range args {
			if a.Type.NumElements() > 1<<10 {
				return
			}
		}
		m := &Module{File: "fuzz.mlir"}
		v := &verifier{m: m}
		types, err := v.infer(op, opTable[op.Name])
		if err != nil {
			return // rejected: nothing to evaluate
		}
		for i, ty := range types {
			if ty.NumElements() > 1<<12 {
				return
			}
			r := val(ty)
			r.Def, r.Index = op, i
			op.Results = append(op.Results, r)
		}
		fn := &Func{Name: "main", Public: true, Args: args, Body: &Block{Args: args, Ops: []*Op{op, {Name: "return", Operands: op.Results}}}}
		for i, a := range args {
			a.Index = i
		}
		fn.ResultTypes = types
		fn.NumValues = id
		m.Funcs = []*Func{fn}
		if err := Verify(m); err != nil {
			t.Fatalf("the type rule accepted %s but Verify rejects the module: %v", op.Name, err)
		}
		in := make([]*Tensor, len(args))
		for i, a := range args {
			in[i] = NewTensor(a.Type)
			for j := range in[i].Data {
				in[i].Data[j] = byte(fb.next())
			}
		}
		out, err := Eval(m, "main", in)
		if errors.Is(err, ErrInternal) {
			t.Fatalf("%s with %+v on %v: %v", op.Name, op.Attrs, func() []TensorType {
				var ts []TensorType
				for _, a := range args {
					ts = append(ts, a.Type)
				}
				return ts
			}(), err)
		}
		if err != nil {
			t.Fatalf("%s: %v", op.Name, err)
		}
		for i, o := range out {
			if !o.Type.Equal(types[i]) || !slices.Equal(o.Type.Shape, types[i].Shape) {
				t.Fatalf("%s result %d has type %s, inferred %s", op.Name, i, o.Type, types[i])
			}
		}
		checkComplexTwin(t, op, args, in, out)
	})
}

// checkComplexTwin reruns a pure data-movement op (gather, dynamic_slice,
// dynamic_update_slice, reverse) with its i32 data operands turned into
// complex<f64> values (v, -v): every 16-byte element must land where the
// i32 one did, both parts with it.
func checkComplexTwin(t *testing.T, op *Op, args []*Value, in, out []*Tensor) {
	t.Helper()
	var data []int // operand indices that carry data rather than indices
	switch op.Name {
	case "gather", "dynamic_slice", "reverse":
		data = []int{0}
	case "dynamic_update_slice":
		data = []int{0, 1}
	default:
		return
	}
	twin := func(v *Value) *Value {
		c := *v
		c.Type = TensorType{DType: C128, Shape: slices.Clone(v.Type.Shape)}
		return &c
	}
	cargs := slices.Clone(args)
	cin := slices.Clone(in)
	for _, i := range data {
		cargs[i] = twin(args[i])
		vs := in[i].Int32s()
		ct := NewTensor(cargs[i].Type)
		for j, v := range vs {
			ct.Complex128s()[j] = complex(float64(v), -float64(v))
		}
		cin[i] = ct
	}
	cop := *op
	cop.Operands = cargs
	cop.Results = []*Value{twin(op.Results[0])}
	cop.Results[0].Def = &cop
	fn := &Func{Name: "main", Public: true, Args: cargs, ResultTypes: []TensorType{cop.Results[0].Type},
		Body: &Block{Args: cargs, Ops: []*Op{&cop, {Name: "return", Operands: cop.Results}}}}
	fn.NumValues = cop.Results[0].ID + 1
	for _, a := range append(cargs, cop.Results...) {
		fn.NumValues = max(fn.NumValues, a.ID+1)
	}
	m := &Module{File: "fuzz.mlir", Funcs: []*Func{fn}}
	if err := Verify(m); err != nil {
		t.Fatalf("%s on complex<f64>: %v", op.Name, err)
	}
	cout, err := Eval(m, "main", cin)
	if err != nil {
		t.Fatalf("%s on complex<f64>: %v", op.Name, err)
	}
	for j, v := range out[0].Int32s() {
		if g, w := cout[0].Complex128s()[j], complex(float64(v), -float64(v)); g != w {
			t.Fatalf("%s element %d: complex<f64> %v, i32 %d", op.Name, j, g, v)
		}
	}
}

package stablehlo

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Window holds the window attributes of reduce_window and
// select_and_scatter. The verifier fills omitted lists with their
// defaults (strides and dilations 1, padding 0), so evaluators and the
// canonical form always see full lists.
type Window struct {
	Dimensions, Strides, BaseDilations, WindowDilations []int64
	PadLow, PadHigh                                     []int64
}

// paddingAttr reads a padding attribute: dense<[[lo, hi], ...]> :
// tensor<Nx2xi64>.
func (p *parser) paddingAttr(f attrField) (lo, hi []int64, err error) {
	if f.val.kind != aDense || f.val.tensor.Type.DType.IsFloat() || f.val.tensor.Type.DType.IsComplex() {
		return nil, nil, p.errorf(f.val.pos, "padding must be a dense integer literal of shape Nx2")
	}
	t := f.val.tensor
	if t.Type.Rank() != 2 || t.Type.Shape[1] != 2 {
		if t.Type.NumElements() == 0 {
			return []int64{}, []int64{}, nil
		}
		return nil, nil, p.errorf(f.val.pos, "padding must have shape Nx2, got %s", t.Type)
	}
	n := t.Type.Shape[0]
	lo, hi = make([]int64, n), make([]int64, n)
	for i := int64(0); i < n; i++ {
		lo[i], hi[i] = t.Int64At(2*i), t.Int64At(2*i+1)
	}
	return lo, hi, nil
}

func windowAttrText(name string, w Window, m map[string]string) {
	m["window_dimensions"] = arrayI64(w.Dimensions)
	m["window_strides"] = arrayI64(w.Strides)
	if name == "reduce_window" {
		m["base_dilations"] = arrayI64(w.BaseDilations)
		m["window_dilations"] = arrayI64(w.WindowDilations)
	}
	parts := make([]string, len(w.PadLow))
	for i := range w.PadLow {
		parts[i] = "[" + strconv.FormatInt(w.PadLow[i], 10) + ", " + strconv.FormatInt(w.PadHigh[i], 10) + "]"
	}
	m["padding"] = "dense<[" + strings.Join(parts, ", ") + "]> : tensor<" + strconv.Itoa(len(parts)) + "x2xi64>"
	if len(parts) == 0 {
		m["padding"] = "dense<> : tensor<0x2xi64>"
	}
}

// checkWindow fills w's defaults for an operand of the given shape and
// returns the result shape (§reduce_window C4-C15): padded size
// (d-1)·base_dilation + 1 + lo + hi, dilated window (w-1)·dilation + 1,
// result (padded - window) / stride + 1 (0 when the window does not fit).
func checkWindow(w *Window, shape []int64, dilations bool) ([]int64, error) {
	r := len(shape)
	ones := func(s *[]int64) {
		if len(*s) == 0 {
			*s = slices.Repeat([]int64{1}, r)
		}
	}
	ones(&w.Strides)
	ones(&w.BaseDilations)
	ones(&w.WindowDilations)
	if len(w.PadLow) == 0 && len(w.PadHigh) == 0 {
		w.PadLow, w.PadHigh = make([]int64, r), make([]int64, r)
	}
	for name, s := range map[string][]int64{"window_dimensions": w.Dimensions, "window_strides": w.Strides, "base_dilations": w.BaseDilations, "window_dilations": w.WindowDilations, "padding": w.PadLow} {
		if len(s) != r {
			return nil, fmt.Errorf("%s has %d entries for rank %d", name, len(s), r)
		}
	}
	if !dilations && (slices.ContainsFunc(w.BaseDilations, func(d int64) bool { return d != 1 }) || slices.ContainsFunc(w.WindowDilations, func(d int64) bool { return d != 1 })) {
		return nil, fmt.Errorf("dilations are not allowed")
	}
	out := make([]int64, r)
	for i := range shape {
		if w.Dimensions[i] <= 0 || w.Strides[i] <= 0 || w.BaseDilations[i] <= 0 || w.WindowDilations[i] <= 0 {
			return nil, fmt.Errorf("window dimensions, strides and dilations must be positive")
		}
		padded := w.PadLow[i] + w.PadHigh[i]
		if shape[i] > 0 {
			padded += (shape[i]-1)*w.BaseDilations[i] + 1
		}
		win := (w.Dimensions[i]-1)*w.WindowDilations[i] + 1
		if padded < win {
			out[i] = 0
		} else {
			out[i] = (padded-win)/w.Strides[i] + 1
		}
		if padded < 0 {
			return nil, fmt.Errorf("padding makes dimension %d negative", i)
		}
	}
	return out, nil
}

// inferReduceWindow is reduce_window's type rule (§reduce_window).
func (v *verifier) inferReduceWindow(op *Op) ([]TensorType, error) {
	if len(op.Operands) == 0 || len(op.Operands)%2 != 0 {
		return nil, fmt.Errorf("needs N inputs followed by N init values")
	}
	n := len(op.Operands) / 2
	in0 := op.Operands[0].Type
	shape, err := checkWindow(&op.Attrs.Window, in0.Shape, true)
	if err != nil {
		return nil, err
	}
	out := make([]TensorType, n)
	scalars := make([]TensorType, n)
	if err := checkInputsAndInits(op, n); err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		init := op.Operands[n+i].Type
		out[i] = TensorType{DType: init.DType, Shape: slices.Clone(shape)}
		scalars[i] = init
	}
	if err := v.verifyScalarBody(op, 0, append(slices.Clone(scalars), scalars...), scalars, "reduce_window body"); err != nil {
		return nil, err
	}
	return out, nil
}

// padForWindow pads x by value as §reduce_window and §select_and_scatter
// define the padded input: edge padding lo/hi and base_dilation-1 interior.
func padForWindow(x, value *Tensor, w Window) *Tensor {
	r := x.Type.Rank()
	a := &Attrs{EdgePaddingLow: w.PadLow, EdgePaddingHigh: w.PadHigh, InteriorPadding: make([]int64, r)}
	shape := make([]int64, r)
	for i := range shape {
		a.InteriorPadding[i] = w.BaseDilations[i] - 1
		shape[i] = w.PadLow[i] + w.PadHigh[i]
		if x.Type.Shape[i] > 0 {
			shape[i] += (x.Type.Shape[i]-1)*w.BaseDilations[i] + 1
		}
	}
	return evalPad(x, value, TensorType{DType: x.Type.DType, Shape: shape}, a)
}

// evalReduceWindow implements §reduce_window: every result element
// reduces its (dilated) window of the padded inputs, starting from the
// init values, in row-major window order.
func (in *interp) evalReduceWindow(op *Op, x []*Tensor, depth int) ([]*Tensor, error) {
	n := len(x) / 2
	w := op.Attrs.Window
	padded := make([]*Tensor, n)
	for i := range padded {
		padded[i] = padForWindow(x[i], x[n+i], w)
	}
	outs := make([]*Tensor, n)
	for i := range outs {
		outs[i] = NewTensor(op.Results[i].Type)
	}
	ps := padded[0].Type.Strides()
	body := newScalarBody(in, op.Regions[0], depth)
	pos := make([]int64, len(w.Dimensions))
	ri := int64(0)
	err := forEachIndex(op.Results[0].Type.Shape, func(idx []int64) error {
		acc := make([]*Tensor, n)
		for i := range acc {
			acc[i] = x[n+i].Clone()
		}
		err := forEachIndex(w.Dimensions, func(wi []int64) error {
			for d := range pos {
				pos[d] = idx[d]*w.Strides[d] + wi[d]*w.WindowDilations[d]
			}
			return body.combine(acc, 0, padded, linear(pos, ps))
		})
		if err != nil {
			return err
		}
		for i := range outs {
			es := int64(len(acc[i].Data))
			copy(outs[i].Data[ri*es:(ri+1)*es], acc[i].Data)
		}
		ri++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// inferSelectAndScatter is select_and_scatter's type rule
// (§select_and_scatter): source has the shape of the windows over the
// padded operand.
func (v *verifier) inferSelectAndScatter(op *Op) ([]TensorType, error) {
	if len(op.Operands) != 3 {
		return nil, fmt.Errorf("expects operand, source and init value")
	}
	x, src, init := op.Operands[0].Type, op.Operands[1].Type, op.Operands[2].Type
	shape, err := checkWindow(&op.Attrs.Window, x.Shape, false)
	if err != nil {
		return nil, err
	}
	if src.DType != x.DType || !slices.Equal(src.Shape, shape) {
		return nil, fmt.Errorf("source %s must be %s", src, TensorType{DType: x.DType, Shape: shape})
	}
	scalar := TensorType{DType: x.DType, Shape: []int64{}}
	if !init.Equal(scalar) {
		return nil, fmt.Errorf("init value must be %s, got %s", scalar, init)
	}
	if err := v.verifyScalarBody(op, 0, []TensorType{scalar, scalar}, []TensorType{{DType: I1, Shape: []int64{}}}, "select"); err != nil {
		return nil, err
	}
	if err := v.verifyScalarBody(op, 1, []TensorType{scalar, scalar}, []TensorType{scalar}, "scatter"); err != nil {
		return nil, err
	}
	return []TensorType{x}, nil
}

// evalSelectAndScatter implements §select_and_scatter: for each window
// (in row-major order of source), select picks one operand element among
// the window's elements that are not padding (the first, replaced by each
// later one the select function does not prefer it to), and scatter
// combines the source value into the result there; the result starts as
// init everywhere. A window of padding only scatters nothing.
func (in *interp) evalSelectAndScatter(op *Op, x []*Tensor, depth int) ([]*Tensor, error) {
	operand, source, init := x[0], x[1], x[2]
	w := op.Attrs.Window
	out := NewTensor(operand.Type)
	es := int64(operand.Type.DType.Size())
	for i := int64(0); i < operand.Type.NumElements(); i++ {
		copy(out.Data[i*es:(i+1)*es], init.Data)
	}
	sel := newScalarBody(in, op.Regions[0], depth)
	scat := newScalarBody(in, op.Regions[1], depth)
	os, ss := operand.Type.Strides(), source.Type.Strides()
	pos := make([]int64, operand.Type.Rank())
	err := forEachIndex(source.Type.Shape, func(si []int64) error {
		best := int64(-1)
		err := forEachIndex(w.Dimensions, func(wi []int64) error {
			for d := range pos {
				pos[d] = si[d]*w.Strides[d] + wi[d] - w.PadLow[d]
				if pos[d] < 0 || pos[d] >= operand.Type.Shape[d] {
					return nil // padding is never selected
				}
			}
			cand := linear(pos, os)
			if best < 0 {
				best = cand
				return nil
			}
			keep, err := sel.call([]*Tensor{scalarAt(operand, best), scalarAt(operand, cand)})
			if err != nil {
				return err
			}
			if keep[0].Data[0] == 0 {
				best = cand
			}
			return nil
		})
		if err != nil || best < 0 {
			return err
		}
		return scat.combine([]*Tensor{out}, best, []*Tensor{source}, linear(si, ss))
	})
	if err != nil {
		return nil, err
	}
	return []*Tensor{out}, nil
}

package stablehlo

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// ConvDims are convolution's dimension numbers (spec §convolution).
type ConvDims struct {
	InputBatch, InputFeature                int64
	InputSpatial                            []int64
	KernelInputFeature, KernelOutputFeature int64
	KernelSpatial                           []int64
	OutputBatch, OutputFeature              int64
	OutputSpatial                           []int64
}

// Conv holds convolution's attributes. The verifier fills omitted lists
// with their defaults (strides and dilations 1, padding 0, no reversal,
// group counts 1).
type Conv struct {
	Dims                               ConvDims
	Strides, PadLow, PadHigh           []int64
	LhsDilation, RhsDilation           []int64
	Reversal                           []bool
	FeatureGroupCount, BatchGroupCount int64
}

// parseConvLayout parses one "[b, 0, 1, f]" group: the positions of the
// two named dimensions and of the numbered spatial dimensions.
func parseConvLayout(items []string, a, b string) (ia, ib int64, spatial []int64, err error) {
	ia, ib = -1, -1
	var sp []int64
	seen := map[string]bool{}
	for pos, it := range items {
		it = strings.TrimSpace(it)
		if seen[it] {
			return 0, 0, nil, fmt.Errorf("dimension %q repeated", it)
		}
		seen[it] = true
		switch it {
		case a:
			ia = int64(pos)
		case b:
			ib = int64(pos)
		default:
			n, e := strconv.Atoi(it)
			if e != nil || n < 0 || n >= len(items) {
				return 0, 0, nil, fmt.Errorf("bad dimension %q", it)
			}
			for len(sp) <= n {
				sp = append(sp, -1)
			}
			sp[n] = int64(pos)
		}
	}
	if ia < 0 || ib < 0 || slices.Contains(sp, -1) {
		return 0, 0, nil, fmt.Errorf("dimensions %v must name %s, %s and spatial dimensions 0..n-1", items, a, b)
	}
	return ia, ib, sp, nil
}

var convGroupRE = regexp.MustCompile(`\[([^\]]*)\]`)

// setConvDims fills d from the text "[b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f]"
// (with or without spaces around the tokens).
func setConvDims(d *ConvDims, text string) error {
	groups := convGroupRE.FindAllStringSubmatch(text, -1)
	if len(groups) != 3 {
		return fmt.Errorf("convolution dimension numbers %q: want [..]x[..]->[..]", clip(text))
	}
	split := func(s string) []string {
		if strings.TrimSpace(s) == "" {
			return nil
		}
		return strings.Split(s, ",")
	}
	var err error
	if d.InputBatch, d.InputFeature, d.InputSpatial, err = parseConvLayout(split(groups[0][1]), "b", "f"); err != nil {
		return fmt.Errorf("convolution input dimensions: %w", err)
	}
	if d.KernelInputFeature, d.KernelOutputFeature, d.KernelSpatial, err = parseConvLayout(split(groups[1][1]), "i", "o"); err != nil {
		return fmt.Errorf("convolution kernel dimensions: %w", err)
	}
	if d.OutputBatch, d.OutputFeature, d.OutputSpatial, err = parseConvLayout(split(groups[2][1]), "b", "f"); err != nil {
		return fmt.Errorf("convolution output dimensions: %w", err)
	}
	return nil
}

// convDimsText prints dimension numbers in the #stablehlo.conv form.
func convDimsText(d ConvDims) string {
	layout := func(rank int, ia, ib int64, a, b string, sp []int64) string {
		items := make([]string, rank)
		items[ia], items[ib] = a, b
		for i, p := range sp {
			items[p] = strconv.Itoa(i)
		}
		return "[" + strings.Join(items, ", ") + "]"
	}
	r := 2 + len(d.InputSpatial)
	return "#stablehlo.conv<" + layout(r, d.InputBatch, d.InputFeature, "b", "f", d.InputSpatial) + "x" +
		layout(r, d.KernelInputFeature, d.KernelOutputFeature, "i", "o", d.KernelSpatial) + "->" +
		layout(r, d.OutputBatch, d.OutputFeature, "b", "f", d.OutputSpatial) + ">"
}

// prettyConvolution parses
//
//	stablehlo.convolution(%lhs, %rhs) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f],
//	  window = {stride = [..], pad = [[..], ..], lhs_dilate = [..], rhs_dilate = [..], reverse = [..]}
//	  {feature_group_count = 1 : i64, ...} : (T, T) -> T
func (p *parser) prettyConvolution(op *Op, nameTok token) (*Op, []TensorType, error) {
	if err := p.parseParenOperands(op); err != nil {
		return nil, nil, err
	}
	if err := p.expectSeq("dim_numbers", "="); err != nil {
		return nil, nil, err
	}
	start := p.tok.pos
	var text strings.Builder
	for i := 0; i < 3; i++ {
		if i == 1 {
			if err := p.expectIdent("x"); err != nil {
				return nil, nil, err
			}
			text.WriteString("x")
		}
		if i == 2 {
			if err := p.expect("->"); err != nil {
				return nil, nil, err
			}
			text.WriteString("->")
		}
		if err := p.expect("["); err != nil {
			return nil, nil, err
		}
		var items []string
		for !p.tok.is("]") {
			if len(items) > 0 {
				if err := p.expect(","); err != nil {
					return nil, nil, err
				}
			}
			if p.tok.kind != tIdent && p.tok.kind != tInt {
				return nil, nil, p.errorf(p.tok.pos, "expected a dimension, found %s", p.tok.describe())
			}
			items = append(items, p.tok.text)
			if err := p.advance(); err != nil {
				return nil, nil, err
			}
		}
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		text.WriteString("[" + strings.Join(items, ", ") + "]")
	}
	if err := setConvDims(&op.Attrs.Conv.Dims, text.String()); err != nil {
		return nil, nil, p.errorf(start, "%v", err)
	}
	if p.tok.is(",") {
		if err := p.advance(); err != nil {
			return nil, nil, err
		}
		if err := p.expectSeq("window", "="); err != nil {
			return nil, nil, err
		}
		fields, err := p.parseAttrDict()
		if err != nil {
			return nil, nil, err
		}
		for _, f := range fields {
			if err := p.applyConvWindow(op, f); err != nil {
				return nil, nil, err
			}
		}
	}
	return p.prettyTail(op, nameTok)
}

// convWindowFields are the generic attributes that the pretty window =
// {...} dict's fields stand for (pad, written as a list, is apart).
var convWindowFields = map[string]string{
	"stride": "window_strides", "lhs_dilate": "lhs_dilation", "rhs_dilate": "rhs_dilation", "reverse": "window_reversal",
}

// applyConvWindow interprets one field of the pretty window = {...} dict.
func (p *parser) applyConvWindow(op *Op, f attrField) error {
	if f.name == "pad" {
		c := &op.Attrs.Conv
		if f.val.kind != aList {
			return p.errorf(f.val.pos, "pad must be [[lo, hi], ...]")
		}
		c.PadLow, c.PadHigh = []int64{}, []int64{}
		for _, e := range f.val.list {
			v, ok := e.asInts()
			if !ok || len(v) != 2 {
				return p.errorf(e.pos, "pad entries must be [lo, hi]")
			}
			c.PadLow, c.PadHigh = append(c.PadLow, v[0]), append(c.PadHigh, v[1])
		}
		return nil
	}
	generic, ok := convWindowFields[f.name]
	if !ok {
		return p.errorf(f.val.pos, "unknown convolution window field %s", f.name)
	}
	_, err := p.applyConvAttr(op, generic, f)
	return err
}

func (p *parser) convInts(f attrField) ([]int64, error) {
	v, ok := f.val.asInts()
	if !ok {
		return nil, p.errorf(f.val.pos, "%s must be a list of integers", f.name)
	}
	return slices.Clone(v), nil
}

// boolList reads [true, false], [1, 0] or array<i1: true, false>.
func (p *parser) boolList(f attrField) ([]bool, error) {
	var out []bool
	switch f.val.kind {
	case aList:
		for _, e := range f.val.list {
			switch e.kind {
			case aBool:
				out = append(out, e.b)
			case aInt:
				out = append(out, e.i != 0)
			default:
				return nil, p.errorf(e.pos, "%s must be a list of booleans", f.name)
			}
		}
		return out, nil
	case aDense:
		if dt := f.val.tensor.Type.DType; dt.IsFloat() || dt.IsComplex() {
			// Int64At would read these as truncated (float) or zero
			// (complex) values.
			return nil, p.errorf(f.val.pos, "%s must be a list of booleans, got %s", f.name, f.val.tensor.Type)
		}
		for i := int64(0); i < f.val.tensor.Type.NumElements(); i++ {
			out = append(out, f.val.tensor.Int64At(i) != 0)
		}
		return out, nil
	case aRaw:
		// array<i1: true, false>
		t := strings.TrimSuffix(strings.TrimPrefix(f.val.text, "array<i1"), ">")
		t = strings.TrimPrefix(strings.TrimSpace(t), ":")
		for _, s := range strings.Split(t, ",") {
			switch strings.TrimSpace(s) {
			case "true", "1":
				out = append(out, true)
			case "false", "0":
				out = append(out, false)
			case "":
			default:
				return nil, p.errorf(f.val.pos, "%s must be a list of booleans", f.name)
			}
		}
		return out, nil
	}
	if v, ok := f.val.asInts(); ok {
		for _, x := range v {
			out = append(out, x != 0)
		}
		return out, nil
	}
	return nil, p.errorf(f.val.pos, "%s must be a list of booleans", f.name)
}

// applyConvAttr interprets field f as the generic-form convolution
// attribute name (f's own name, or the one a pretty window field stands
// for); ok is false for attributes it does not handle.
func (p *parser) applyConvAttr(op *Op, name string, f attrField) (ok bool, err error) {
	c := &op.Attrs.Conv
	switch name {
	case "dimension_numbers":
		text := f.val.text
		if f.val.kind == aStruct {
			return true, p.unsupportedf(f.val.pos, "convolution dimension_numbers in struct form are not supported")
		}
		if err := setConvDims(&c.Dims, text); err != nil {
			return true, p.errorf(f.val.pos, "%v", err)
		}
	case "window_strides":
		c.Strides, err = p.convInts(f)
	case "lhs_dilation":
		c.LhsDilation, err = p.convInts(f)
	case "rhs_dilation":
		c.RhsDilation, err = p.convInts(f)
	case "padding":
		c.PadLow, c.PadHigh, err = p.paddingAttr(f)
	case "window_reversal":
		c.Reversal, err = p.boolList(f)
	case "feature_group_count", "batch_group_count":
		if f.val.kind != aInt {
			return true, p.errorf(f.val.pos, "%s must be an integer", f.name)
		}
		if name == "feature_group_count" {
			c.FeatureGroupCount = f.val.i
		} else {
			c.BatchGroupCount = f.val.i
		}
	default:
		return false, nil
	}
	return true, err
}

func convAttrText(c Conv, m map[string]string) {
	m["dimension_numbers"] = convDimsText(c.Dims)
	m["window_strides"] = arrayI64(c.Strides)
	m["lhs_dilation"] = arrayI64(c.LhsDilation)
	m["rhs_dilation"] = arrayI64(c.RhsDilation)
	windowAttrText("", Window{PadLow: c.PadLow, PadHigh: c.PadHigh}, m)
	delete(m, "window_dimensions")
	delete(m, "window_strides")
	m["window_strides"] = arrayI64(c.Strides)
	parts := make([]string, len(c.Reversal))
	for i, r := range c.Reversal {
		parts[i] = strconv.FormatBool(r)
	}
	m["window_reversal"] = "array<i1: " + strings.Join(parts, ", ") + ">"
	if len(parts) == 0 {
		m["window_reversal"] = "array<i1>"
	}
	m["feature_group_count"] = strconv.FormatInt(c.FeatureGroupCount, 10) + " : i64"
	m["batch_group_count"] = strconv.FormatInt(c.BatchGroupCount, 10) + " : i64"
}

// inferConv is convolution's type rule (§convolution C1-C28, those that
// evaluation relies on); it fills the defaults.
func inferConv(op *Op) ([]TensorType, error) {
	if len(op.Operands) != 2 {
		return nil, fmt.Errorf("expects 2 operands, got %d", len(op.Operands))
	}
	lhs, rhs := op.Operands[0].Type, op.Operands[1].Type
	c := &op.Attrs.Conv
	d := c.Dims
	r := lhs.Rank()
	ns := r - 2
	if r < 2 || rhs.Rank() != r || len(d.InputSpatial) != ns || len(d.KernelSpatial) != ns || len(d.OutputSpatial) != ns {
		return nil, fmt.Errorf("operands %s and %s do not match the dimension numbers", lhs, rhs)
	}
	if lhs.DType != rhs.DType || lhs.DType == I1 {
		return nil, fmt.Errorf("operand element types %s and %s must be equal numeric types", lhs.DType, rhs.DType)
	}
	fill := func(s *[]int64, v int64) {
		if len(*s) == 0 {
			*s = slices.Repeat([]int64{v}, ns)
		}
	}
	fill(&c.Strides, 1)
	fill(&c.LhsDilation, 1)
	fill(&c.RhsDilation, 1)
	fill(&c.PadLow, 0)
	fill(&c.PadHigh, 0)
	if len(c.Reversal) == 0 {
		c.Reversal = make([]bool, ns)
	}
	if c.FeatureGroupCount == 0 {
		c.FeatureGroupCount = 1
	}
	if c.BatchGroupCount == 0 {
		c.BatchGroupCount = 1
	}
	for _, s := range [][]int64{c.Strides, c.LhsDilation, c.RhsDilation, c.PadLow, c.PadHigh} {
		if len(s) != ns {
			return nil, fmt.Errorf("window attributes must have %d entries", ns)
		}
	}
	if len(c.Reversal) != ns {
		return nil, fmt.Errorf("window_reversal must have %d entries", ns)
	}
	fg, bg := c.FeatureGroupCount, c.BatchGroupCount
	if fg < 1 || bg < 1 || (fg > 1 && bg > 1) {
		return nil, fmt.Errorf("feature_group_count %d and batch_group_count %d must be positive, and not both above 1", fg, bg)
	}
	inN, inC := lhs.Shape[d.InputBatch], lhs.Shape[d.InputFeature]
	kI, kO := rhs.Shape[d.KernelInputFeature], rhs.Shape[d.KernelOutputFeature]
	if inN%bg != 0 || inC%fg != 0 || inC/fg != kI || kO%bg != 0 || kO%fg != 0 {
		return nil, fmt.Errorf("input %s, kernel %s: batch %d / batch groups %d, features %d / feature groups %d must match kernel input features %d and divide output features %d",
			lhs, rhs, inN, bg, inC, fg, kI, kO)
	}
	shape := make([]int64, r)
	shape[d.OutputBatch] = inN / bg
	shape[d.OutputFeature] = kO
	for i := 0; i < ns; i++ {
		if c.Strides[i] < 1 || c.LhsDilation[i] < 1 || c.RhsDilation[i] < 1 {
			return nil, fmt.Errorf("strides and dilations must be positive")
		}
		in := lhs.Shape[d.InputSpatial[i]]
		padded := c.PadLow[i] + c.PadHigh[i]
		if in > 0 {
			padded += (in-1)*c.LhsDilation[i] + 1
		}
		k := rhs.Shape[d.KernelSpatial[i]]
		win := int64(0)
		if k > 0 {
			win = (k-1)*c.RhsDilation[i] + 1
		}
		out := int64(0)
		if padded >= win && padded >= 0 {
			out = (padded-win)/c.Strides[i] + 1
		}
		shape[d.OutputSpatial[i]] = out
	}
	dt := lhs.DType
	if lhs.DType.IsComplex() || rhs.DType.IsComplex() {
		return nil, fmt.Errorf("convolution of %s and %s: complex numbers: %w", lhs, rhs, ErrUnsupported)
	}
	if len(op.Results) == 1 {
		dt = op.Results[0].Type.DType
		if dt.IsFloat() != lhs.DType.IsFloat() || dt.IsComplex() || dt == I1 {
			return nil, fmt.Errorf("result element type %s incompatible with operands %s", dt, lhs.DType)
		}
	}
	t := TensorType{DType: dt, Shape: shape}
	if err := checkType(t); err != nil {
		return nil, err
	}
	return []TensorType{t}, nil
}

// evalConv implements §convolution: for each output element, the sum over
// the kernel window and the group's input features of lhs (dilated by
// lhs_dilation with zeros, padded with zeros) times rhs (dilated by
// rhs_dilation, spatially reversed where window_reversal says). Feature
// groups split input and output features; batch groups split the input
// batch across output feature groups. Floats accumulate in the result type
// (f32 for 16-bit floats, rounded once), in kernel row-major then input
// feature order.
func evalConv(lhs, rhs *Tensor, rt TensorType, c Conv) *Tensor {
	acc := rt.DType
	if isHalf(acc) {
		acc = F32
	}
	if lhs.Type.DType != acc {
		lhs = evalConvert(lhs, acc)
	}
	if rhs.Type.DType != acc {
		rhs = evalConvert(rhs, acc)
	}
	out := NewTensor(TensorType{DType: acc, Shape: rt.Shape})
	d := c.Dims
	ns := len(d.InputSpatial)
	ls, ks, os := lhs.Type.Strides(), rhs.Type.Strides(), out.Type.Strides()
	inN, inC := lhs.Type.Shape[d.InputBatch], lhs.Type.Shape[d.InputFeature]
	kI, kO := rhs.Type.Shape[d.KernelInputFeature], rhs.Type.Shape[d.KernelOutputFeature]
	fg, bg := c.FeatureGroupCount, c.BatchGroupCount
	oPerFG, oPerBG, nPerBG := kO/fg, kO/bg, inN/bg
	kShape := make([]int64, ns)
	for i := range kShape {
		kShape[i] = rhs.Type.Shape[d.KernelSpatial[i]]
	}
	_ = inC
	isFloat := acc.IsFloat()
	_ = forEachIndex(rt.Shape, func(oi []int64) error {
		b, o := oi[d.OutputBatch], oi[d.OutputFeature]
		g := o / oPerFG
		n := b
		if bg > 1 {
			n = (o/oPerBG)*nPerBG + b
		}
		var sf float64
		var si int64
		_ = forEachIndex(kShape, func(ki []int64) error {
			loff := n*ls[d.InputBatch] + g*kI*ls[d.InputFeature]
			koff := o * ks[d.KernelOutputFeature]
			for s := 0; s < ns; s++ {
				k := ki[s]
				// Position in the padded, lhs-dilated input.
				p := oi[d.OutputSpatial[s]]*c.Strides[s] + k*c.RhsDilation[s] - c.PadLow[s]
				if p < 0 || p%c.LhsDilation[s] != 0 {
					return nil
				}
				p /= c.LhsDilation[s]
				if p >= lhs.Type.Shape[d.InputSpatial[s]] {
					return nil
				}
				loff += p * ls[d.InputSpatial[s]]
				if c.Reversal[s] {
					k = kShape[s] - 1 - k
				}
				koff += k * ks[d.KernelSpatial[s]]
			}
			for i := int64(0); i < kI; i++ {
				li, kk := loff+i*ls[d.InputFeature], koff+i*ks[d.KernelInputFeature]
				if isFloat {
					// The conversion keeps the product from fusing into an FMA.
					sf = addInType(acc, sf, float64(lhs.Float64At(li)*rhs.Float64At(kk)))
				} else {
					si += lhs.Int64At(li) * rhs.Int64At(kk)
				}
			}
			return nil
		})
		off := linear(oi, os)
		if isFloat {
			out.setFloat(off, sf)
		} else {
			out.setInt(off, si)
		}
		return nil
	})
	if isHalf(rt.DType) {
		return narrowHalf(out, rt.DType)
	}
	return out
}

// addInType returns a + p computed in dtype d: float32 accumulations
// round every product and sum to f32, like an f32 kernel.
func addInType(d DType, a, p float64) float64 {
	if d == F32 {
		return float64(float32(a) + float32(p))
	}
	return a + p
}

package stablehlo

import (
	"crypto/sha256"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// DebugAttrs are function argument/result attributes that only carry
// debugging information (names of Python-level results and arguments).
// Canonical drops them, together with locations and SSA names.
var DebugAttrs = map[string]bool{
	"jax.result_info":    true,
	"jax.arg_info":       true,
	"mhlo.sharding_name": true,
}

// Print renders m in MLIR generic form with the original SSA names, for
// debugging and round trips: Parse(Print(m)) yields an equivalent module.
func Print(m *Module) string {
	p := &printer{canonical: false}
	p.module(m)
	return p.b.String()
}

// Canonical renders m in the canonical form used for cache keys: generic
// form, values renumbered in definition order per function, locations,
// the module name and debug-only attributes (DebugAttrs) dropped,
// attributes sorted, defaulted attributes spelled out (compare types,
// DEFAULT precision), and constants printed exactly (splat or hex). Two
// texts that differ only in formatting, SSA names or locations give the
// same bytes; any semantic difference gives different bytes.
func Canonical(m *Module) []byte {
	p := &printer{canonical: true}
	p.module(m)
	return []byte(p.b.String())
}

// Fingerprint is the SHA-256 of Canonical(m).
func Fingerprint(m *Module) [32]byte {
	return sha256.Sum256(Canonical(m))
}

type printer struct {
	b         strings.Builder
	canonical bool
	names     map[*Value]string
	used      map[string]bool
	next      int
}

func (p *printer) w(format string, args ...any) { fmt.Fprintf(&p.b, format, args...) }

func (p *printer) module(m *Module) {
	p.w("module")
	if !p.canonical && m.Name != "" {
		p.w(" %s", symbolText(m.Name))
	}
	if len(m.Attrs) > 0 {
		p.w(" attributes %s", sortedDict(m.Attrs, nil))
	}
	p.w(" {\n")
	for _, f := range m.Funcs {
		p.fn(f)
	}
	p.w("}\n")
}

func sortedDict(attrs map[string]string, skip map[string]bool) string {
	return "{" + strings.Join(sortedEntries(attrs, skip), ", ") + "}"
}

// sortedEntries renders attrs (less the skipped names) as "name = value"
// in name order, so that printed and canonical text never depends on map
// iteration order.
func sortedEntries(attrs map[string]string, skip map[string]bool) []string {
	keys := make([]string, 0, len(attrs))
	for k := range attrs {
		if !skip[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if !isBareName(k) {
			name = mlirQuote(k)
		}
		parts[i] = name + " = " + attrs[k]
	}
	return parts
}

func isBareName(s string) bool {
	if s == "" || !isIdentStart(s[0]) {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !isIdentChar(s[i]) || s[i] == '-' {
			return false
		}
	}
	return true
}

func (p *printer) name(v *Value) string {
	if n, ok := p.names[v]; ok {
		return n
	}
	return "%<undefined>"
}

func (p *printer) define(v *Value) string {
	var n string
	if p.canonical || v.Name == "" {
		n = "%" + strconv.Itoa(p.next)
	} else {
		// Names like "1#0" (results of a multi-result op) are not valid
		// definitions on their own; make them unique plain names.
		n = "%" + strings.ReplaceAll(v.Name, "#", "_r")
		for k := 0; p.used[n]; k++ {
			n = "%" + strings.ReplaceAll(v.Name, "#", "_r") + "_" + strconv.Itoa(k)
		}
	}
	p.next++
	p.names[v] = n
	p.used[n] = true
	return n
}

func (p *printer) attrsOf(m map[string]string) string {
	var skip map[string]bool
	if p.canonical {
		skip = DebugAttrs
	}
	s := sortedDict(m, skip)
	if s == "{}" {
		return ""
	}
	return " " + s
}

func (p *printer) fn(f *Func) {
	p.names = map[*Value]string{}
	p.used = map[string]bool{}
	p.next = 0
	vis := "private"
	if f.Public {
		vis = "public"
	}
	p.w("  func.func %s %s(", vis, symbolText(f.Name))
	for i, a := range f.Args {
		if i > 0 {
			p.w(", ")
		}
		p.w("%s: %s", p.define(a), a.Type)
		if i < len(f.ArgAttrs) {
			p.w("%s", p.attrsOf(f.ArgAttrs[i]))
		}
	}
	p.w(") -> (")
	for i, t := range f.ResultTypes {
		if i > 0 {
			p.w(", ")
		}
		p.w("%s", t)
		if i < len(f.ResultAttrs) {
			p.w("%s", p.attrsOf(f.ResultAttrs[i]))
		}
	}
	p.w(")")
	if len(f.Attrs) > 0 {
		p.w(" attributes %s", sortedDict(f.Attrs, nil))
	}
	p.w(" {\n")
	p.block(f.Body, "    ", true)
	p.w("  }\n")
}

func (p *printer) block(b *Block, indent string, isFunc bool) {
	for _, op := range b.Ops {
		p.op(op, indent, isFunc)
	}
}

// sourceName is the generic-form op name.
func sourceName(op *Op, inFunc bool) string {
	switch {
	case op.Name == "return" && inFunc:
		return "func.return"
	case op.Name == "call":
		return "func.call"
	case strings.HasPrefix(op.Name, "chlo."):
		return op.Name
	}
	return "stablehlo." + op.Name
}

func (p *printer) op(op *Op, indent string, inFunc bool) {
	p.w("%s", indent)
	// Operands are named before results are defined.
	operands := make([]string, len(op.Operands))
	for i, v := range op.Operands {
		operands[i] = p.name(v)
	}
	if len(op.Results) > 0 {
		res := make([]string, len(op.Results))
		for i, r := range op.Results {
			res[i] = p.define(r)
		}
		p.w("%s = ", strings.Join(res, ", "))
	}
	p.w("%q(%s)", sourceName(op, inFunc), strings.Join(operands, ", "))
	if len(op.Regions) > 0 {
		p.w(" (")
		for i, r := range op.Regions {
			if i > 0 {
				p.w(", ")
			}
			p.w("{\n%s  ^bb0(", indent)
			for j, a := range r.Args {
				if j > 0 {
					p.w(", ")
				}
				p.w("%s: %s", p.define(a), a.Type)
			}
			p.w("):\n")
			p.block(r, indent+"    ", false)
			p.w("%s}", indent)
		}
		p.w(")")
	}
	if attrs := opAttrText(op, p.canonical); len(attrs) > 0 {
		p.w(" {%s}", strings.Join(attrs, ", "))
	}
	ins := make([]string, len(op.Operands))
	for i, v := range op.Operands {
		ins[i] = v.Type.String()
	}
	outs := make([]string, len(op.Results))
	for i, v := range op.Results {
		outs[i] = v.Type.String()
	}
	p.w(" : (%s) -> ", strings.Join(ins, ", "))
	if len(outs) == 1 {
		p.w("%s\n", outs[0])
	} else {
		p.w("(%s)\n", strings.Join(outs, ", "))
	}
}

func arrayI64(v []int64) string {
	if len(v) == 0 {
		return "array<i64>"
	}
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return "array<i64: " + strings.Join(parts, ", ") + ">"
}

func intList(v []int64) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.FormatInt(x, 10)
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// defaultCompareType is the comparison type implied by the element type
// when a program leaves it out.
func defaultCompareType(d DType) string {
	switch {
	case d.IsFloat(), d.IsComplex(): // §compare (C3)
		return "FLOAT"
	case d.IsSigned():
		return "SIGNED"
	}
	return "UNSIGNED"
}

// opAttrText returns "name = value" strings for op's attributes in sorted
// order, in generic-form syntax.
func opAttrText(op *Op, canonical bool) []string {
	a := &op.Attrs
	m := map[string]string{}
	for k, v := range a.Other {
		m[k] = v
	}
	switch op.Name {
	case "constant":
		if a.Constant != nil {
			m["value"] = a.Constant.String()
		}
	case "iota":
		m["iota_dimension"] = strconv.FormatInt(a.Dimension, 10) + " : i64"
	case "concatenate":
		m["dimension"] = strconv.FormatInt(a.Dimension, 10) + " : i64"
	case "compare":
		m["comparison_direction"] = "#stablehlo<comparison_direction " + a.ComparisonDirection + ">"
		ct := a.CompareType
		if ct == "" && canonical && len(op.Operands) > 0 {
			ct = defaultCompareType(op.Operands[0].Type.DType)
		}
		if ct != "" {
			m["compare_type"] = "#stablehlo<comparison_type " + ct + ">"
		}
	case "broadcast_in_dim":
		m["broadcast_dimensions"] = arrayI64(a.BroadcastDims)
	case "transpose":
		m["permutation"] = arrayI64(a.Permutation)
	case "slice":
		m["start_indices"] = arrayI64(a.StartIndices)
		m["limit_indices"] = arrayI64(a.LimitIndices)
		m["strides"] = arrayI64(a.Strides)
	case "pad":
		m["edge_padding_low"] = arrayI64(a.EdgePaddingLow)
		m["edge_padding_high"] = arrayI64(a.EdgePaddingHigh)
		m["interior_padding"] = arrayI64(a.InteriorPadding)
	case "reduce":
		m["dimensions"] = arrayI64(a.ReduceDims)
	case "dot_general":
		m["dot_dimension_numbers"] = fmt.Sprintf("#stablehlo.dot<lhs_batching_dimensions = %s, rhs_batching_dimensions = %s, lhs_contracting_dimensions = %s, rhs_contracting_dimensions = %s>",
			intList(a.Dot.LhsBatch), intList(a.Dot.RhsBatch), intList(a.Dot.LhsContracting), intList(a.Dot.RhsContracting))
		allDefault := true
		for _, s := range a.Precision {
			if s != "DEFAULT" {
				allDefault = false
			}
		}
		if len(a.Precision) > 0 && !(canonical && allDefault) {
			parts := make([]string, len(a.Precision))
			for i, s := range a.Precision {
				parts[i] = "#stablehlo<precision " + s + ">"
			}
			m["precision_config"] = "[" + strings.Join(parts, ", ") + "]"
		}
	case "custom_call":
		m["call_target_name"] = mlirQuote(a.Callee)
		if a.HasSideEffect {
			m["has_side_effect"] = "true"
		}
		if a.MinULP != nil {
			m["min_ulp_difference"] = strconv.FormatInt(*a.MinULP, 10) + " : i64"
		}
		if a.MaxULP != nil {
			m["max_ulp_difference"] = strconv.FormatInt(*a.MaxULP, 10) + " : i64"
		}
		if a.Tolerance != nil {
			m["tolerance"] = strconv.FormatFloat(*a.Tolerance, 'e', -1, 64) + " : f64"
		}
	case "call":
		m["callee"] = symbolText(a.Callee)
	case "chlo.top_k":
		m["k"] = strconv.FormatInt(a.K, 10) + " : i64"
	case "reverse":
		m["dimensions"] = arrayI64(a.Dims)
	case "gather":
		m["dimension_numbers"] = gatherDimsText(a.Gather)
		m["slice_sizes"] = arrayI64(a.SliceSizes)
		m["indices_are_sorted"] = strconv.FormatBool(a.IndicesAreSorted)
	case "scatter":
		m["scatter_dimension_numbers"] = scatterDimsText(a.Scatter)
		m["indices_are_sorted"] = strconv.FormatBool(a.IndicesAreSorted)
		m["unique_indices"] = strconv.FormatBool(a.UniqueIndices)
	case "sort":
		m["dimension"] = strconv.FormatInt(a.Dimension, 10) + " : i64"
		m["is_stable"] = strconv.FormatBool(a.IsStable)
	case "reduce_window", "select_and_scatter":
		windowAttrText(op.Name, a.Window, m)
	case "convolution":
		convAttrText(a.Conv, m)
	case "cholesky":
		m["lower"] = strconv.FormatBool(a.Lower)
	case "fft":
		m["fft_type"] = "#stablehlo<fft_type " + a.FftType + ">"
		m["fft_length"] = arrayI64(a.FftLength)
	case "rng_bit_generator":
		m["rng_algorithm"] = "#stablehlo<rng_algorithm " + a.RngAlgorithm + ">"
	case "triangular_solve":
		m["left_side"] = strconv.FormatBool(a.TriSolve.LeftSide)
		m["lower"] = strconv.FormatBool(a.TriSolve.Lower)
		m["unit_diagonal"] = strconv.FormatBool(a.TriSolve.UnitDiagonal)
		m["transpose_a"] = "#stablehlo<transpose " + a.TriSolve.TransposeA + ">"
	case "dynamic_slice":
		m["slice_sizes"] = arrayI64(a.SliceSizes)
	case "reduce_precision":
		m["exponent_bits"] = strconv.FormatInt(a.ExponentBits, 10) + " : i32"
		m["mantissa_bits"] = strconv.FormatInt(a.MantissaBits, 10) + " : i32"
	}
	return sortedEntries(m, nil)
}

// symbolText renders a symbol reference, quoting names that are not bare
// identifiers (@"my func").
func symbolText(name string) string {
	if isBareName(name) {
		return "@" + name
	}
	return "@" + mlirQuote(name)
}

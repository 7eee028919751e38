package cpu

import (
	"fmt"
	"math"

	"github.com/xlacache/xlacache/stablehlo"
)

// evalCheck mirrors the reference interpreter's check.expect_* semantics
// (see stablehlo/dot.go): expect_eq is elementwise ==, expect_close bounds
// the ULP difference (default [0, 3]), expect_almost_eq uses
// stablehlo.AlmostEqual (default tolerance 0.001).
func evalCheck(c Check, got, want *stablehlo.Tensor) error {
	n := got.Type.NumElements()
	if !got.Type.Equal(want.Type) {
		return fmt.Errorf("cpu: %s compares %s with %s", c.Target, got.Type, want.Type)
	}
	minULP, maxULP, tol := uint64(0), uint64(3), 0.001
	if c.MinULP != nil && *c.MinULP >= 0 {
		minULP = uint64(*c.MinULP)
	}
	if c.MaxULP != nil && *c.MaxULP >= 0 {
		maxULP = uint64(*c.MaxULP)
	}
	if c.Tolerance != nil {
		tol = *c.Tolerance
	}
	dt := got.Type.DType
	for i := int64(0); i < n; i++ {
		var ok bool
		detail := ""
		switch {
		case dt.IsFloat() && c.Target == "check.expect_close":
			var d uint64
			if dt == stablehlo.F32 {
				d = stablehlo.ULPDifference32(got.Float32s()[i], want.Float32s()[i])
			} else {
				d = stablehlo.ULPDifference64(got.Float64s()[i], want.Float64s()[i])
			}
			ok = d >= minULP && d <= maxULP
			detail = fmt.Sprintf("ULP difference %d outside [%d, %d]", d, minULP, maxULP)
		case dt.IsFloat() && c.Target == "check.expect_almost_eq":
			ok = stablehlo.AlmostEqual(got.Float64At(i), want.Float64At(i), tol)
			detail = fmt.Sprintf("not within %g", tol)
		case dt.IsFloat():
			ok = got.Float64At(i) == want.Float64At(i)
			detail = "not equal"
		default:
			size := int64(dt.Size())
			ok = string(got.Data[i*size:(i+1)*size]) == string(want.Data[i*size:(i+1)*size])
			detail = "not equal"
		}
		if !ok {
			return &stablehlo.CheckError{Target: c.Target, File: c.File, Pos: stablehlo.Pos{Line: c.Line, Col: c.Col},
				Index: unravel(i, got.Type.Shape), Got: scalarString(got, i), Want: scalarString(want, i), Detail: detail}
		}
	}
	return nil
}

func unravel(i int64, shape []int64) []int64 {
	idx := make([]int64, len(shape))
	for d := len(shape) - 1; d >= 0; d-- {
		if shape[d] > 0 {
			idx[d] = i % shape[d]
			i /= shape[d]
		}
	}
	return idx
}

func scalarString(t *stablehlo.Tensor, i int64) string {
	if t.Type.DType.IsFloat() {
		v := t.Float64At(i)
		if math.IsNaN(v) {
			return "NaN"
		}
		return fmt.Sprintf("%g", v)
	}
	return fmt.Sprintf("%d", t.Int64At(i))
}

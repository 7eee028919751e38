package cpu

import (
	"github.com/xlacache/xlacache/stablehlo"
)

// evalCheck evaluates a check.expect_* assertion recorded in the plan with
// the reference interpreter's semantics (stablehlo.Check), so the cpu
// backend and the interpreter can never disagree on what passes.
func evalCheck(c Check, got, want *stablehlo.Tensor) error {
	err := stablehlo.Check(stablehlo.CheckSpec{Target: c.Target, MinULP: c.MinULP, MaxULP: c.MaxULP, Tolerance: c.Tolerance}, got, want)
	if err == nil {
		return nil // a nil *CheckError must not become a non-nil error
	}
	err.File = c.File
	err.Pos = stablehlo.Pos{Line: c.Line, Col: c.Col}
	return err
}

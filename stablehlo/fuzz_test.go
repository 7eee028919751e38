package stablehlo

import (
	"context"
	"errors"
	"testing"
	"time"
)

// fuzzSetup adds the seed programs and bounds constants at 4 KiB for the
// fuzz target's run, so inputs cannot make it allocate without limit.
func fuzzSetup(f *testing.F, seeds ...string) {
	for _, s := range seeds {
		f.Add([]byte(s))
	}
	saved := maxConstantBytes
	maxConstantBytes = 1 << 12
	f.Cleanup(func() { maxConstantBytes = saved })
}

// checkCanonicalStable fails unless m's canonical text parses back to the
// same canonical text, and returns that text.
func checkCanonicalStable(t *testing.T, m *Module) []byte {
	t.Helper()
	c := Canonical(m)
	m2, err := Parse(c, "canonical.mlir")
	if err != nil {
		t.Fatalf("canonical text does not parse: %v\n%s", err, c)
	}
	if string(Canonical(m2)) != string(c) {
		t.Fatalf("canonical form not stable:\n%s\nvs\n%s", c, Canonical(m2))
	}
	return c
}

// FuzzParse feeds arbitrary text to the parser: it must never panic or
// hang, and whatever it accepts must print to canonical text that parses
// back to the same canonical text.
func FuzzParse(f *testing.F) {
	fuzzSetup(f, addProgram, canonPretty, canonGeneric)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "fuzz.mlir")
		if err != nil {
			if m != nil {
				t.Fatal("module returned with an error")
			}
			return
		}
		checkCanonicalStable(t, m)
		if _, err := Parse([]byte(Print(m)), "printed.mlir"); err != nil {
			t.Fatalf("printed text does not parse: %v\n%s", err, Print(m))
		}
	})
}

// FuzzEval parses and evaluates small programs: the interpreter must not
// hit an internal error (a recovered panic) on any verified program.
func FuzzEval(f *testing.F) {
	fuzzSetup(f, addProgram, canonPretty)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := Parse(data, "fuzz.mlir")
		if err != nil {
			return
		}
		small := true
		for _, fn := range m.Funcs {
			for _, a := range fn.Args {
				small = small && a.Type.NumElements() <= 1<<12
			}
			walkOps(fn.Body, func(op *Op) {
				for _, r := range op.Results {
					small = small && r.Type.NumElements() <= 1<<12
				}
				for _, o := range op.Operands {
					small = small && o.Type.NumElements() <= 1<<12
				}
			})
		}
		main := m.Main()
		if !small || main == nil {
			return
		}
		args := make([]*Tensor, len(main.Args))
		for i, a := range main.Args {
			args[i] = NewTensor(a.Type)
		}
		// A while loop may never end; a deadline bounds it (cancellation
		// is checked between ops).
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if _, err := EvalContext(ctx, m, main.Name, args); errors.Is(err, ErrInternal) {
			t.Fatalf("%v\n%s", err, data)
		}
	})
}

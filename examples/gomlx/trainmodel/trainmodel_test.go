package trainmodel

import (
	"testing"

	"github.com/gomlx/gomlx/backends/simplego"
)

// TestStepsLearnDeterministically trains each model on GoMLX's pure-Go
// backend: the loss must fall over a few steps, and a second trainer
// built afresh must reproduce the first one's losses exactly (the
// initializer depends on nothing but the model).
func TestStepsLearnDeterministically(t *testing.T) {
	for _, model := range Names {
		t.Run(model, func(t *testing.T) {
			be, err := simplego.New("")
			if err != nil {
				t.Fatal(err)
			}
			defer be.Finalize()
			losses := func() []float32 {
				s, err := New(be, model)
				if err != nil {
					t.Fatal(err)
				}
				var out []float32
				for range 4 {
					l, err := s.Run()
					if err != nil {
						t.Fatal(err)
					}
					out = append(out, l)
				}
				return out
			}
			a, b := losses(), losses()
			if a[len(a)-1] >= a[0] {
				t.Errorf("loss went from %v to %v in %d steps", a[0], a[len(a)-1], len(a))
			}
			t.Logf("losses %v", a)
			for i := range a {
				if a[i] != b[i] {
					t.Fatalf("step %d: loss %v, then %v on a fresh trainer", i, a[i], b[i])
				}
			}
		})
	}
	if _, err := New(nil, "nope"); err == nil {
		t.Error("an unknown model built")
	}
}

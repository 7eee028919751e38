package main

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestTransformerTrainGradients checks the hand-written backward pass of
// buildTransformerTrain against the interpreter's central differences of
// the loss, on a small model of the same structure: for each weight
// tensor of each block, the directional derivative along a random
// direction must match the sum of the returned gradient times that
// direction. A missing term, a transposed product or a wrong softmax or
// layer-norm gradient moves that sum far outside the tolerance.
func TestTransformerTrainGradients(t *testing.T) {
	c := tfConfig{layers: 2, seq: 8, width: 16, heads: 2, ff: 32}
	src, err := buildTransformerTrain("small", c)
	if err != nil {
		t.Fatal(err)
	}
	m, err := stablehlo.Parse(src, "small")
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(4, 23))
	var args []*stablehlo.Tensor
	for _, a := range m.Main().Args {
		x := stablehlo.NewTensor(a.Type)
		scale := 1.0
		if r := a.Type.Rank(); r >= 2 {
			scale = 2 / math.Sqrt(float64(a.Type.Shape[r-2]))
		}
		for i := range x.Float32s() {
			x.Float32s()[i] = float32((rng.Float64()*2 - 1) * scale)
		}
		args = append(args, x)
	}
	eval := func(args []*stablehlo.Tensor) []*stablehlo.Tensor {
		t.Helper()
		outs, err := stablehlo.Eval(m, "main", args)
		if err != nil {
			t.Fatal(err)
		}
		return outs
	}
	outs := eval(args)
	if want := 1 + c.layers*len(c.params()); len(outs) != want {
		t.Fatalf("%d results, want %d", len(outs), want)
	}
	const eps = 1e-3
	for i := 1; i < len(args); i++ {
		name := m.Main().Args[i].Name
		grad := outs[i].Float32s()
		dir := make([]float32, len(grad))
		analytic := 0.0
		for k := range dir {
			dir[k] = float32(rng.Float64()*2 - 1)
			analytic += float64(grad[k]) * float64(dir[k])
		}
		loss := func(sign float32) float64 {
			shifted := append([]*stablehlo.Tensor(nil), args...)
			p := args[i].Clone()
			for k, v := range p.Float32s() {
				p.Float32s()[k] = v + sign*eps*dir[k]
			}
			shifted[i] = p
			return float64(eval(shifted)[0].Float32s()[0])
		}
		numeric := (loss(1) - loss(-1)) / (2 * eps)
		if diff := math.Abs(numeric - analytic); diff > 2e-3+3e-2*math.Abs(analytic) {
			t.Errorf("%s: directional derivative %.6g from the gradient, %.6g by central differences", name, analytic, numeric)
		} else {
			t.Logf("%s: %.6g vs %.6g", name, analytic, numeric)
		}
	}
}

// Package trainmodel builds the GoMLX training steps that the benchmarks
// compare across GoMLX backends: the MLP (three hidden layers of 256,
// inputs [64, 32]) and the two pre-norm transformer blocks (inputs
// [8, 32, 64]) of examples/gomlx/testdata/trainbench, trained with GoMLX's
// Trainer, mean squared error and Adam.
//
// Unlike trainbench, weights start from a deterministic initializer
// (an integer hash of each element's index) instead of GoMLX's random ones: random
// initializers run the backend's own random bit generator, whose streams
// need not agree between backends, and internal/compilerbench compares
// the losses of two backends after the same steps.
package trainmodel

import (
	"fmt"
	"math"
	"sync"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	. "github.com/gomlx/gomlx/pkg/core/graph" //nolint:revive // GoMLX's style for model code
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/layers"
	"github.com/gomlx/gomlx/pkg/ml/layers/fnn"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
)

// Names are the models New builds.
var Names = []string{"mlp", "transformer"}

// Step is a model's trainer with its fixed batch.
type Step struct {
	Trainer        *train.Trainer
	Inputs, Labels []*tensors.Tensor
}

// Run runs one training step and returns its loss, copied to the host
// (so a step's time includes waiting for its result).
func (s *Step) Run() (float32, error) {
	m, err := s.Trainer.TrainStep(nil, s.Inputs, s.Labels)
	if err != nil {
		return 0, err
	}
	if len(m) == 0 {
		return 0, fmt.Errorf("training step returned no metrics")
	}
	return tensors.ToScalar[float32](m[0]), nil
}

// New builds the named model's training step on backend.
func New(backend backends.Backend, model string) (*Step, error) {
	modelFn, inputs, labels, err := Model(model)
	if err != nil {
		return nil, err
	}
	s := &Step{Inputs: inputs, Labels: labels}
	ctx := mlctx.New().WithInitializer(Initializer())
	s.Trainer = train.NewTrainer(backend, ctx, modelFn, losses.MeanSquaredError, optimizers.Adam().Done(), nil, nil)
	return s, nil
}

// Model returns the named model's function and its fixed batch (inputs
// and labels), for callers that build their own Trainer
// (examples/gomlx/testdata/trainbench keeps GoMLX's random initializers).
func Model(model string) (fn train.ModelFn, inputs, labels []*tensors.Tensor, err error) {
	switch model {
	case "mlp":
		fn = func(ctx *mlctx.Context, _ any, in []*Node) []*Node {
			return []*Node{fnn.New(ctx, in[0], 1).NumHiddenLayers(3, 256).Done()}
		}
		inputs = []*tensors.Tensor{tensors.FromValue(fill(64, 32))}
		labels = []*tensors.Tensor{tensors.FromValue(fill(64, 1))}
	case "transformer":
		fn = transformer
		inputs = []*tensors.Tensor{tensors.FromValue(fill3(8, 32, 64))}
		labels = []*tensors.Tensor{tensors.FromValue(fill(8, 1))}
	default:
		return nil, nil, nil, fmt.Errorf("model %q: want one of %v", model, Names)
	}
	return fn, inputs, labels, nil
}

// Initializer returns a deterministic initializer: uniform values from an
// integer hash (uint32 multiply, xor and division by powers of two standing for
// shifts, which GoMLX's pure-Go backend lacks; exact on every backend) of
// each element's index and the variable's number, in ±sqrt(3/fan-in) for
// matrices (variance 1/fan-in) and ±0.1 for vectors. Variables are
// numbered in the order GoMLX creates them, which depends only on the
// model, so every backend starts from bit-identical weights.
func Initializer() mlctx.VariableInitializer {
	var mu sync.Mutex
	n := uint32(0)
	return func(g *Graph, shape shapes.Shape) *Node {
		mu.Lock()
		n++
		k := n
		mu.Unlock()
		scale := 0.1
		if r := shape.Rank(); r >= 2 {
			scale = math.Sqrt(3 / float64(shape.Dimensions[r-2]))
		}
		u32 := func(v uint32) *Node { return Scalar(g, dtypes.Uint32, v) }
		h := Iota(g, shapes.Make(dtypes.Uint32, shape.Size()), 0)
		h = Add(Mul(h, u32(2654435761)), u32(k*40503))
		h = BitwiseXor(h, Div(h, u32(1<<15)))
		h = Mul(h, u32(2246822519))
		h = BitwiseXor(h, Div(h, u32(1<<13)))
		// The top 24 bits are exact in float32: uniform in [0, 1).
		f := MulScalar(ConvertDType(Div(h, u32(1<<8)), dtypes.Float32), 1.0/(1<<24))
		v := MulScalar(AddScalar(f, -0.5), 2*scale)
		return ConvertDType(Reshape(v, shape.Dimensions...), shape.DType)
	}
}

// transformer is two pre-norm encoder blocks (4-head self-attention and a
// 2-layer feed-forward, with residuals) over a [batch, 32, 64] sequence,
// mean-pooled to one output.
func transformer(ctx *mlctx.Context, _ any, in []*Node) []*Node {
	x := in[0]
	for i := range 2 {
		c := ctx.In(fmt.Sprintf("block_%d", i))
		h := layers.LayerNormalization(c.In("ln1"), x, -1).Done()
		x = Add(x, layers.MultiHeadAttention(c.In("attn"), h, h, h, 4, 16).Done())
		h = layers.LayerNormalization(c.In("ln2"), x, -1).Done()
		x = Add(x, fnn.New(c.In("ffn"), h, 64).NumHiddenLayers(1, 128).Done())
	}
	return []*Node{layers.DenseWithBias(ctx.In("head"), ReduceMean(x, 1), 1)}
}

func fill(n, m int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, m)
		for j := range out[i] {
			out[i][j] = float32((i*7+j*3)%11)/11 - 0.5
		}
	}
	return out
}

func fill3(a, b, c int) [][][]float32 {
	out := make([][][]float32, a)
	for i := range out {
		out[i] = fill(b, c)
		for j := range out[i] {
			out[i][j][0] += float32(i) / 8
		}
	}
	return out
}

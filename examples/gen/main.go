// Command gen writes the example StableHLO programs with GoMLX's StableHLO
// builder: examples/mlp/mlp.mlir, examples/transformer/transformer.mlir,
// examples/cnn/cnn.mlir, examples/embedding/embedding.mlir and
// examples/resnetblock/resnetblock.mlir and
// examples/transformer4l/transformer4l.mlir (internal/compilerbench's
// larger programs; the latter a four-layer transformer's training step,
// forward and backward).
// Weights are function arguments, so the programs carry no data and the
// same compiled executable serves any weights.
//
// Run from the repository root: go run ./examples/gen
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	"github.com/gomlx/go-xla/pkg/types/dtypes"
	"github.com/gomlx/go-xla/pkg/types/shapes"
)

func main() {
	out := flag.String("out", "examples", "directory that holds mlp/, transformer/, cnn/ and embedding/")
	flag.Parse()
	for _, ex := range programs {
		path := filepath.Join(*out, ex.name, ex.name+".mlir")
		src, err := ex.build()
		if err != nil {
			slog.Error("building example", "file", path, "err", err)
			os.Exit(1)
		}
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			slog.Error("writing example", "file", path, "err", err)
			os.Exit(1)
		}
		if err := os.WriteFile(path, src, 0o644); err != nil {
			slog.Error("writing example", "file", path, "err", err)
			os.Exit(1)
		}
		fmt.Printf("wrote %s (%d bytes)\n", path, len(src))
	}
}

// programs are the examples, each written to <name>/<name>.mlir.
var programs = []struct {
	name  string
	build func() ([]byte, error)
}{
	{"mlp", buildMLP},
	{"transformer", buildTransformer},
	{"cnn", buildCNN},
	{"embedding", buildEmbedding},
	{"resnetblock", buildResNetBlock},
	{"transformer4l", buildTransformer4L},
}

// g wraps a builder function and remembers the first error, so model code
// reads like math instead of error plumbing.
type g struct {
	fn  *shlo.Function
	err error
}

func (b *g) ok(v *shlo.Value, err error) *shlo.Value {
	if err != nil && b.err == nil {
		b.err = err
	}
	return v
}

func f32(dims ...int) shapes.Shape { return shapes.Make(dtypes.Float32, dims...) }

func (b *g) input(name string, dims ...int) *shlo.Value {
	return b.ok(b.fn.NamedInput(name, f32(dims...)))
}

func (b *g) scalar(x float32) *shlo.Value { return b.ok(b.fn.ConstantFromScalar(x)) }

// bcast broadcasts v to dims, mapping v's axes to axes.
func (b *g) bcast(v *shlo.Value, dims []int, axes ...int) *shlo.Value {
	if v == nil {
		return nil
	}
	return b.ok(shlo.BroadcastInDim(v, f32(dims...), axes))
}

func (b *g) bin(op func(x, y *shlo.Value) (*shlo.Value, error), x, y *shlo.Value) *shlo.Value {
	if x == nil || y == nil {
		return nil
	}
	return b.ok(op(x, y))
}

func (b *g) un(op func(x *shlo.Value) (*shlo.Value, error), x *shlo.Value) *shlo.Value {
	if x == nil {
		return nil
	}
	return b.ok(op(x))
}

// reducer builds the scalar closure for a reduction.
func (b *g) reducer(op func(x, y *shlo.Value) (*shlo.Value, error)) *shlo.Function {
	c := b.fn.Closure()
	x := b.ok(c.Input(f32()))
	y := b.ok(c.Input(f32()))
	if x == nil || y == nil {
		return c
	}
	r := b.ok(op(x, y))
	if r != nil {
		if err := c.Return(r); err != nil && b.err == nil {
			b.err = err
		}
	}
	return c
}

func (b *g) reduce(v *shlo.Value, init float32, op func(x, y *shlo.Value) (*shlo.Value, error), axes ...int) *shlo.Value {
	if v == nil {
		return nil
	}
	return b.ok(shlo.Reduce(v, b.scalar(init), b.reducer(op), axes...))
}

// matmul multiplies [m,k] by [k,n].
func (b *g) matmul(x, w *shlo.Value) *shlo.Value {
	if x == nil || w == nil {
		return nil
	}
	return b.ok(shlo.DotGeneral(x, []int{1}, nil, w, []int{0}, nil).Done())
}

// dense is x·w + bias for x [rows, in], w [in, out], bias [out].
func (b *g) dense(x, w, bias *shlo.Value, rows, out int) *shlo.Value {
	return b.bin(shlo.Add, b.matmul(x, w), b.bcast(bias, []int{rows, out}, 1))
}

// softmax over the last axis of v with shape dims.
func (b *g) softmax(v *shlo.Value, dims []int) *shlo.Value {
	last := len(dims) - 1
	keep := make([]int, last)
	for i := range keep {
		keep[i] = i
	}
	negInf := float32(-3.4028235e38)
	m := b.reduce(v, negInf, shlo.Maximum, last)
	e := b.un(shlo.Exponential, b.bin(shlo.Subtract, v, b.bcast(m, dims, keep...)))
	s := b.reduce(e, 0, shlo.Add, last)
	return b.bin(shlo.Divide, e, b.bcast(s, dims, keep...))
}

// layerNorm normalizes the rows of x [rows, width].
func (b *g) layerNorm(x, gamma, beta *shlo.Value, rows, width int) *shlo.Value {
	dims := []int{rows, width}
	inv := b.scalar(1 / float32(width))
	mean := b.bin(shlo.Multiply, b.reduce(x, 0, shlo.Add, 1), b.bcast(inv, []int{rows}))
	xc := b.bin(shlo.Subtract, x, b.bcast(mean, dims, 0))
	v := b.bin(shlo.Multiply, b.reduce(b.bin(shlo.Multiply, xc, xc), 0, shlo.Add, 1), b.bcast(inv, []int{rows}))
	rstd := b.un(shlo.Rsqrt, b.bin(shlo.Add, v, b.bcast(b.scalar(1e-5), []int{rows})))
	y := b.bin(shlo.Multiply, xc, b.bcast(rstd, dims, 0))
	return b.bin(shlo.Add, b.bin(shlo.Multiply, y, b.bcast(gamma, dims, 1)), b.bcast(beta, dims, 1))
}

func buildMLP() ([]byte, error) {
	const batch, in, hidden, classes = 64, 784, 512, 10
	bld := shlo.New("mlp")
	b := &g{fn: bld.Main()}
	x := b.input("x", batch, in)
	w1, b1 := b.input("w1", in, hidden), b.input("b1", hidden)
	w2, b2 := b.input("w2", hidden, hidden), b.input("b2", hidden)
	w3, b3 := b.input("w3", hidden, classes), b.input("b3", classes)
	h1 := b.un(shlo.Tanh, b.dense(x, w1, b1, batch, hidden))
	h2 := b.un(shlo.Tanh, b.dense(h1, w2, b2, batch, hidden))
	probs := b.softmax(b.dense(h2, w3, b3, batch, classes), []int{batch, classes})
	if b.err != nil {
		return nil, b.err
	}
	if err := b.fn.Return(probs); err != nil {
		return nil, err
	}
	return bld.Build()
}

func buildTransformer() ([]byte, error) {
	const seq, width, heads, ff = 128, 256, 4, 1024
	const hd = width / heads
	bld := shlo.New("transformer")
	b := &g{fn: bld.Main()}
	x := b.input("x", seq, width)
	g1, be1 := b.input("ln1_gamma", width), b.input("ln1_beta", width)
	wq, wk, wv, wo := b.input("wq", width, width), b.input("wk", width, width), b.input("wv", width, width), b.input("wo", width, width)
	g2, be2 := b.input("ln2_gamma", width), b.input("ln2_beta", width)
	w1, b1 := b.input("w1", width, ff), b.input("b1", ff)
	w2, b2 := b.input("w2", ff, width), b.input("b2", width)

	// Attention: project, split heads to [heads, seq, hd].
	y := b.layerNorm(x, g1, be1, seq, width)
	split := func(w *shlo.Value) *shlo.Value {
		p := b.matmul(y, w)
		if p == nil {
			return nil
		}
		r := b.ok(shlo.Reshape(p, f32(seq, heads, hd)))
		if r == nil {
			return nil
		}
		return b.ok(shlo.Transpose(r, 1, 0, 2))
	}
	q, k, v := split(wq), split(wk), split(wv)
	var scores, ctx *shlo.Value
	if q != nil && k != nil {
		scores = b.ok(shlo.DotGeneral(q, []int{2}, []int{0}, k, []int{2}, []int{0}).Done()) // [heads, seq, seq]
	}
	scale := b.bcast(b.scalar(1/float32(8)), []int{heads, seq, seq})
	probs := b.softmax(b.bin(shlo.Multiply, scores, scale), []int{heads, seq, seq})
	if probs != nil && v != nil {
		ctx = b.ok(shlo.DotGeneral(probs, []int{2}, []int{0}, v, []int{1}, []int{0}).Done()) // [heads, seq, hd]
	}
	var merged *shlo.Value
	if ctx != nil {
		t := b.ok(shlo.Transpose(ctx, 1, 0, 2))
		if t != nil {
			merged = b.ok(shlo.Reshape(t, f32(seq, width)))
		}
	}
	x1 := b.bin(shlo.Add, x, b.matmul(merged, wo))

	// MLP with tanh-approximated GELU.
	h := b.dense(b.layerNorm(x1, g2, be2, seq, width), w1, b1, seq, ff)
	hdims := []int{seq, ff}
	cube := b.bin(shlo.Multiply, b.bin(shlo.Multiply, h, h), h)
	inner := b.bin(shlo.Multiply, b.bin(shlo.Add, h, b.bin(shlo.Multiply, cube, b.bcast(b.scalar(0.044715), hdims))), b.bcast(b.scalar(0.7978845608), hdims))
	gelu := b.bin(shlo.Multiply, b.bin(shlo.Multiply, h, b.bcast(b.scalar(0.5), hdims)), b.bin(shlo.Add, b.bcast(b.scalar(1), hdims), b.un(shlo.Tanh, inner)))
	out := b.bin(shlo.Add, x1, b.dense(gelu, w2, b2, seq, width))
	if b.err != nil {
		return nil, b.err
	}
	if err := b.fn.Return(out); err != nil {
		return nil, err
	}
	return bld.Build()
}

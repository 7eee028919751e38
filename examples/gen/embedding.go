package main

import (
	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	"github.com/gomlx/go-xla/pkg/types/dtypes"
	"github.com/gomlx/go-xla/pkg/types/shapes"
)

// buildEmbedding: a sentence-embedding model. Token ids [8,32] (int32)
// gather rows of a 10,000×128 table, a learned position embedding is
// added, one pre-norm transformer block (4-head self-attention, GELU MLP
// 128→512→128) runs per sequence, and a final layer norm and mean over
// the sequence give one 128-wide embedding per sequence.
func buildEmbedding() ([]byte, error) {
	const batch, seq, vocab, width, heads, ff = 8, 32, 10000, 128, 4, 512
	const hd, rows = width / heads, batch * seq
	bld := shlo.New("embedding")
	b := &g{fn: bld.Main()}
	ids := b.ok(b.fn.NamedInput("ids", shapes.Make(dtypes.Int32, batch, seq)))
	table := b.input("table", vocab, width)
	pos := b.input("pos", seq, width)
	g1, be1 := b.input("ln1_gamma", width), b.input("ln1_beta", width)
	wq, wk, wv, wo := b.input("wq", width, width), b.input("wk", width, width), b.input("wv", width, width), b.input("wo", width, width)
	g2, be2 := b.input("ln2_gamma", width), b.input("ln2_beta", width)
	w1, b1 := b.input("w1", width, ff), b.input("b1", ff)
	w2, b2 := b.input("w2", ff, width), b.input("b2", width)
	g3, be3 := b.input("lnf_gamma", width), b.input("lnf_beta", width)

	// Embedding lookup: one table row per id, as GoMLX's Gather emits it
	// (an explicit index vector axis of size 1). Out-of-range ids are
	// clamped into the table by gather's semantics.
	var emb *shlo.Value
	if ids != nil && table != nil {
		idx := b.ok(shlo.Reshape(ids, shapes.Make(dtypes.Int32, batch, seq, 1)))
		if idx != nil {
			emb = b.ok(shlo.Gather(table, idx, 2,
				[]int{2}, []int{0}, nil, nil, []int{0},
				[]int{1, width}, false))
		}
	}
	e3 := []int{batch, seq, width}
	var x *shlo.Value
	if sum := b.bin(shlo.Add, emb, b.bcast(pos, e3, 1, 2)); sum != nil {
		x = b.ok(shlo.Reshape(sum, f32(rows, width)))
	}

	// Attention per sequence: project, split to [batch, heads, seq, hd].
	y := b.layerNorm(x, g1, be1, rows, width)
	split := func(w *shlo.Value) *shlo.Value {
		p := b.matmul(y, w)
		if p == nil {
			return nil
		}
		r := b.ok(shlo.Reshape(p, f32(batch, seq, heads, hd)))
		if r == nil {
			return nil
		}
		return b.ok(shlo.Transpose(r, 0, 2, 1, 3))
	}
	q, k, v := split(wq), split(wk), split(wv)
	sdims := []int{batch, heads, seq, seq}
	var scores, ctx, merged *shlo.Value
	if q != nil && k != nil {
		scores = b.ok(shlo.DotGeneral(q, []int{3}, []int{0, 1}, k, []int{3}, []int{0, 1}).Done()) // [batch, heads, seq, seq]
	}
	scale := b.bcast(b.scalar(0.17677669529663687), sdims) // 1/sqrt(hd)
	probs := b.softmax(b.bin(shlo.Multiply, scores, scale), sdims)
	if probs != nil && v != nil {
		ctx = b.ok(shlo.DotGeneral(probs, []int{3}, []int{0, 1}, v, []int{2}, []int{0, 1}).Done()) // [batch, heads, seq, hd]
	}
	if ctx != nil {
		if t := b.ok(shlo.Transpose(ctx, 0, 2, 1, 3)); t != nil {
			merged = b.ok(shlo.Reshape(t, f32(rows, width)))
		}
	}
	x1 := b.bin(shlo.Add, x, b.matmul(merged, wo))

	// MLP with tanh-approximated GELU.
	h := b.dense(b.layerNorm(x1, g2, be2, rows, width), w1, b1, rows, ff)
	hdims := []int{rows, ff}
	cube := b.bin(shlo.Multiply, b.bin(shlo.Multiply, h, h), h)
	inner := b.bin(shlo.Multiply, b.bin(shlo.Add, h, b.bin(shlo.Multiply, cube, b.bcast(b.scalar(0.044715), hdims))), b.bcast(b.scalar(0.7978845608), hdims))
	gelu := b.bin(shlo.Multiply, b.bin(shlo.Multiply, h, b.bcast(b.scalar(0.5), hdims)), b.bin(shlo.Add, b.bcast(b.scalar(1), hdims), b.un(shlo.Tanh, inner)))
	x2 := b.bin(shlo.Add, x1, b.dense(gelu, w2, b2, rows, width))

	// Mean-pool the normalized tokens of each sequence.
	var pooled *shlo.Value
	if z := b.layerNorm(x2, g3, be3, rows, width); z != nil {
		if z3 := b.ok(shlo.Reshape(z, f32(batch, seq, width))); z3 != nil {
			pooled = b.bin(shlo.Multiply, b.reduce(z3, 0, shlo.Add, 1), b.bcast(b.scalar(1/float32(seq)), []int{batch, width}))
		}
	}
	if b.err != nil {
		return nil, b.err
	}
	if err := b.fn.Return(pooled); err != nil {
		return nil, err
	}
	return bld.Build()
}

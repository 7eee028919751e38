package main

import (
	"fmt"
	"math"

	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	"github.com/gomlx/go-xla/pkg/types"
)

// tfConfig sizes the training-step transformer: layers pre-norm blocks
// over a [seq, width] sequence (batch 1), heads attention heads and a ReLU
// MLP of width ff.
type tfConfig struct {
	layers, seq, width, heads, ff int
}

// transformer4 is the issue's "four-layer transformer at sequence length
// 512, width 512, with its backward pass": 8 heads, MLP 4× wide.
var transformer4 = tfConfig{layers: 4, seq: 512, width: 512, heads: 8, ff: 2048}

// tfParams are the names and shapes of one block's weights, in the order
// main takes them (after x) and returns their gradients (after the loss).
func (c tfConfig) params() []struct {
	name string
	dims []int
} {
	d, f := c.width, c.ff
	return []struct {
		name string
		dims []int
	}{
		{"ln1_gamma", []int{d}}, {"ln1_beta", []int{d}},
		{"wq", []int{d, d}}, {"wk", []int{d, d}}, {"wv", []int{d, d}}, {"wo", []int{d, d}},
		{"ln2_gamma", []int{d}}, {"ln2_beta", []int{d}},
		{"w1", []int{d, f}}, {"b1", []int{f}}, {"w2", []int{f, d}}, {"b2", []int{d}},
	}
}

// dot is DotGeneral with nil checks: x's axes xc contracted with y's yc,
// batch axes xb and yb.
func (b *g) dot(x *shlo.Value, xc, xb []int, y *shlo.Value, yc, yb []int) *shlo.Value {
	if x == nil || y == nil {
		return nil
	}
	return b.ok(shlo.DotGeneral(x, xc, xb, y, yc, yb).Done())
}

func (b *g) mul(x, y *shlo.Value) *shlo.Value { return b.bin(shlo.Multiply, x, y) }
func (b *g) add(x, y *shlo.Value) *shlo.Value { return b.bin(shlo.Add, x, y) }
func (b *g) sub(x, y *shlo.Value) *shlo.Value { return b.bin(shlo.Subtract, x, y) }

// splitHeads turns [seq, width] into [heads, seq, width/heads].
func (b *g) splitHeads(v *shlo.Value, c tfConfig) *shlo.Value {
	if v == nil {
		return nil
	}
	r := b.ok(shlo.Reshape(v, f32(c.seq, c.heads, c.width/c.heads)))
	if r == nil {
		return nil
	}
	return b.ok(shlo.Transpose(r, 1, 0, 2))
}

// mergeHeads is splitHeads' inverse.
func (b *g) mergeHeads(v *shlo.Value, c tfConfig) *shlo.Value {
	if v == nil {
		return nil
	}
	t := b.ok(shlo.Transpose(v, 1, 0, 2))
	if t == nil {
		return nil
	}
	return b.ok(shlo.Reshape(t, f32(c.seq, c.width)))
}

// lnState is what layer norm's backward pass needs of its forward pass.
type lnState struct{ xhat, rstd, gamma *shlo.Value }

// layerNormFwd normalizes the rows of x [rows, width] and keeps the
// normalized rows and reciprocal deviations for the backward pass.
func (b *g) layerNormFwd(x, gamma, beta *shlo.Value, rows, width int) (*shlo.Value, lnState) {
	dims := []int{rows, width}
	inv := b.bcast(b.scalar(1/float32(width)), []int{rows})
	mean := b.mul(b.reduce(x, 0, shlo.Add, 1), inv)
	xc := b.sub(x, b.bcast(mean, dims, 0))
	v := b.mul(b.reduce(b.mul(xc, xc), 0, shlo.Add, 1), inv)
	rstd := b.un(shlo.Rsqrt, b.add(v, b.bcast(b.scalar(1e-5), []int{rows})))
	xhat := b.mul(xc, b.bcast(rstd, dims, 0))
	y := b.add(b.mul(xhat, b.bcast(gamma, dims, 1)), b.bcast(beta, dims, 1))
	return y, lnState{xhat: xhat, rstd: rstd, gamma: gamma}
}

// layerNormBwd returns the gradients of x, gamma and beta given dy:
// dx = rstd·(dxhat − mean(dxhat) − xhat·mean(dxhat·xhat)), dxhat = dy·gamma.
func (b *g) layerNormBwd(dy *shlo.Value, s lnState, rows, width int) (dx, dgamma, dbeta *shlo.Value) {
	dims := []int{rows, width}
	dgamma = b.reduce(b.mul(dy, s.xhat), 0, shlo.Add, 0)
	dbeta = b.reduce(dy, 0, shlo.Add, 0)
	dxhat := b.mul(dy, b.bcast(s.gamma, dims, 1))
	inv := b.bcast(b.scalar(1/float32(width)), []int{rows})
	m1 := b.mul(b.reduce(dxhat, 0, shlo.Add, 1), inv)
	m2 := b.mul(b.reduce(b.mul(dxhat, s.xhat), 0, shlo.Add, 1), inv)
	t := b.sub(b.sub(dxhat, b.bcast(m1, dims, 0)), b.mul(s.xhat, b.bcast(m2, dims, 0)))
	dx = b.mul(t, b.bcast(s.rstd, dims, 0))
	return dx, dgamma, dbeta
}

// blockState is what one block's backward pass needs of its forward pass.
type blockState struct {
	w                          map[string]*shlo.Value
	ln1, ln2                   lnState
	y1, q, k, v, p, merged, y2 *shlo.Value
	h, r                       *shlo.Value
}

// blockFwd is one pre-norm block: x + attention(LN1(x)), then
// x1 + W2·relu(W1·LN2(x1) + b1) + b2.
func (b *g) blockFwd(x *shlo.Value, w map[string]*shlo.Value, c tfConfig) (*shlo.Value, blockState) {
	s := blockState{w: w}
	hd := c.width / c.heads
	att := []int{c.heads, c.seq, c.seq}
	s.y1, s.ln1 = b.layerNormFwd(x, w["ln1_gamma"], w["ln1_beta"], c.seq, c.width)
	s.q = b.splitHeads(b.matmul(s.y1, w["wq"]), c)
	s.k = b.splitHeads(b.matmul(s.y1, w["wk"]), c)
	s.v = b.splitHeads(b.matmul(s.y1, w["wv"]), c)
	scores := b.dot(s.q, []int{2}, []int{0}, s.k, []int{2}, []int{0}) // [heads, seq, seq]
	s.p = b.softmax(b.mul(scores, b.bcast(b.scalar(attScale(hd)), att)), att)
	ctx := b.dot(s.p, []int{2}, []int{0}, s.v, []int{1}, []int{0}) // [heads, seq, hd]
	s.merged = b.mergeHeads(ctx, c)
	x1 := b.add(x, b.matmul(s.merged, w["wo"]))
	s.y2, s.ln2 = b.layerNormFwd(x1, w["ln2_gamma"], w["ln2_beta"], c.seq, c.width)
	s.h = b.dense(s.y2, w["w1"], w["b1"], c.seq, c.ff)
	s.r = b.relu(s.h, []int{c.seq, c.ff})
	return b.add(x1, b.dense(s.r, w["w2"], w["b2"], c.seq, c.width)), s
}

// attScale is attention's 1/sqrt(head width).
func attScale(hd int) float32 { return float32(1 / math.Sqrt(float64(hd))) }

// blockBwd takes the gradient of the block's output and returns the
// gradient of its input and of every weight (by name).
func (b *g) blockBwd(dout *shlo.Value, s blockState, c tfConfig) (*shlo.Value, map[string]*shlo.Value) {
	w := s.w
	d := map[string]*shlo.Value{}
	hd := c.width / c.heads
	rows0 := []int{0}
	// MLP: out = x1 + r·W2 + b2, r = relu(h), h = y2·W1 + b1.
	d["w2"] = b.dot(s.r, rows0, nil, dout, rows0, nil)
	d["b2"] = b.reduce(dout, 0, shlo.Add, 0)
	dr := b.dot(dout, []int{1}, nil, w["w2"], []int{1}, nil) // [seq, ff]
	var dh *shlo.Value
	if s.h != nil && dr != nil {
		zero := b.bcast(b.scalar(0), []int{c.seq, c.ff})
		pos := b.ok(shlo.Compare(s.h, zero, types.CompareGT, types.CompareFloat))
		if pos != nil && zero != nil {
			dh = b.ok(shlo.Select(pos, dr, zero))
		}
	}
	d["w1"] = b.dot(s.y2, rows0, nil, dh, rows0, nil)
	d["b1"] = b.reduce(dh, 0, shlo.Add, 0)
	dy2 := b.dot(dh, []int{1}, nil, w["w1"], []int{1}, nil)
	dln2, dg2, db2 := b.layerNormBwd(dy2, s.ln2, c.seq, c.width)
	d["ln2_gamma"], d["ln2_beta"] = dg2, db2
	dx1 := b.add(dout, dln2)

	// Attention: x1 = x + merged·Wo, ctx = p·v, p = softmax(scale·q·kᵀ).
	d["wo"] = b.dot(s.merged, rows0, nil, dx1, rows0, nil)
	dctx := b.splitHeads(b.dot(dx1, []int{1}, nil, w["wo"], []int{1}, nil), c)
	dp := b.dot(dctx, []int{2}, []int{0}, s.v, []int{2}, []int{0}) // [heads, seq, seq]
	dv := b.dot(s.p, []int{1}, []int{0}, dctx, []int{1}, []int{0}) // [heads, seq, hd]
	att := []int{c.heads, c.seq, c.seq}
	rowDot := b.reduce(b.mul(dp, s.p), 0, shlo.Add, 2)
	dscores := b.mul(b.mul(s.p, b.sub(dp, b.bcast(rowDot, att, 0, 1))), b.bcast(b.scalar(attScale(hd)), att))
	dq := b.dot(dscores, []int{2}, []int{0}, s.k, []int{1}, []int{0}) // [heads, seq, hd]
	dk := b.dot(dscores, []int{1}, []int{0}, s.q, []int{1}, []int{0}) // [heads, seq, hd]
	var dy1 *shlo.Value
	for _, p := range []struct {
		name string
		g    *shlo.Value
	}{{"wq", dq}, {"wk", dk}, {"wv", dv}} {
		m := b.mergeHeads(p.g, c)
		d[p.name] = b.dot(s.y1, rows0, nil, m, rows0, nil)
		part := b.dot(m, []int{1}, nil, w[p.name], []int{1}, nil)
		if dy1 == nil {
			dy1 = part
		} else {
			dy1 = b.add(dy1, part)
		}
	}
	dln1, dg1, db1 := b.layerNormBwd(dy1, s.ln1, c.seq, c.width)
	d["ln1_gamma"], d["ln1_beta"] = dg1, db1
	return b.add(dx1, dln1), d
}

// buildTransformerTrain writes one training step's computation for c:
// the loss mean(out²)/2 of the blocks' output and its gradient with
// respect to every block's weights (the backward pass written out by
// hand, as an autodiff would emit it). main takes x [seq, width] and the
// weights, block by block, and returns the loss and the gradients in the
// same order.
func buildTransformerTrain(name string, c tfConfig) ([]byte, error) {
	bld := shlo.New(name)
	b := &g{fn: bld.Main()}
	x := b.input("x", c.seq, c.width)
	var ws []map[string]*shlo.Value
	for l := range c.layers {
		w := map[string]*shlo.Value{}
		for _, p := range c.params() {
			w[p.name] = b.input(fmt.Sprintf("l%d_%s", l, p.name), p.dims...)
		}
		ws = append(ws, w)
	}
	var states []blockState
	h := x
	for _, w := range ws {
		var s blockState
		h, s = b.blockFwd(h, w, c)
		states = append(states, s)
	}
	dims := []int{c.seq, c.width}
	n := float32(c.seq * c.width)
	loss := b.mul(b.reduce(b.mul(h, h), 0, shlo.Add, 0, 1), b.scalar(1/(2*n)))
	dh := b.mul(h, b.bcast(b.scalar(1/n), dims))
	grads := make([]map[string]*shlo.Value, c.layers)
	for l := c.layers - 1; l >= 0; l-- {
		dh, grads[l] = b.blockBwd(dh, states[l], c)
	}
	if b.err != nil {
		return nil, b.err
	}
	outs := []*shlo.Value{loss}
	for l := range c.layers {
		for _, p := range c.params() {
			outs = append(outs, grads[l][p.name])
		}
	}
	if err := b.fn.Return(outs...); err != nil {
		return nil, err
	}
	return bld.Build()
}

func buildTransformer4L() ([]byte, error) {
	return buildTransformerTrain("transformer4l", transformer4)
}

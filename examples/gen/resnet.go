package main

import (
	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	"github.com/gomlx/go-xla/pkg/types"
)

// conv3x3NoBias is conv3x3 without the bias: a convolution followed by
// batch norm has none (the norm's beta takes its place).
func (b *g) conv3x3NoBias(x, k *shlo.Value) *shlo.Value {
	if x == nil || k == nil {
		return nil
	}
	return b.ok(shlo.Convolution(x, k,
		nil, [][2]int{{1, 1}, {1, 1}}, nil, nil,
		0, 3, []int{1, 2},
		2, 3, []int{0, 1},
		0, 3, []int{1, 2},
		1, 1,
		types.DotGeneralPrecisionDefault, types.DotGeneralPrecisionDefault))
}

// batchNorm normalizes NHWC v per channel with the batch's own statistics
// (training mode: mean and biased variance over batch, height and width),
// then scales by gamma and shifts by beta, as GoMLX's BatchNorm does in
// training.
func (b *g) batchNorm(v, gamma, beta *shlo.Value, dims []int) *shlo.Value {
	c := dims[3]
	inv := b.bcast(b.scalar(1/float32(dims[0]*dims[1]*dims[2])), []int{c})
	mean := b.bin(shlo.Multiply, b.reduce(v, 0, shlo.Add, 0, 1, 2), inv)
	vc := b.bin(shlo.Subtract, v, b.bcast(mean, dims, 3))
	variance := b.bin(shlo.Multiply, b.reduce(b.bin(shlo.Multiply, vc, vc), 0, shlo.Add, 0, 1, 2), inv)
	rstd := b.un(shlo.Rsqrt, b.bin(shlo.Add, variance, b.bcast(b.scalar(1e-5), []int{c})))
	scale := b.bin(shlo.Multiply, rstd, gamma)
	return b.bin(shlo.Add, b.bin(shlo.Multiply, vc, b.bcast(scale, dims, 3)), b.bcast(beta, dims, 3))
}

// buildResNetBlock: one ResNet basic block at the size of ResNet's first
// stage, batch 32, 56×56×64 (NHWC): conv 3×3 64→64, batch norm, relu,
// conv 3×3 64→64, batch norm, add the input, relu.
func buildResNetBlock() ([]byte, error) {
	const batch, side, ch = 32, 56, 64
	dims := []int{batch, side, side, ch}
	bld := shlo.New("resnetblock")
	b := &g{fn: bld.Main()}
	x := b.input("x", dims...)
	k1, g1, be1 := b.input("conv1_w", 3, 3, ch, ch), b.input("bn1_gamma", ch), b.input("bn1_beta", ch)
	k2, g2, be2 := b.input("conv2_w", 3, 3, ch, ch), b.input("bn2_gamma", ch), b.input("bn2_beta", ch)
	h := b.relu(b.batchNorm(b.conv3x3NoBias(x, k1), g1, be1, dims), dims)
	h = b.batchNorm(b.conv3x3NoBias(h, k2), g2, be2, dims)
	out := b.relu(b.bin(shlo.Add, h, x), dims)
	if b.err != nil {
		return nil, b.err
	}
	if err := b.fn.Return(out); err != nil {
		return nil, err
	}
	return bld.Build()
}

package main

import (
	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	"github.com/gomlx/go-xla/pkg/types"
)

// conv3x3 is a stride-1 "same" 3×3 convolution of x [n,h,w,cin] (NHWC)
// with kernel k [3,3,cin,cout] (HWIO) plus bias [cout], the layout GoMLX
// uses by default (channels last).
func (b *g) conv3x3(x, k, bias *shlo.Value, n, h, w, cout int) *shlo.Value {
	if x == nil || k == nil {
		return nil
	}
	y := b.ok(shlo.Convolution(x, k,
		nil, [][2]int{{1, 1}, {1, 1}}, nil, nil,
		0, 3, []int{1, 2},
		2, 3, []int{0, 1},
		0, 3, []int{1, 2},
		1, 1,
		types.DotGeneralPrecisionDefault, types.DotGeneralPrecisionDefault))
	return b.bin(shlo.Add, y, b.bcast(bias, []int{n, h, w, cout}, 3))
}

// relu is max(v, 0) for v with shape dims.
func (b *g) relu(v *shlo.Value, dims []int) *shlo.Value {
	return b.bin(shlo.Maximum, v, b.bcast(b.scalar(0), dims))
}

// maxPool2 is a 2×2, stride-2 max pool over the spatial axes of NHWC v:
// reduce_window with max, as GoMLX's MaxPool emits it.
func (b *g) maxPool2(v *shlo.Value) *shlo.Value {
	if v == nil {
		return nil
	}
	negInf := float32(-3.4028235e38)
	return b.ok(shlo.ReduceWindow(v, b.scalar(negInf), b.reducer(shlo.Maximum),
		[]int{1, 2, 2, 1}, []int{1, 2, 2, 1}, nil, nil, nil))
}

// buildCNN: a LeNet-style classifier for 28×28 grey images, batch 16:
// conv 3×3×1→16, relu, max pool 2×2, conv 3×3×16→32, relu, max pool 2×2,
// flatten, dense 1568→10, softmax.
func buildCNN() ([]byte, error) {
	const batch, side, c1, c2, classes = 16, 28, 16, 32, 10
	const flat = (side / 4) * (side / 4) * c2
	bld := shlo.New("cnn")
	b := &g{fn: bld.Main()}
	x := b.input("x", batch, side, side, 1)
	k1, b1 := b.input("conv1_w", 3, 3, 1, c1), b.input("conv1_b", c1)
	k2, b2 := b.input("conv2_w", 3, 3, c1, c2), b.input("conv2_b", c2)
	w3, b3 := b.input("dense_w", flat, classes), b.input("dense_b", classes)

	h1 := b.maxPool2(b.relu(b.conv3x3(x, k1, b1, batch, side, side, c1), []int{batch, side, side, c1}))
	h2 := b.maxPool2(b.relu(b.conv3x3(h1, k2, b2, batch, side/2, side/2, c2), []int{batch, side / 2, side / 2, c2}))
	var flatH *shlo.Value
	if h2 != nil {
		flatH = b.ok(shlo.Reshape(h2, f32(batch, flat)))
	}
	probs := b.softmax(b.dense(flatH, w3, b3, batch, classes), []int{batch, classes})
	if b.err != nil {
		return nil, b.err
	}
	if err := b.fn.Return(probs); err != nil {
		return nil, err
	}
	return bld.Build()
}

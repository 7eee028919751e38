package cpu

import (
	"bytes"
	"context"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestArenaInPlaceAndMisaligned runs a program whose arguments and
// results Run normally uses in place, with arguments alternately aligned
// and misaligned (these go through the arena, which then needs room for
// every buffer): the idle arena kept between runs changes size, and every
// run must give the same results bit for bit, in fresh memory.
func TestArenaInPlaceAndMisaligned(t *testing.T) {
	const src = `func.func @main(%a: tensor<4x5xf32>, %b: tensor<4x5xf32>) -> (tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>) {
  %0 = stablehlo.add %a, %b : tensor<4x5xf32>
  %1 = stablehlo.multiply %0, %a : tensor<4x5xf32>
  %2 = stablehlo.subtract %1, %b : tensor<4x5xf32>
  return %2, %0, %2 : tensor<4x5xf32>, tensor<4x5xf32>, tensor<4x5xf32>
}
`
	m, exe := compileText(t, src)
	if exe.core >= exe.total {
		t.Fatalf("arena core %d bytes, total %d: in-place buffers should not need room", exe.core, exe.total)
	}
	misalign := func(a *stablehlo.Tensor) *stablehlo.Tensor {
		buf := make([]byte, len(a.Data)+1)
		data := buf[1:]
		copy(data, a.Data)
		return &stablehlo.Tensor{Type: a.Type, Data: data}
	}
	run := func(args []*stablehlo.Tensor) []*stablehlo.Tensor {
		t.Helper()
		got, err := exe.Run(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 3 {
			t.Fatalf("%d results, want 3", len(got))
		}
		if &got[0].Data[0] == &got[2].Data[0] {
			t.Fatal("results 0 and 2 share memory")
		}
		return got
	}
	for round := 0; round < 6; round++ {
		args := randomArgs(m, uint64(round))
		// The first run of a round uses everything in place.
		want := run(args)
		var others []*stablehlo.Tensor
		switch round % 3 {
		case 0:
			others = []*stablehlo.Tensor{misalign(args[0]), args[1]}
		case 1:
			others = []*stablehlo.Tensor{args[0], misalign(args[1])}
		case 2:
			others = []*stablehlo.Tensor{misalign(args[0]), misalign(args[1])}
		}
		for _, a := range [][]*stablehlo.Tensor{others, args} {
			got := run(a)
			for i := range got {
				if !bytes.Equal(got[i].Data, want[i].Data) {
					t.Fatalf("round %d result %d: got %x, want %x", round, i, got[i].Data, want[i].Data)
				}
			}
		}
	}
}

package cpu

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// philoxProgram runs rng_bit_generator PHILOX (and DEFAULT) on a 2-word
// and a 3-word state: outputs of every width, signed and float ones,
// element counts that are not multiples of the block size, scalars, and
// states fed from one call into the next.
var philoxProgram = func() string {
	type rng struct{ alg, state, out string }
	ops := []rng{
		{"PHILOX", "%s2", "tensor<7xui32>"},
		{"PHILOX", "%n0", "tensor<3x3xui64>"}, // chained on a 2-word state
		{"DEFAULT", "%s3", "tensor<2x5xui32>"},
		{"PHILOX", "%n2", "tensor<5xui64>"}, // chained on a 3-word state
		{"PHILOX", "%s3", "tensor<3x3xi8>"},
		{"PHILOX", "%s3", "tensor<6xui16>"},
		{"PHILOX", "%s2", "tensor<5xf32>"},
		{"PHILOX", "%s3", "tensor<3xf64>"},
		{"PHILOX", "%s3", "tensor<2x3xbf16>"},
		{"PHILOX", "%s2", "tensor<ui64>"},
		{"DEFAULT", "%s2", "tensor<i32>"},
		{"PHILOX", "%s3", "tensor<1x1x9xi64>"},
		{"PHILOX", "%s3", "tensor<0x3xui32>"},
		{"PHILOX", "%s2", "tensor<5x3xui8>"}, // 4 blocks: the 2-word counter wraps mid-stream (seed 1)
		{"DEFAULT", "%s2", "tensor<0xui64>"},
		{"PHILOX", "%s2", "tensor<7xi64>"},
	}
	var body, rets, types []string
	for i, o := range ops {
		st := "tensor<2xui64>"
		if o.state == "%s3" || o.state == "%n2" {
			st = "tensor<3xui64>"
		}
		body = append(body, fmt.Sprintf(`  %%n%d, %%r%d = "stablehlo.rng_bit_generator"(%s) <{rng_algorithm = #stablehlo<rng_algorithm %s>}> : (%s) -> (%s, %s)`,
			i, i, o.state, o.alg, st, st, o.out))
		rets = append(rets, fmt.Sprintf("%%n%d", i), fmt.Sprintf("%%r%d", i))
		types = append(types, st, o.out)
	}
	return fmt.Sprintf("func.func @main(%%s2: tensor<2xui64>, %%s3: tensor<3xui64>) -> (%s) {\n%s\n  return %s : %s\n}\n",
		strings.Join(types, ", "), strings.Join(body, "\n"), strings.Join(rets, ", "), strings.Join(types, ", "))
}()

// TestDifferentialPhilox compares the cpu backend's rng_bit_generator
// PHILOX with the interpreter's byte for byte (no NaN leniency: float
// outputs are raw bits), on random seeds and on counters whose low word
// (and, for a 3-word state, high word) wraps mid-stream.
func TestDifferentialPhilox(t *testing.T) {
	m, exe := compileText(t, philoxProgram)
	for seed := uint64(0); seed < 6; seed++ {
		args := stablehlo.RandomArgs(m.Main(), seed)
		s2, s3 := args[0].Uint64s(), args[1].Uint64s()
		switch seed {
		case 1:
			s2[1] = ^uint64(0) - 1
			s3[1] = ^uint64(0) - 2
		case 2:
			s3[1], s3[2] = ^uint64(0), ^uint64(0)
		case 3:
			clear(s2)
			clear(s3)
		}
		got, want := runBoth(t, exe, m, args)
		if len(got) != len(want) {
			t.Fatalf("%d outputs, want %d", len(got), len(want))
		}
		for j := range got {
			if !got[j].Type.Equal(want[j].Type) || !bytes.Equal(got[j].Data, want[j].Data) {
				t.Errorf("seed %d output %d:\ncpu    %v\ninterp %v", seed, j, got[j], want[j])
			}
		}
	}
}

// TestPhiloxKnownAnswers runs the Random123 Philox-4x32-10 known-answer
// vectors (tests/kat_vectors) through the compiled op: with a 3-word
// state [key, lo, hi] the first block encrypts the counter (lo, hi), so
// four ui32 outputs are exactly the vector's result words.
func TestPhiloxKnownAnswers(t *testing.T) {
	_, exe := compileText(t, `func.func @main(%s: tensor<3xui64>) -> (tensor<3xui64>, tensor<4xui32>) {
  %n, %r = "stablehlo.rng_bit_generator"(%s) <{rng_algorithm = #stablehlo<rng_algorithm PHILOX>}> : (tensor<3xui64>) -> (tensor<3xui64>, tensor<4xui32>)
  return %n, %r : tensor<3xui64>, tensor<4xui32>
}`)
	for _, c := range []struct {
		state [3]uint64
		want  []uint32
	}{
		{[3]uint64{0, 0, 0}, []uint32{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
		{[3]uint64{^uint64(0), ^uint64(0), ^uint64(0)}, []uint32{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
		{[3]uint64{0x299f31d0a4093822, 0x85a308d3243f6a88, 0x0370734413198a2e}, []uint32{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
	} {
		st := stablehlo.NewTensor(stablehlo.TensorType{DType: stablehlo.UI64, Shape: []int64{3}})
		copy(st.Uint64s(), c.state[:])
		out, err := exe.Run(t.Context(), []*stablehlo.Tensor{st})
		if err != nil {
			t.Fatal(err)
		}
		if got := out[1].Uint32s(); !slices.Equal(got, c.want) {
			t.Errorf("state %#x: %#x, want %#x", c.state, got, c.want)
		}
		// One block used: the counter advances by one, carrying into hi.
		lo, hi := c.state[1]+1, c.state[2]
		if lo == 0 {
			hi++
		}
		if got, want := out[0].Uint64s(), []uint64{c.state[0], lo, hi}; !slices.Equal(got, want) {
			t.Errorf("state %#x: new state %#x, want %#x", c.state, got, want)
		}
	}
}

package cpu

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// topKSpecial names the values of topKRows by their bit patterns per
// type, so that each NaN's sign reaches the kernel as written.
var topKSpecial = map[string]map[string]uint64{
	"f16":  {"+nan": 0x7e00, "-nan": 0xfe00, "+inf": 0x7c00, "-inf": 0xfc00, "+0": 0, "-0": 0x8000, "1": 0x3c00, "-2": 0xc000, "3": 0x4200},
	"bf16": {"+nan": 0x7fc0, "-nan": 0xffc0, "+inf": 0x7f80, "-inf": 0xff80, "+0": 0, "-0": 0x8000, "1": 0x3f80, "-2": 0xc000, "3": 0x4040},
	"f32":  {"+nan": 0x7fc00000, "-nan": 0xffc00000, "+inf": 0x7f800000, "-inf": 0xff800000, "+0": 0, "-0": 0x80000000, "1": 0x3f800000, "-2": 0xc0000000, "3": 0x40400000},
	"f64": {"+nan": 0x7ff8000000000000, "-nan": 0xfff8000000000000, "+inf": 0x7ff0000000000000, "-inf": 0xfff0000000000000,
		"+0": 0, "-0": 1 << 63, "1": math.Float64bits(1), "-2": math.Float64bits(-2), "3": math.Float64bits(3)},
}

// topKRows are top_k's input rows and the indices XLA returns for them
// (IEEE totalOrder, descending; equal values keep the lower index first).
var topKRows = []struct {
	in   []string
	want []int32
}{
	{[]string{"1", "-nan", "+nan", "-inf", "-0", "+inf", "+0", "-2", "1"}, []int32{2, 5, 0, 8, 6, 4, 7, 3, 1}},
	{[]string{"-0", "+0", "-nan", "-0", "3", "+nan", "+nan", "+0", "-inf"}, []int32{5, 6, 4, 1, 7, 0, 3, 8, 2}},
}

// TestDifferentialTopKTotalOrder compares chlo.top_k over NaNs of both
// signs, ±Inf, ±0 and ties with the interpreter and with the order XLA
// uses (+NaN first, -NaN last, +0 before -0, ties by lower index), on
// every float type, for k equal to and less than the row length.
func TestDifferentialTopKTotalOrder(t *testing.T) {
	for _, dt := range []string{"f16", "bf16", "f32", "f64"} {
		t.Run(dt, func(t *testing.T) {
			src := strings.NewReplacer("T", dt).Replace(`func.func @main(%x: tensor<2x9xT>) -> (tensor<2x9xT>, tensor<2x9xi32>, tensor<2x4xT>, tensor<2x4xi32>) {
  %v, %i = chlo.top_k(%x, k = 9) : tensor<2x9xT> -> (tensor<2x9xT>, tensor<2x9xi32>)
  %w, %j = chlo.top_k(%x, k = 4) : tensor<2x9xT> -> (tensor<2x4xT>, tensor<2x4xi32>)
  return %v, %i, %w, %j : tensor<2x9xT>, tensor<2x9xi32>, tensor<2x4xT>, tensor<2x4xi32>
}`)
			m, exe := compileText(t, src)
			x := stablehlo.NewTensor(m.Main().Args[0].Type)
			es := int(x.Type.DType.Size())
			for r, row := range topKRows {
				for c, name := range row.in {
					bits := topKSpecial[dt][name]
					off := (r*9 + c) * es
					switch es {
					case 2:
						binary.LittleEndian.PutUint16(x.Data[off:], uint16(bits))
					case 4:
						binary.LittleEndian.PutUint32(x.Data[off:], uint32(bits))
					default:
						binary.LittleEndian.PutUint64(x.Data[off:], bits)
					}
				}
			}
			got, want := runBoth(t, exe, m, []*stablehlo.Tensor{x})
			// Values bit for bit (a NaN's sign included), indices exactly.
			for o := range got {
				if !slices.Equal(got[o].Data, want[o].Data) {
					t.Errorf("output %d:\ncpu    %v\ninterp %v", o, got[o], want[o])
				}
			}
			for r, row := range topKRows {
				for _, o := range []struct {
					out int
					k   int
				}{{1, 9}, {3, 4}} {
					idx := got[o.out].Int32s()[r*o.k : (r+1)*o.k]
					if !slices.Equal(idx, row.want[:o.k]) {
						t.Errorf("row %d k=%d: indices %v, want %v", r, o.k, idx, row.want[:o.k])
					}
					for j, w := range row.want[:o.k] {
						g := got[o.out-1].Data[(r*o.k+j)*es : (r*o.k+j+1)*es]
						in := x.Data[(r*9+int(w))*es : (r*9+int(w)+1)*es]
						if !slices.Equal(g, in) {
							t.Errorf("row %d k=%d: value %d has bits %x, want %x", r, o.k, j, g, in)
						}
					}
				}
			}
			if t.Failed() {
				t.Log(fmt.Sprint(x))
			}
		})
	}
}

package cpu

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"testing"
	"unsafe"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// lanesRows returns rows × n values whose rows exercise the lanes
// variant's fast path and every way out of it: random finite rows, a NaN
// (two payloads, both signs) at the first, a middle and the last
// position, rows of signed zeros only (the result is a zero whose sign
// the order decides), zeros among negatives, infinities, subnormals and
// ties between equal values.
func lanesRows(rows, n int, seed uint64) []float64 {
	negZero := math.Copysign(0, -1)
	nan2 := math.Float64frombits(0x7ff4000000000123) // another payload
	out := make([]float64, 0, rows*n)
	s := seed
	rnd := func() float64 {
		s = s*6364136223846793005 + 1442695040888963407
		return float64(int64(s>>11)-(1<<52)) / (1 << 50)
	}
	for r := 0; r < rows; r++ {
		row := make([]float64, n)
		for i := range row {
			row[i] = rnd()
		}
		switch r % 12 {
		case 1:
			row[0] = math.NaN()
		case 2:
			row[n/2] = -math.NaN()
			row[n-1] = nan2
		case 3:
			row[n-1] = math.NaN()
		case 4:
			for i := range row {
				row[i] = negZero
			}
		case 5:
			for i := range row {
				row[i] = []float64{0, negZero}[(i+r)%2]
			}
		case 6:
			for i := range row {
				row[i] = -math.Abs(row[i]) - 1
			}
			row[(r*7)%n] = negZero
			row[(r*5+1)%n] = 0
		case 7:
			for i := range row {
				row[i] = math.Inf(-1)
			}
		case 8:
			row[r%n] = math.Inf(1)
			row[(r+3)%n] = math.Inf(-1)
		case 9:
			for i := range row {
				row[i] = float64(i%3) * 1e-310 * float64(1-2*(i%2))
			}
		case 10:
			for i := range row {
				row[i] = 2.5
			}
		}
		out = append(out, row...)
	}
	return out
}

// TestReduceLanesMatchesScalar checks the lanes variant of float
// maximum and minimum reductions (reduce.go) against the in-order scalar
// loop, bit for bit (NaN payloads included), and against the
// interpreter, on f32 and f64, row lengths at and around the vector
// width and odd ones, initial values that send every row to the scalar
// loop (NaN, ±0) and those that do not, a fused elementwise op, and 1
// and 3 threads of the parallel variant.
func TestReduceLanesMatchesScalar(t *testing.T) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	pl := &pipeline{b: New(), cc: comp, log: slog.Default()}
	type tc struct {
		dt, op, init string
		rows, n      int
		negate       bool
		threads      int
	}
	var cases []tc
	for _, dt := range []string{"f32", "f64"} {
		for _, op := range []string{"maximum", "minimum"} {
			inf := map[string]string{"maximum": "0xFF800000", "minimum": "0x7F800000"}[op]
			if dt == "f64" {
				inf = map[string]string{"maximum": "0xFFF0000000000000", "minimum": "0x7FF0000000000000"}[op]
			}
			for _, init := range []string{inf, "0.0", "-0.0", "0x7FC00000", "0.75"} {
				if dt == "f64" && init == "0x7FC00000" {
					init = "0x7FF8000000000000"
				}
				for _, n := range []int{4, 8, 9, 16, 17, 31, 67} {
					cases = append(cases, tc{dt, op, init, 24, n, n%2 == 1, 1})
				}
			}
			// Enough rows for the parallel variant (parMinElements elements).
			cases = append(cases, tc{dt, op, inf, 4100, 33, true, 3})
		}
	}
	for _, c := range cases {
		name := fmt.Sprintf("%s/%s/init=%s/%dx%d/neg=%v/threads=%d", c.dt, c.op, c.init, c.rows, c.n, c.negate, c.threads)
		t.Run(name, func(t *testing.T) {
			ty := fmt.Sprintf("tensor<%dx%dx%s>", c.rows, c.n, c.dt)
			body := "%0 = stablehlo.abs %a : " + ty
			if c.negate {
				body = "%0 = stablehlo.negate %a : " + ty
			}
			src := fmt.Sprintf(`func.func @main(%%a: %[1]s) -> tensor<%[2]dx%[3]s> {
  %[4]s
  %%z = stablehlo.constant dense<%[5]s> : tensor<%[3]s>
  %%1 = stablehlo.reduce(%%0 init: %%z) applies stablehlo.%[6]s across dimensions = [1] : (%[1]s, tensor<%[3]s>) -> tensor<%[2]dx%[3]s>
  return %%1 : tensor<%[2]dx%[3]s>
}`, ty, c.rows, c.dt, body, c.init, c.op)
			if !c.negate {
				// abs would hide the signs; reduce the argument itself.
				src = fmt.Sprintf(`func.func @main(%%a: %[1]s) -> tensor<%[2]dx%[3]s> {
  %%z = stablehlo.constant dense<%[4]s> : tensor<%[3]s>
  %%1 = stablehlo.reduce(%%a init: %%z) applies stablehlo.%[5]s across dimensions = [1] : (%[1]s, tensor<%[3]s>) -> tensor<%[2]dx%[3]s>
  return %%1 : tensor<%[2]dx%[3]s>
}`, ty, c.rows, c.dt, c.init, c.op)
			}
			l := lowerText(t, src, "lanes.mlir")
			var k *kernel
			for _, op := range l.roots {
				if op.Name == "reduce" {
					if k, err = newKernel(l, op, c.threads); err != nil {
						t.Fatal(err)
					}
				}
			}
			if k == nil || len(k.inputs) != 1 {
				t.Fatalf("no reduce kernel with one input in %s", src)
			}
			scalar, lanes := -1, -1
			for i, cfg := range k.cands {
				par := k.parallel(cfg) == (c.threads > 1)
				if cfg.Name == "scalar" && scalar < 0 && par {
					scalar = i
				}
				if cfg.Name == "lanes" && par {
					lanes = i
				}
			}
			if size := map[string]int{"f32": 4, "f64": 8}[c.dt]; c.n*size < lanesWidth {
				// Rows shorter than a vector get no lanes variant.
				if lanes >= 0 {
					t.Fatalf("candidates %v: a lanes variant for rows of %d", k.cands, c.n)
				}
				return
			}
			if scalar < 0 || lanes < 0 {
				t.Fatalf("candidates %v: want scalar and lanes (parallel: %v)", k.cands, c.threads > 1)
			}
			u, err := pl.candidateUnitOf(k, []int{scalar, lanes})
			if err != nil {
				t.Fatal(err)
			}
			so, err := pl.cc.BuildShared(context.Background(), u.src)
			if err != nil {
				t.Fatal(err)
			}
			lib, err := cc.OpenBytes(so)
			if err != nil {
				t.Fatal(err)
			}
			defer lib.Close()
			h, err := newHarness(k)
			if err != nil {
				t.Fatal(err)
			}
			defer h.free()

			vals := lanesRows(c.rows, c.n, uint64(c.n))
			shape := []int64{int64(c.rows), int64(c.n)}
			var arg *stablehlo.Tensor
			if c.dt == "f32" {
				arg, err = stablehlo.FromFloat32s(shape, f32s(vals))
			} else {
				arg, err = stablehlo.FromFloat64s(shape, vals)
			}
			if err != nil {
				t.Fatal(err)
			}
			copy(unsafe.Slice((*byte)(h.bufs[0]), len(arg.Data)), arg.Data)
			m, err := stablehlo.Parse([]byte(src), "lanes.mlir")
			if err != nil {
				t.Fatal(err)
			}
			want, err := stablehlo.Eval(m, "", []*stablehlo.Tensor{arg})
			if err != nil {
				t.Fatal(err)
			}

			var outs [2][]byte
			for i, sym := range u.syms {
				fn, err := resolveKernel(lib, sym)
				if err != nil {
					t.Fatal(err)
				}
				h.clearOutputs()
				fn.run(h.ptrs, c.threads)
				outs[i] = h.outputs()[0]
			}
			if !bytes.Equal(outs[0], outs[1]) {
				es := len(outs[0]) / c.rows
				for r := 0; r < c.rows; r++ {
					a, b := outs[0][r*es:(r+1)*es], outs[1][r*es:(r+1)*es]
					if !bytes.Equal(a, b) {
						t.Fatalf("row %d: lanes %x, scalar %x (row %v)", r, binary.LittleEndian.Uint64(append(b, make([]byte, 8)...)), binary.LittleEndian.Uint64(append(a, make([]byte, 8)...)), vals[r*c.n:(r+1)*c.n])
					}
				}
			}
			got := &stablehlo.Tensor{Type: want[0].Type, Data: outs[1]}
			if i, ok := sameValues(got, want[0]); !ok {
				t.Fatalf("lanes differs from the interpreter at %d: %v, want %v", i, got.Float64At(i), want[0].Float64At(i))
			}
		})
	}
}

package cpu

import (
	"context"
	"encoding/binary"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// midPrograms have reductions and loops of dear elements (parMin)
// between parMinWork and parMinElements elements, whose parallel variant
// is the default and whose serial one a candidate, at edge sizes: kept
// elements fewer than the parts of a call (6 rows, 8 or 12 parts), odd
// counts of kept rows and columns, kept dims after the reduced one, a
// two-result reduction (argmax, not reorderable); and kernels that stay
// serial: cheap elements, one kept row (too few to split) and empty
// tensors (no work at all).
var midPrograms = map[string]string{
	"few_rows": `func.func @main(%a: tensor<6x6001xf32>) -> tensor<6xf32> {
  %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %t = stablehlo.tanh %a : tensor<6x6001xf32>
  %0 = stablehlo.reduce(%t init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<6x6001xf32>, tensor<f32>) -> tensor<6xf32>
  return %0 : tensor<6xf32>
}`,
	"dear_max_odd": `func.func @main(%a: tensor<4x129x65xf64>) -> tensor<4x129xf64> {
  %0 = stablehlo.exponential %a : tensor<4x129x65xf64>
  %m = stablehlo.constant dense<0x7FF0000000000000> : tensor<f64>
  %1 = stablehlo.reduce(%0 init: %m) applies stablehlo.minimum across dimensions = [2] : (tensor<4x129x65xf64>, tensor<f64>) -> tensor<4x129xf64>
  return %1 : tensor<4x129xf64>
}`,
	"cheap_divide": `func.func @main(%a: tensor<4x128x128xf32>, %b: tensor<4x128xf32>) -> tensor<4x128x128xf32> {
  %0 = stablehlo.broadcast_in_dim %b, dims = [0, 1] : (tensor<4x128xf32>) -> tensor<4x128x128xf32>
  %1 = stablehlo.divide %a, %0 : tensor<4x128x128xf32>
  return %1 : tensor<4x128x128xf32>
}`,
	"cheap_sum": `func.func @main(%a: tensor<128x256xf32>) -> tensor<128xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : (tensor<128x256xf32>, tensor<f32>) -> tensor<128xf32>
  return %0 : tensor<128xf32>
}`,
	"softmax_max_odd": `func.func @main(%a: tensor<4x129x65xf32>) -> tensor<4x129xf32> {
  %s = stablehlo.constant dense<0.125> : tensor<4x129x65xf32>
  %0 = stablehlo.multiply %a, %s : tensor<4x129x65xf32>
  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %1 = stablehlo.reduce(%0 init: %m) applies stablehlo.maximum across dimensions = [2] : (tensor<4x129x65xf32>, tensor<f32>) -> tensor<4x129xf32>
  return %1 : tensor<4x129xf32>
}`,
	"kept_last": `func.func @main(%a: tensor<257x131xf64>) -> tensor<131xf64> {
  %z = stablehlo.constant dense<0.0> : tensor<f64>
  %e = stablehlo.exponential %a : tensor<257x131xf64>
  %0 = stablehlo.reduce(%e init: %z) applies stablehlo.add across dimensions = [0] : (tensor<257x131xf64>, tensor<f64>) -> tensor<131xf64>
  return %0 : tensor<131xf64>
}`,
	"argmax": `func.func @main(%x: tensor<131x257xf32>, %i: tensor<131x257xi32>) -> (tensor<131xf32>, tensor<131xi32>) {
  %m = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %z = stablehlo.constant dense<0> : tensor<i32>
  %a = stablehlo.tanh %x : tensor<131x257xf32>
  %0:2 = stablehlo.reduce(%a init: %m), (%i init: %z) across dimensions = [1] : (tensor<131x257xf32>, tensor<131x257xi32>, tensor<f32>, tensor<i32>) -> (tensor<131xf32>, tensor<131xi32>)
   reducer(%x: tensor<f32>, %y: tensor<f32>) (%xi: tensor<i32>, %yi: tensor<i32>) {
    %ge = stablehlo.compare GE, %x, %y : (tensor<f32>, tensor<f32>) -> tensor<i1>
    %v = stablehlo.select %ge, %x, %y : tensor<i1>, tensor<f32>
    %k = stablehlo.select %ge, %xi, %yi : tensor<i1>, tensor<i32>
    stablehlo.return %v, %k : tensor<f32>, tensor<i32>
  }
  return %0#0, %0#1 : tensor<131xf32>, tensor<131xi32>
}`,
	"exp_loop_odd": `func.func @main(%a: tensor<3x101x111xf32>, %b: tensor<3x101x111xf32>) -> tensor<3x101x111xf32> {
  %0 = stablehlo.subtract %a, %b : tensor<3x101x111xf32>
  %1 = stablehlo.exponential %0 : tensor<3x101x111xf32>
  return %1 : tensor<3x101x111xf32>
}`,
	"one_row": `func.func @main(%a: tensor<1x40001xf32>) -> tensor<1xf32> {
  %z = stablehlo.constant dense<0xFF800000> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.maximum across dimensions = [1] : (tensor<1x40001xf32>, tensor<f32>) -> tensor<1xf32>
  return %0 : tensor<1xf32>
}`,
	"empty": `func.func @main(%a: tensor<40000x0xf32>, %b: tensor<0x40000xf32>) -> (tensor<40000xf32>, tensor<40000xf32>) {
  %z = stablehlo.constant dense<1.5> : tensor<f32>
  %0 = stablehlo.reduce(%a init: %z) applies stablehlo.add across dimensions = [1] : (tensor<40000x0xf32>, tensor<f32>) -> tensor<40000xf32>
  %1 = stablehlo.reduce(%b init: %z) applies stablehlo.maximum across dimensions = [0] : (tensor<0x40000xf32>, tensor<f32>) -> tensor<40000xf32>
  return %0, %1 : tensor<40000xf32>, tensor<40000xf32>
}`,
}

// midSerial names the programs none of whose kernels may split: cheap
// elements (a float maximum over the last dim without a dear op fused in
// runs branch-free in the lanes variant, reduce.go), too few kept rows,
// or no elements.
var midSerial = map[string]bool{"cheap_divide": true, "cheap_sum": true, "softmax_max_odd": true, "one_row": true, "empty": true}

// TestMidSizedParallelCandidates checks, for 2 and 3 threads, that every
// kernel of midPrograms that may split has its parallel variant first
// (the default) and a serial one beside it, that the others have none,
// and that every candidate gives the same bits on one part as on all of
// them and agrees with the default.
func TestMidSizedParallelCandidates(t *testing.T) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	pl := &pipeline{b: New(), cc: comp, log: slog.Default()}
	for _, threads := range []int{2, 3} {
		for name, src := range midPrograms {
			t.Run(fmt.Sprintf("%s/threads=%d", name, threads), func(t *testing.T) {
				l := lowerText(t, src, name+".mlir")
				for _, op := range l.roots {
					k, err := newKernel(l, op, threads)
					if err != nil {
						t.Fatal(err)
					}
					serial := false
					for _, c := range k.cands {
						serial = serial || !k.parallel(c)
					}
					if midSerial[name] {
						if k.parallel(k.cands[0]) {
							t.Fatalf("%s: default %s is parallel", k.desc, k.cands[0])
						}
					} else if !k.parallel(k.cands[0]) || !serial {
						t.Fatalf("%s: candidates %v, want a parallel default and a serial candidate", k.desc, k.cands)
					}
					k.cands = distinctCandidates(k.cands)
					checkCandidates(t, pl, k, threads)
				}
			})
		}
	}
}

// TestMidSizedThreadsMatchInterpreter compiles midPrograms untuned (so
// the mid-sized kernels run their parallel default) on 1, 2 and 3
// threads and compares every output with the interpreter's.
func TestMidSizedThreadsMatchInterpreter(t *testing.T) {
	untunedOnThreads(t, midPrograms, 7, func(t *testing.T, exe *Executable, args, want []*stablehlo.Tensor) {
		if err := checkRun(exe, args, want); err != nil {
			t.Fatal(err)
		}
	})
}

// untunedOnThreads compiles each of programs untuned on 1, 2 and 3
// threads and hands check the executable, random arguments (seed) and
// the interpreter's outputs for them, in a subtest per program and
// thread count.
func untunedOnThreads(t *testing.T, programs map[string]string, seed uint64, check func(t *testing.T, exe *Executable, args, want []*stablehlo.Tensor)) {
	t.Helper()
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	for name, src := range programs {
		m, err := stablehlo.Parse([]byte(src), name+".mlir")
		if err != nil {
			t.Fatal(err)
		}
		args := randomArgs(m, seed)
		want, err := stablehlo.Eval(m, "", args)
		if err != nil {
			t.Fatal(err)
		}
		for _, threads := range []int{1, 2, 3} {
			t.Run(fmt.Sprintf("%s/threads=%d", name, threads), func(t *testing.T) {
				b := New()
				b.Threads = threads
				b.NoTune = true
				exe, err := b.CompileModule(context.Background(), m, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer exe.Close()
				check(t, exe, args, want)
			})
		}
	}
}

// TestLeadingReduceRowMajor: a reduction of cheap elements whose reduced
// dimensions all come before its kept ones defaults to rowmajor and is
// left untuned; a dear one (a float maximum) and one that reduces a
// trailing dimension keep their defaults. All give the interpreter's
// bits (NaNs and signed zeros among the inputs), tuned and untuned, on 1
// and 2 threads.
func TestLeadingReduceRowMajor(t *testing.T) {
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	prog := func(dt, op, init string, dims string, out string) string {
		return fmt.Sprintf(`func.func @main(%%x: tensor<6x5x7x24x%[1]s>) -> tensor<%[5]s%[1]s> {
  %%c = stablehlo.constant dense<%[3]s> : tensor<%[1]s>
  %%r = stablehlo.reduce(%%x init: %%c) applies stablehlo.%[2]s across dimensions = [%[4]s] : (tensor<6x5x7x24x%[1]s>, tensor<%[1]s>) -> tensor<%[5]s%[1]s>
  return %%r : tensor<%[5]s%[1]s>
}`, dt, op, init, dims, out)
	}
	for _, c := range []struct {
		name, src string
		leading   bool
	}{
		{"sum_f32", prog("f32", "add", "0.0", "0, 1, 2", "24x"), true},
		{"sum_f64", prog("f64", "add", "0.0", "0, 1", "7x24x"), true},
		// A running float maximum is dear (parMin): it keeps its
		// default, which may split over threads.
		{"max_f64", prog("f64", "maximum", "0xFFF0000000000000", "0, 1", "7x24x"), false},
		{"sum_trailing", prog("f32", "add", "0.0", "3", "6x5x7x"), false},
	} {
		for _, threads := range []int{1, 2} {
			for _, noTune := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/threads=%d/notune=%v", c.name, threads, noTune), func(t *testing.T) {
					b := New()
					b.Threads, b.NoTune = threads, noTune
					m, exe := compileTextWith(t, c.src, b)
					for _, k := range exe.Kernels() {
						if rm := strings.HasPrefix(k.Config, "rowmajor"); rm != c.leading || (c.leading && k.Tuned) {
							t.Errorf("kernel %s: %s, tuned %v", k.Desc, k.Config, k.Tuned)
						}
					}
					args := randomArgs(m, 3)
					x := args[0]
					for _, i := range []int64{0, 17, 300, 301} {
						v := []float64{math.NaN(), math.Copysign(0, -1), 0, math.Inf(-1)}[i%4]
						if x.Type.DType == stablehlo.F32 {
							binary.LittleEndian.PutUint32(x.Data[4*i:], math.Float32bits(float32(v)))
						} else {
							binary.LittleEndian.PutUint64(x.Data[8*i:], math.Float64bits(v))
						}
					}
					got, want := runBoth(t, exe, m, args)
					assertSame(t, "", got, want)
				})
			}
		}
	}
}

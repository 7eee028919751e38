package cpu

import (
	"context"
	"fmt"

	"math/rand/v2"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestDifferentialControlFlow compares the cpu backend with the
// interpreter on seeded random programs built around while, if and case:
// loops whose trip count comes from an argument (zero included), bodies
// that return their state permuted (the plan must stage those copies),
// kernels inside regions (dot_general, reduce, elementwise fusions), an
// if nested in the loop body, a while nested in a case branch, values
// captured from outside (splat constants included), case indices out of
// range (§case: the last branch runs), and cholesky and the Bessel
// functions on the loop's results. Integer results must agree bit for bit,
// float ones within a tolerance (the C compiler may fuse multiply-adds).
func TestDifferentialControlFlow(t *testing.T) {
	rng := rand.New(rand.NewPCG(17, 3))
	randomDifferential(t, 6, func(i int) (string, string) {
		return fmt.Sprint(i), randomControlProgram(rng)
	}, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		for run := 0; run < 3; run++ {
			args := stablehlo.RandomArgs(m.Main(), uint64(10*i+run))
			args[2].Int32s()[0] = int32(rng.IntN(5))     // trip count 0..4
			args[3].Int32s()[0] = int32(rng.IntN(7) - 2) // case index -2..4
			args[4].Data[0] = byte(rng.IntN(2))
			got, want := runBoth(t, exe, m, args)
			what := fmt.Sprintf("run %d (n=%d k=%d p=%d)", run, args[2].Int32s()[0], args[3].Int32s()[0], args[4].Data[0])
			assertSame(t, what, got, want, 0)
			assertClose(t, got[1:9], want[1:9], 1e-4)
			assertClose(t, got[9:], want[9:], 1e-2)
		}
	})
}

// randomControlProgram returns a program in the shape described at
// TestDifferentialControlFlow; rng picks how the loop body returns its
// state, the case branches, the cholesky triangle and the Bessel scales.
func randomControlProgram(rng *rand.Rand) string {
	pick := func(s ...string) string { return s[rng.IntN(len(s))] }
	// The body's returned (a, b): permutations, pass-through, captured.
	ret := pick("%sel#0, %sel#1", "%b, %a", "%sel#1, %a", "%a, %t", "%x, %sel#0", "%b, %b")
	lower := pick("true", "false")
	scale := pick("1.0", "4.0", "12.0")
	bessel := pick("i0e", "i1e")
	other := map[string]string{"i0e": "i1e", "i1e": "i0e"}[bessel]
	var b strings.Builder
	b.WriteString(`func.func @main(%x: tensor<3x4xf32>, %w: tensor<4x4xf32>, %n: tensor<i32>, %k: tensor<i32>, %p: tensor<i1>, %m: tensor<4x4xf64>, %v: tensor<8xf32>, %u: tensor<8xf64>, %h: tensor<8xbf16>) ->
    (tensor<i32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x4xf64>, tensor<8xf32>, tensor<8xf64>, tensor<8xbf16>) {
  %c0 = stablehlo.constant dense<0> : tensor<i32>
  %one = stablehlo.constant dense<1> : tensor<i32>
  %two = stablehlo.constant dense<2> : tensor<i32>
  %zf = stablehlo.constant dense<0.0> : tensor<f32>
  %half = stablehlo.constant dense<0.5> : tensor<3x4xf32>
  %r:4 = stablehlo.while(%i = %c0, %a = %x, %b = %x, %s = %zf) : tensor<i32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>
   cond {
    %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %lt : tensor<i1>
  } do {
    %d = stablehlo.dot_general %a, %w, contracting_dims = [1] x [0] : (tensor<3x4xf32>, tensor<4x4xf32>) -> tensor<3x4xf32>
    %t = stablehlo.tanh %d : tensor<3x4xf32>
    %e = stablehlo.multiply %b, %half : tensor<3x4xf32>
    %i1 = stablehlo.add %i, %one : tensor<i32>
    %q = stablehlo.remainder %i, %two : tensor<i32>
    %odd = stablehlo.compare EQ, %q, %one, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    %sel:2 = "stablehlo.if"(%odd) ({
      stablehlo.return %t, %e : tensor<3x4xf32>, tensor<3x4xf32>
    }, {
      %ng = stablehlo.negate %t : tensor<3x4xf32>
      stablehlo.return %e, %ng : tensor<3x4xf32>, tensor<3x4xf32>
    }) : (tensor<i1>) -> (tensor<3x4xf32>, tensor<3x4xf32>)
    %sum = stablehlo.reduce(%t init: %zf) applies stablehlo.add across dimensions = [0, 1] : (tensor<3x4xf32>, tensor<f32>) -> tensor<f32>
    %s1 = stablehlo.add %s, %sum : tensor<f32>
    stablehlo.return %i1, ` + ret + `, %s1 : tensor<i32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>
  }
  %cs = "stablehlo.case"(%k) ({
    stablehlo.return %r#1 : tensor<3x4xf32>
  }, {
    %y = stablehlo.add %r#1, %r#2 : tensor<3x4xf32>
    stablehlo.return %y : tensor<3x4xf32>
  }, {
    %l:2 = stablehlo.while(%j = %c0, %z = %r#2) : tensor<i32>, tensor<3x4xf32>
     cond {
      %jl = stablehlo.compare LT, %j, %k, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %jl : tensor<i1>
    } do {
      %j1 = stablehlo.add %j, %one : tensor<i32>
      %z1 = stablehlo.add %z, %half : tensor<3x4xf32>
      stablehlo.return %j1, %z1 : tensor<i32>, tensor<3x4xf32>
    }
    stablehlo.return %l#1 : tensor<3x4xf32>
  }) : (tensor<i32>) -> tensor<3x4xf32>
  %ip = "stablehlo.if"(%p) ({
    %c = stablehlo.constant dense<1.5> : tensor<3x4xf32>
    stablehlo.return %c : tensor<3x4xf32>
  }, {
    stablehlo.return %x : tensor<3x4xf32>
  }) : (tensor<i1>) -> tensor<3x4xf32>
  %mm = stablehlo.dot_general %m, %m, contracting_dims = [1] x [1] : (tensor<4x4xf64>, tensor<4x4xf64>) -> tensor<4x4xf64>
  %dg = stablehlo.constant dense<[[4.0, 0.0, 0.0, 0.0], [0.0, 4.0, 0.0, 0.0], [0.0, 0.0, 4.0, 0.0], [0.0, 0.0, 0.0, 4.0]]> : tensor<4x4xf64>
  %spd = stablehlo.add %mm, %dg : tensor<4x4xf64>
  %ch = stablehlo.cholesky %spd, lower = ` + lower + ` : tensor<4x4xf64>
  %sc = stablehlo.constant dense<` + scale + `> : tensor<8xf32>
  %vs = stablehlo.multiply %v, %sc : tensor<8xf32>
  %b32 = chlo.bessel_` + bessel + ` %vs : tensor<8xf32> -> tensor<8xf32>
  %us = stablehlo.convert %vs : (tensor<8xf32>) -> tensor<8xf64>
  %ua = stablehlo.add %us, %u : tensor<8xf64>
  %b64 = chlo.bessel_` + other + ` %ua : tensor<8xf64> -> tensor<8xf64>
  %b16 = chlo.bessel_` + bessel + ` %h : tensor<8xbf16> -> tensor<8xbf16>
  return %r#0, %r#1, %r#2, %r#3, %cs, %ip, %ch, %b32, %b64, %b16 : tensor<i32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<f32>, tensor<3x4xf32>, tensor<3x4xf32>, tensor<4x4xf64>, tensor<8xf32>, tensor<8xf64>, tensor<8xbf16>
}
`)
	return b.String()
}

// TestControlFlowPlanRoundTrip checks that a plan with control steps
// survives the executables tier's encoding and that validation rejects
// control steps that would make the executor read or jump out of range.
func TestControlFlowPlanRoundTrip(t *testing.T) {
	m, exe := compileText(t, randomControlProgram(rand.New(rand.NewPCG(1, 2))))
	p, data := decodedPlan(t, exe)
	// The loaded executable computes what the compiled one does.
	loaded, err := New().Load(context.Background(), data, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer loaded.(*Executable).Close()
	args := stablehlo.RandomArgs(m.Main(), 7)
	args[2].Int32s()[0], args[3].Int32s()[0], args[4].Data[0] = 3, 2, 1
	want, err := exe.Run(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	got, err := loaded.(*Executable).Run(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	assertSame(t, "loaded", got, want)
	var ops []string
	for _, s := range p.Steps {
		if s.Op != "" {
			ops = append(ops, s.Op)
		}
	}
	for _, want := range []string{stepCopy, stepJump, stepBranch} {
		if !strings.Contains(strings.Join(ops, " "), want) {
			t.Errorf("plan has no %s step: %v", want, ops)
		}
	}
	bad := func(name string, edit func(p *Plan)) {
		q, _, err := decodeExecutable(data)
		if err != nil {
			t.Fatal(err)
		}
		edit(q)
		if err := q.validate(nil); err == nil {
			t.Errorf("%s: plan accepted", name)
		}
	}
	first := func(p *Plan, op string) *Step {
		for i := range p.Steps {
			if p.Steps[i].Op == op {
				return &p.Steps[i]
			}
		}
		t.Fatalf("no %s step", op)
		return nil
	}
	bad("jump past the end", func(p *Plan) { first(p, stepJump).Targets[0] = len(p.Steps) + 1 })
	bad("negative target", func(p *Plan) { first(p, stepBranch).Targets[0] = -1 })
	bad("branch on a tensor", func(p *Plan) {
		p.Buffers[first(p, stepBranch).Bufs[0]].Shape = []int64{1}
	})
	bad("copy into an argument", func(p *Plan) { first(p, stepCopy).Bufs[1] = 0 })
	bad("unknown op", func(p *Plan) { first(p, stepCopy).Op = "call" })
	bad("kernel step without a kernel", func(p *Plan) { p.Steps = append(p.Steps, Step{Bufs: []int{0}}) })
	bad("copy into a constant", func(p *Plan) {
		p.Buffers = append(p.Buffers, Buffer{DType: "i32", Arg: -1, Const: make([]byte, 4)})
		first(p, stepCopy).Bufs[1] = len(p.Buffers) - 1
	})
	bad("copy of a different size", func(p *Plan) {
		s := first(p, stepCopy)
		b := p.Buffers[s.Bufs[1]]
		b.Shape = append(append([]int64(nil), b.Shape...), 2)
		p.Buffers = append(p.Buffers, b)
		s.Bufs[1] = len(p.Buffers) - 1
	})
	bad("branch on a 16-bit selector", func(p *Plan) { p.Buffers[first(p, stepBranch).Bufs[0]].DType = "i16" })
	bad("branch without targets", func(p *Plan) { first(p, stepBranch).Targets = nil })
	bad("buffer out of range", func(p *Plan) { first(p, stepCopy).Bufs[0] = len(p.Buffers) })
	bad("argument index past the buffers", func(p *Plan) { p.Buffers[0].Arg = 1 << 40 })
	bad("argument with two buffers", func(p *Plan) { p.Buffers[1].Arg = p.Buffers[0].Arg })
	bad("argument without a buffer", func(p *Plan) {
		n := 0
		for _, b := range p.Buffers {
			if b.Arg >= 0 {
				n++
			}
		}
		p.Buffers = append(p.Buffers, Buffer{DType: "f32", Arg: n + 1}) // argument n has none
	})
	bad("argument that is a constant", func(p *Plan) {
		tt, err := p.Buffers[0].tensorType()
		if err != nil {
			t.Fatal(err)
		}
		p.Buffers[0].Const = make([]byte, tt.ByteSize())
	})
	bad("one output listed past the bound", func(p *Plan) {
		p.Buffers = append(p.Buffers, Buffer{DType: "f64", Shape: []int64{1 << 30}, Arg: -1})
		for range 5 {
			p.Outputs = append(p.Outputs, len(p.Buffers)-1)
		}
	})
	bad("buffers whose sizes overflow", func(p *Plan) {
		// Each is below the per-buffer bound; the sum would wrap int64
		// without the plan-wide bound.
		for range 1 << 11 {
			p.Buffers = append(p.Buffers, Buffer{DType: "f64", Shape: []int64{1 << 40}, Arg: -1})
		}
	})
}

// TestDifferentialNestedControl runs seeded random programs of nested
// while/if/case ops (nestProgram, the generator FuzzLowerControl uses)
// on the cpu backend and the interpreter: results must agree bit for bit
// (the programs only add, so there is nothing to fuse differently).
func TestDifferentialNestedControl(t *testing.T) {
	rng := rand.New(rand.NewPCG(29, 4))
	randomDifferential(t, 6, func(i int) (string, string) {
		for {
			data := make([]byte, 96)
			for j := range data {
				data[j] = byte(rng.IntN(256))
			}
			// Keep programs that nest a while with a branch and compute.
			src := nestProgram(data)
			if strings.Count(src, "stablehlo.while") >= 1+i%2 && strings.Contains(src, "\"stablehlo.") && strings.Count(src, "stablehlo.add %v") >= 2 {
				return fmt.Sprint(i), src
			}
		}
	}, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		t.Logf("%d kernels, %d steps", len(exe.Kernels()), len(exe.Plan().Steps))
		for run := 0; run < 4; run++ {
			args := stablehlo.RandomArgs(m.Main(), uint64(10*i+run))
			args[2].Data[0] = byte(run % 2)
			args[3].Int32s()[0] = int32(run - 1) // -1 (last branch) .. 2
			args[4].Int32s()[0] = int32(run)     // trip counts 0..3
			got, want := runBoth(t, exe, m, args)
			assertSame(t, fmt.Sprint("run ", run), got, want)
		}
	})
}

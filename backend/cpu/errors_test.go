package cpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

const smallProgram = `func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = stablehlo.add %x, %y : tensor<4x8xf32>
  %1 = stablehlo.tanh %0 : tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
`

func TestUnsupportedRejectedBeforeCodegen(t *testing.T) {
	// The front end only accepts ops this backend compiles, so simulate an
	// op it might add later by renaming one in a parsed module.
	m := parseText(t, smallProgram)
	for _, op := range m.Main().Body.Ops {
		if op.Name == "tanh" {
			op.Name = "chlo.polygamma"
		}
	}
	// A compiler that cannot run proves no C was compiled: the error must
	// be about the op, not the compiler.
	t.Setenv(cc.EnvCC, "/nonexistent/cc-must-not-run")
	_, err := New().CompileModule(context.Background(), m, nil)
	if err == nil || !strings.Contains(err.Error(), "chlo.polygamma") || !strings.Contains(err.Error(), "test.mlir:3:") {
		t.Fatalf("want an error naming the op and its position, got %v", err)
	}
	// An op the front end accepts but this backend cannot lower is
	// "unsupported", not a failure.
	if !errors.Is(err, stablehlo.ErrUnsupported) {
		t.Fatalf("error does not wrap stablehlo.ErrUnsupported: %v", err)
	}
}

func TestMissingCompiler(t *testing.T) {
	t.Setenv(cc.EnvCC, "/nonexistent/xlacache-cc")
	_, err := New().CompileModule(context.Background(), parseText(t, smallProgram), nil)
	if err == nil || !strings.Contains(err.Error(), "/nonexistent/xlacache-cc") {
		t.Fatalf("want a missing-compiler error, got %v", err)
	}
}

func TestFailingCompiler(t *testing.T) {
	wrapCompiler(t, "for a in \"$@\"; do [ \"$a\" = -c ] && { echo 'failcc: internal compiler error' >&2; exit 1; }; done\n")
	_, err := New().CompileModule(context.Background(), parseText(t, smallProgram), nil)
	if err == nil || !strings.Contains(err.Error(), "internal compiler error") || !strings.Contains(err.Error(), "k_") {
		t.Fatalf("want an error naming the kernel with the compiler's output, got %v", err)
	}
}

// TestFailingCompilerWhileTuning makes the compiler fail only on the
// autotuner's candidate builds (one source straight to a shared object):
// the error must name the kernel and carry the compiler's output.
func TestFailingCompilerWhileTuning(t *testing.T) {
	wrapCompiler(t, "shared=0; src=0\nfor a in \"$@\"; do case \"$a\" in -shared) shared=1;; *.c) src=1;; esac; done\n"+
		"[ $shared = 1 ] && [ $src = 1 ] && { echo 'failcc: candidate build refused' >&2; exit 1; }\n")
	b := New()
	b.TuneBudget = 10e6
	_, err := b.CompileModule(context.Background(), parseText(t, tierProgram), nil)
	if err == nil || !strings.Contains(err.Error(), "candidate build refused") || !strings.Contains(err.Error(), "autotuning dot_general") {
		t.Fatalf("want an error naming the kernel with the compiler's output, got %v", err)
	}
}

func TestLoadRejectsBadExecutables(t *testing.T) {
	b := New()
	exe, err := b.CompileModule(context.Background(), parseText(t, smallProgram), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	good, err := exe.Serialize()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := b.Load(context.Background(), good, nil)
	if err != nil {
		t.Fatalf("round trip: %v", err)
	}
	loaded.(*Executable).Close()
	unloadable, err := encodeExecutable(exe.plan, []byte("not an ELF shared object"))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "bad magic"},
		{"truncated", good[:len(good)/2], "truncated"},
		{"unloadable so", unloadable, "loading"},
		{"trailing", append(append([]byte{}, good...), 1), "trailing"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := b.Load(context.Background(), tc.data, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want error containing %q", err, tc.want)
			}
		})
	}
}

func TestRunRejectsBadArguments(t *testing.T) {
	exe, err := New().CompileModule(context.Background(), parseText(t, smallProgram), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	x := stablehlo.NewTensor(stablehlo.TensorType{DType: stablehlo.F32, Shape: []int64{4, 8}})
	wrong := stablehlo.NewTensor(stablehlo.TensorType{DType: stablehlo.F32, Shape: []int64{8, 4}})
	for _, args := range [][]*stablehlo.Tensor{nil, {x}, {x, wrong}, {x, nil}} {
		if _, err := exe.Run(context.Background(), args); err == nil {
			t.Errorf("Run accepted %d bad arguments", len(args))
		}
	}
}

// FuzzDecodeExecutable feeds arbitrary bytes to the executable decoder
// (the part of Load that runs before dlopen).
func FuzzDecodeExecutable(f *testing.F) {
	p := &Plan{Format: formatVersion, Module: "m", Buffers: []Buffer{{DType: "f32", Shape: []int64{2}, Arg: 0}}, Outputs: []int{0}}
	good, _ := encodeExecutable(p, []byte("so"))
	f.Add(good)
	rich, _ := encodeExecutable(richPlan(), []byte("so"))
	f.Add(rich)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, so, err := decodeExecutable(data)
		if err != nil {
			return
		}
		if p.validate(nil) != nil {
			t.Fatal("decode accepted an invalid plan")
		}
		// What decodes re-encodes to an executable that decodes the same.
		again, err := encodeExecutable(p, so)
		if err != nil {
			t.Fatal(err)
		}
		q, so2, err := decodeExecutable(again)
		if err != nil || !reflect.DeepEqual(p, q) || !bytes.Equal(so, so2) {
			t.Fatalf("re-encoding changed the executable: %v", err)
		}
	})
}

// TestDifferential compiles seeded random programs over the elementwise,
// broadcast, reduce and dot_general ops and compares with the interpreter.
func TestDifferential(t *testing.T) {
	const n = 12
	rng := rand.New(rand.NewPCG(42, 1))
	gen := func(i int) (string, string) { return fmt.Sprint(i), randomProgram(rng) }
	randomDifferential(t, n, gen, func(t *testing.T, m *stablehlo.Module, exe *Executable, i int) {
		got, want := runBoth(t, exe, m, randomArgs(m, uint64(i)))
		assertClose(t, got, want, 1e-4)
	})
}

// randomProgram builds a chain of ops on 4x8 f32 values: every new value
// combines earlier ones, so fusion sees shared and single-use producers.
func randomProgram(rng *rand.Rand) string {
	var b strings.Builder
	T := "tensor<4x8xf32>"
	b.WriteString("func.func @main(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {\n")
	vals := []string{"%x", "%y"}
	pick := func() string { return vals[rng.IntN(len(vals))] }
	for i := 0; i < 8; i++ {
		v := fmt.Sprintf("%%v%d", i)
		switch rng.IntN(8) {
		case 0, 1:
			op := []string{"add", "subtract", "multiply", "maximum", "minimum"}[rng.IntN(5)]
			fmt.Fprintf(&b, "  %s = stablehlo.%s %s, %s : %s\n", v, op, pick(), pick(), T)
		case 2:
			op := []string{"tanh", "negate", "abs", "logistic", "sine"}[rng.IntN(5)]
			fmt.Fprintf(&b, "  %s = stablehlo.%s %s : %s\n", v, op, pick(), T)
		case 3:
			a, c := pick(), pick()
			fmt.Fprintf(&b, "  %s_p = stablehlo.compare GT, %s, %s, FLOAT : (%s, %s) -> tensor<4x8xi1>\n", v, a, c, T, T)
			fmt.Fprintf(&b, "  %s = stablehlo.select %s_p, %s, %s : tensor<4x8xi1>, %s\n", v, v, c, a, T)
		case 4:
			op := []string{"add", "maximum"}[rng.IntN(2)]
			fmt.Fprintf(&b, "  %s_i = stablehlo.constant dense<0.0> : tensor<f32>\n", v)
			fmt.Fprintf(&b, "  %s_r = \"stablehlo.reduce\"(%s, %s_i) ({\n  ^bb0(%%a%d: tensor<f32>, %%b%d: tensor<f32>):\n    %%s%d = \"stablehlo.%s\"(%%a%d, %%b%d) : (tensor<f32>, tensor<f32>) -> tensor<f32>\n    \"stablehlo.return\"(%%s%d) : (tensor<f32>) -> ()\n  }) { dimensions = array<i64: 1> } : (%s, tensor<f32>) -> tensor<4xf32>\n",
				v, pick(), v, i, i, i, op, i, i, i, T)
			fmt.Fprintf(&b, "  %s = stablehlo.broadcast_in_dim %s_r, dims = [0] : (tensor<4xf32>) -> %s\n", v, v, T)
		case 5:
			fmt.Fprintf(&b, "  %s = stablehlo.dot_general %s, %%w, contracting_dims = [1] x [0] : (%s, tensor<8x8xf32>) -> %s\n", v, pick(), T, T)
		case 6:
			fmt.Fprintf(&b, "  %s_s = stablehlo.slice %s [0:4, 0:1] : (%s) -> tensor<4x1xf32>\n", v, pick(), T)
			fmt.Fprintf(&b, "  %s_b = stablehlo.broadcast_in_dim %s_s, dims = [0, 1] : (tensor<4x1xf32>) -> %s\n", v, v, T)
			fmt.Fprintf(&b, "  %s = stablehlo.add %s_b, %s : %s\n", v, v, pick(), T)
		default:
			fmt.Fprintf(&b, "  %s_t = stablehlo.reshape %s : (%s) -> tensor<8x4xf32>\n", v, pick(), T)
			fmt.Fprintf(&b, "  %s_u = stablehlo.transpose %s_t, dims = [1, 0] : (tensor<8x4xf32>) -> tensor<4x8xf32>\n", v, v)
			fmt.Fprintf(&b, "  %s = stablehlo.multiply %s_u, %s : %s\n", v, v, pick(), T)
		}
		vals = append(vals, v)
	}
	fmt.Fprintf(&b, "  return %s : %s\n}\n", vals[len(vals)-1], T)
	return b.String()
}

// TestUnsupportedOpsAreReported checks that programs the front end
// accepts but this backend does not lower (a check inside a control-flow
// region, a loop inside a sort comparator) are reported as unsupported,
// naming the op, before any C is compiled.
func TestUnsupportedOpsAreReported(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		"check in a region": {`%p = stablehlo.constant dense<true> : tensor<i1>
  %w = "stablehlo.if"(%p) ({
    stablehlo.custom_call @check.expect_eq(%x, %x) {has_side_effect = true} : (tensor<2x2xf32>, tensor<2x2xf32>) -> ()
    stablehlo.return %x : tensor<2x2xf32>
  }, {
    stablehlo.return %x : tensor<2x2xf32>
  }) : (tensor<i1>) -> tensor<2x2xf32>`, "custom_call check.expect_eq inside a control-flow region is not supported"},
		"while in a sort body": {`%w = "stablehlo.sort"(%x) ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %l = stablehlo.while(%i = %a) : tensor<f32>
     cond {
      %f = stablehlo.constant dense<false> : tensor<i1>
      stablehlo.return %f : tensor<i1>
    } do {
      stablehlo.return %i : tensor<f32>
    }
    %c = stablehlo.compare LT, %l, %b : (tensor<f32>, tensor<f32>) -> tensor<i1>
    stablehlo.return %c : tensor<i1>
  }) {dimension = 0 : i64} : (tensor<2x2xf32>) -> tensor<2x2xf32>`, "op while in a sort body is not supported"},
	} {
		src := "func.func @main(%x: tensor<2x2xf32>) -> tensor<2x2xf32> {\n  " + c.body + "\n  return %w : tensor<2x2xf32>\n}\n"
		m := parseText(t, src)
		t.Setenv(cc.EnvCC, "/nonexistent/cc-must-not-run")
		_, err := New().CompileModule(context.Background(), m, nil)
		if err == nil || !errors.Is(err, stablehlo.ErrUnsupported) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: want an unsupported error %q, got %v", name, c.want, err)
		}
	}
}

// TestKernelStepRepeatedBuffer checks that validate rejects a plan whose
// kernel step is given one buffer twice (an output over an input): kernels
// take their buffers as restrict pointers. Every compiled step passes.
func TestKernelStepRepeatedBuffer(t *testing.T) {
	_, exe := compileText(t, `func.func @main(%x: tensor<64xf32>) -> tensor<64xf32> {
  %0 = stablehlo.add %x, %x : tensor<64xf32>
  %1 = stablehlo.exponential %0 : tensor<64xf32>
  return %1 : tensor<64xf32>
}`)
	p := roundTrip(t, exe).plan // the plan as the executables tier gives it back
	if err := p.validate(nil); err != nil {
		t.Fatalf("compiled plan rejected: %v", err)
	}
	s := &p.Steps[len(p.Steps)-1]
	if s.Kernel == "" || len(s.Bufs) != 2 {
		t.Fatalf("last step %+v, want a kernel of one input and one output", *s)
	}
	s.Bufs[1] = s.Bufs[0]
	if err := p.validate(nil); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("validate = %v, want an error naming the repeated buffer", err)
	}
}

// TestPrepare: Prepare probes the compiler in the background, and the
// compile after it uses that probe rather than probing again; with a
// missing compiler it reports nothing, and the compile names the
// compiler.
func TestPrepare(t *testing.T) {
	t.Run("probes once", func(t *testing.T) {
		log := countingCompiler(t)
		b := New()
		b.Prepare()
		// The probe asks the compiler its version first; wait for
		// Prepare's, so that the compile below can only share it.
		deadline := time.Now().Add(30 * time.Second)
		for {
			data, _ := os.ReadFile(log)
			if strings.Contains(string(data), "--version") {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("Prepare did not probe the compiler within 30 s; invocations:\n%s", data)
			}
			time.Sleep(10 * time.Millisecond)
		}
		b.NoTune = true
		if _, err := b.CompileModule(context.Background(), parseText(t, smallProgram), nil); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(string(data), "--version"); n != 1 {
			t.Errorf("the compiler was probed %d times, want once:\n%s", n, data)
		}
	})
	t.Run("missing compiler", func(t *testing.T) {
		t.Setenv(cc.EnvCC, "/nonexistent/xlacache-prepare-cc")
		b := New()
		b.Prepare()
		_, err := b.CompileModule(context.Background(), parseText(t, smallProgram), nil)
		if err == nil || !strings.Contains(err.Error(), "/nonexistent/xlacache-prepare-cc") {
			t.Fatalf("want a missing-compiler error, got %v", err)
		}
	})
}

package stablehlo

import (
	"math"
	"strings"
	"testing"
)

func mustParseMem(t *testing.T, src string) *Module {
	t.Helper()
	m, err := Parse([]byte(src), "mem.mlir")
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMemoryNeedHuge is the program of issue 10 item 14: two arguments of
// 16 GiB each. The estimate must say so without allocating anything.
func TestMemoryNeedHuge(t *testing.T) {
	m := mustParseMem(t, `func.func @main(%a: tensor<2147483648xf64>, %b: tensor<2147483648xf64>) -> tensor<2147483648xf64> {
  %0 = stablehlo.add %a, %b : tensor<2147483648xf64>
  return %0 : tensor<2147483648xf64>
}`)
	n, err := m.MemoryNeed("")
	if err != nil {
		t.Fatal(err)
	}
	const g16 = int64(16) << 30
	if n.Inputs != 2*g16 || n.Outputs != g16 || n.Intermediates != g16 || n.Total() != 4*g16 {
		t.Fatalf("need %+v, want inputs 32 GiB, outputs 16 GiB, intermediates 16 GiB", n)
	}
	if n.Largest.Name != "%a" || n.Largest.Bytes != g16 || !strings.Contains(n.Largest.Desc, "argument #0 of @main") {
		t.Fatalf("largest %v, want argument #0 %%a", n.Largest)
	}
	if s := n.Largest.String(); !strings.Contains(s, "tensor<2147483648xf64>") || !strings.Contains(s, "17179869184 bytes") {
		t.Fatalf("largest prints as %q", s)
	}
}

func TestMemoryNeedSmall(t *testing.T) {
	m := mustParseMem(t, `func.func @main(%x: tensor<4x8xf32>, %w: tensor<8x3xf32>) -> tensor<4x3xf32> {
  %0 = stablehlo.dot_general %x, %w, contracting_dims = [1] x [0] : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
  %1 = stablehlo.tanh %0 : tensor<4x3xf32>
  return %1 : tensor<4x3xf32>
}`)
	n, err := m.MemoryNeed("main")
	if err != nil {
		t.Fatal(err)
	}
	// Results 48+48; the dot relays its 56 operand elements (up to 16
	// bytes each for convert and transpose).
	if n.Inputs != 224 || n.Outputs != 48 || n.Intermediates != 96+56*16 {
		t.Fatalf("need %+v", n)
	}
	if n.Largest.Name != "%x" {
		t.Fatalf("largest %v, want %%x", n.Largest)
	}
	if _, err := m.MemoryNeed("nope"); err == nil {
		t.Fatal("unknown function accepted")
	}
}

// TestMemoryNeedCalls: a callee's activation is a temporary, so calling it
// twice does not double it, and recursion terminates.
func TestMemoryNeedCalls(t *testing.T) {
	m := mustParseMem(t, `func.func private @big(%x: tensor<f32>) -> tensor<f32> {
  %0 = stablehlo.broadcast_in_dim %x, dims = [] : (tensor<f32>) -> tensor<1024xf32>
  %1 = stablehlo.slice %0 [0:1] : (tensor<1024xf32>) -> tensor<1xf32>
  %2 = stablehlo.reshape %1 : (tensor<1xf32>) -> tensor<f32>
  return %2 : tensor<f32>
}
func.func @main(%x: tensor<f32>) -> tensor<f32> {
  %0 = func.call @big(%x) : (tensor<f32>) -> tensor<f32>
  %1 = func.call @big(%0) : (tensor<f32>) -> tensor<f32>
  return %1 : tensor<f32>
}`)
	n, err := m.MemoryNeed("")
	if err != nil {
		t.Fatal(err)
	}
	callee := int64(4096 + 4 + 4)
	if want := 4 + 4 + callee; n.Intermediates != want {
		t.Fatalf("intermediates %d, want %d", n.Intermediates, want)
	}
	if n.Largest.Bytes != 4096 || !strings.Contains(n.Largest.Desc, "stablehlo.broadcast_in_dim") || !strings.Contains(n.Largest.Desc, "@big") {
		t.Fatalf("largest %v", n.Largest)
	}
}

// TestMemoryNeedWhile: a loop body's values count twice (one iteration's
// values live while the next computes).
func TestMemoryNeedWhile(t *testing.T) {
	m := mustParseMem(t, `func.func @main(%x: tensor<256xf32>) -> tensor<256xf32> {
  %c = stablehlo.constant dense<0> : tensor<i32>
  %r:2 = stablehlo.while(%i = %c, %v = %x) : tensor<i32>, tensor<256xf32>
    cond {
      %n = stablehlo.constant dense<3> : tensor<i32>
      %lt = stablehlo.compare LT, %i, %n, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
      stablehlo.return %lt : tensor<i1>
    } do {
      %one = stablehlo.constant dense<1> : tensor<i32>
      %j = stablehlo.add %i, %one : tensor<i32>
      %w = stablehlo.add %v, %v : tensor<256xf32>
      stablehlo.return %j, %w : tensor<i32>, tensor<256xf32>
    }
  return %r#1 : tensor<256xf32>
}`)
	n, err := m.MemoryNeed("")
	if err != nil {
		t.Fatal(err)
	}
	// constant 4, while results 4+1024, cond 4+1 twice, body 4+4+1024 twice.
	if want := int64(4 + 1028 + 2*5 + 2*1032); n.Intermediates != want {
		t.Fatalf("intermediates %d, want %d", n.Intermediates, want)
	}
}

// TestMemoryNeedPaddedWindow: reduce_window pads its operand by attribute
// values no tensor type bounds; a small result can hide a huge padded copy.
func TestMemoryNeedPaddedWindow(t *testing.T) {
	m := mustParseMem(t, `func.func @main(%x: tensor<4xf32>) -> tensor<1xf32> {
  %z = stablehlo.constant dense<0.0> : tensor<f32>
  %r = "stablehlo.reduce_window"(%x, %z) <{padding = dense<[[0, 1125899906842624]]> : tensor<1x2xi64>, window_dimensions = array<i64: 1>, window_strides = array<i64: 1125899906842624>}> ({
  ^bb0(%a: tensor<f32>, %b: tensor<f32>):
    %s = stablehlo.add %a, %b : tensor<f32>
    stablehlo.return %s : tensor<f32>
  }) : (tensor<4xf32>, tensor<f32>) -> tensor<2xf32>
  %o = stablehlo.slice %r [0:1] : (tensor<2xf32>) -> tensor<1xf32>
  return %o : tensor<1xf32>
}`)
	n, err := m.MemoryNeed("")
	if err != nil {
		t.Fatal(err)
	}
	if n.Intermediates < (1<<50)*4 {
		t.Fatalf("intermediates %d, want at least the 4 PiB padded operand", n.Intermediates)
	}
}

// TestMemoryNeedOverflow: sizes of hand-built modules (not bounded by the
// parser) saturate instead of wrapping to something small.
func TestMemoryNeedOverflow(t *testing.T) {
	huge := TensorType{DType: F64, Shape: []int64{1 << 40, 1 << 40}}
	wrap := TensorType{DType: F64, Shape: []int64{1 << 61}} // 2^64 bytes: wraps to 0
	for _, ty := range []TensorType{huge, wrap} {
		a := &Value{Type: ty, ID: 0, Name: "a"}
		f := &Func{Name: "main", Public: true, Args: []*Value{a}, ResultTypes: []TensorType{ty},
			Body: &Block{Args: []*Value{a}, Ops: []*Op{{Name: "return", Operands: []*Value{a}}}}, NumValues: 1}
		m := &Module{Funcs: []*Func{f}, File: "hand"}
		n, err := m.MemoryNeed("")
		if err != nil {
			t.Fatal(err)
		}
		if n.Inputs != math.MaxInt64 || n.Total() != math.MaxInt64 || n.Largest.Bytes != math.MaxInt64 {
			t.Fatalf("%s: need %+v, want saturated sizes", ty, n)
		}
	}
	bad := &Value{Type: TensorType{DType: F32, Shape: []int64{-1}}, Name: "a"}
	f := &Func{Name: "main", Public: true, Args: []*Value{bad}, Body: &Block{Ops: []*Op{{Name: "return"}}}}
	if _, err := (&Module{Funcs: []*Func{f}}).MemoryNeed(""); err == nil {
		t.Fatal("negative dimension accepted")
	}
	if got := memAdd(math.MaxInt64, 1); got != math.MaxInt64 {
		t.Fatalf("memAdd overflow gave %d", got)
	}
	if got := memMul(1<<32, 1<<32); got != math.MaxInt64 {
		t.Fatalf("memMul overflow gave %d", got)
	}
}

package cpu

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	"github.com/xlacache/xlacache/stablehlo"
)

// cancelAfter is a context that reports itself cancelled from its nth
// Err call on: it cancels a Run after a known number of steps, without a
// timer.
type cancelAfter struct {
	context.Context
	n, calls atomic.Int64
}

func (c *cancelAfter) Err() error {
	if c.calls.Add(1) >= c.n.Load() {
		return context.Canceled
	}
	return nil
}

// TestEndlessWhileHonoursContext runs a while loop whose condition is
// always true: Run must stop with the context's error once it is
// cancelled, between steps (without the check it never returns and the
// test times out).
func TestEndlessWhileHonoursContext(t *testing.T) {
	m, exe := compileText(t, `func.func @main(%x: tensor<i32>) -> tensor<i32> {
  %one = stablehlo.constant dense<1> : tensor<i32>
  %r = stablehlo.while(%i = %x) : tensor<i32>
   cond {
    %t = stablehlo.compare GE, %i, %i, SIGNED : (tensor<i32>, tensor<i32>) -> tensor<i1>
    stablehlo.return %t : tensor<i1>
  } do {
    %i1 = stablehlo.add %i, %one : tensor<i32>
    stablehlo.return %i1 : tensor<i32>
  }
  return %r : tensor<i32>
}`)
	ctx := &cancelAfter{Context: context.Background()}
	ctx.n.Store(10_000)
	args := stablehlo.RandomArgs(m.Main(), 1)
	if _, err := exe.Run(ctx, args); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run of an endless loop: %v, want context.Canceled", err)
	}
	if got := ctx.calls.Load(); got != 10_000 {
		t.Errorf("Run checked its context %d times, want 10000 (once per step until cancelled)", got)
	}
}

package cpu

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/stablehlo"
)

// endlessWhile loops while its counter equals itself: forever.
const endlessWhile = `func.func @main(%x: tensor<i32>) -> tensor<i32> {
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
}`

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
	m, exe := compileText(t, endlessWhile)
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

// gateCtx stops a Run inside its nth Err call until released, then
// reports cancellation: the Run is then certainly in progress.
type gateCtx struct {
	context.Context
	n       int64
	calls   atomic.Int64
	reached chan struct{}
	release chan struct{}
}

func (c *gateCtx) Err() error {
	if c.calls.Add(1) == c.n {
		close(c.reached)
		<-c.release
	}
	if c.calls.Load() >= c.n {
		return context.Canceled
	}
	return nil
}

// TestCloseDoesNotWaitForRuns closes an executable while a run of an
// endless loop is in progress: Close must return at once, leave the
// kernels loaded for the run, and the run must free them as it leaves.
func TestCloseDoesNotWaitForRuns(t *testing.T) {
	m, exe := compileText(t, endlessWhile)
	ctx := &gateCtx{Context: context.Background(), n: 100, reached: make(chan struct{}), release: make(chan struct{})}
	ran := make(chan error, 1)
	go func() {
		_, err := exe.Run(ctx, stablehlo.RandomArgs(m.Main(), 1))
		ran <- err
	}()
	<-ctx.reached
	closed := make(chan error, 1)
	go func() { closed <- exe.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Minute): // a deadlock detector, not a wait for work
		close(ctx.release)
		t.Fatal("Close waited for a run in progress")
	}
	if !hasConsts(exe) {
		t.Fatal("Close freed the kernels' constants while a run was using them")
	}
	if _, err := exe.Run(context.Background(), stablehlo.RandomArgs(m.Main(), 1)); err == nil {
		t.Error("a Run after Close succeeded")
	}
	close(ctx.release)
	if err := <-ran; !errors.Is(err, context.Canceled) {
		t.Fatalf("the run in progress: %v, want context.Canceled", err)
	}
	if hasConsts(exe) {
		t.Error("the last run out did not free the closed executable")
	}
}

func hasConsts(e *Executable) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, p := range e.consts {
		if p != nil {
			return true
		}
	}
	return false
}

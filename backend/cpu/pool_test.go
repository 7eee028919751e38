package cpu

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// poolProgram compiles parallelPrograms[name] with the default
// configurations for threads threads and returns it with arguments and
// the interpreter's results.
func poolProgram(t *testing.T, name string, threads int) (*Executable, []*stablehlo.Tensor, []*stablehlo.Tensor) {
	t.Helper()
	if _, err := cc.Find(context.Background()); err != nil {
		t.Skip(err)
	}
	m, err := stablehlo.Parse([]byte(parallelPrograms[name]), name+".mlir")
	if err != nil {
		t.Fatal(err)
	}
	args := randomArgs(m, 3)
	want, err := stablehlo.Eval(m, "", args)
	if err != nil {
		t.Fatal(err)
	}
	b := New()
	b.Threads = threads
	b.NoTune = true
	exe, err := b.CompileModule(context.Background(), m, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { exe.Close() })
	return exe, args, want
}

// checkRun runs exe once and compares with want.
func checkRun(exe *Executable, args, want []*stablehlo.Tensor) error {
	got, err := exe.Run(context.Background(), args)
	if err != nil {
		return err
	}
	for i := range got {
		if !closeTensor(got[i], want[i]) {
			return fmt.Errorf("output %d differs from the interpreter", i)
		}
	}
	return nil
}

// TestThreadPoolManyConcurrentRuns runs two executables with more threads
// than the machine has cores from many goroutines at once, so that calls
// queue behind each other and callers run parts themselves: every result
// must be right and no Run may wait forever (the test would time out).
// It runs again with GOMAXPROCS=1, where the callers share one Go
// processor (the pool's workers run C and need none).
func TestThreadPoolManyConcurrentRuns(t *testing.T) {
	loop, la, lw := poolProgram(t, "loop_and_reduce", 6)
	conv, ca, cw := poolProgram(t, "conv", 5)
	run := func(t *testing.T, goroutines, runs int) {
		var wg sync.WaitGroup
		errs := make(chan error, goroutines*runs)
		for g := range goroutines {
			wg.Go(func() {
				for range runs {
					if g%2 == 0 {
						errs <- checkRun(loop, la, lw)
					} else {
						errs <- checkRun(conv, ca, cw)
					}
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	}
	t.Run("concurrent", func(t *testing.T) { run(t, 12, 2) })
	t.Run("gomaxprocs=1", func(t *testing.T) {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
		run(t, 4, 2)
	})
}

// TestCloseDuringRuns closes an executable while Runs are in flight:
// Close waits for them (they finish with right results), and every Run
// that starts afterwards fails with an error instead of calling unloaded
// kernels.
func TestCloseDuringRuns(t *testing.T) {
	exe, args, want := poolProgram(t, "loop_and_reduce", 4)
	started := make(chan struct{}, 4)
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				err := checkRun(exe, args, want)
				if i == 0 {
					started <- struct{}{}
				}
				if err != nil {
					if !strings.Contains(err.Error(), "closed") {
						errs <- err
					}
					return
				}
			}
		})
	}
	for range 4 {
		<-started
	}
	if err := exe.Close(); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if _, err := exe.Run(context.Background(), args); err == nil || errors.Is(err, context.Canceled) {
		t.Errorf("Run after Close: %v, want an error", err)
	}
}

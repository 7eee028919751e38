package warm

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
)

// All runs exactly jobs compiles at once when there is work for
// them, never more, and reports every program.
func TestAllBoundsParallelism(t *testing.T) {
	const jobs, n = 3, 20
	var paths []string
	for i := range n {
		paths = append(paths, fmt.Sprintf("p%02d.mlir", i))
	}
	var mu sync.Mutex
	active, most, started := 0, 0, 0
	full := make(chan struct{}) // closed once jobs compiles run at once
	compile := func(p string) Result {
		mu.Lock()
		active++
		started++
		most = max(most, active)
		first := started <= jobs
		if active == jobs && started == jobs {
			close(full)
		}
		mu.Unlock()
		if first {
			// The first jobs compiles wait for each other: the bound is
			// reached, and a worker beyond it would start meanwhile.
			<-full
		}
		mu.Lock()
		active--
		mu.Unlock()
		return Result{Path: p}
	}
	var dones atomic.Int32
	res := All(context.Background(), paths, jobs, compile, func() { dones.Add(1) })
	if len(res) != n || dones.Load() != n {
		t.Fatalf("%d results and %d progress steps, want %d", len(res), dones.Load(), n)
	}
	if most != jobs {
		t.Fatalf("%d compiles at once, want %d", most, jobs)
	}
}

// A cancelled warm stops handing out programs and returns.
func TestAllCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var calls atomic.Int32
	compile := func(p string) Result {
		if calls.Add(1) == 1 {
			cancel()
		}
		return Result{Path: p}
	}
	paths := make([]string, 100)
	for i := range paths {
		paths[i] = fmt.Sprintf("p%d.mlir", i)
	}
	res := All(ctx, paths, 1, compile, func() {})
	if len(res) == len(paths) || len(res) != int(calls.Load()) {
		t.Fatalf("%d results of %d compiles after cancelling at the first of %d", len(res), calls.Load(), len(paths))
	}
}

package cpu

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/config"
)

// Tuning budget (issue 23: a tuned cold compile within 3x of XLA:CPU's).
// Building candidate libraries is what a tuned cold compile spends its
// time on, and a program with many tunable kernels (the four-layer
// transformer's training step: 50-110 s of autotuning) spent it on every
// one of them. So a compile builds candidates for its kernels in order of
// estimated benefit (tuneBenefit) and starts no new candidate build once
// it has built tuneBudgetFactor times what the untuned build compiles.
// Kernels left out keep their default and get no autotune record, so a
// later compile sharing them, or one with XLACACHE_CPU_TUNE=full, tunes
// them.
//
// The budget is measured, not estimated: before any candidate is built,
// the compile builds every kernel's default object (the untuned build,
// which the final build then finds in the kernel tier for every kernel
// that keeps its default), and candidate builds may start until the
// candidate phase has taken tuneBudgetFactor times as long. Sizes of C
// were no estimate of it: the examples' candidate units hold 0.2-0.4x
// the C of their untuned builds but took 10-40x as long to compile (the
// register-blocked kernels at -O3 against cheap loops and a prelude of
// mostly unused inline functions).

// tuneBudgetFactor bounds the candidate builds of a compile to this many
// times its untuned build's wall time. 2 (a tuned compile near 3x the
// untuned one) left most of the four-layer transformer's products
// untuned: its run took 2.05/2.10 s at 1/2 threads against 0.73/0.95 s
// fully tuned, for 8.1/12.5 s of compile against 10.7/17.3 s (issue 23,
// compilerbench, load average 3-5); 4 ran it in 0.92 s at 1 thread.
const tuneBudgetFactor = 4

// Tuning modes, the values of XLACACHE_CPU_TUNE.
const (
	tuneModeBudget = "budget" // tune within the budget
	tuneModeFull   = "full"   // the default: tune every relevant kernel
	tuneModeOff    = "off"    // tune nothing (Backend.NoTune)
)

// parseTuneMode reads XLACACHE_CPU_TUNE through lookup: unset or empty is
// full tuning; anything but budget, full or off is an error naming the
// variable.
func parseTuneMode(lookup func(string) (string, bool)) (budget, off bool, err error) {
	v, _ := lookup(config.EnvCPUTune)
	switch v {
	case "", tuneModeFull:
		return false, false, nil
	case tuneModeBudget:
		return true, false, nil
	case tuneModeOff:
		return false, true, nil
	}
	return false, false, fmt.Errorf("%s=%q: want %s, %s or %s", config.EnvCPUTune, v, tuneModeBudget, tuneModeFull, tuneModeOff)
}

// tuneBenefit estimates how much of a program's run time tuning k can
// save, in rough units of one vectorized multiply-add. A product's or
// convolution's work is its multiply-adds, of which the default (the
// ikj loop) runs 2-10x slower than the register-blocked candidates, so
// about three quarters are saved; any other kernel's work is its
// elements, each a memory access in a possibly strided order that costs
// several multiply-adds, of which tuning saves about half.
func tuneBenefit(k *kernel) float64 {
	switch k.kind {
	case "dot", "convgemm":
		return 0.75 * float64(k.work)
	}
	return 2 * float64(k.work)
}

// tuneOrder returns the positions of ks in the order their candidates
// are built: by decreasing tuneBenefit, ties in program order, so the
// order depends on the kernels alone.
func tuneOrder(ks []*kernel) []int {
	order := make([]int, len(ks))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		return cmp.Compare(tuneBenefit(ks[b]), tuneBenefit(ks[a])) // decreasing
	})
	return order
}

// buildQueue hands out candidate units in order until the budget is
// spent: the first unit always (so a budget never leaves a compile with
// nothing tuned, nor fails it), later ones only while elapsed() is below
// budget (negative: no budget). What is left is never started.
type buildQueue struct {
	mu      sync.Mutex
	order   []int
	next    int
	budget  time.Duration
	elapsed func() time.Duration
}

// take returns the next unit to build, or false once there is none or the
// budget is spent.
func (q *buildQueue) take() (int, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.next >= len(q.order) {
		return -1, false
	}
	if q.next > 0 && q.budget >= 0 && q.elapsed() >= q.budget {
		q.next = len(q.order)
		return -1, false
	}
	i := q.order[q.next]
	q.next++
	return i, true
}

// tuneBudget builds the default object of every kernel that has code in
// an untuned build (the untuned build, whose objects the final build
// takes from pl.held) and returns
// tuneBudgetFactor times the wall time it took: the budget of the
// candidate builds (see buildQueue). It returns -1 (no budget) without
// building anything unless BudgetTune.
func (pl *pipeline) tuneBudget(ctx context.Context, kernels []*kernel) (time.Duration, error) {
	if !pl.b.BudgetTune {
		return -1, nil
	}
	start := time.Now()
	var srcs []cc.Source
	for _, k := range kernels {
		if k.rt != nil || k.copy || k.routine != nil {
			// A runtime routine (runtime.go), now or if left at its
			// default, or a copy step: nothing to build, as in an
			// untuned build.
			continue
		}
		s, err := finalSource(k, k.cands[0], pl.b.NoTune)
		if err != nil {
			return 0, err
		}
		srcs = append(srcs, s)
	}
	infos := make([]KernelInfo, len(srcs))
	pl.quiet = true
	_, err := pl.compileObjects(ctx, srcs, infos, nil)
	pl.quiet = false
	if err != nil {
		return 0, fmt.Errorf("untuned build: %w", err)
	}
	factor := pl.b.tuneFactor
	if factor <= 0 {
		factor = tuneBudgetFactor
	}
	took := time.Since(start)
	budget := time.Duration(factor * float64(took))
	pl.log.Debug("autotune budget", "untuned_build", took, "budget", budget)
	return budget, nil
}

package cpu

import (
	"fmt"
	"unsafe"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/stablehlo"
)

// Kernels that pay for threads are generated with two entry points: the
// usual void k(void** bufs), and void k_par(void** bufs, int64_t t,
// int64_t n), which does part t of n of the work (k is k_par(bufs, 0, 1)).
// The parts of one call write disjoint parts of the outputs and keep any
// scratch memory of their own, so they can run at the same time, in any
// order, on any threads. The threads live here, in the Go runtime, not in
// the generated code: a shared object that started threads could be
// unloaded under them, and every generated library would carry its own
// pool. The part count is a run-time argument, so generated code does not
// depend on the thread count.

// parSuffix names a kernel's parallel entry point; partsSuffix names the
// optional constant (const int64_t k_parts) saying how many parts per
// thread a call is cut into. More parts than threads let a thread whose
// core is busy with other work fall behind without holding up the call:
// the others take its remaining parts. Kernels whose parts repeat work
// (packing a shared operand) keep one part per thread.
const (
	parSuffix      = "_par"
	partsSuffix    = "_parts"
	maxPartsFactor = 16
)

// kernelFn is a resolved kernel.
type kernelFn struct {
	serial unsafe.Pointer // void k(void**)
	part   unsafe.Pointer // void k_par(void**, int64_t, int64_t), or nil
	parts  int            // parts per thread, at least 1
}

// resolveKernel looks up the entry points of the kernel named sym. The
// parallel one is optional: kernels too small to pay for threads have none.
func resolveKernel(lib *cc.Library, sym string) (kernelFn, error) {
	fns, _, err := resolveKernels(lib, []string{sym}, nil)
	if err != nil {
		return kernelFn{}, err
	}
	return fns[0], nil
}

// resolveKernels looks up the entry points of every kernel named in syms,
// and the extra symbols after them, with one Syms call: each kernel's
// serial entry point, its optional parallel one and part count, and the
// extras' addresses (nil where not defined). A kernel without its serial
// entry point is an error, with the loader's message.
func resolveKernels(lib *cc.Library, syms, extra []string) ([]kernelFn, []unsafe.Pointer, error) {
	names := make([]string, 0, 3*len(syms)+len(extra))
	for _, s := range syms {
		names = append(names, s, s+parSuffix, s+partsSuffix)
	}
	names = append(names, extra...)
	ps, err := lib.Syms(names)
	if err != nil {
		return nil, nil, err
	}
	fns := make([]kernelFn, len(syms))
	for i, s := range syms {
		serial, part, parts := ps[3*i], ps[3*i+1], ps[3*i+2]
		if serial == nil {
			_, err := lib.Sym(s) // for the loader's message
			if err == nil {
				err = fmt.Errorf("cc: kernel %s not found in shared object", s)
			}
			return nil, nil, err
		}
		fns[i] = kernelFn{serial: serial, parts: 1}
		if part != nil {
			fns[i].part = part
			if parts != nil {
				if n := *(*int64)(parts); n >= 1 && n <= maxPartsFactor {
					fns[i].parts = int(n)
				}
			}
		}
	}
	return fns, ps[3*len(syms):], nil
}

// run calls the kernel on bufs (C memory holding the buffer pointers) with
// up to threads parts at once, on the calling thread and threads-1 workers
// of the process-wide pool (cc.RunParts: C threads, started once, that
// grow to the largest thread count asked for and never shrink).
//
// After a call, workers look for the next one for up to 200 µs (and a
// caller for its workers to finish) before they block, yielding the core
// between looks, but only while the machine has no more threads running
// or ready than CPUs (internal/cc/pool.go). On a quiet 2-core VM a
// blocked worker's wake-up took 20-45 µs, longer than many kernels' halves
// (BenchmarkPoolRoundTrip: two 20 µs parts 63 µs a call blocking, 29 µs
// spinning); on an overloaded machine a spinning thread takes the core the
// caller's next serial kernel needs (50 µs of polling without that check
// was 10-65% slower there), and a blocked one, once woken, runs ahead of
// the threads that kept running.
func (f kernelFn) run(bufs unsafe.Pointer, threads int) {
	if f.part == nil || threads <= 1 {
		cc.Call(f.serial, bufs)
		return
	}
	cc.StartWorkers(threads - 1)
	cc.RunParts(f.part, bufs, threads*max(f.parts, 1), threads-1)
}

// parMinElements is the size from which elementwise and reduce kernels
// get a parallel entry point: below it, waking threads (a few
// microseconds) costs about what a second core saves. Kernels whose
// elements are dear (parMin) get one from parMinWork elements, as the
// default with the serial variant a candidate, so that the autotuner can
// keep one thread where that is faster: the transformer example's
// softmax maximum (4x128x128, a multiply fused in, through the
// branching xk_maxf) and exponential took 190-250 µs each and mlp's tanh
// layers (64x512) 80-160 µs on one thread, while its cheap 32 K-element
// sums (about 30 µs) measured slower split on the shared 2-core machine.
const (
	parMinElements = 1 << 17
	parMinWork     = 1 << 15
)

// dearOps are the elementwise ops whose every element calls a
// transcendental helper (tens of cycles, not vectorized). The opTable
// cost (8 for these) is no guide here: it also rates division, square
// roots, rounding and shifts at 8, which vectorize, and a 64 K-element
// division loop measured slower split on 2 threads (15 -> 16-23 µs).
var dearOps = map[string]bool{
	"exponential": true, "exponential_minus_one": true, "log": true, "log_plus_one": true,
	"logistic": true, "power": true, "sine": true, "cosine": true, "tan": true, "tanh": true,
	"atan2": true, "cbrt": true,
	"chlo.acos": true, "chlo.acosh": true, "chlo.asin": true, "chlo.asinh": true,
	"chlo.atan": true, "chlo.atanh": true, "chlo.cosh": true, "chlo.sinh": true, "chlo.tan": true,
	"chlo.digamma": true, "chlo.erf": true, "chlo.erf_inv": true, "chlo.erfc": true,
	"chlo.lgamma": true, "chlo.bessel_i0e": true, "chlo.bessel_i1e": true,
}

// parMin returns how many elements the loop or reduce kernel rooted at
// op needs for a parallel variant: parMinWork when its elements are dear
// (a dearOps op fused in, or a running float maximum or minimum, whose
// NaN and signed-zero branches cost several cycles an element), else
// parMinElements.
func parMin(l *lowering, op *stablehlo.Op) int64 {
	if op.Name == "reduce" {
		// The lanes variant (reduce.go) takes the branches out.
		if r := simpleReducer(op); (r == "maximum" || r == "minimum") && op.Results[0].Type.DType.IsFloat() && !lanesReduce(op) {
			return parMinWork
		}
	}
	for _, f := range fusedOps(l, op) {
		if dearOps[f.Name] {
			return parMinWork
		}
	}
	return parMinElements
}

// partUnits returns C expressions for the units [lo, hi) of n that part
// xk_tid of xk_nt takes in a parallel entry point: every kernel that
// splits work over parts (loop nests, row blocks, column panels, batch
// matrices) cuts it this way.
func partUnits(n int64) (lo, hi string) {
	return fmt.Sprintf("%d*xk_tid/xk_nt", n), fmt.Sprintf("%d*(xk_tid + 1)/xk_nt", n)
}

// parGrain is how many iterations the flattened outer loops of a parallel
// loop nest must have, so that parts are balanced to within a few percent.
const parGrain = 64

// parLoops opens loops over shape as g.loops does and returns the index
// names and the count to pass to g.endLoops. With par, the leading
// dimensions are flattened into one loop (as few as give parGrain
// iterations) and part xk_tid of xk_nt runs only its contiguous share of
// it; the remaining dimensions loop in full inside.
func parLoops(g *gen, shape []int64, prefix string, par bool) ([]string, int) {
	if !par || len(shape) == 0 {
		return g.loops(shape, prefix), len(shape)
	}
	d, flat := 0, int64(1)
	for d < len(shape) && flat < parGrain {
		flat *= shape[d]
		d++
	}
	idx := make([]string, len(shape))
	for i := range shape {
		idx[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	f := g.name("pf")
	lo, hi := partUnits(flat)
	g.line("for (int64_t %s = %s; %s < %s; %s++) {", f, lo, f, hi, f)
	g.ind++
	stride := flat
	for i := 0; i < d; i++ {
		stride /= shape[i]
		g.line("const int64_t %s = (%s / %d) %% %d;", idx[i], f, stride, shape[i])
	}
	for i := d; i < len(shape); i++ {
		g.line("for (int64_t %s = 0; %s < %d; %s++) {", idx[i], idx[i], shape[i], idx[i])
		g.ind++
	}
	g.push()
	return idx, 1 + len(shape) - d
}

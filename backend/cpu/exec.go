package cpu

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/backend/cpu/internal/rt"
	"github.com/xlacache/xlacache/stablehlo"
)

// Executable is a compiled program: a plan and the shared object holding
// its kernels, loaded and ready to run. It is safe for concurrent Runs.
type Executable struct {
	plan  *Plan
	so    []byte
	types []stablehlo.TensorType
	lib   *cc.Library
	fns   []kernelFn
	// allocFailures is the library's count of kernels that could not
	// allocate scratch memory (prelude.go's xk_alloc_failures); nil when
	// the plan has no kernels.
	allocFailures *uint64
	consts        []unsafe.Pointer // C copies of constant buffers, nil for others

	// threads bounds the parts a parallel kernel runs in at once.
	threads int

	// Fixed per program, so computed once rather than on every Run:
	// the argument types, each buffer's arena offset (-1 for constants),
	// the arena's size, and the number of kernel pointer slots (at the
	// arena's start). Buffers a Run usually uses in place (arguments and
	// results) come last, so that when all of them are, the arena is only
	// its first core bytes: a Run need not allocate and zero room for
	// tensors it never touches.
	argTypes []stablehlo.TensorType
	offs     []int64
	cand     []bool // Run may use the buffer in place (inPlaceCandidate)
	core     int64
	total    int64
	nptr     int
	bases    []int // first slot of each step's pointers

	// mu guards closed and active. Runs count themselves in active
	// rather than hold a lock while they run, so Close never waits for a
	// run (one stuck in an endless loop whose context is never cancelled
	// would hold it forever): the last run out frees what Close left.
	mu     sync.Mutex
	closed bool
	active int

	// idle is one arena kept between runs: allocating and faulting in
	// fresh pages for every run costs more than a small kernel runs.
	idleMu   sync.Mutex
	idle     unsafe.Pointer
	idleSize int64

	// stepNanos, when non-nil (set by the kernel profile benchmark only,
	// before any Run), accumulates each step's wall time: it is how the
	// run-time work finds the kernels that dominate a program.
	stepNanos []int64
}

// newExecutable loads so and resolves every kernel of plan; parallel
// kernels run in up to threads parts at once.
func newExecutable(plan *Plan, so []byte, threads int) (*Executable, error) {
	e := &Executable{plan: plan, so: so, threads: max(threads, 1)}
	for i, b := range plan.Buffers {
		t, err := b.tensorType()
		if err != nil {
			return nil, fmt.Errorf("cpu: buffer %d: %w", i, err)
		}
		e.types = append(e.types, t)
	}
	for i, b := range plan.Buffers {
		if b.Arg >= 0 {
			for len(e.argTypes) <= b.Arg {
				e.argTypes = append(e.argTypes, stablehlo.TensorType{})
			}
			e.argTypes[b.Arg] = e.types[i]
		}
	}
	// One arena: the kernels' pointer arrays, then 64-byte aligned slots
	// for temporaries, then for the buffers Run usually uses in place.
	for _, s := range plan.Steps {
		e.bases = append(e.bases, e.nptr)
		e.nptr += len(s.Bufs)
	}
	e.total = (8*int64(e.nptr+1) + 63) / 64 * 64
	e.offs = make([]int64, len(plan.Buffers))
	e.cand = make([]bool, len(plan.Buffers))
	for i := range plan.Buffers {
		e.cand[i] = e.inPlaceCandidate(i)
	}
	for pass := 0; pass < 2; pass++ {
		for i, b := range plan.Buffers {
			if b.Const != nil {
				e.offs[i] = -1
				continue
			}
			if e.cand[i] != (pass == 1) {
				continue
			}
			e.offs[i] = e.total
			e.total += (e.types[i].ByteSize() + 63) / 64 * 64
		}
		if pass == 0 {
			e.core = e.total
		}
	}
	if e.total > math.MaxInt32*16 {
		return nil, fmt.Errorf("cpu: %s needs %d bytes of buffers", plan.Module, e.total)
	}
	var lib *cc.Library
	if len(so) > 0 { // a plan of runtime routines alone has no library
		var err error
		if lib, err = cc.OpenBytes(so); err != nil {
			return nil, fmt.Errorf("cpu: loading kernels of %s: %w", plan.Module, err)
		}
	}
	e.lib = lib
	// Every kernel's entry points at once (resolveKernels): a program has
	// up to hundreds of steps, and a warm start is a few milliseconds.
	var kernels []string
	index := map[string]int{}
	for _, s := range plan.Steps {
		if s.Op != "" || isRuntime(s.Kernel) {
			continue
		}
		if _, ok := index[s.Kernel]; !ok {
			index[s.Kernel] = len(kernels)
			kernels = append(kernels, s.Kernel)
		}
	}
	var resolved []kernelFn
	if len(kernels) > 0 {
		if lib == nil {
			return nil, fmt.Errorf("cpu: %s: kernel %q but no kernel library", plan.Module, kernels[0])
		}
		fns, extra, err := resolveKernels(lib, kernels, []string{"xk_alloc_failures"})
		if err != nil {
			lib.Close()
			return nil, fmt.Errorf("cpu: %s: %w", plan.Module, err)
		}
		if extra[0] == nil {
			lib.Close()
			return nil, fmt.Errorf("cpu: %s: kernels without an allocation-failure counter: xk_alloc_failures not found in shared object", plan.Module)
		}
		resolved, e.allocFailures = fns, (*uint64)(extra[0])
	}
	for _, s := range plan.Steps {
		switch {
		case s.Op != "": // a control step (control.go), run by the executor
			e.fns = append(e.fns, kernelFn{})
		case isRuntime(s.Kernel):
			r, ok := rt.Lookup(s.Kernel)
			if !ok || len(s.Bufs) != 4 { // validate rejects such a plan
				e.free()
				return nil, fmt.Errorf("cpu: %s: unknown runtime routine %q", plan.Module, s.Kernel)
			}
			e.fns = append(e.fns, runtimeFn(r, plan.Buffers[s.Bufs[2]].Const))
		default:
			e.fns = append(e.fns, resolved[index[s.Kernel]])
		}
	}
	e.consts = make([]unsafe.Pointer, len(plan.Buffers))
	for i, b := range plan.Buffers {
		if b.Const == nil {
			continue
		}
		p := cc.Alloc(len(b.Const))
		if p == nil {
			e.free()
			return nil, fmt.Errorf("cpu: out of memory for constant of %d bytes", len(b.Const))
		}
		copy(unsafe.Slice((*byte)(p), len(b.Const)), b.Const)
		e.consts[i] = p
	}
	runtime.SetFinalizer(e, (*Executable).Close)
	return e, nil
}

// inPlaceCandidate reports whether Run may use buffer i in place: an
// argument, or one of the first 64 results that is neither an argument
// nor a constant (Run's in-place rules). Empty buffers need no room.
func (e *Executable) inPlaceCandidate(i int) bool {
	b := e.plan.Buffers[i]
	if b.Const != nil || e.types[i].ByteSize() == 0 {
		return false
	}
	if b.Arg >= 0 {
		return true
	}
	for k, id := range e.plan.Outputs {
		if k < 64 && id == i {
			return true
		}
	}
	return false
}

func (e *Executable) free() {
	e.idleMu.Lock()
	cc.Free(e.idle)
	e.idle, e.idleSize = nil, 0
	e.idleMu.Unlock()
	for i, p := range e.consts {
		cc.Free(p)
		e.consts[i] = nil
	}
	if e.lib != nil {
		e.lib.Close()
	}
}

// Close unloads the kernels, at once or, when runs are in progress, as the
// last of them returns; it never waits. Runs after Close fail.
func (e *Executable) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	if e.active == 0 {
		e.free()
	}
	return nil
}

// enter counts a run in, or fails when the executable is closed.
func (e *Executable) enter() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return fmt.Errorf("cpu: %s: executable is closed", e.plan.Module)
	}
	e.active++
	return nil
}

// leave counts a run out, freeing the executable when it was closed
// meanwhile and this was the last run.
func (e *Executable) leave() {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.active--
	if e.closed && e.active == 0 {
		e.free()
	}
}

// Serialize returns the bytes the executables tier stores.
func (e *Executable) Serialize() ([]byte, error) {
	return encodeExecutable(e.plan, e.so)
}

// Kernels describes the kernels and their configurations.
func (e *Executable) Kernels() []KernelInfo { return append([]KernelInfo(nil), e.plan.Kernels...) }

// Plan returns the executable's plan (read-only).
func (e *Executable) Plan() *Plan { return e.plan }

// ArgTypes returns the types of the program's arguments, in order.
func (e *Executable) ArgTypes() []stablehlo.TensorType {
	return append([]stablehlo.TensorType(nil), e.argTypes...)
}

// Threads returns how many parts a parallel kernel of this executable
// runs in at once.
func (e *Executable) Threads() int { return e.threads }

// Run executes the program on args and returns its results. Assertions
// (check.expect_* custom calls) are evaluated after the kernels; the first
// failure is returned as a *stablehlo.CheckError.
func (e *Executable) Run(ctx context.Context, args []*stablehlo.Tensor) ([]*stablehlo.Tensor, error) {
	if err := e.enter(); err != nil {
		return nil, err
	}
	defer e.leave()
	want := e.argTypes
	if len(args) != len(want) {
		return nil, fmt.Errorf("cpu: %s takes %d arguments, %d given", e.plan.Module, len(want), len(args))
	}
	for i, a := range args {
		if a == nil || !a.Type.Equal(want[i]) || int64(len(a.Data)) != a.Type.ByteSize() {
			got := "nil"
			if a != nil {
				got = a.Type.String()
			}
			return nil, fmt.Errorf("cpu: %s argument #%d: got %s, want %s", e.plan.Module, i, got, want[i])
		}
	}
	// Arguments and results are used in place where possible: kernels
	// read argument buffers and write result buffers through pinned Go
	// pointers instead of copying them through the arena. Kernels never
	// write their inputs, so the caller's arguments are not modified.
	// Everything else lives in the arena, whose pointer slots are filled
	// here: the per-run work is one slot per kernel operand.
	var pin runtime.Pinner
	defer pin.Unpin()
	direct := make([]unsafe.Pointer, len(e.plan.Buffers))
	for i, b := range e.plan.Buffers {
		if b.Arg < 0 {
			continue
		}
		data := args[b.Arg].Data
		if len(data) == 0 || uintptr(unsafe.Pointer(&data[0]))%uintptr(e.types[i].DType.Size()) != 0 {
			continue // empty or misaligned: go through the arena
		}
		p := unsafe.Pointer(&data[0])
		pin.Pin(p)
		direct[i] = p
	}
	outs := make([]*stablehlo.Tensor, len(e.plan.Outputs))
	var written uint64 // bit i: output i was written in place (first 64)
	for i, id := range e.plan.Outputs {
		outs[i] = stablehlo.NewTensor(e.types[id])
		b := e.plan.Buffers[id]
		if i >= 64 || b.Arg >= 0 || b.Const != nil || direct[id] != nil || len(outs[i].Data) == 0 {
			continue
		}
		p := unsafe.Pointer(&outs[i].Data[0])
		pin.Pin(p)
		direct[id] = p
		written |= 1 << i
	}
	// The arena needs room for the in-place candidates only when one of
	// them is not used in place (an empty or misaligned argument).
	need := e.core
	for i := range e.plan.Buffers {
		if direct[i] == nil && e.cand[i] {
			need = e.total
			break
		}
	}
	e.idleMu.Lock()
	arena, size := e.idle, e.idleSize
	if size < need {
		arena, size = nil, 0 // too small for this Run: left for the next
	} else {
		e.idle, e.idleSize = nil, 0
	}
	e.idleMu.Unlock()
	if arena == nil {
		arena, size = cc.Alloc(int(need)), need
		if arena == nil {
			return nil, fmt.Errorf("cpu: %s: out of memory allocating %d bytes", e.plan.Module, need)
		}
	}
	defer func() {
		e.idleMu.Lock()
		if e.idle == nil || e.idleSize < size {
			e.idle, e.idleSize, arena = arena, size, e.idle
		}
		e.idleMu.Unlock()
		cc.Free(arena)
	}()
	// The slots are C memory, which the garbage collector neither scans
	// nor owns: they are written as integers. Written as unsafe.Pointer,
	// each store would run the write barrier on the slot's old value, and
	// a recycled arena (e.idle) still holds the last Run's pointers,
	// among them pointers to Go outputs long since freed: "found bad
	// pointer in Go heap" (TestRunRecycledArenaUnderGC). What the slots
	// point to stays alive without them: Go memory is pinned for the
	// Run, the rest is C memory.
	slots := unsafe.Slice((*uintptr)(arena), e.nptr+1)
	ptr := func(id int) unsafe.Pointer {
		if direct[id] != nil {
			return direct[id]
		}
		if e.offs[id] < 0 {
			return e.consts[id]
		}
		return unsafe.Add(arena, e.offs[id])
	}
	bytesOf := func(id int) []byte {
		n := int(e.types[id].ByteSize())
		if n == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(ptr(id)), n)
	}
	for i, b := range e.plan.Buffers {
		if b.Arg >= 0 && direct[i] == nil {
			copy(bytesOf(i), args[b.Arg].Data)
		}
	}
	// Control steps (while/if/case, control.go) may jump, so each step's
	// slots are filled once, before any step runs.
	at := 0
	for _, s := range e.plan.Steps {
		for _, id := range s.Bufs {
			slots[at] = uintptr(ptr(id))
			at++
		}
	}
	var failures uint64
	if e.allocFailures != nil {
		failures = atomic.LoadUint64(e.allocFailures)
	}
	for i := 0; i < len(e.plan.Steps); {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if s := e.plan.Steps[i]; s.Op != "" {
			i = e.control(i, s, ptr)
			continue
		}
		if e.stepNanos != nil {
			t0 := time.Now()
			e.fns[i].run(unsafe.Pointer(&slots[e.bases[i]]), e.threads)
			e.stepNanos[i] += int64(time.Since(t0))
		} else {
			e.fns[i].run(unsafe.Pointer(&slots[e.bases[i]]), e.threads)
		}
		i++
		// A kernel that could not allocate its scratch memory left its
		// outputs unwritten: stop at once, since a loop condition that
		// reads them might never become false. The counter is per
		// library, so a failure in a concurrent Run fails this one too:
		// an error, never a wrong result.
		if e.allocFailures != nil && atomic.LoadUint64(e.allocFailures) != failures {
			return nil, fmt.Errorf("cpu: %s: a kernel could not allocate its scratch memory (out of memory)", e.plan.Module)
		}
	}
	for _, c := range e.plan.Checks {
		got := &stablehlo.Tensor{Type: e.types[c.Actual], Data: append([]byte(nil), bytesOf(c.Actual)...)}
		exp := &stablehlo.Tensor{Type: e.types[c.Expected], Data: append([]byte(nil), bytesOf(c.Expected)...)}
		if err := evalCheck(c, got, exp); err != nil {
			return nil, err
		}
	}
	for i, id := range e.plan.Outputs {
		if i >= 64 || written&(1<<i) == 0 {
			copy(outs[i].Data, bytesOf(id))
		}
	}
	return outs, nil
}

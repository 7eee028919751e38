package cpu

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
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
	// the arena's size with the kernel pointer slots at its end, and the
	// number of slots.
	argTypes []stablehlo.TensorType
	offs     []int64
	total    int64
	nptr     int
	bases    []int // first slot of each step's pointers

	mu     sync.RWMutex
	closed bool

	// idle is one arena kept between runs: allocating and faulting in
	// fresh pages for every run costs more than a small kernel runs.
	idleMu sync.Mutex
	idle   unsafe.Pointer
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
	// One arena for arguments and temporaries, 64-byte aligned slots,
	// then the kernels' pointer arrays.
	e.offs = make([]int64, len(plan.Buffers))
	for i, b := range plan.Buffers {
		if b.Const != nil {
			e.offs[i] = -1
			continue
		}
		e.offs[i] = e.total
		e.total += (e.types[i].ByteSize() + 63) / 64 * 64
	}
	for _, s := range plan.Steps {
		e.bases = append(e.bases, e.nptr)
		e.nptr += len(s.Bufs)
	}
	e.total += 8 * int64(e.nptr+1)
	if e.total > math.MaxInt32*16 {
		return nil, fmt.Errorf("cpu: %s needs %d bytes of buffers", plan.Module, e.total)
	}
	lib, err := cc.OpenBytes(so)
	if err != nil {
		return nil, fmt.Errorf("cpu: loading kernels of %s: %w", plan.Module, err)
	}
	e.lib = lib
	for _, s := range plan.Steps {
		if s.Op != "" { // a control step (control.go), run by the executor
			e.fns = append(e.fns, kernelFn{})
			continue
		}
		fn, err := resolveKernel(lib, s.Kernel)
		if err != nil {
			lib.Close()
			return nil, fmt.Errorf("cpu: %s: %w", plan.Module, err)
		}
		e.fns = append(e.fns, fn)
		if e.allocFailures == nil {
			p, err := lib.Sym("xk_alloc_failures")
			if err != nil {
				lib.Close()
				return nil, fmt.Errorf("cpu: %s: kernels without an allocation-failure counter: %w", plan.Module, err)
			}
			e.allocFailures = (*uint64)(p)
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

func (e *Executable) free() {
	e.idleMu.Lock()
	cc.Free(e.idle)
	e.idle = nil
	e.idleMu.Unlock()
	for i, p := range e.consts {
		cc.Free(p)
		e.consts[i] = nil
	}
	if e.lib != nil {
		e.lib.Close()
	}
}

// Close unloads the kernels. Runs after Close fail.
func (e *Executable) Close() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return nil
	}
	e.closed = true
	e.free()
	return nil
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
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, fmt.Errorf("cpu: %s: executable is closed", e.plan.Module)
	}
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
	e.idleMu.Lock()
	arena := e.idle
	e.idle = nil
	e.idleMu.Unlock()
	if arena == nil {
		arena = cc.Alloc(int(e.total))
		if arena == nil {
			return nil, fmt.Errorf("cpu: %s: out of memory allocating %d bytes", e.plan.Module, e.total)
		}
	}
	defer func() {
		e.idleMu.Lock()
		if e.idle == nil {
			e.idle, arena = arena, nil
		}
		e.idleMu.Unlock()
		cc.Free(arena)
	}()
	// Arguments and results are used in place where possible: kernels
	// read argument buffers and write result buffers through pinned Go
	// pointers instead of copying them through the arena. Kernels never
	// write their inputs, so the caller's arguments are not modified.
	// Everything else lives in the arena, whose pointer slots are filled
	// here: the per-run work is one slot per kernel operand.
	var pin runtime.Pinner
	defer pin.Unpin()
	slots := unsafe.Slice((*unsafe.Pointer)(unsafe.Add(arena, e.total-8*int64(e.nptr+1))), e.nptr+1)
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
			slots[at] = ptr(id)
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
		e.fns[i].run(unsafe.Pointer(&slots[e.bases[i]]), e.threads)
		i++
	}
	// A kernel that could not allocate its scratch memory left its outputs
	// unwritten. The counter is per library, so a failure in a concurrent
	// Run fails this one too: an error, never a wrong result.
	if e.allocFailures != nil && atomic.LoadUint64(e.allocFailures) != failures {
		return nil, fmt.Errorf("cpu: %s: a kernel could not allocate its scratch memory (out of memory)", e.plan.Module)
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

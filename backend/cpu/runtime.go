package cpu

import (
	"fmt"
	"strings"

	"github.com/xlacache/xlacache/backend/cpu/internal/rt"
	"github.com/xlacache/xlacache/stablehlo"
)

// This file chooses the kernels that call a runtime routine (package
// internal/rt: C compiled into the binary when it is built) instead of
// being generated and compiled with the program, and checks the plan
// steps that call one.
//
// An untuned build (Backend.NoTune) is about compiling fast; its matrix
// products were generated loops that cost the C compiler 35-100 ms each
// (a third of transformer4l's kernels) and ran far slower than the
// packed, register-blocked routine, which costs nothing to compile; its
// convolutions cost 75-120 ms each. A tuned build runs its big products
// (routineMinWork) and the products and convolutions its autotuner
// leaves in their default configuration with routines too; it keeps
// generated kernels where timing candidates pays: smaller products,
// whose winner is specialized to the shape (the gemm routine is their
// reference, routineConfig), and convolutions (the Winograd candidate).

// routineMinWork is the size (multiply-adds) from which a tuned build
// runs a matrix product with the gemm routine instead of timing
// generated candidates: there the routine's packing is amortized and it
// runs as fast as the tuned kernels (transformer4l's products, 2^27 to
// 2^29: the program ran 1.03-1.28 s with tuned kernels, 1.09-1.28 s with
// the routine at 1 thread, 748-918 against 714-845 ms at 2; a 512³
// product alone 75-84 GFLOPS, the tuned kernel 70), while building
// their candidates was most of the tuned compile (10.2 → 1.9 s at 2
// threads). It was 2^26 while the routine ran the smaller examples'
// products 20-40% slower than their tuned kernels; once it copied B's
// panels by vectors and read A's rows in place (internal/rt), it ran
// them within 0-7% at 1 thread and 3-12% at 2 (BenchmarkKernelProfile:
// transformer's 128x1024x256 product 803-836 against 803 µs, embedding's
// 256x128x128 ones 103-107 against 96-101 µs), and with it from 2^22 the
// tuned programs ran within the noise of fully tuned ones (transformer
// 3.28-3.31 against 3.24-3.25 ms at 1 thread, 2.06-2.13 against
// 2.27-2.39 at 2; mlp 1.30 against 1.27-1.32 and 0.84-0.91 against
// 0.82-0.92; embedding 1.82-1.86 against 1.78 and 1.29-1.30 against
// 1.22-1.45) while their tuned compiles on one CPU took a third
// (transformer 0.98 → 0.33 s, mlp 0.42 → 0.12 s, embedding 1.13 → 0.45 s
// with routineRelevanceShare).
const routineMinWork = 1 << 22

// routineConfig names the candidate configuration of a tuned product
// that runs the gemm routine (the last of a dot kernel's cands where
// gemmRoutine fits). It costs no compile, so the autotuner runs it as
// the reference the other candidates' outputs are checked against,
// instead of compiling the ikj loop (which the build would never run: a
// product left at its default runs the routine), and a kernel keeps it
// only where every generated candidate disagrees with it. Building the
// ikj loop beside two register-blocked variants was most of a tuned cold
// compile of the small examples (mlp: three products, 250-300 ms of
// compiler each on one CPU, of 1.0-1.3 s). It is not timed against them:
// the autotuner's back-to-back runs put it 15-25% ahead of the
// register-blocked kernels on mlp's two big products (776-788 against
// 890-966 µs, 488-507 against 516-786 µs), while in the program
// (BenchmarkKernelProfile, 1 thread) it ran 945 and 613 µs against their
// 709 and 481 µs, and the tuned mlp 1.8 ms per run against 1.4.
const routineConfig = "runtime"

// runtimeRoutine is a kernel's runtime routine and its parameter block.
type runtimeRoutine struct {
	name   string
	params []int64
	// inputs are the routine's two inputs in its order (the operands'),
	// which may differ from the order generated code reads them in.
	inputs []*stablehlo.Value
}

// String describes the routine for --verbose (KernelInfo.Config).
func (r *runtimeRoutine) String() string {
	return fmt.Sprintf("runtime %s (%s)", strings.TrimPrefix(r.name, "xk_rt_"), rt.Variant())
}

// copyKernel is the KernelInfo name of a kernel the plan does as a copy
// step (copyReshape).
const copyKernel = "copy"

// copyReshape reports whether kernel k is a reshape of a buffer into a
// buffer: row-major order keeps the bytes, so a plan copy step does it,
// with no code to compile (about 20-30 ms of the C compiler for the
// generated loop: cnn's flattening before its dense layer).
func copyReshape(k *kernel) bool {
	op := k.root
	return op.Name == "reshape" && len(k.inputs) == 1 && k.inputs[0] == op.Operands[0] &&
		len(k.outputs) == 1 && k.outputs[0] == op.Results[0] &&
		op.Operands[0].Type.ByteSize() == op.Results[0].Type.ByteSize()
}

// Copy reports whether the kernel is a copy step of the plan
// (copyReshape): it has no object.
func (k KernelInfo) Copy() bool { return k.Name == copyKernel }

// isRuntime reports whether a plan step's kernel is a runtime routine.
func isRuntime(kernel string) bool { return strings.HasPrefix(kernel, "xk_rt_") }

// Runtime reports whether the kernel is a runtime routine compiled into
// the binary (runtime.go): it has no object of its own.
func (k KernelInfo) Runtime() bool { return isRuntime(k.Name) }

// readsOperands reports whether kernel k reads its root's two operands
// from buffers (in either order: generated code may read the second
// first), computes nothing else inline, and writes its one result.
func readsOperands(k *kernel) bool {
	op := k.root
	if len(op.Operands) != 2 || len(k.inputs) != 2 || len(k.outputs) != 1 || k.outputs[0] != op.Results[0] {
		return false
	}
	a, b := op.Operands[0], op.Operands[1]
	return (k.inputs[0] == a && k.inputs[1] == b) || (k.inputs[0] == b && k.inputs[1] == a)
}

// gemmRoutine returns the routine that computes dot kernel k, when there
// is one: an f32 or f64 dot_general whose operands are buffers (not
// computed inside the kernel) and whose batch, free and contracting
// dimensions each collapse to one stride (any transpose of a matrix
// does; a free dimension split around a contracting one does not).
func gemmRoutine(k *kernel) (*runtimeRoutine, bool) {
	op := k.root
	if k.kind != "dot" || !readsOperands(k) {
		return nil, false
	}
	lhs, rhs := op.Operands[0], op.Operands[1]
	dt := op.Results[0].Type.DType
	name := map[stablehlo.DType]string{stablehlo.F32: rt.GemmF32, stablehlo.F64: rt.GemmF64}[dt]
	if name == "" || lhs.Type.DType != dt || rhs.Type.DType != dt {
		return nil, false
	}
	L := layoutOf(op)
	dd := op.Attrs.Dot
	nb, nc := len(dd.LhsBatch), len(dd.LhsContracting)
	nf := len(L.lhsOrder) - nb - nc
	ls, rs := rowStrides(lhs.Type.Shape), rowStrides(rhs.Type.Shape)
	sab, ok1 := groupStride(lhs.Type.Shape, ls, L.lhsOrder[:nb])
	sam, ok2 := groupStride(lhs.Type.Shape, ls, L.lhsOrder[nb:nb+nf])
	sak, ok3 := groupStride(lhs.Type.Shape, ls, L.lhsOrder[nb+nf:])
	sbb, ok4 := groupStride(rhs.Type.Shape, rs, L.rhsOrder[:nb])
	sbk, ok5 := groupStride(rhs.Type.Shape, rs, L.rhsOrder[nb:nb+nc])
	sbn, ok6 := groupStride(rhs.Type.Shape, rs, L.rhsOrder[nb+nc:])
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return nil, false
	}
	return &runtimeRoutine{name: name, params: []int64{L.b, L.m, L.k, L.n, sab, sam, sak, sbb, sbk, sbn}, inputs: []*stablehlo.Value{lhs, rhs}}, true
}

// convRoutine returns the routine that computes convolution kernel k,
// when there is one: a convolution genConvGemm handles (convGemmOK: f32
// or f64, no groups, no lhs dilation) with at most rt.MaxSpatial spatial
// dimensions and both operands buffers. Any dimension numbers, strides,
// padding (negative too), rhs dilation and reversal go into the block.
func convRoutine(k *kernel) (*runtimeRoutine, bool) {
	op := k.root
	if k.kind != "convgemm" || !readsOperands(k) {
		return nil, false
	}
	in, w := op.Operands[0], op.Operands[1]
	c := op.Attrs.Conv
	d := c.Dims
	ns := len(d.InputSpatial)
	if ns < 1 || ns > rt.MaxSpatial {
		return nil, false
	}
	name := map[stablehlo.DType]string{stablehlo.F32: rt.ConvF32, stablehlo.F64: rt.ConvF64}[op.Results[0].Type.DType]
	if name == "" {
		return nil, false
	}
	r := op.Results[0]
	is, ws, os := rowStrides(in.Type.Shape), rowStrides(w.Type.Shape), rowStrides(r.Type.Shape)
	p := make([]int64, rt.ConvParams)
	p[rt.ConvNS], p[rt.ConvBatch] = int64(ns), in.Type.Shape[d.InputBatch]
	p[rt.ConvIn], p[rt.ConvOut] = in.Type.Shape[d.InputFeature], r.Type.Shape[d.OutputFeature]
	p[rt.ConvInBatchStride], p[rt.ConvInFeatureStride] = is[d.InputBatch], is[d.InputFeature]
	p[rt.ConvKernelInStride], p[rt.ConvKernelOutStride] = ws[d.KernelInputFeature], ws[d.KernelOutputFeature]
	p[rt.ConvOutBatchStride], p[rt.ConvOutFeatureStride] = os[d.OutputBatch], os[d.OutputFeature]
	for s := range ns {
		q := p[rt.ConvSpatialAt(s):]
		q[rt.SpInSize], q[rt.SpInStride] = in.Type.Shape[d.InputSpatial[s]], is[d.InputSpatial[s]]
		q[rt.SpKSize], q[rt.SpKStride] = w.Type.Shape[d.KernelSpatial[s]], ws[d.KernelSpatial[s]]
		q[rt.SpOutSize], q[rt.SpOutStride] = r.Type.Shape[d.OutputSpatial[s]], os[d.OutputSpatial[s]]
		q[rt.SpConvStride], q[rt.SpPadLow], q[rt.SpDilation] = c.Strides[s], c.PadLow[s], c.RhsDilation[s]
		if c.Reversal[s] {
			q[rt.SpRev] = 1
		}
	}
	return &runtimeRoutine{name: name, params: p, inputs: []*stablehlo.Value{in, w}}, true
}

// winoRoutine returns the Winograd routine (rt.WinoF32, rt.WinoF64) a
// tuned build runs convolution kernel k with, instead of building and
// timing the generated Winograd candidate: where k is tunable,
// convRoutine has a routine for it, its block is one the Winograd
// routines take (rt.CheckWino: two spatial dimensions, a 3x3 window,
// unit strides, no dilation) and it has winoRoutineMinIn input features
// or more.
func winoRoutine(k *kernel) (*runtimeRoutine, bool) {
	if !k.tunable() {
		return nil, false
	}
	r, ok := convRoutine(k)
	if !ok || rt.CheckWino(r.params) != nil || r.params[rt.ConvIn] < winoRoutineMinIn {
		return nil, false
	}
	name := map[string]string{rt.ConvF32: rt.WinoF32, rt.ConvF64: rt.WinoF64}[r.name]
	return &runtimeRoutine{name: name, params: r.params, inputs: r.inputs}, true
}

// winoRoutineMinIn is the input feature count from which a tuned build
// runs a convolution winoRoutine takes on the Winograd routine, untimed,
// instead of building and timing the generated Winograd candidate: there
// the routine runs within 5-7% of it (BenchmarkKernelProfile, 1 thread:
// resnetblock's 64-feature convolutions 46.1-46.7 against 43.9-44.6 ms,
// cnn's 16-feature one 258 against 242 µs), while the candidate's
// compile was most of the tuned compile (resnetblock 1.03 s of 1.05 s on
// one CPU). With fewer input features each tile's transforms cost more
// than its products, which the generated kernel, specialized to the
// shape, does far better: cnn's one-feature first convolution 361 µs on
// the routine against 146 µs.
const winoRoutineMinIn = 8

// poolRoutine returns the pooling routine (rt.PoolF32, rt.PoolF64) that
// computes kernel k, when there is one: an f32 or f64 reduce_window of
// rank 2 to rt.MaxPoolRank whose innermost dimension the window passes
// through (rowWindow), whose region is one maximum or minimum of its two
// arguments, and whose operand and init value are buffers. The routine
// is genReduceWindowRows' loops compiled into the binary: the same bits,
// and no C compiler for the kernel (cnn's two 2x2 max-pools were 213 M
// of its untuned unit's 492 M compiler instructions). Every build runs
// it: the kernel has no other candidate.
func poolRoutine(k *kernel) (*runtimeRoutine, bool) {
	op := k.root
	if op.Name != "reduce_window" || len(op.Operands) != 2 || !rowWindow(op) || !readsOperands(k) {
		return nil, false
	}
	x, init := op.Operands[0], op.Operands[1]
	r := op.Results[0]
	name := map[stablehlo.DType]string{stablehlo.F32: rt.PoolF32, stablehlo.F64: rt.PoolF64}[r.Type.DType]
	rank := len(r.Type.Shape)
	if name == "" || rank > rt.MaxPoolRank || x.Type.DType != r.Type.DType || init.Type.DType != r.Type.DType {
		return nil, false
	}
	body := op.Regions[0]
	if len(body.Args) != 2 || len(body.Ops) != 2 {
		return nil, false
	}
	f, ret := body.Ops[0], body.Ops[1]
	if len(ret.Operands) != 1 || ret.Operands[0] != f.Results[0] || len(f.Operands) != 2 {
		return nil, false
	}
	p := make([]int64, rt.PoolParams)
	switch f.Name {
	case "maximum":
	case "minimum":
		p[rt.PoolOp] = 1
	default:
		return nil, false
	}
	// regionBody binds the arguments to (accumulator, element).
	acc, elem := body.Args[0], body.Args[1]
	switch {
	case f.Operands[0] == acc && f.Operands[1] == elem:
	case f.Operands[0] == elem && f.Operands[1] == acc:
		p[rt.PoolSwap] = 1
	default:
		return nil, false
	}
	w := op.Attrs.Window
	p[rt.PoolRank], p[rt.PoolC] = int64(rank), r.Type.Shape[rank-1]
	for d := range rank - 1 {
		q := p[rt.PoolDimAt(d):]
		q[rt.PoolOut], q[rt.PoolIn], q[rt.PoolWindow] = r.Type.Shape[d], x.Type.Shape[d], w.Dimensions[d]
		q[rt.PoolStride], q[rt.PoolWinDil], q[rt.PoolBaseDil], q[rt.PoolPadLow] = w.Strides[d], w.WindowDilations[d], w.BaseDilations[d], w.PadLow[d]
	}
	return &runtimeRoutine{name: name, params: p, inputs: []*stablehlo.Value{x, init}}, true
}

// untunedRoutine is the runtime routine an untuned build runs kernel k
// with, if any.
func untunedRoutine(k *kernel) *runtimeRoutine {
	if r, ok := gemmRoutine(k); ok {
		return r
	}
	if r, ok := convRoutine(k); ok {
		return r
	}
	return nil
}

// groupStride returns the one stride that walks dims (in that order,
// the last fastest) of a row-major array with these strides, when there
// is one: each dimension's stride is the next one's times its extent.
// Dimensions of extent 1 are never stepped, so they are skipped. An
// empty group has one element: stride 0.
func groupStride(shape, strides []int64, dims []int) (int64, bool) {
	var live []int
	for _, d := range dims {
		if shape[d] != 1 {
			live = append(live, d)
		}
	}
	if len(live) == 0 {
		return 0, true
	}
	for i := 0; i+1 < len(live); i++ {
		if strides[live[i]] != strides[live[i+1]]*shape[live[i+1]] {
			return 0, false
		}
	}
	return strides[live[len(live)-1]], true
}

// validateRuntimeStep checks a step that calls a runtime routine: it
// names one, its buffers are the two operands, an int64 constant
// parameter block and the result, of the routine's element type, and
// the block reads and writes only inside them (rt.CheckGemm,
// rt.CheckConv, rt.CheckPool). A plan comes from the cache: without this, a damaged
// block could make the routine read or write past a buffer.
func (p *Plan) validateRuntimeStep(s Step) error {
	r, ok := rt.Lookup(s.Kernel)
	if !ok {
		return fmt.Errorf("unknown runtime routine %q", s.Kernel)
	}
	if len(s.Bufs) != 4 {
		return fmt.Errorf("runtime routine %s has %d buffers, want 4", s.Kernel, len(s.Bufs))
	}
	for i, id := range s.Bufs {
		for _, other := range s.Bufs[:i] {
			if id == other {
				return fmt.Errorf("runtime routine %s: buffer %d passed twice", s.Kernel, id)
			}
		}
	}
	pb := p.Buffers[s.Bufs[2]]
	if pb.Const == nil || pb.DType != "i64" {
		return fmt.Errorf("runtime routine %s: buffer %d is not an int64 constant parameter block", s.Kernel, s.Bufs[2])
	}
	params, err := rt.DecodeParams(pb.Const)
	if err != nil {
		return err
	}
	var n [3]int64
	for i, id := range []int{s.Bufs[0], s.Bufs[1], s.Bufs[3]} {
		t, err := p.Buffers[id].tensorType()
		if err != nil {
			return err
		}
		if t.DType.Size() != r.ElemSize || !t.DType.IsFloat() {
			return fmt.Errorf("runtime routine %s: buffer %d holds %s", s.Kernel, id, t.DType)
		}
		n[i] = t.NumElements()
	}
	return r.Check(params, n[0], n[1], n[2])
}

// poolMinParWork is the work (output elements times window positions)
// from which a pooling routine runs in parts, one per thread: cnn's
// 16x14x14x16 2x2 pool (200 K of work) ran in 31.7-34.4 µs in two parts
// at 2 threads, 40.6-44.7 µs in one (BenchmarkKernelProfile).
const poolMinParWork = 1 << 17

// runtimeFn is the kernelFn of a routine with parameter block params:
// with a parallel entry point when the product (or the convolution's
// multiply-adds) is big enough to pay for threads (dotMinParWork, as for
// generated products), one part per thread since each part packs its
// own panels of B (or the whole kernel).
func runtimeFn(r rt.Routine, params []byte) kernelFn {
	f := kernelFn{serial: r.Serial, parts: 1}
	p, err := rt.DecodeParams(params)
	if err != nil {
		return f
	}
	var w int64
	ok := false
	switch {
	case r.Conv && len(p) == rt.ConvParams:
		dims := []int64{p[rt.ConvBatch], p[rt.ConvIn], p[rt.ConvOut]}
		for s := range min(int(p[rt.ConvNS]), rt.MaxSpatial) {
			dims = append(dims, p[rt.ConvSpatialAt(s)+rt.SpOutSize], p[rt.ConvSpatialAt(s)+rt.SpKSize])
		}
		w, ok = work(dims...)
	case r.Pool && len(p) == rt.PoolParams:
		// Each output element folds its window over the innermost size.
		dims := []int64{p[rt.PoolC]}
		for d := range min(int(p[rt.PoolRank])-1, rt.MaxPoolRank-1) {
			dims = append(dims, p[rt.PoolDimAt(d)+rt.PoolOut], p[rt.PoolDimAt(d)+rt.PoolWindow])
		}
		// A fold is a few vector operations, far less than a multiply-
		// add's share of a product: parts pay from poolMinParWork.
		if w, ok = work(dims...); ok && w >= poolMinParWork {
			f.part = r.Part
		}
		return f
	case !r.Conv && len(p) == rt.GemmParams:
		w, ok = work(p[0], p[1], p[2], p[3])
	}
	if ok && w >= dotMinParWork {
		f.part = r.Part
	}
	return f
}

// work is the product of non-negative dims, false past 2^62.
func work(dims ...int64) (int64, bool) {
	w := int64(1)
	for _, d := range dims {
		if d != 0 && w > (1<<62)/d {
			return 0, false
		}
		w *= d
	}
	return w, true
}

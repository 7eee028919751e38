// Package stablehlo is a StableHLO front end in plain Go: it parses MLIR
// text (the pretty form JAX prints and the generic form GoMLX's builder
// writes), verifies types and shapes, prints a canonical form for cache
// keys, and evaluates programs with a reference interpreter.
//
// # IR
//
// Parse returns a *Module holding *Func values. A Func has Args (the entry
// block arguments), ResultTypes and a Body *Block. A Block is a flat list
// of *Op; its last op is always named "return". Region-carrying ops hold
// their bodies in Op.Regions: reduce, scatter, reduce_window,
// select_and_scatter (select, then scatter) and sort (comparator) have
// bodies over scalar tensors, isolated from above (a body only uses its
// own block arguments and values it defines); while (cond, then body,
// both taking the loop-carried values), if (true, then false branch) and
// case (one region per branch, no arguments) may also use values defined
// around them.
//
// Every SSA value is a *Value with a static TensorType (element DType and
// Shape; rank 0 is a scalar), an ID unique within its function (dense in
// [0, Func.NumValues), nested regions included), and its defining Op (nil
// for block arguments) with the result Index.
//
// Op.Name is the op name without the "stablehlo." prefix ("add",
// "dot_general", "broadcast_in_dim"); chlo ops keep their dialect
// ("chlo.top_k", "chlo.erf_inv"); func.call is "call"; func.return and
// stablehlo.return are both "return". SupportedOps lists the full set.
//
// Op.Attrs carries typed attributes; only the fields of the op's kind are
// set:
//
//	constant          Constant (*Tensor, the literal)
//	iota              Dimension
//	compare           ComparisonDirection ("EQ".."LT"), CompareType ("FLOAT",
//	                  "TOTALORDER", "SIGNED", "UNSIGNED" or "" = by element type)
//	broadcast_in_dim  BroadcastDims (operand dim i -> result dim BroadcastDims[i])
//	transpose         Permutation (result dim i = operand dim Permutation[i])
//	slice             StartIndices, LimitIndices, Strides
//	pad               EdgePaddingLow, EdgePaddingHigh (may be negative), InteriorPadding
//	concatenate       Dimension
//	dot_general       Dot{LhsBatch, RhsBatch, LhsContracting, RhsContracting}, Precision;
//	                  result dims = batch dims, lhs free dims, rhs free dims (in order)
//	reduce            ReduceDims; Operands = inputs[0..N) then inits[0..N);
//	                  Regions[0].Args = (acc_0..acc_N-1, elem_0..elem_N-1)
//	custom_call       Callee (call_target_name, e.g. "check.expect_close"),
//	                  HasSideEffect, MinULP/MaxULP/Tolerance for the checks
//	call              Callee (function name without '@')
//	chlo.top_k        K; results (values, i32 indices) along the last dimension
//	reverse           Dims
//	dynamic_slice     SliceSizes; Operands = operand, one start index per dim
//	gather            Gather (GatherDims), SliceSizes, IndicesAreSorted
//	scatter           Scatter (ScatterDims), IndicesAreSorted, UniqueIndices;
//	                  Operands = inputs[0..N), indices, updates[0..N)
//	sort              Dimension, IsStable
//	reduce_window     Window (dimensions, strides, base/window dilations,
//	                  PadLow/PadHigh); Operands = inputs then inits
//	select_and_scatter Window; Operands = operand, source, init
//	convolution       Conv (ConvDims, strides, padding, dilations, reversal,
//	                  group counts)
//	triangular_solve  TriSolve
//	reduce_precision  ExponentBits, MantissaBits
//	rng_bit_generator RngAlgorithm
//	cholesky          Lower
//	fft               FftType ("FFT", "IFFT", "RFFT", "IRFFT"), FftLength
//	                  (lengths of the innermost dimensions transformed)
//
// Other attributes are kept as canonical text in Attrs.Other: they count
// for the canonical form but are otherwise ignored.
//
// # Tensors
//
// A *Tensor is a host buffer: Data is the raw little-endian row-major
// contents (i1 = one byte 0/1, f16 and bf16 as their 16-bit patterns,
// complex<f32> and complex<f64> as (real, imaginary) pairs like Go's
// complex64 and complex128),
// exactly what generated C kernels read and write. NewTensor allocates 8-byte-aligned buffers so the typed views
// (Float32s, Int32s, Bools, Complex64s, ...) reinterpret without copying.
//
// # Backends
//
// Inline returns a copy of a module whose main function has every call
// inlined, so a backend sees one flat function plus region bodies. Eval is
// the reference interpreter; check.expect_* custom calls evaluate as
// assertions. RunConformance runs a directory of test programs through any
// backend's run function.
package stablehlo

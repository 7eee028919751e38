// Package cpu is xlacache's built-in backend: it compiles StableHLO to C,
// autotunes the matrix and reduction kernels by timing candidates, compiles
// the chosen kernels with the system C compiler, links them into one shared
// object and runs them on host buffers.
//
// All three cache tiers save real work here: the executables tier skips the
// whole pipeline, the autotune tier ("cpu/autotune") skips the timing runs,
// and the kernel tier ("cpu/kernels") skips the C compiler for every kernel
// whose source was compiled before: both the final kernel objects and the
// autotuner's per-kernel candidate libraries, so re-tuning with only the
// kernel tier left runs no compiler. Kernels and candidate libraries are
// named by a hash of their source, so objects from different programs can
// never clash, and programs that share a kernel share its entries. The
// kernels a compile misses are compiled a few translation units
// ("batches", batch.go) at a time, and each kernel's entry holds the
// object of its batch.
//
// An untuned build (Backend.NoTune) compiles less still: its f32 and f64
// matrix products and convolutions call runtime routines compiled into
// the binary (internal/rt, runtime.go), as XLA:CPU calls precompiled
// Eigen routines, so no C compiler runs for them.
//
// # Where to change what
//
// One op's facts (family, inline cost, reads-from-memory, exactness,
// complex support, checks, kernel constructor) are one row of opTable in
// ops.go; its header says how to add an op. The files, by role:
//
//   - backend.go: the cache.Backend (parse, Compile, Load) and the
//     compile pipeline: fuse, codegen, autotune, cc, link, load;
//   - key.go: every key the backend contributes (executable, autotune,
//     kernel objects) and which version knob to bump when;
//   - ops.go: the op table;
//   - lower.go: fusion (which values are materialized), the type and op
//     checks, the C types of each dtype;
//   - kernels.go: kernels, their candidates and their source, the
//     elementwise/index loop kernel;
//   - emit.go: the C emitter (gen) and the inline element expressions of
//     the elementwise and index ops (computeRaw, unaryExpr, binaryExpr);
//   - one file per op family of kernel roots: dot.go (dot_general),
//     conv.go (convolution), reduce.go, movement.go (concatenate, pad),
//     index.go (dynamic_slice, gather, dynamic_update_slice, scatter),
//     window.go (reduce_window, select_and_scatter), sort.go (sort,
//     chlo.top_k), linalg.go (triangular_solve, cholesky), rng.go
//     (rng_bit_generator), fft.go, complex.go (ops on complex values);
//   - control.go, controlexec.go: while, if and case as plan steps and
//     their execution;
//   - prelude.go, chlo.go, complexc.go, fft.go: the C helpers kernels
//     include (their text is in the codegen fingerprint, key.go);
//   - batch.go: batching missing kernels into translation units and the
//     kernel tier's payload (the batch's kernel names, then its object);
//   - autotune.go: timing candidates and the autotune tier;
//   - runtime.go: which kernels of an untuned build call a runtime
//     routine, their parameter blocks, and the plan check that makes a
//     block from the cache safe to run;
//   - plan.go: the executable's plan and its encoding; exec.go,
//     thread.go: loading and running it, the worker pool;
//   - check.go, conformance.go: check.* assertions and the conformance
//     runner;
//   - internal/cc: the system C compiler (identity, compile, link, dlopen);
//   - internal/rt: the runtime routines (C built by cgo: a packed,
//     register-blocked gemm and an implicit-im2col convolution, for
//     AVX2+FMA and any CPU, picked at run time) and their parameter
//     checks.
package cpu

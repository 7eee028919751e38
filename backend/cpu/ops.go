package cpu

import (
	"github.com/xlacache/xlacache/stablehlo"
)

// This file is the cpu backend's one description of the ops it compiles,
// as stablehlo/ops.go is the interpreter's. Every decision the lowering
// makes about an op by its name is read from opTable: whether it is
// computed inline or roots a kernel (analyzeBlock), its inline cost, whether
// its operands must live in memory, whether a 16-bit result needs rounding
// (gen.compute), whether it accepts complex values (checkComplex), which
// structural checks it needs (checkOp) and how its kernel is built and
// generated (newKernel, kernel.generate). An op missing from the table is
// rejected as unsupported before any C is generated.
//
// To add an op (the front end must accept it first: stablehlo/ops.go, the
// verifier and the interpreter, which is the reference):
//  1. add its row here: its family; for inline ops their cost and
//     whether they are exact; for roots whether they read from memory,
//     and their kernel constructor (rootKernel for a single-variant
//     kernel); its complex support; a check for any structural invariant
//     the generator relies on;
//  2. write its C: an inline op's element expression in gen.computeRaw
//     (emit.go), or nothing when it is a plain unaryExpr or binaryExpr; a
//     root's generator in the file of its family (conv.go, sort.go,
//     window.go, …);
//  3. test it against the interpreter (a diff*_test.go) and rerun the
//     conformance programs.
//
// A new op needs no version bump (no cached program could use it); a
// change to the C an existing op generates does: see key.go.

// opFamily is how the lowering treats an op.
type opFamily int

const (
	// famElementwise ops are computed inline, element by element, in the
	// kernel that reads them; they are the ops region bodies (reduce,
	// sort, scatter, the window ops) may hold.
	famElementwise opFamily = iota + 1
	// famIndex ops are computed inline too, picking elements of their
	// operands by index (or making them: constant, iota).
	famIndex
	// famRoot ops always root a kernel of their own: their results are
	// materialized.
	famRoot
	// famControl ops (while, if, case) are control steps of the plan,
	// their regions lowered to steps of their own (control.go).
	famControl
	// famPlumbing ops (return, custom_call, call) are no computation;
	// the lowering handles each by name.
	famPlumbing
)

// complexSupport is what an op does with complex operands or results.
type complexSupport int

const (
	// complexNone: complex values are rejected as unsupported.
	complexNone complexSupport = iota
	// complexMove: the op carries complex values without computing on
	// them (or, for reduce, sort and the window ops, has its regions
	// checked op by op).
	complexMove
	// complexCompute: the op computes on complex values (complex.go);
	// compare only in the directions cmpOps knows.
	complexCompute
)

// opSpec is everything the cpu backend knows about one op.
type opSpec struct {
	family opFamily
	// cost estimates, for inline ops, the per-element cost of computing
	// the op inline (0: free index arithmetic; 1: one machine operation;
	// 8: transcendental functions, division, power and calls); values
	// costing more than cheapCost are not recomputed by several users.
	cost int
	// exact inline ops move or pick values without computing new ones,
	// so their 16-bit float results need no rounding.
	exact bool
	// readsMemory roots read their operands many times (or at
	// data-dependent positions), so the operands live in buffers.
	readsMemory bool
	complex     complexSupport
	// check, when set, verifies the op's structure beyond its types (the
	// invariants its generator relies on).
	check func(l *lowering, op *stablehlo.Op) error
	// kernel builds a root's kernel: it sets k's kind, candidates, work
	// and generator. Inline ops that are materialized get loopKernel.
	kernel func(k *kernel, op *stablehlo.Op)
}

// opTable is the op set the cpu backend compiles. It is filled by init,
// not by its declaration, because the generators it names reach back to
// it (gen.compute reads exact), which Go rejects as an initialization
// cycle.
var opTable map[string]opSpec

func init() {
	ew := famElementwise
	opTable = map[string]opSpec{
		// Elementwise, computed on complex values too.
		"add":                   {family: ew, cost: 1, complex: complexCompute},
		"subtract":              {family: ew, cost: 1, complex: complexCompute},
		"multiply":              {family: ew, cost: 1, complex: complexCompute},
		"negate":                {family: ew, cost: 1, complex: complexCompute},
		"abs":                   {family: ew, cost: 1, complex: complexCompute},
		"sign":                  {family: ew, cost: 1, complex: complexCompute},
		"compare":               {family: ew, cost: 1, complex: complexCompute},
		"convert":               {family: ew, cost: 1, complex: complexCompute},
		"complex":               {family: ew, cost: 1, complex: complexCompute},
		"real":                  {family: ew, cost: 1, complex: complexCompute},
		"imag":                  {family: ew, cost: 1, complex: complexCompute},
		"divide":                {family: ew, cost: 8, complex: complexCompute},
		"power":                 {family: ew, cost: 8, complex: complexCompute},
		"exponential":           {family: ew, cost: 8, complex: complexCompute},
		"exponential_minus_one": {family: ew, cost: 8, complex: complexCompute},
		"log":                   {family: ew, cost: 8, complex: complexCompute},
		"log_plus_one":          {family: ew, cost: 8, complex: complexCompute},
		"logistic":              {family: ew, cost: 8, complex: complexCompute},
		"sqrt":                  {family: ew, cost: 8, complex: complexCompute},
		"rsqrt":                 {family: ew, cost: 8, complex: complexCompute},
		"sine":                  {family: ew, cost: 8, complex: complexCompute},
		"cosine":                {family: ew, cost: 8, complex: complexCompute},
		"tan":                   {family: ew, cost: 8, complex: complexCompute},
		"tanh":                  {family: ew, cost: 8, complex: complexCompute},
		// Elementwise, real only.
		"select":                 {family: ew, cost: 1, exact: true, complex: complexMove},
		"and":                    {family: ew, cost: 1},
		"or":                     {family: ew, cost: 1},
		"xor":                    {family: ew, cost: 1},
		"not":                    {family: ew, cost: 1},
		"maximum":                {family: ew, cost: 1},
		"minimum":                {family: ew, cost: 1},
		"clamp":                  {family: ew, cost: 1},
		"floor":                  {family: ew, cost: 8},
		"ceil":                   {family: ew, cost: 8},
		"round_nearest_even":     {family: ew, cost: 8},
		"round_nearest_afz":      {family: ew, cost: 8},
		"cbrt":                   {family: ew, cost: 8},
		"remainder":              {family: ew, cost: 8},
		"atan2":                  {family: ew, cost: 8},
		"shift_left":             {family: ew, cost: 8},
		"shift_right_logical":    {family: ew, cost: 8},
		"shift_right_arithmetic": {family: ew, cost: 8},
		"popcnt":                 {family: ew, cost: 8},
		"count_leading_zeros":    {family: ew, cost: 8},
		"is_finite":              {family: ew, cost: 8},
		"reduce_precision":       {family: ew, cost: 8},
		"chlo.acos":              {family: ew, cost: 8},
		"chlo.acosh":             {family: ew, cost: 8},
		"chlo.asin":              {family: ew, cost: 8},
		"chlo.asinh":             {family: ew, cost: 8},
		"chlo.atan":              {family: ew, cost: 8},
		"chlo.atanh":             {family: ew, cost: 8},
		"chlo.cosh":              {family: ew, cost: 8},
		"chlo.sinh":              {family: ew, cost: 8},
		"chlo.tan":               {family: ew, cost: 8},
		"chlo.digamma":           {family: ew, cost: 8},
		"chlo.erf":               {family: ew, cost: 8},
		"chlo.erf_inv":           {family: ew, cost: 8},
		"chlo.erfc":              {family: ew, cost: 8},
		"chlo.lgamma":            {family: ew, cost: 8},
		"chlo.bessel_i0e":        {family: ew, cost: 8},
		"chlo.bessel_i1e":        {family: ew, cost: 8},
		"chlo.next_after":        {family: ew, cost: 8},

		// Index ops, computed inline (emit.go, index.go).
		"constant":         {family: famIndex, cost: 0, exact: true, complex: complexMove},
		"iota":             {family: famIndex, cost: 0, complex: complexMove},
		"broadcast_in_dim": {family: famIndex, cost: 0, exact: true, complex: complexMove},
		"transpose":        {family: famIndex, cost: 0, exact: true, complex: complexMove},
		"slice":            {family: famIndex, cost: 0, exact: true, complex: complexMove},
		"reverse":          {family: famIndex, cost: 0, exact: true, complex: complexMove},
		"reshape":          {family: famIndex, cost: 1, exact: true, complex: complexMove},
		"bitcast_convert":  {family: famIndex, cost: 8, exact: true},
		"dynamic_slice":    {family: famIndex, cost: 8, complex: complexMove},
		"gather":           {family: famIndex, cost: 8, complex: complexMove},

		// Kernel roots, grouped by the file that generates them.
		// dot.go
		"dot_general": {family: famRoot, readsMemory: true, complex: complexCompute, kernel: dotKernel},
		// conv.go
		"convolution": {family: famRoot, readsMemory: true, kernel: convKernel},
		// reduce.go
		"reduce": {family: famRoot, complex: complexMove, check: checkReduce, kernel: reduceKernel},
		// movement.go
		"concatenate": {family: famRoot, complex: complexMove, kernel: rootKernel("concat", genConcat)},
		"pad":         {family: famRoot, complex: complexMove, kernel: rootKernel("pad", genPad)},
		// index.go
		"dynamic_update_slice": {family: famRoot, complex: complexMove, kernel: rootKernel("", genDynamicUpdateSlice)},
		"scatter":              {family: famRoot, complex: complexMove, check: checkResultsBody, kernel: rootKernel("", genScatter)},
		// window.go
		"reduce_window":      {family: famRoot, readsMemory: true, complex: complexMove, check: checkResultsBody, kernel: rootKernel("", genReduceWindow)},
		"select_and_scatter": {family: famRoot, readsMemory: true, complex: complexMove, check: checkSelectScatter, kernel: rootKernel("", genSelectAndScatter)},
		// sort.go
		"sort":       {family: famRoot, readsMemory: true, complex: complexMove, check: checkSortBody, kernel: rootKernel("", genSort)},
		"chlo.top_k": {family: famRoot, readsMemory: true, check: checkTopK, kernel: rootKernel("topk", genTopK)},
		// linalg.go
		"triangular_solve": {family: famRoot, readsMemory: true, kernel: rootKernel("", genTriSolve)},
		"cholesky":         {family: famRoot, readsMemory: true, kernel: rootKernel("", genCholesky)},
		// rng.go
		"rng_bit_generator": {family: famRoot, readsMemory: true, kernel: rootKernel("", genRngBits)},
		// fft.go
		"fft": {family: famRoot, readsMemory: true, complex: complexCompute, check: (*lowering).checkFFT, kernel: rootKernel("fft", genFFT)},

		// Control flow, lowered to plan steps (control.go).
		"while": {family: famControl, complex: complexMove, check: (*lowering).checkControl},
		"if":    {family: famControl, complex: complexMove, check: (*lowering).checkControl},
		"case":  {family: famControl, complex: complexMove, check: (*lowering).checkControl},

		// Plumbing (lower.go, plan.go).
		"return":      {family: famPlumbing, complex: complexMove},
		"custom_call": {family: famPlumbing, complex: complexMove, check: checkCustomCall},
		"call":        {family: famPlumbing, check: checkCall},
	}
}

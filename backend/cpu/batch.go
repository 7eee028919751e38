package cpu

import (
	"bytes"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
)

// A cold compile builds its missing kernels as a few translation units
// ("batches") rather than one per kernel: every unit costs a compiler
// driver, cc1 and assembler process and the prelude, about 30 ms on the
// development VM, against about 15 ms for an average kernel's own code
// (the transformer example's 21 kernels: 1.0 s as 21 units in one cc
// invocation, 0.35 s as one unit). A precompiled prelude header saved
// nothing (loading its 2.7 MB .gch costs what parsing the text does), so
// the prelude is parsed once per batch instead.
//
// The kernel tier keeps one entry per kernel (objectKey), so that any
// program sharing a kernel finds it: the entry holds the whole object of
// the batch the kernel was compiled in, with the names of the batch's
// kernels (encodeBatch). A program that finds kernels of several batches
// links each batch object once; the other kernels in it are unused code,
// never a clash, since kernel symbols are named by a hash of their
// source. Two batch objects that both define a symbol are never linked
// together: the later kernel is compiled again instead (compileObjects).

// maxBatchKernels bounds the kernels in one batch. Every kernel's entry
// holds its whole batch object, so the bound caps the tier's extra space
// (at most this many kernels' machine code per entry, a few KB each) while
// keeping the per-unit overhead small (1/16 of it per kernel).
const maxBatchKernels = 16

// The kernels of an untuned compile are built at cheaper levels than
// -O3 (cc.Levels): almost all of an untuned cold compile is the C
// compiler, and the levels below cut its CPU time by about a tenth
// (docs/cpu.md, issue 23) with the same run time within the noise.
// Tuned kernels keep -O3, the level their candidates were timed at.
//
// cheapOpt is the level of untuned kernels whose inner loops are written
// with explicit vector types (convolutions in their default
// register-blocked configuration, kind "convgemm"): -O1 with FMA
// contraction and the loop vectorizer (cc.LevelVectorCode). Without the
// contraction (plain -O1) the results would differ in the last bits from
// the -O3 object's (TestUntunedConvCheapLevel) and resnetblock ran about
// 15% slower; with it the run time is that of -O2/-O3 and the
// convolutions compile a little faster than at -O2 (cnn's and
// resnetblock's convolution units: 210 ms of CPU at -O2, 190 ms here).
var cheapOpt = cc.LevelVectorCode

// untunedOpt is the level of the other untuned kernels' units: the
// reductions and the default (ikj) matrix products rely on the loop
// vectorizer, and -O2 with its cheap cost model (cc.LevelVectorize)
// vectorizes the same loops -O3 does at about 0.88 of its compile time.
// Plain -O2 (vectorizing only what needs no epilogue or alias check)
// left the dot loops scalar and ran mlp 6x slower; plain -O1 with the
// vectorizer skipped the if-conversion that vectorizes max/min loops
// (cnn ran 2x slower). Inside these units, the elementwise loops, the
// kernels calling transcendental helpers and the lanes reductions have
// their entry points built at -O1 with FMA contraction and the
// vectorizer (XK_DEAR, kernel.bodyAt), which vectorizes them as -O2 does.
var untunedOpt = cc.LevelVectorize

// kernelOpt is the optimization level (cc.Source.Opt) of k's final object:
// cheapOpt for an untuned convgemm kernel, untunedOpt for another untuned
// kernel, else the compiler's -O3 (""). It is part of the object's
// kernel-tier key (objectKey).
func kernelOpt(k *kernel, noTune bool) string {
	switch {
	case !noTune:
		return ""
	case k.kind == "convgemm":
		return cheapOpt
	}
	return untunedOpt
}

// batchMagic starts every kernel-tier payload of a final kernel object.
const batchMagic = "xlacache-cpu-kernel-batch 1\n"

// kernel classes: which optional preludes a kernel's source carries after
// the common prelude. Kernels of different classes never share a batch,
// so each kernel is compiled after exactly the C text its own source has.
const (
	classPlain = iota
	classComplex
	classFFT
)

// batchMember is a final kernel split into the parts a batch needs.
type batchMember struct {
	src   cc.Source
	class int
	code  string // the kernel's own functions, after every prelude
}

// splitKernel splits a final kernel source (finalSource: prelude, then
// complexPrelude when the kernel computes on complex values or is an fft,
// then fftPrelude for an fft, then the kernel's functions).
func splitKernel(s cc.Source) (batchMember, error) {
	code := string(s.Code)
	if !strings.HasPrefix(code, prelude) {
		return batchMember{}, fmt.Errorf("cpu: internal error: kernel %s does not start with the prelude", s.Name)
	}
	rest := code[len(prelude):]
	m := batchMember{src: s, class: classPlain}
	if r, ok := strings.CutPrefix(rest, complexPrelude); ok {
		m.class, rest = classComplex, r
		if r, ok := strings.CutPrefix(rest, fftPrelude); ok {
			m.class, rest = classFFT, r
		}
	}
	m.code = rest
	return m, nil
}

// classPrelude is the C text every kernel of class cls starts with.
func classPrelude(cls int) string {
	switch cls {
	case classComplex:
		return prelude + complexPrelude
	case classFFT:
		return prelude + complexPrelude + fftPrelude
	}
	return prelude
}

// batch is one translation unit of kernels.
type batch struct {
	src     cc.Source // named b_<hash of its members' names>
	members []string  // kernel names, in the unit's order
}

// planBatches groups kernels into translation units: by class and
// optimization level (cc.Source.Opt, which one compiler invocation cannot
// mix), then each group cut into units of about equal estimated compile
// time (compileCost), enough units for jobs compilers to work at once,
// none over limit kernels (at most maxBatchKernels; limit 1 is a unit per
// kernel, the way kernels were compiled before batching, which benchmarks
// compare with), and, where limit asks for more units than jobs, a
// multiple of jobs of them where there are kernels enough.
//
// The units are filled costliest kernel first, each into the unit with
// the least cost so far that has room, rather than cut into contiguous runs:
// a program's few big kernels (convolutions, a few KB of C and a fifth of
// a second of optimizer each) would otherwise often land in one unit and
// leave the other compiler idle (cnn's two did: 18 KB of code against 5
// KB). A unit keeps its kernels in the order of srcs, so the plan, and the
// units' names, depend only on the kernels.
func planBatches(srcs []cc.Source, jobs, limit int) ([]batch, error) {
	limit = min(max(limit, 1), maxBatchKernels)
	type group struct {
		class int
		opt   string
	}
	byGroup := map[group][]batchMember{}
	var groups []group
	for _, s := range srcs {
		m, err := splitKernel(s)
		if err != nil {
			return nil, err
		}
		g := group{m.class, s.Opt}
		if byGroup[g] == nil {
			groups = append(groups, g)
		}
		byGroup[g] = append(byGroup[g], m)
	}
	sort.Slice(groups, func(i, j int) bool {
		if groups[i].class != groups[j].class {
			return groups[i].class < groups[j].class
		}
		return groups[i].opt < groups[j].opt
	})
	jobs = max(jobs, 1)
	var out []batch
	for _, g := range groups {
		ms := byGroup[g]
		// Enough units for every job, and a whole number of units per
		// job once limit asks for more: transformer4l's 34 kernels as 3
		// units on 2 jobs left one job two units, 127-148 ms each, and
		// the other idle for the last (cc 330 ms); as 4 they are 2 each.
		n := max(min(jobs, len(ms)), (len(ms)+limit-1)/limit)
		if n > jobs {
			n = min((n+jobs-1)/jobs*jobs, len(ms))
		}
		order := make([]int, len(ms))
		for i := range order {
			order[i] = i
		}
		cost := make([]int, len(ms))
		for i, m := range ms {
			cost[i] = compileCost(m.code)
		}
		sort.SliceStable(order, func(a, b int) bool { return cost[order[a]] > cost[order[b]] })
		size := make([]int, n)
		units := make([][]int, n)
		for _, i := range order {
			best := -1
			for u := range n {
				if len(units[u]) < limit && (best < 0 || size[u] < size[best]) {
					best = u
				}
			}
			units[best] = append(units[best], i)
			size[best] += cost[i]
		}
		// Units in the order of their first kernel, each in srcs order.
		for _, u := range units {
			sort.Ints(u)
		}
		sort.Slice(units, func(a, b int) bool { return units[a][0] < units[b][0] })
		for _, u := range units {
			members := make([]batchMember, len(u))
			for j, i := range u {
				members[j] = ms[i]
			}
			out = append(out, newBatch(g.class, g.opt, members))
		}
	}
	return out, nil
}

// compileCost estimates the C compiler's time on a kernel's functions,
// in bytes of plain loop code: a cost per kernel as large as 2 KB of
// code, the code, and 3 KB more per call of an inline transcendental
// helper, whose vectorized body the compiler optimizes at every call.
// Measured on the examples' untuned kernels (gcc 12, -O2 with the cheap
// vectorizer cost model, one CPU, prelude excluded): plain elementwise
// and reduce loops of 0.4-0.9 KB 10-21 ms, the 2.5 KB lane reductions
// 30-32 ms, and the 0.5-1 KB loops calling xk_expf or xk_tanhf 34-48 ms.
// Balanced by size alone, mlp's two units held the lane reduction
// against the other four kernels (89 against 173 ms).
func compileCost(code string) int {
	n := 2048 + len(code)
	for _, f := range dearHelpers {
		n += 3072 * strings.Count(code, f)
	}
	return n
}

// dearHelpers are the prelude's inline transcendental functions, as
// generated code calls them.
var dearHelpers = []string{"xk_expf(", "xk_exp32(", "xk_tanhf(", "xk_coshf(", "xk_sinhf(", "xk_erfinv(", "xk_digamma(", "xk_bessel_i0e(", "xk_bessel_i1e("}

// newBatch is the translation unit of ms, all of class cls and
// optimization level opt: the class's preludes once, then each kernel's
// functions. It is named by a hash of its members' names, which are
// hashes of their whole sources, and of opt.
func newBatch(cls int, opt string, ms []batchMember) batch {
	var code strings.Builder
	code.WriteString(classPrelude(cls))
	b := batch{members: make([]string, len(ms))}
	for i, m := range ms {
		b.members[i] = m.src.Name
		code.WriteString(m.code)
	}
	b.src = cc.Source{Name: "b_" + cc.Hash([]byte(strings.Join(b.members, "\n")), []byte(opt))[:24], Code: []byte(code.String()), Opt: opt}
	return b
}

// encodeBatch is the kernel-tier payload of a batch object: batchMagic,
// the number of kernels, one kernel name per line, then the object.
func encodeBatch(members []string, obj []byte) []byte {
	var b bytes.Buffer
	b.WriteString(batchMagic)
	fmt.Fprintf(&b, "%d\n", len(members))
	for _, m := range members {
		b.WriteString(m)
		b.WriteByte('\n')
	}
	b.Write(obj)
	return b.Bytes()
}

// decodeBatch parses a payload made by encodeBatch. The payload comes
// from the cache and is untrusted beyond its checksum: the names must be
// kernel names (k_ and 24 hex digits, which is also what keeps them
// plain C identifiers), at most maxBatchKernels, without repeats, and an
// object must follow.
func decodeBatch(data []byte) (members []string, obj []byte, err error) {
	rest, ok := bytes.CutPrefix(data, []byte(batchMagic))
	if !ok {
		return nil, nil, errors.New("not a kernel batch (bad magic)")
	}
	line, rest, ok := bytes.Cut(rest, []byte("\n"))
	if !ok || len(line) == 0 || len(line) > 3 {
		return nil, nil, errors.New("kernel batch: bad kernel count")
	}
	n, err := strconv.Atoi(string(line))
	if err != nil || n < 1 || n > maxBatchKernels || strconv.Itoa(n) != string(line) {
		return nil, nil, fmt.Errorf("kernel batch: bad kernel count %q", line)
	}
	seen := map[string]bool{}
	for range n {
		line, rest, ok = bytes.Cut(rest, []byte("\n"))
		if !ok || !kernelName(string(line)) {
			return nil, nil, errors.New("kernel batch: bad kernel name")
		}
		name := string(line)
		if seen[name] {
			return nil, nil, fmt.Errorf("kernel batch: kernel %s listed twice", name)
		}
		seen[name] = true
		members = append(members, name)
	}
	if len(rest) == 0 {
		return nil, nil, errors.New("kernel batch: no object")
	}
	return members, rest, nil
}

// kernelName reports whether s is a final kernel's name as finalSource
// makes it: "k_" and 24 lowercase hex digits.
func kernelName(s string) bool {
	if len(s) != 26 || !strings.HasPrefix(s, "k_") {
		return false
	}
	for _, r := range s[2:] {
		if (r < '0' || r > '9') && (r < 'a' || r > 'f') {
			return false
		}
	}
	return true
}

package cpu

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/backend/cpu/internal/rt"
	"github.com/xlacache/xlacache/stablehlo"
)

var exeMagic = []byte("XLCPUEXE")

// Plan is the runtime half of an executable: which buffers exist and which
// kernel runs on which buffers, in order.
type Plan struct {
	Format  int          `json:"format"`
	Module  string       `json:"module"`
	Buffers []Buffer     `json:"buffers"`
	Steps   []Step       `json:"steps"`
	Checks  []Check      `json:"checks,omitempty"`
	Outputs []int        `json:"outputs"`
	Kernels []KernelInfo `json:"kernels"`
}

// Buffer is one tensor in the plan: an argument, a constant, or a
// temporary a kernel writes.
type Buffer struct {
	DType string  `json:"dtype"`
	Shape []int64 `json:"shape"`
	// Arg is the argument index for argument buffers, -1 otherwise.
	Arg int `json:"arg"`
	// Const holds a constant's bytes; nil for other buffers.
	Const []byte `json:"const,omitempty"`
}

// Step runs one kernel on buffers (its inputs, then its outputs), or, when
// Op is set, is a control step that the executor runs itself:
//
//   - "copy": Bufs is [src, dst]; dst gets src's bytes (same size). The
//     destination is always a temporary, never an argument or constant.
//   - "jump": the next step is Targets[0].
//   - "branch": Bufs is [selector], a scalar i1 or i32 buffer; the next step
//     is Targets[k] for its value k, or the last target when k is out of
//     range (§case: an out-of-range index selects the last branch).
//
// Targets are step indices; len(Steps) ends the program. while, if and
// case are lowered to these (see controlplan.go), so steps can run more
// than once and in an order decided at run time.
type Step struct {
	Kernel  string `json:"kernel,omitempty"`
	Bufs    []int  `json:"bufs"`
	Op      string `json:"op,omitempty"`
	Targets []int  `json:"targets,omitempty"`
}

// The control step kinds (Step.Op).
const (
	stepCopy   = "copy"
	stepJump   = "jump"
	stepBranch = "branch"
)

// Check is a check.expect_* assertion evaluated after the kernels ran.
type Check struct {
	Target    string   `json:"target"`
	Actual    int      `json:"actual"`
	Expected  int      `json:"expected"`
	MinULP    *int64   `json:"min_ulp,omitempty"`
	MaxULP    *int64   `json:"max_ulp,omitempty"`
	Tolerance *float64 `json:"tolerance,omitempty"`
	File      string   `json:"file,omitempty"`
	Line      int      `json:"line,omitempty"`
	Col       int      `json:"col,omitempty"`
}

// KernelInfo describes a compiled kernel for `run --verbose`.
type KernelInfo struct {
	Name   string `json:"name"`
	Desc   string `json:"desc"`
	Config string `json:"config"`
	// Tuned is true when the config was chosen by timing candidates (now
	// or in an earlier compile, through the autotune tier).
	Tuned bool `json:"tuned"`
	// TuneHit is true when the choice came from the autotune tier.
	TuneHit bool `json:"tune_hit,omitempty"`
	// ObjectHit is true when the object came from the kernel tier.
	ObjectHit bool `json:"object_hit,omitempty"`
}

func (b Buffer) tensorType() (stablehlo.TensorType, error) {
	d, ok := stablehlo.ParseDType(b.DType)
	if !ok || ctype(d) == "" {
		return stablehlo.TensorType{}, fmt.Errorf("unsupported dtype %q", b.DType)
	}
	n := int64(1)
	for _, s := range b.Shape {
		if s < 0 || (s > 0 && n > (1<<40)/s) {
			return stablehlo.TensorType{}, fmt.Errorf("bad shape %v", b.Shape)
		}
		n *= s
	}
	return stablehlo.TensorType{DType: d, Shape: b.Shape}, nil
}

// maxPlanBytes bounds the bytes of a plan's non-constant buffers (all
// live at once in one arena): 32 GiB.
const maxPlanBytes = math.MaxInt32 * 16

// validate rejects a plan that would make the runtime index out of range.
func (p *Plan) validate(numSyms map[string]bool) error {
	if p.Format != formatVersion {
		return fmt.Errorf("plan format %d, want %d", p.Format, formatVersion)
	}
	var total int64
	for i, b := range p.Buffers {
		t, err := b.tensorType()
		if err != nil {
			return fmt.Errorf("buffer %d: %w", i, err)
		}
		if b.Const != nil && int64(len(b.Const)) != t.ByteSize() {
			return fmt.Errorf("buffer %d: constant has %d bytes, %s needs %d", i, len(b.Const), t, t.ByteSize())
		}
		if b.Arg < -1 || b.Arg >= len(p.Buffers) {
			return fmt.Errorf("buffer %d: bad argument index %d", i, b.Arg)
		}
		if b.Arg >= 0 && b.Const != nil {
			return fmt.Errorf("buffer %d: both argument %d and a constant", i, b.Arg)
		}
		// The buffers' arena (exec.go) must stay addressable: bound the
		// sum here so that no later sum overflows.
		if b.Const == nil {
			total += (t.ByteSize() + 63) / 64 * 64
		}
		if total > maxPlanBytes {
			return fmt.Errorf("buffers need more than %d bytes", int64(maxPlanBytes))
		}
	}
	// Arguments are numbered 0..n-1, one buffer each (buildPlan): the
	// executor sizes its argument list by the largest index.
	seen := make([]bool, len(p.Buffers))
	nargs := 0
	for i, b := range p.Buffers {
		if b.Arg < 0 {
			continue
		}
		if seen[b.Arg] {
			return fmt.Errorf("buffer %d: argument %d has two buffers", i, b.Arg)
		}
		seen[b.Arg] = true
		nargs++
	}
	for a := range nargs {
		if !seen[a] {
			return fmt.Errorf("argument %d has no buffer", a)
		}
	}
	ok := func(id int) bool { return id >= 0 && id < len(p.Buffers) }
	for i, s := range p.Steps {
		for _, id := range s.Bufs {
			if !ok(id) {
				return fmt.Errorf("step %d: buffer %d out of range", i, id)
			}
		}
		if s.Op != "" {
			if err := p.validateControl(s); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
			continue
		}
		if s.Kernel == "" || len(s.Targets) != 0 {
			return fmt.Errorf("step %d: malformed kernel step", i)
		}
		if isRuntime(s.Kernel) {
			if err := p.validateRuntimeStep(s); err != nil {
				return fmt.Errorf("step %d: %w", i, err)
			}
			continue
		}
		if numSyms != nil && !numSyms[s.Kernel] {
			return fmt.Errorf("step %d: unknown kernel %q", i, s.Kernel)
		}
		// Kernels take their buffers as restrict pointers (kernel.body):
		// a buffer passed twice, as an input and an output, would let the
		// C compiler's code read what it has already overwritten.
		for j, id := range s.Bufs {
			if slices.Contains(s.Bufs[:j], id) {
				return fmt.Errorf("step %d: kernel %q is given buffer %d twice", i, s.Kernel, id)
			}
		}
	}
	for i, c := range p.Checks {
		if !ok(c.Actual) || !ok(c.Expected) || !stablehlo.CheckOps[c.Target] {
			return fmt.Errorf("check %d is malformed", i)
		}
		if p.Buffers[c.Actual].DType != p.Buffers[c.Expected].DType {
			return fmt.Errorf("check %d compares different element types", i)
		}
	}
	// Run allocates every output afresh, so a buffer listed many times
	// counts each time.
	var outBytes int64
	for _, id := range p.Outputs {
		if !ok(id) {
			return fmt.Errorf("output buffer %d out of range", id)
		}
		t, _ := p.Buffers[id].tensorType()
		if outBytes += t.ByteSize(); outBytes > maxPlanBytes {
			return fmt.Errorf("outputs need more than %d bytes", int64(maxPlanBytes))
		}
	}
	return nil
}

// encodeExecutable lays out magic, plan (plancodec.go) and the shared object.
func encodeExecutable(p *Plan, so []byte) ([]byte, error) {
	pj := appendPlan(nil, p)
	var b bytes.Buffer
	b.Write(exeMagic)
	binary.Write(&b, binary.LittleEndian, uint64(len(pj)))
	b.Write(pj)
	binary.Write(&b, binary.LittleEndian, uint64(len(so)))
	b.Write(so)
	return b.Bytes(), nil
}

func decodeExecutable(data []byte) (*Plan, []byte, error) {
	if !bytes.HasPrefix(data, exeMagic) {
		return nil, nil, errors.New("cpu: not a cpu executable (bad magic)")
	}
	rest := data[len(exeMagic):]
	next := func() ([]byte, error) {
		if len(rest) < 8 {
			return nil, errors.New("cpu: truncated executable")
		}
		n := binary.LittleEndian.Uint64(rest)
		rest = rest[8:]
		if n > uint64(len(rest)) {
			return nil, errors.New("cpu: truncated executable")
		}
		out := rest[:n]
		rest = rest[n:]
		return out, nil
	}
	pj, err := next()
	if err != nil {
		return nil, nil, err
	}
	so, err := next()
	if err != nil {
		return nil, nil, err
	}
	if len(rest) != 0 {
		return nil, nil, errors.New("cpu: trailing bytes after executable")
	}
	p, err := decodePlan(pj)
	if err != nil {
		return nil, nil, fmt.Errorf("cpu: decoding plan: %w", err)
	}
	if err := p.validate(nil); err != nil {
		return nil, nil, fmt.Errorf("cpu: invalid plan: %w", err)
	}
	return p, so, nil
}

// buildPlan assigns buffers and lists the steps: the kernels of the
// function body in program order, with while/if/case lowered to control
// steps around the kernels of their regions.
func buildPlan(l *lowering, m *stablehlo.Module, kernels []*kernel, srcs []cc.Source, infos []KernelInfo) *Plan {
	p := &Plan{Format: formatVersion, Module: m.Name, Kernels: infos}
	if p.Module == "" {
		p.Module = "main"
	}
	b := &planBuilder{p: p, l: l, ids: map[*stablehlo.Value]int{}, kernel: map[*stablehlo.Op]int{}, srcs: srcs, kernels: kernels}
	for i, k := range kernels {
		b.kernel[k.root] = i
	}
	for i, a := range l.fn.Args {
		b.add(a, i, nil)
	}
	b.block(l.fn.Body)
	for _, op := range l.fn.Body.Ops {
		if op.Name == "custom_call" {
			a := op.Attrs
			p.Checks = append(p.Checks, Check{Target: a.Callee, Actual: b.add(op.Operands[0], -1, nil), Expected: b.add(op.Operands[1], -1, nil),
				MinULP: a.MinULP, MaxULP: a.MaxULP, Tolerance: a.Tolerance, File: l.file, Line: op.Pos.Line, Col: op.Pos.Col})
		}
	}
	ret := l.fn.Body.Ops[len(l.fn.Body.Ops)-1]
	for _, v := range ret.Operands {
		p.Outputs = append(p.Outputs, b.add(v, -1, nil))
	}
	return p
}

// planBuilder holds the state of buildPlan.
type planBuilder struct {
	p       *Plan
	l       *lowering
	ids     map[*stablehlo.Value]int // buffer of each value
	kernel  map[*stablehlo.Op]int    // kernel index of each root
	kernels []*kernel
	srcs    []cc.Source
}

// add returns v's buffer, creating it (an argument when arg >= 0, a
// constant when c is non-nil) on first use.
func (b *planBuilder) add(v *stablehlo.Value, arg int, c []byte) int {
	if id, ok := b.ids[v]; ok {
		return id
	}
	id := b.scratch(v.Type)
	b.p.Buffers[id].Arg = arg
	b.p.Buffers[id].Const = c
	b.ids[v] = id
	return id
}

// scratch adds a temporary buffer of type t that no value names.
func (b *planBuilder) scratch(t stablehlo.TensorType) int {
	b.p.Buffers = append(b.p.Buffers, Buffer{DType: t.DType.String(), Shape: append([]int64{}, t.Shape...), Arg: -1})
	return len(b.p.Buffers) - 1
}

// block adds the materialized constants of blk, then the steps of its
// kernels and control-flow ops in program order.
func (b *planBuilder) block(blk *stablehlo.Block) {
	for _, op := range blk.Ops {
		if op.Name == "constant" && b.l.mat[op.Results[0]] {
			data := op.Attrs.Constant.Data
			if data == nil {
				data = []byte{}
			}
			b.add(op.Results[0], -1, data)
		}
	}
	for _, op := range b.l.items[blk] {
		switch op.Name {
		case "while":
			b.while(op)
		case "if", "case":
			b.branches(op)
		default:
			i := b.kernel[op]
			k := b.kernels[i]
			if k.copy {
				b.copyStep(b.add(k.inputs[0], -1, nil), b.add(k.outputs[0], -1, nil))
				continue
			}
			s := Step{Kernel: b.srcs[i].Name}
			inputs := k.inputs
			if k.rt != nil {
				inputs = k.rt.inputs
			}
			for _, v := range inputs {
				s.Bufs = append(s.Bufs, b.add(v, -1, nil))
			}
			if k.rt != nil {
				// The routine's parameter block sits between inputs and
				// outputs (runtime.go).
				id := b.scratch(stablehlo.TensorType{DType: stablehlo.I64, Shape: []int64{int64(len(k.rt.params))}})
				b.p.Buffers[id].Const = rt.EncodeParams(k.rt.params)
				s.Bufs = append(s.Bufs, id)
			}
			for _, v := range k.outputs {
				s.Bufs = append(s.Bufs, b.add(v, -1, nil))
			}
			b.p.Steps = append(b.p.Steps, s)
		}
	}
}

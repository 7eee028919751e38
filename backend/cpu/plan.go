package cpu

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/xlacache/xlacache/stablehlo"
)

// formatVersion changes whenever the plan encoding, the kernel ABI or the
// code generator changes in a way that makes old executables wrong.
const formatVersion = 1

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

// Step runs one kernel on buffers (its inputs, then its outputs).
type Step struct {
	Kernel string `json:"kernel"`
	Bufs   []int  `json:"bufs"`
}

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

// validate rejects a plan that would make the runtime index out of range.
func (p *Plan) validate(numSyms map[string]bool) error {
	if p.Format != formatVersion {
		return fmt.Errorf("plan format %d, want %d", p.Format, formatVersion)
	}
	for i, b := range p.Buffers {
		t, err := b.tensorType()
		if err != nil {
			return fmt.Errorf("buffer %d: %w", i, err)
		}
		if b.Const != nil && int64(len(b.Const)) != t.ByteSize() {
			return fmt.Errorf("buffer %d: constant has %d bytes, %s needs %d", i, len(b.Const), t, t.ByteSize())
		}
		if b.Arg < -1 {
			return fmt.Errorf("buffer %d: bad argument index %d", i, b.Arg)
		}
	}
	ok := func(id int) bool { return id >= 0 && id < len(p.Buffers) }
	for i, s := range p.Steps {
		if numSyms != nil && !numSyms[s.Kernel] {
			return fmt.Errorf("step %d: unknown kernel %q", i, s.Kernel)
		}
		for _, id := range s.Bufs {
			if !ok(id) {
				return fmt.Errorf("step %d: buffer %d out of range", i, id)
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
	for _, id := range p.Outputs {
		if !ok(id) {
			return fmt.Errorf("output buffer %d out of range", id)
		}
	}
	return nil
}

// encodeExecutable lays out magic, plan JSON and the shared object.
func encodeExecutable(p *Plan, so []byte) ([]byte, error) {
	pj, err := json.Marshal(p)
	if err != nil {
		return nil, fmt.Errorf("cpu: encoding plan: %w", err)
	}
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
	var p Plan
	if err := json.Unmarshal(pj, &p); err != nil {
		return nil, nil, fmt.Errorf("cpu: decoding plan: %w", err)
	}
	if err := p.validate(nil); err != nil {
		return nil, nil, fmt.Errorf("cpu: invalid plan: %w", err)
	}
	return &p, so, nil
}

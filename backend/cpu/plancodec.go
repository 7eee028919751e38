package cpu

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// The plan's binary encoding (format 5). It replaced JSON because
// encoding/json spent 75-95 µs on a small program's plan and 1.3 ms on
// the four-layer transformer's, a tenth of a warm start or more. Integers
// are varints (counts and lengths unsigned, values signed), strings and
// byte strings a length then the bytes, slices a count then the elements;
// an optional value is a presence byte (0 or 1) then the value. The
// layout follows the Plan struct field by field:
//
//	format module
//	buffers: dtype shape arg const?
//	steps: kernel bufs op targets
//	checks: target actual expected min_ulp? max_ulp? tolerance? file line col
//	outputs
//	kernels: name desc config flags(tuned=1 tune_hit=2 object_hit=4)
//
// The decoder trusts nothing: every count is bounded by the bytes left (an
// element takes at least one), every integer must fit an int, and the
// plan must be consumed exactly; validate then checks the plan's meaning.

// planEncoder appends the encoding to b.
type planEncoder struct{ b []byte }

func (e *planEncoder) uint(v uint64) { e.b = binary.AppendUvarint(e.b, v) }
func (e *planEncoder) int(v int64)   { e.b = binary.AppendVarint(e.b, v) }
func (e *planEncoder) str(s string)  { e.uint(uint64(len(s))); e.b = append(e.b, s...) }

func (e *planEncoder) bytes(p []byte) { e.uint(uint64(len(p))); e.b = append(e.b, p...) }

func (e *planEncoder) ints(v []int) {
	e.uint(uint64(len(v)))
	for _, x := range v {
		e.int(int64(x))
	}
}

func (e *planEncoder) present(ok bool) {
	if ok {
		e.b = append(e.b, 1)
	} else {
		e.b = append(e.b, 0)
	}
}

func (e *planEncoder) optInt(p *int64) {
	e.present(p != nil)
	if p != nil {
		e.int(*p)
	}
}

// appendPlan appends p's encoding to b.
func appendPlan(b []byte, p *Plan) []byte {
	e := &planEncoder{b: b}
	e.uint(uint64(p.Format))
	e.str(p.Module)
	e.uint(uint64(len(p.Buffers)))
	for _, x := range p.Buffers {
		e.str(x.DType)
		e.uint(uint64(len(x.Shape)))
		for _, d := range x.Shape {
			e.int(d)
		}
		e.int(int64(x.Arg))
		e.present(x.Const != nil)
		if x.Const != nil {
			e.bytes(x.Const)
		}
	}
	e.uint(uint64(len(p.Steps)))
	for _, s := range p.Steps {
		e.str(s.Kernel)
		e.ints(s.Bufs)
		e.str(s.Op)
		e.ints(s.Targets)
	}
	e.uint(uint64(len(p.Checks)))
	for _, c := range p.Checks {
		e.str(c.Target)
		e.int(int64(c.Actual))
		e.int(int64(c.Expected))
		e.optInt(c.MinULP)
		e.optInt(c.MaxULP)
		e.present(c.Tolerance != nil)
		if c.Tolerance != nil {
			e.b = binary.LittleEndian.AppendUint64(e.b, math.Float64bits(*c.Tolerance))
		}
		e.str(c.File)
		e.int(int64(c.Line))
		e.int(int64(c.Col))
	}
	e.ints(p.Outputs)
	e.uint(uint64(len(p.Kernels)))
	for _, k := range p.Kernels {
		e.str(k.Name)
		e.str(k.Desc)
		e.str(k.Config)
		var flags byte
		if k.Tuned {
			flags |= 1
		}
		if k.TuneHit {
			flags |= 2
		}
		if k.ObjectHit {
			flags |= 4
		}
		e.b = append(e.b, flags)
	}
	return e.b
}

// errPlanTruncated is the decoder's error for a plan that ends early.
var errPlanTruncated = errors.New("truncated plan")

// planDecoder reads the encoding from b; the first error sticks, and
// every read after it returns zero values. all is the whole input as one
// string, which every decoded string is a substring of: one copy for all
// of them rather than an allocation each (a large plan has thousands).
type planDecoder struct {
	b   []byte
	all string
	err error
}

func (d *planDecoder) fail(err error) {
	if d.err == nil {
		d.err = err
	}
	d.b = nil
}

func (d *planDecoder) uint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.fail(errPlanTruncated)
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *planDecoder) int64() int64 {
	v, n := binary.Varint(d.b)
	if n <= 0 {
		d.fail(errPlanTruncated)
		return 0
	}
	d.b = d.b[n:]
	return v
}

// int reads a signed integer that must fit an int.
func (d *planDecoder) int() int {
	v := d.int64()
	if v != int64(int(v)) {
		d.fail(fmt.Errorf("integer %d out of range", v))
		return 0
	}
	return int(v)
}

// count reads a slice's length: each element takes at least one byte, so
// a count above the bytes left is a lie that must not size an allocation.
func (d *planDecoder) count() int {
	v := d.uint()
	if v > uint64(len(d.b)) {
		d.fail(errPlanTruncated)
		return 0
	}
	return int(v)
}

func (d *planDecoder) raw(n int) []byte {
	if n > len(d.b) {
		d.fail(errPlanTruncated)
		return nil
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *planDecoder) str() string {
	n := d.count()
	off := len(d.all) - len(d.b)
	if d.raw(n) == nil {
		return ""
	}
	return d.all[off : off+n]
}

// bytes returns a copy: the plan outlives the entry's buffer.
func (d *planDecoder) bytes() []byte { return append([]byte{}, d.raw(d.count())...) }

func (d *planDecoder) ints() []int {
	n := d.count()
	if n == 0 {
		return nil
	}
	v := make([]int, n)
	for i := range v {
		v[i] = d.int()
	}
	return v
}

func (d *planDecoder) present() bool {
	p := d.raw(1)
	if len(p) == 0 {
		return false
	}
	if p[0] > 1 {
		d.fail(fmt.Errorf("bad presence byte %d", p[0]))
	}
	return p[0] == 1
}

func (d *planDecoder) optInt() *int64 {
	if !d.present() {
		return nil
	}
	v := d.int64()
	return &v
}

// decodePlan decodes a whole plan; it rejects another format before
// reading further, and bytes left over after the plan.
func decodePlan(b []byte) (*Plan, error) {
	d := &planDecoder{b: b, all: string(b)}
	p := &Plan{}
	if f := d.uint(); d.err == nil && f != formatVersion {
		return nil, fmt.Errorf("plan format %d, want %d", f, formatVersion)
	}
	p.Format = formatVersion
	p.Module = d.str()
	if n := d.count(); n > 0 {
		p.Buffers = make([]Buffer, n)
	}
	for i := range p.Buffers {
		x := &p.Buffers[i]
		x.DType = d.str()
		if n := d.count(); n > 0 {
			x.Shape = make([]int64, n)
			for k := range x.Shape {
				x.Shape[k] = d.int64()
			}
		}
		x.Arg = d.int()
		if d.present() {
			x.Const = d.bytes()
		}
	}
	if n := d.count(); n > 0 {
		p.Steps = make([]Step, n)
	}
	for i := range p.Steps {
		s := &p.Steps[i]
		s.Kernel = d.str()
		s.Bufs = d.ints()
		s.Op = d.str()
		s.Targets = d.ints()
	}
	if n := d.count(); n > 0 {
		p.Checks = make([]Check, n)
	}
	for i := range p.Checks {
		c := &p.Checks[i]
		c.Target = d.str()
		c.Actual = d.int()
		c.Expected = d.int()
		c.MinULP = d.optInt()
		c.MaxULP = d.optInt()
		if d.present() {
			if t := d.raw(8); len(t) == 8 {
				v := math.Float64frombits(binary.LittleEndian.Uint64(t))
				c.Tolerance = &v
			}
		}
		c.File = d.str()
		c.Line = d.int()
		c.Col = d.int()
	}
	p.Outputs = d.ints()
	if n := d.count(); n > 0 {
		p.Kernels = make([]KernelInfo, n)
	}
	for i := range p.Kernels {
		k := &p.Kernels[i]
		k.Name = d.str()
		k.Desc = d.str()
		k.Config = d.str()
		if f := d.raw(1); len(f) == 1 {
			if f[0] > 7 {
				d.fail(fmt.Errorf("kernel %d: bad flags %#x", i, f[0]))
			}
			k.Tuned, k.TuneHit, k.ObjectHit = f[0]&1 != 0, f[0]&2 != 0, f[0]&4 != 0
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	if len(d.b) != 0 {
		return nil, fmt.Errorf("%d bytes after the plan", len(d.b))
	}
	return p, nil
}

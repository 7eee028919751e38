package gomlx

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"time"
	"unsafe"

	shlo "github.com/gomlx/go-xla/pkg/stablehlo"
	xdtypes "github.com/gomlx/go-xla/pkg/types/dtypes"
	xbf16 "github.com/gomlx/go-xla/pkg/types/dtypes/bfloat16"
	xshapes "github.com/gomlx/go-xla/pkg/types/shapes"
	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/notimplemented"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/x448/float16"

	"github.com/xlacache/xlacache/backend/cpu"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

// moduleName names every module: GoMLX numbers its graphs per process
// ("Exec#3"), and a fixed name lets equal graphs share cache entries
// whatever order a process builds them in.
const moduleName = "gomlx"

// Builder builds one StableHLO program; it implements backends.Builder.
// The embedded notimplemented.Builder answers the ops the cpu backend
// cannot compile (complex numbers, FFT, collectives) with an error naming
// the op.
type Builder struct {
	notimplemented.Builder

	backend  *Backend
	name     string
	shlo     *shlo.Builder
	fn       *shlo.Function
	names    []string
	inShapes []shapes.Shape
	compiled bool
	closures map[closureKey]*shlo.Function
}

type closureKey struct {
	dtype dtypes.DType
	kind  string
}

var _ backends.Builder = (*Builder)(nil)

// Builder implements backends.Backend.
func (b *Backend) Builder(name string) backends.Builder {
	bld := &Builder{backend: b, name: name, shlo: shlo.New(moduleName), closures: map[closureKey]*shlo.Function{}}
	bld.ErrFn = func(op backends.OpType) error {
		return fmt.Errorf("xlacache backend: op %s is not supported (the cpu backend has no complex numbers, FFT or collectives)", op)
	}
	bld.fn = bld.shlo.Main()
	return bld
}

// Node is a value in the program being built; it implements backends.Op.
type Node struct {
	v     *shlo.Value
	shape shapes.Shape
	b     *Builder
}

// buildError carries an error out of the op helpers to the recover in do.
type buildError struct{ err error }

func fail(format string, args ...any) { panic(buildError{fmt.Errorf(format, args...)}) }

// must panics with err, for do to return; it keeps the op code readable.
func must[T any](v T, err error) T {
	if err != nil {
		panic(buildError{err})
	}
	return v
}

// do runs f, turning any failure (including a panic in go-xla's builder)
// into an error naming op, and wraps the results as Nodes. Every op goes
// through here: GoMLX calls these methods from deep inside its graph code,
// and a panic would kill the caller.
func (b *Builder) do(op backends.OpType, f func() []*shlo.Value) (out []backends.Op, err error) {
	defer func() {
		if r := recover(); r != nil {
			out = nil
			if be, ok := r.(buildError); ok {
				err = fmt.Errorf("xlacache backend: %s: %w", op, be.err)
			} else {
				err = fmt.Errorf("xlacache backend: %s: %v", op, r)
			}
		}
	}()
	if err := b.backend.check(); err != nil {
		return nil, err
	}
	if b.compiled {
		fail("builder %q already compiled", b.name)
	}
	for _, v := range f() {
		out = append(out, b.node(v))
	}
	return out, nil
}

// op1 is do for single-result ops.
func (b *Builder) op1(op backends.OpType, f func() *shlo.Value) (backends.Op, error) {
	out, err := b.do(op, func() []*shlo.Value { return []*shlo.Value{f()} })
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (b *Builder) node(v *shlo.Value) *Node {
	s := shapeFromXLA(v.Shape())
	if _, ok := dtypeMap[s.DType]; !ok {
		fail("dtype %s is not supported", s.DType)
	}
	return &Node{v: v, shape: s, b: b}
}

// val returns x's value, failing unless x was built by b.
func (b *Builder) val(x backends.Op) *shlo.Value {
	n, ok := x.(*Node)
	if !ok || n == nil {
		fail("operand %T is not a value of this backend", x)
	}
	if n.b != b {
		fail("operand built by another builder (%q, not %q)", n.b.name, b.name)
	}
	return n.v
}

func (b *Builder) vals(xs []backends.Op) []*shlo.Value {
	out := make([]*shlo.Value, len(xs))
	for i, x := range xs {
		out[i] = b.val(x)
	}
	return out
}

func shapeToXLA(s shapes.Shape) xshapes.Shape {
	return xshapes.Make(xdtypes.DType(s.DType), slices.Clone(s.Dimensions)...)
}

func shapeFromXLA(s xshapes.Shape) shapes.Shape {
	if !s.Ok() || s.IsTuple() {
		return shapes.Invalid()
	}
	return shapes.Make(dtypes.DType(s.DType), slices.Clone(s.Dimensions)...)
}

// Name implements backends.Builder.
func (b *Builder) Name() string { return b.name }

// OpShape implements backends.Builder.
func (b *Builder) OpShape(x backends.Op) (shapes.Shape, error) {
	n, ok := x.(*Node)
	if !ok || n == nil || n.b != b {
		return shapes.Invalid(), fmt.Errorf("xlacache backend: OpShape: %T is not a value of builder %q", x, b.name)
	}
	return n.shape, nil
}

// Parameter implements backends.Builder. Sharding is not supported.
func (b *Builder) Parameter(name string, shape shapes.Shape, sharding *backends.ShardingSpec) (backends.Op, error) {
	return b.op1(backends.OpTypeParameter, func() *shlo.Value {
		if sharding != nil {
			fail("sharding is not supported")
		}
		if _, err := tensorType(shape); err != nil {
			panic(buildError{err})
		}
		norm := shlo.NormalizeIdentifier(name)
		if slices.Contains(b.names, norm) {
			fail("parameter %q (normalized %q) already exists", name, norm)
		}
		b.names = append(b.names, norm)
		b.inShapes = append(b.inShapes, shape.Clone())
		return must(b.fn.NamedInput(name, shapeToXLA(shape)))
	})
}

// Constant implements backends.Builder.
func (b *Builder) Constant(flat any, dims ...int) (backends.Op, error) {
	return b.op1(backends.OpTypeConstant, func() *shlo.Value {
		if flat == nil {
			fail("nil flat value")
		}
		return must(b.fn.ConstantFromFlatAndDimensions(toXLAFlat(flat), dims...))
	})
}

// toXLAFlat converts GoMLX's bfloat16 slices to go-xla's; both are uint16
// bit patterns.
func toXLAFlat(flat any) any {
	if s, ok := flat.([]bfloat16.BFloat16); ok {
		return unsafe.Slice((*xbf16.BFloat16)(unsafe.Pointer(unsafe.SliceData(s))), len(s))
	}
	return flat
}

// scalar is a constant of dtype dt with value v.
func (b *Builder) scalar(dt dtypes.DType, v float64) *shlo.Value {
	var x any
	switch dt {
	case dtypes.BFloat16:
		x = bfloat16.FromFloat32(float32(v))
	case dtypes.Float16:
		x = float16.Fromfloat32(float32(v))
	case dtypes.Bool:
		x = v != 0
	default:
		if dt.GoType() == nil {
			fail("dtype %s is not supported", dt)
		}
		x = reflect.ValueOf(v).Convert(dt.GoType()).Interface()
	}
	return b.constOf(x)
}

// constOf is a scalar constant holding x, a value of a GoMLX dtype's Go type.
func (b *Builder) constOf(x any) *shlo.Value {
	s := reflect.MakeSlice(reflect.SliceOf(reflect.TypeOf(x)), 1, 1)
	s.Index(0).Set(reflect.ValueOf(x))
	return must(b.fn.ConstantFromFlatAndDimensions(toXLAFlat(s.Interface())))
}

// DistributedSPMD implements backends.Builder: one device only.
func (b *Builder) DistributedSPMD(n int) error {
	if n == 1 {
		return nil
	}
	return fmt.Errorf("xlacache backend: DistributedSPMD(%d): one device only", n)
}

// DistributedAutoSharding implements backends.Builder: not supported.
func (b *Builder) DistributedAutoSharding(...backends.Mesh) error {
	return fmt.Errorf("xlacache backend: DistributedAutoSharding is not supported")
}

// DeviceAssignment implements backends.Builder: device 0 only.
func (b *Builder) DeviceAssignment(devices ...backends.DeviceNum) error {
	if len(devices) == 1 && devices[0] == 0 {
		return nil
	}
	return fmt.Errorf("xlacache backend: DeviceAssignment(%v): device 0 only", devices)
}

// Compile implements backends.Builder: it writes the program's StableHLO
// text and compiles it through the cache.
func (b *Builder) Compile(outputs []backends.Op, shardings []*backends.ShardingSpec) (exe backends.Executable, err error) {
	var text []byte
	var outShapes []shapes.Shape
	_, err = b.do(backends.OpTypeInvalid, func() []*shlo.Value {
		if len(shardings) > 0 {
			fail("sharding is not supported")
		}
		if len(outputs) == 0 {
			fail("no outputs")
		}
		vs := b.vals(outputs)
		for _, v := range vs {
			outShapes = append(outShapes, shapeFromXLA(v.Shape()))
		}
		if err := b.fn.Return(vs...); err != nil {
			panic(buildError{err})
		}
		b.compiled = true
		text = must(b.shlo.Build())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("xlacache backend: compiling %q: %w", b.name, err)
	}
	start := time.Now()
	ce, rep, err := cache.Compile(context.Background(), b.backend.cache, b.backend.cpu, cache.Program{Name: moduleName, Text: text})
	if err != nil {
		return nil, fmt.Errorf("xlacache backend: compiling %q: %w", b.name, err)
	}
	b.backend.count(rep != nil && rep.Hit, time.Since(start))
	x, ok := ce.(*cpu.Executable)
	if !ok {
		return nil, fmt.Errorf("xlacache backend: cpu backend returned %T", ce)
	}
	return &Executable{b: b.backend, exe: x, name: b.name, names: b.names, in: b.inShapes, out: outShapes}, nil
}

// Executable is a compiled program; it implements backends.Executable.
type Executable struct {
	b     *Backend
	exe   *cpu.Executable
	name  string
	names []string
	in    []shapes.Shape
	out   []shapes.Shape
}

// Finalize releases the compiled kernels.
func (e *Executable) Finalize() { _ = e.exe.Close() }

// Inputs implements backends.Executable.
func (e *Executable) Inputs() ([]string, []shapes.Shape) { return e.names, e.in }

// Outputs implements backends.Executable.
func (e *Executable) Outputs() []shapes.Shape { return e.out }

// Execute implements backends.Executable. Inputs are never modified, so
// donation changes nothing.
func (e *Executable) Execute(inputs []backends.Buffer, _ []bool, device backends.DeviceNum) (out []backends.Buffer, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("xlacache backend: executing %q: %v", e.name, r)
		}
	}()
	if err := e.b.check(); err != nil {
		return nil, err
	}
	if device != 0 {
		return nil, fmt.Errorf("xlacache backend: executing %q: no device %d", e.name, device)
	}
	if len(inputs) != len(e.in) {
		return nil, fmt.Errorf("xlacache backend: executing %q: %d inputs, want %d", e.name, len(inputs), len(e.in))
	}
	args := make([]*stablehlo.Tensor, len(inputs))
	for i, x := range inputs {
		buf, err := e.b.buffer("Execute", x)
		if err != nil {
			return nil, err
		}
		args[i] = buf.t
	}
	res, err := e.exe.Run(context.Background(), args)
	if err != nil {
		return nil, fmt.Errorf("xlacache backend: executing %q: %w", e.name, err)
	}
	for i, t := range res {
		// A result may be an argument (or another result) returned as is;
		// GoMLX may write into a buffer it owns, so no two buffers share
		// memory.
		shares := func(o *stablehlo.Tensor) bool {
			return len(t.Data) > 0 && len(o.Data) > 0 && &t.Data[0] == &o.Data[0]
		}
		if slices.ContainsFunc(args, shares) || slices.ContainsFunc(res[:i], shares) {
			t = t.Clone()
			res[i] = t
		}
		out = append(out, &Buffer{t: t, shape: e.out[i].Clone()})
	}
	return out, nil
}

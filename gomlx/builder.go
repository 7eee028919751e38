package gomlx

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
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

// onProgram, when non-nil, is given every program's StableHLO text before
// it compiles. Tests set it to save the programs GoMLX builds, for
// backend/cpu's kernel profile.
var onProgram func(name string, text []byte)

// Builder builds one StableHLO program; it implements backends.Builder.
// The embedded notimplemented.Builder answers, with an error naming the
// op, any op a later GoMLX version adds to the interface.
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

	// replicas is the number of devices of an SPMD program (1 otherwise).
	// Every op is built once per replica, with rep the replica being
	// built; AllReduce combines the replicas' values (see spmd.go).
	replicas int
	rep      int
	// assigned are the devices the program runs on (DeviceAssignment);
	// nil for a portable program, which runs on the device Execute names.
	assigned []backends.DeviceNum
	// inNames are the names of the program's inputs (inputName).
	inNames map[string]bool
	// built counts the Nodes built so far.
	built int
}

type closureKey struct {
	dtype dtypes.DType
	kind  string
}

var _ backends.Builder = (*Builder)(nil)

// Builder implements backends.Backend.
func (b *Backend) Builder(name string) backends.Builder {
	bld := &Builder{backend: b, name: name, shlo: shlo.New(moduleName), closures: map[closureKey]*shlo.Function{}, replicas: 1}
	bld.ErrFn = func(op backends.OpType) error {
		return fmt.Errorf("xlacache backend: op %s is not supported", op)
	}
	bld.fn = bld.shlo.Main()
	return bld
}

// Node is a value in the program being built, one per replica; it
// implements backends.Op.
type Node struct {
	vs    []*shlo.Value
	shape shapes.Shape
	b     *Builder

	// How the node was built, for ReduceSum's rewrite into a dot product
	// (reducedot.go): a BroadcastInDim's operand and axes, a Mul's
	// operands.
	bsrc  *Node
	baxes []int
	mul   [2]*Node
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

// guard runs f, turning any failure (including a panic in go-xla's
// builder) into an error naming op. Every op goes through here: GoMLX
// calls these methods from deep inside its graph code, and a panic would
// kill the caller.
func (b *Builder) guard(op backends.OpType, f func() []backends.Op) (out []backends.Op, err error) {
	defer func() {
		b.rep = 0
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
	return f(), nil
}

// do builds an op with f, once per replica (b.val answers the replica
// being built), and wraps the results as Nodes.
func (b *Builder) do(op backends.OpType, f func() []*shlo.Value) ([]backends.Op, error) {
	return b.guard(op, func() []backends.Op {
		per := make([][]*shlo.Value, b.replicas)
		for r := range per {
			b.rep = r
			per[r] = f()
		}
		out := make([]backends.Op, len(per[0]))
		for i := range out {
			vs := make([]*shlo.Value, len(per))
			for r := range per {
				vs[r] = per[r][i]
			}
			out[i] = b.node(vs)
		}
		return out
	})
}

// op1 is do for single-result ops.
func (b *Builder) op1(op backends.OpType, f func() *shlo.Value) (backends.Op, error) {
	out, err := b.do(op, func() []*shlo.Value { return []*shlo.Value{f()} })
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

func (b *Builder) node(vs []*shlo.Value) *Node {
	s := shapeFromXLA(vs[0].Shape())
	if _, ok := dtypeMap[s.DType]; !ok {
		fail("dtype %s is not supported", s.DType)
	}
	b.built++
	return &Node{vs: vs, shape: s, b: b}
}

// node1 checks that x was built by b.
func (b *Builder) node1(x backends.Op) *Node {
	n, ok := x.(*Node)
	if !ok || n == nil {
		fail("operand %T is not a value of this backend", x)
	}
	if n.b != b {
		fail("operand built by another builder (%q, not %q)", n.b.name, b.name)
	}
	return n
}

// val returns x's value in the replica being built, failing unless x was
// built by b.
func (b *Builder) val(x backends.Op) *shlo.Value { return b.node1(x).vs[b.rep] }

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

// Parameter implements backends.Builder. Sharding is not supported. An
// SPMD program takes the parameter once per replica (the first replica's
// under its name, the others' as name_replicaN).
func (b *Builder) Parameter(name string, shape shapes.Shape, sharding *backends.ShardingSpec) (backends.Op, error) {
	out, err := b.guard(backends.OpTypeParameter, func() []backends.Op {
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
		vs := make([]*shlo.Value, b.replicas)
		for r := range vs {
			n := name
			if r > 0 {
				n = fmt.Sprintf("%s_replica%d", name, r)
			}
			vs[r] = must(b.fn.NamedInput(b.inputName(n), shapeToXLA(shape)))
		}
		b.names = append(b.names, norm)
		b.inShapes = append(b.inShapes, shape.Clone())
		return []backends.Op{b.node(vs)}
	})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// inputName is name as the program's inputs spell it (go-xla's
// ConvertToValidName) without UUIDs, made unique: a replica's input takes
// a name derived from its parameter's, which a later parameter may have.
// Input names only label the program text.
func (b *Builder) inputName(name string) string {
	// GoMLX names some variables with a UUID drawn per process (its
	// metrics' "..._uuid_<uuid>_mean"): kept, they make the same program's
	// text differ between processes, and the cache's alias of a text
	// (cache/alias.go), which spares a warm start the parse, would never
	// match.
	n := uuidRE.ReplaceAllString(shlo.ConvertToValidName(name), "")
	for b.inNames[n] {
		n += "_"
	}
	if b.inNames == nil {
		b.inNames = map[string]bool{}
	}
	b.inNames[n] = true
	return n
}

// uuidRE matches a UUID as ConvertToValidName spells it (dashes as
// underscores).
var uuidRE = regexp.MustCompile(`(?i)[0-9a-f]{8}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{4}_[0-9a-f]{12}`)

// Constant implements backends.Builder.
func (b *Builder) Constant(flat any, dims ...int) (backends.Op, error) {
	return b.op1(backends.OpTypeConstant, func() *shlo.Value {
		if flat == nil {
			fail("nil flat value")
		}
		return b.constant(flat, dims...)
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
	case dtypes.Complex64, dtypes.Complex128:
		x = complexScalar(dt, v)
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
	return b.constant(s.Interface())
}

// DistributedSPMD implements backends.Builder: the program runs on n of
// the backend's devices, one replica on each (see spmd.go). It must come
// before the first op.
func (b *Builder) DistributedSPMD(n int) error {
	switch {
	case n < 1 || n > b.backend.NumDevices():
		return fmt.Errorf("xlacache backend: DistributedSPMD(%d): the backend has %d device(s) (see devices=N)", n, b.backend.NumDevices())
	case b.compiled || b.built > 0:
		return fmt.Errorf("xlacache backend: DistributedSPMD(%d): called after building began", n)
	case b.assigned != nil && len(b.assigned) != n:
		return fmt.Errorf("xlacache backend: DistributedSPMD(%d): DeviceAssignment%v already named %d device(s)", n, b.assigned, len(b.assigned))
	}
	b.replicas = n
	return nil
}

// DistributedAutoSharding implements backends.Builder: not supported (it
// needs XLA's sharding propagation and partitioner).
func (b *Builder) DistributedAutoSharding(...backends.Mesh) error {
	return fmt.Errorf("xlacache backend: DistributedAutoSharding is not supported")
}

// DeviceAssignment implements backends.Builder: the devices the program's
// replicas run on, one per replica, all different.
func (b *Builder) DeviceAssignment(devices ...backends.DeviceNum) error {
	if len(devices) != b.replicas {
		return fmt.Errorf("xlacache backend: DeviceAssignment(%v): want %d device(s)", devices, b.replicas)
	}
	for i, d := range devices {
		if err := b.backend.device("DeviceAssignment", d); err != nil {
			return err
		}
		if slices.Contains(devices[:i], d) {
			return fmt.Errorf("xlacache backend: DeviceAssignment(%v): device %d twice", devices, d)
		}
	}
	b.assigned = slices.Clone(devices)
	return nil
}

// Compile implements backends.Builder: it writes the program's StableHLO
// text and compiles it through the cache.
func (b *Builder) Compile(outputs []backends.Op, shardings []*backends.ShardingSpec) (exe backends.Executable, err error) {
	var text []byte
	var outShapes []shapes.Shape
	_, err = b.guard(backends.OpTypeInvalid, func() []backends.Op {
		if len(shardings) > 0 {
			fail("sharding is not supported")
		}
		if len(outputs) == 0 {
			fail("no outputs")
		}
		// Replica-major, as GoMLX orders an SPMD program's results.
		var vs []*shlo.Value
		for r := range b.replicas {
			for _, o := range outputs {
				vs = append(vs, b.node1(o).vs[r])
			}
		}
		for _, o := range outputs {
			outShapes = append(outShapes, b.node1(o).shape.Clone())
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
	if onProgram != nil {
		onProgram(b.name, text)
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
	return &Executable{b: b.backend, exe: x, name: b.name, names: b.names, in: b.inShapes, out: outShapes,
		replicas: b.replicas, assigned: b.assigned}, nil
}

// Executable is a compiled program; it implements backends.Executable.
type Executable struct {
	b     *Backend
	exe   *cpu.Executable
	name  string
	names []string
	in    []shapes.Shape
	out   []shapes.Shape
	// replicas and assigned are the builder's (see Builder).
	replicas int
	assigned []backends.DeviceNum
}

// Finalize releases the compiled kernels.
func (e *Executable) Finalize() { _ = e.exe.Close() }

// Inputs implements backends.Executable.
func (e *Executable) Inputs() ([]string, []shapes.Shape) { return e.names, e.in }

// Outputs implements backends.Executable.
func (e *Executable) Outputs() []shapes.Shape { return e.out }

// Execute implements backends.Executable. Inputs are never modified, so
// donation changes nothing. An SPMD program takes every replica's inputs,
// replica-major (as GoMLX passes them), and returns every replica's
// results the same way; a portable program runs on device. As PJRT does,
// every input must be on the device of the replica reading it.
func (e *Executable) Execute(inputs []backends.Buffer, donate []bool, device backends.DeviceNum) (out []backends.Buffer, err error) {
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("xlacache backend: executing %q: %v", e.name, r)
		}
	}()
	if err := e.b.check(); err != nil {
		return nil, err
	}
	devices := e.assigned
	if devices == nil {
		if e.replicas == 1 {
			devices = []backends.DeviceNum{device}
		} else {
			for r := range e.replicas {
				devices = append(devices, backends.DeviceNum(r))
			}
		}
	}
	for _, d := range devices {
		if err := e.b.device("executing "+e.name, d); err != nil {
			return nil, err
		}
	}
	k := len(e.in)
	if len(inputs) != k*e.replicas {
		return nil, fmt.Errorf("xlacache backend: executing %q: %d inputs, want %d", e.name, len(inputs), k*e.replicas)
	}
	if len(donate) > 0 && len(donate) != len(inputs) {
		return nil, fmt.Errorf("xlacache backend: executing %q: %d donate flags for %d inputs", e.name, len(donate), len(inputs))
	}
	// The program takes each parameter's replicas together (Parameter).
	args := make([]*stablehlo.Tensor, len(inputs))
	for i, x := range inputs {
		buf, err := e.b.buffer("Execute", x)
		if err != nil {
			return nil, err
		}
		r, p := i/k, i%k
		if buf.device != devices[r] {
			return nil, fmt.Errorf("xlacache backend: executing %q: input %d (%s) is on device %d, but replica %d runs on device %d",
				e.name, i, e.names[p], buf.device, r, devices[r])
		}
		args[p*e.replicas+r] = buf.t
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
		out = append(out, &Buffer{t: t, shape: e.out[i%len(e.out)].Clone(), device: devices[i/len(e.out)]})
	}
	return out, nil
}

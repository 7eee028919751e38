// Package gomlx is a GoMLX backend, registered as "xlacache", that builds
// StableHLO with go-xla's builder and compiles it through the xlacache
// cache on the cpu backend: keys, tiers, roles and signing all apply, and
// no PJRT plugin is needed.
//
// Select it with GOMLX_BACKEND=xlacache (blank-import this package). The
// configuration after the colon is a comma-separated list of xlacache
// options, each an option's environment variable without its XLACACHE_
// prefix, in lower case, overriding the environment:
//
//	GOMLX_BACKEND=xlacache:dir=/tmp/xc,role=writer,min_compile_time_secs=0
//
// Unlike JAX's default, programs are stored however fast they compiled
// (min_compile_time_secs=0) unless XLACACHE_MIN_COMPILE_TIME_SECS or the
// configuration sets a threshold.
//
// Two more keys tune the cpu backend: notune (compile every kernel in its
// default configuration, without timing candidates) and jobs=N (C
// compiler processes at once). devices=N makes the host N devices, for
// programs written for several (portable executables, SPMD with
// AllReduce; see spmd.go). Without a directory the backend uses the same
// default as the xlacache command: $XDG_CACHE_HOME/xlacache (see
// os.UserCacheDir).
//
// Complex numbers (complex64, complex128) and FFT are supported. Ops and
// dtypes the backend lacks (auto-sharding, 8-bit and 4-bit floats, ...)
// return errors naming them; Capabilities lists exactly what is
// supported.
package gomlx

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/backend/cpu"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/stablehlo"
)

// Name is the name the backend registers with GoMLX.
const Name = "xlacache"

func init() {
	backends.Register(Name, func(cfg string) (backends.Backend, error) { return New(cfg) })
}

// Backend is the xlacache GoMLX backend. It is safe for concurrent use.
type Backend struct {
	opts    config.Options
	cache   *cache.Cache
	cpu     *cpu.Backend
	devices int

	mu        sync.Mutex
	finalized bool
	stats     Stats
}

// Stats counts the programs the backend compiled.
type Stats struct {
	// Compiles is the number of programs compiled (Builder.Compile calls
	// that succeeded).
	Compiles int
	// Hits is how many of them came from the cache.
	Hits int
	// CompileTime is the time spent in cache.Compile, hits included.
	CompileTime time.Duration
}

// Stats returns the compile counters so far.
func (b *Backend) Stats() Stats {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.stats
}

func (b *Backend) count(hit bool, d time.Duration) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.stats.Compiles++
	b.stats.CompileTime += d
	if hit {
		b.stats.Hits++
	}
}

var _ backends.Backend = (*Backend)(nil)

// New opens the cache described by cfg (see the package documentation)
// over the process environment.
func New(cfg string) (*Backend, error) {
	return NewWithLookup(context.Background(), cfg, os.LookupEnv, nil)
}

// NewWithLookup is New with the environment given by lookup and a logger
// (nil for slog.Default).
func NewWithLookup(ctx context.Context, cfg string, lookup func(string) (string, bool), logger *slog.Logger) (*Backend, error) {
	over, set, err := parseConfig(cfg)
	if err != nil {
		return nil, err
	}
	opts, err := config.FromEnv(func(k string) (string, bool) {
		if v, ok := over[k]; ok {
			return v, true
		}
		return lookup(k)
	})
	if err != nil {
		return nil, fmt.Errorf("xlacache backend: %w", err)
	}
	if opts.Sources[config.EnvMinCompileTime] == config.SourceDefault {
		// GoMLX compiles many small graphs, each costing a C compiler run
		// far longer than a cache read; JAX's 1 s threshold would keep
		// nearly all of them out of the cache.
		opts.MinCompileTime = 0
	}
	if opts.Dir == "" {
		// The same default as the xlacache command (cmd/xlacache loadOptions).
		base, err := os.UserCacheDir()
		if err != nil {
			return nil, fmt.Errorf("xlacache backend: no cache directory: set dir= or XLACACHE_DIR (%w)", err)
		}
		opts.Dir = filepath.Join(base, "xlacache")
	}
	c, err := xlacache.Open(ctx, opts, logger)
	if err != nil {
		return nil, fmt.Errorf("xlacache backend: opening the cache: %w", err)
	}
	b := &Backend{opts: opts, cache: c, cpu: cpu.New(), devices: 1}
	set(b)
	// GoMLX builds a graph before its first Compile: time enough to find
	// the C compiler, which the first key needs, and to set up what the
	// first load and the first entry read need.
	b.cpu.Prepare()
	cache.Prepare()
	return b, nil
}

// parseConfig splits "dir=/x,role=writer,notune" into environment
// overrides and backend settings.
func parseConfig(cfg string) (map[string]string, func(*Backend), error) {
	over := map[string]string{}
	var sets []func(*Backend)
	known := config.Defaults().Sources
	for _, kv := range strings.Split(cfg, ",") {
		if kv = strings.TrimSpace(kv); kv == "" {
			continue
		}
		k, v, hasValue := strings.Cut(kv, "=")
		switch k = strings.ToLower(strings.TrimSpace(k)); k {
		case "notune":
			sets = append(sets, func(b *Backend) { b.cpu.NoTune = true })
			continue
		case "jobs":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, nil, fmt.Errorf("xlacache backend: jobs=%q: want a positive integer", v)
			}
			sets = append(sets, func(b *Backend) { b.cpu.Jobs = n })
			continue
		case "devices":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > maxDevices {
				return nil, nil, fmt.Errorf("xlacache backend: devices=%q: want an integer from 1 to %d", v, maxDevices)
			}
			sets = append(sets, func(b *Backend) { b.devices = n })
			continue
		}
		env := "XLACACHE_" + strings.ToUpper(k)
		if _, ok := known[env]; !ok || !hasValue {
			return nil, nil, fmt.Errorf("xlacache backend: unknown option %q in %q (want key=value with key an XLACACHE_ variable without the prefix, notune, jobs=N or devices=N)", kv, cfg)
		}
		over[env] = v
	}
	return over, func(b *Backend) {
		for _, s := range sets {
			s(b)
		}
	}, nil
}

// Options returns the cache options in effect.
func (b *Backend) Options() config.Options { return b.opts }

// Name implements backends.Backend.
func (b *Backend) Name() string { return Name }

// String implements backends.Backend.
func (b *Backend) String() string { return Name }

// Description implements backends.Backend.
func (b *Backend) Description() string {
	return fmt.Sprintf("xlacache cpu backend (StableHLO -> C, cache %s)", b.opts.Dir)
}

// maxDevices bounds devices=N: every device is the host, and an SPMD
// program holds one copy of the program per device.
const maxDevices = 64

// NumDevices implements backends.Backend: the host, as one device, or as
// the N devices that devices=N configures. Every device is the same host
// memory and cores (as XLA's --xla_force_host_platform_device_count); they
// exist so programs written for several devices (portable executables,
// SPMD with AllReduce) run and can be tested on one machine.
func (b *Backend) NumDevices() int { return b.devices }

// DeviceDescription implements backends.Backend.
func (b *Backend) DeviceDescription(d backends.DeviceNum) string { return fmt.Sprintf("cpu:%d", d) }

// Finalize closes the cache. Executables and buffers must not be used
// afterwards.
func (b *Backend) Finalize() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.finalized {
		return
	}
	b.finalized = true
	if err := b.cache.Close(); err != nil {
		slog.Warn("xlacache backend: closing the cache", "err", err)
	}
}

// IsFinalized implements backends.Backend.
func (b *Backend) IsFinalized() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.finalized
}

func (b *Backend) check() error {
	if b.IsFinalized() {
		return errors.New("xlacache backend: finalized")
	}
	return nil
}

// dtypeMap maps the GoMLX dtypes the backend builds to StableHLO element
// types. Both sides store elements the same way (bool as one byte,
// f16/bf16 as 16 bits, complex as the real part then the imaginary part,
// as Go's complex64/complex128), so buffers are copied byte for byte.
var dtypeMap = map[dtypes.DType]stablehlo.DType{
	dtypes.Bool: stablehlo.I1, dtypes.Int8: stablehlo.I8, dtypes.Int16: stablehlo.I16,
	dtypes.Int32: stablehlo.I32, dtypes.Int64: stablehlo.I64, dtypes.Uint8: stablehlo.UI8,
	dtypes.Uint16: stablehlo.UI16, dtypes.Uint32: stablehlo.UI32, dtypes.Uint64: stablehlo.UI64,
	dtypes.Float16: stablehlo.F16, dtypes.BFloat16: stablehlo.BF16, dtypes.Float32: stablehlo.F32,
	dtypes.Float64: stablehlo.F64, dtypes.Complex64: stablehlo.C64, dtypes.Complex128: stablehlo.C128,
}

func tensorType(s shapes.Shape) (stablehlo.TensorType, error) {
	dt, ok := dtypeMap[s.DType]
	if !ok {
		return stablehlo.TensorType{}, fmt.Errorf("dtype %s is not supported", s.DType)
	}
	t := stablehlo.TensorType{DType: dt, Shape: make([]int64, len(s.Dimensions))}
	for i, d := range s.Dimensions {
		t.Shape[i] = int64(d)
	}
	return t, nil
}

// Buffer is a host tensor; it implements backends.Buffer.
type Buffer struct {
	t      *stablehlo.Tensor
	shape  shapes.Shape
	device backends.DeviceNum
}

func (b *Backend) buffer(op string, x backends.Buffer) (*Buffer, error) {
	buf, ok := x.(*Buffer)
	if !ok || buf == nil {
		return nil, fmt.Errorf("xlacache backend: %s: buffer %T is not from this backend", op, x)
	}
	if buf.t == nil {
		return nil, fmt.Errorf("xlacache backend: %s: buffer already finalized", op)
	}
	return buf, nil
}

// BufferFinalize implements backends.DataInterface.
func (b *Backend) BufferFinalize(x backends.Buffer) error {
	buf, err := b.buffer("BufferFinalize", x)
	if err != nil {
		return err
	}
	buf.t = nil
	return nil
}

// BufferShape implements backends.DataInterface.
func (b *Backend) BufferShape(x backends.Buffer) (shapes.Shape, error) {
	buf, err := b.buffer("BufferShape", x)
	if err != nil {
		return shapes.Invalid(), err
	}
	return buf.shape, nil
}

// BufferDeviceNum implements backends.DataInterface.
func (b *Backend) BufferDeviceNum(x backends.Buffer) (backends.DeviceNum, error) {
	buf, err := b.buffer("BufferDeviceNum", x)
	if err != nil {
		return 0, err
	}
	return buf.device, nil
}

// device checks that d is one of the backend's devices.
func (b *Backend) device(op string, d backends.DeviceNum) error {
	if d < 0 || int(d) >= b.devices {
		return fmt.Errorf("xlacache backend: %s: no device %d (the backend has %d)", op, d, b.devices)
	}
	return nil
}

// flatBytes returns the bytes of flat, a slice of shape's Go type.
func flatBytes(op string, flat any, shape shapes.Shape) ([]byte, error) {
	v := reflect.ValueOf(flat)
	if v.Kind() != reflect.Slice || shape.DType.GoType() == nil || v.Type().Elem().Size() != shape.DType.GoType().Size() ||
		v.Type().Elem().Kind() != shape.DType.GoType().Kind() {
		return nil, fmt.Errorf("xlacache backend: %s: flat data %T does not hold %s", op, flat, shape.DType)
	}
	if v.Len() != shape.Size() {
		return nil, fmt.Errorf("xlacache backend: %s: flat data has %d elements, shape %s has %d", op, v.Len(), shape, shape.Size())
	}
	if v.Len() == 0 {
		return nil, nil
	}
	return unsafe.Slice((*byte)(v.UnsafePointer()), v.Len()*int(v.Type().Elem().Size())), nil
}

// BufferToFlatData implements backends.DataInterface.
func (b *Backend) BufferToFlatData(x backends.Buffer, flat any) error {
	buf, err := b.buffer("BufferToFlatData", x)
	if err != nil {
		return err
	}
	dst, err := flatBytes("BufferToFlatData", flat, buf.shape)
	if err != nil {
		return err
	}
	copy(dst, buf.t.Data)
	return nil
}

// BufferFromFlatData implements backends.DataInterface.
func (b *Backend) BufferFromFlatData(d backends.DeviceNum, flat any, shape shapes.Shape) (backends.Buffer, error) {
	src, err := flatBytes("BufferFromFlatData", flat, shape)
	if err != nil {
		return nil, err
	}
	buf, _, err := b.NewSharedBuffer(d, shape)
	if err != nil {
		return nil, err
	}
	copy(buf.(*Buffer).t.Data, src)
	return buf, nil
}

// HasSharedBuffers implements backends.DataInterface: buffers live in host
// memory, so GoMLX tensors can use them in place.
func (b *Backend) HasSharedBuffers() bool { return true }

// NewSharedBuffer implements backends.DataInterface.
func (b *Backend) NewSharedBuffer(d backends.DeviceNum, shape shapes.Shape) (backends.Buffer, any, error) {
	if err := b.device("NewSharedBuffer", d); err != nil {
		return nil, nil, err
	}
	tt, err := tensorType(shape)
	if err != nil {
		return nil, nil, fmt.Errorf("xlacache backend: %w", err)
	}
	buf := &Buffer{t: stablehlo.NewTensor(tt), shape: shape.Clone(), device: d}
	flat, err := b.BufferData(buf)
	return buf, flat, err
}

// BufferData implements backends.DataInterface: the flat slice aliases the
// buffer.
func (b *Backend) BufferData(x backends.Buffer) (any, error) {
	buf, err := b.buffer("BufferData", x)
	if err != nil {
		return nil, err
	}
	goType := buf.shape.DType.GoType()
	n := buf.shape.Size()
	if n == 0 {
		return reflect.MakeSlice(reflect.SliceOf(goType), 0, 0).Interface(), nil
	}
	return reflect.SliceAt(goType, unsafe.Pointer(&buf.t.Data[0]), n).Interface(), nil
}

// BufferCopyToDevice implements backends.DataInterface.
func (b *Backend) BufferCopyToDevice(x backends.Buffer, d backends.DeviceNum) (backends.Buffer, error) {
	buf, err := b.buffer("BufferCopyToDevice", x)
	if err != nil {
		return nil, err
	}
	if err := b.device("BufferCopyToDevice", d); err != nil {
		return nil, err
	}
	return &Buffer{t: buf.t.Clone(), shape: buf.shape.Clone(), device: d}, nil
}

// Capabilities implements backends.Backend: exactly the ops and dtypes this
// backend builds and the cpu backend compiles.
func (b *Backend) Capabilities() backends.Capabilities {
	c := backends.Capabilities{Operations: map[backends.OpType]bool{}, DTypes: map[dtypes.DType]bool{}}
	for _, op := range supportedOps() {
		c.Operations[op] = true
	}
	for dt := range dtypeMap {
		if !dt.IsComplex() || complexCompiles {
			c.DTypes[dt] = true
		}
	}
	return c
}

package gomlx_test

import (
	stdctx "context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/xlacache/xlacache/gomlx"
)

// newDevices opens the backend with n host devices on a fresh cache.
func newDevices(t *testing.T, n string) *gomlx.Backend {
	t.Helper()
	b, err := gomlx.NewWithLookup(stdctx.Background(), "dir="+t.TempDir()+",notune,devices="+n,
		func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Finalize)
	return b
}

// must returns v, panicking (which fails the test) on an error.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// TestDevices checks the devices=N option and that buffers remember
// their device.
func TestDevices(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for _, bad := range []string{"0", "-1", "65", "two", "x", "", "2.5"} {
		b, err := gomlx.NewWithLookup(stdctx.Background(), "dir="+t.TempDir()+",devices="+bad, none, nil)
		if err == nil {
			b.Finalize()
			t.Errorf("devices=%s: no error", bad)
		} else if !strings.Contains(err.Error(), fmt.Sprintf("devices=%q", bad)) {
			t.Errorf("devices=%s: error %q does not name the value", bad, err)
		}
	}
	if n := newBackend(t).NumDevices(); n != 1 {
		t.Errorf("default NumDevices = %d, want 1", n)
	}
	b := newDevices(t, "3")
	if n := b.NumDevices(); n != 3 {
		t.Fatalf("NumDevices = %d, want 3", n)
	}
	s := shapes.Make(dtypes.Float32, 2)
	buf := must(b.BufferFromFlatData(2, []float32{1, 2}, s))
	if d := must(b.BufferDeviceNum(buf)); d != 2 {
		t.Errorf("buffer on device %d, want 2", d)
	}
	cp := must(b.BufferCopyToDevice(buf, 1))
	if d := must(b.BufferDeviceNum(cp)); d != 1 {
		t.Errorf("copy on device %d, want 1", d)
	}
	if _, err := b.BufferFromFlatData(3, []float32{1, 2}, s); err == nil {
		t.Errorf("buffer on device 3 of 3: no error")
	}
	if _, err := b.BufferCopyToDevice(buf, -1); err == nil {
		t.Errorf("copy to device -1: no error")
	}

	// A portable program runs on the device Execute names, on inputs
	// there.
	bld := b.Builder("portable")
	x := must(bld.Parameter("x", s, nil))
	exe := must(bld.Compile([]backends.Op{must(bld.Neg(x))}, nil))
	defer exe.Finalize()
	out := must(exe.Execute([]backends.Buffer{cp}, nil, 1))
	if d := must(b.BufferDeviceNum(out[0])); d != 1 {
		t.Errorf("portable result on device %d, want 1", d)
	}
	got := make([]float32, 2)
	if err := b.BufferToFlatData(out[0], got); err != nil || !slices.Equal(got, []float32{-1, -2}) {
		t.Errorf("portable result %v (%v)", got, err)
	}
	if _, err := exe.Execute([]backends.Buffer{cp}, nil, 3); err == nil {
		t.Errorf("executing on device 3 of 3: no error")
	}
}

// TestSPMDAllReduce builds an SPMD program over three devices, assigned
// out of order, with AllReduce over all replicas and over groups, and
// checks every replica's results and devices.
func TestSPMDAllReduce(t *testing.T) {
	b := newDevices(t, "3")
	if err := b.Builder("too many").DistributedSPMD(4); err == nil {
		t.Errorf("DistributedSPMD(4) on 3 devices: no error")
	}
	late := b.Builder("late")
	must(late.Parameter("x", shapes.Make(dtypes.Float32), nil))
	if err := late.DistributedSPMD(2); err == nil {
		t.Errorf("DistributedSPMD after a parameter: no error")
	}

	early := b.Builder("assigned first")
	if err := early.DeviceAssignment(1); err != nil {
		t.Fatal(err)
	}
	if err := early.DistributedSPMD(2); err == nil {
		t.Errorf("DistributedSPMD(2) after DeviceAssignment of one device: no error")
	}

	bld := b.Builder("spmd")
	if err := bld.DistributedSPMD(3); err != nil {
		t.Fatal(err)
	}
	if err := bld.DeviceAssignment(2, 0, 2); err == nil {
		t.Errorf("DeviceAssignment with a device twice: no error")
	}
	if err := bld.DeviceAssignment(2, 0, 3); err == nil || !strings.Contains(err.Error(), "no device 3") {
		t.Errorf("DeviceAssignment with device 3 of 3: got %v, want an error naming device 3", err)
	}
	if err := bld.DeviceAssignment(0, 1); err == nil {
		t.Errorf("DeviceAssignment of 2 devices for 3 replicas: no error")
	}
	if _, _, err := b.NewSharedBuffer(-1, shapes.Make(dtypes.Float32)); err == nil {
		t.Errorf("NewSharedBuffer on device -1: no error")
	}
	assigned := []backends.DeviceNum{2, 0, 1}
	if err := bld.DeviceAssignment(assigned...); err != nil {
		t.Fatal(err)
	}
	x := must(bld.Parameter("x", shapes.Make(dtypes.Float32, 2), nil))
	y := must(bld.Parameter("y", shapes.Make(dtypes.Int32), nil))
	sum := must(bld.AllReduce([]backends.Op{x}, backends.ReduceOpSum, nil))[0]
	maxes := must(bld.AllReduce([]backends.Op{y, x}, backends.ReduceOpMax, [][]int{{0, 2}, {1}}))
	if _, err := bld.AllReduce([]backends.Op{y}, backends.ReduceOpSum, [][]int{{0, 1}}); err == nil {
		t.Errorf("AllReduce leaving replica 2 out of every group: no error")
	}
	double := must(bld.Add(x, x))
	exe := must(bld.Compile([]backends.Op{sum, maxes[0], maxes[1], double}, nil))
	defer exe.Finalize()
	if names, _ := exe.Inputs(); !slices.Equal(names, []string{"x", "y"}) {
		t.Errorf("Inputs %v, want the per-device parameters x, y", names)
	}
	if outs := exe.Outputs(); len(outs) != 4 {
		t.Errorf("Outputs %v, want the 4 per-device outputs", outs)
	}

	xs := [][]float32{{1, 10}, {2, 20}, {4, 5}}
	ys := []int32{7, -3, 9}
	var in []backends.Buffer
	for r := range 3 {
		in = append(in, must(b.BufferFromFlatData(assigned[r], xs[r], shapes.Make(dtypes.Float32, 2))),
			must(b.BufferFromFlatData(assigned[r], []int32{ys[r]}, shapes.Make(dtypes.Int32))))
	}
	if _, err := exe.Execute(in[:4], nil, 0); err == nil || !strings.Contains(err.Error(), "inputs") {
		t.Errorf("4 of 6 inputs: got %v", err)
	}
	out := must(exe.Execute(in, nil, 0))
	if len(out) != 12 {
		t.Fatalf("%d results, want 3 replicas × 4", len(out))
	}
	groupMaxY := []int32{9, -3, 9}
	groupMaxX := [][]float32{{4, 10}, {2, 20}, {4, 10}}
	for r := range 3 {
		res := out[r*4 : r*4+4]
		for _, buf := range res {
			if d := must(b.BufferDeviceNum(buf)); d != assigned[r] {
				t.Errorf("replica %d: result on device %d, want %d", r, d, assigned[r])
			}
		}
		f := func(i int) []float32 {
			v := make([]float32, 2)
			if err := b.BufferToFlatData(res[i], v); err != nil {
				t.Fatal(err)
			}
			return v
		}
		iy := make([]int32, 1)
		if err := b.BufferToFlatData(res[1], iy); err != nil {
			t.Fatal(err)
		}
		if got := f(0); !slices.Equal(got, []float32{7, 35}) {
			t.Errorf("replica %d: sum %v, want [7 35]", r, got)
		}
		if iy[0] != groupMaxY[r] {
			t.Errorf("replica %d: group max of y %d, want %d", r, iy[0], groupMaxY[r])
		}
		if got := f(2); !slices.Equal(got, groupMaxX[r]) {
			t.Errorf("replica %d: group max of x %v, want %v", r, got, groupMaxX[r])
		}
		if got, want := f(3), []float32{2 * xs[r][0], 2 * xs[r][1]}; !slices.Equal(got, want) {
			t.Errorf("replica %d: x+x %v, want %v", r, got, want)
		}
	}
}

// TestExecuteChecksDevices checks that Execute refuses what a device
// would (as PJRT does): an input on another device than the replica
// reading it, and a donate list of the wrong length.
func TestExecuteChecksDevices(t *testing.T) {
	b := newDevices(t, "2")
	s := shapes.Make(dtypes.Float32, 2)
	bld := b.Builder("portable")
	x := must(bld.Parameter("x", s, nil))
	exe := must(bld.Compile([]backends.Op{must(bld.Neg(x))}, nil))
	defer exe.Finalize()
	on0 := must(b.BufferFromFlatData(0, []float32{1, 2}, s))
	if _, err := exe.Execute([]backends.Buffer{on0}, nil, 1); err == nil || !strings.Contains(err.Error(), "device 0") {
		t.Errorf("input on device 0, executing on device 1: got %v, want an error naming device 0", err)
	}
	if _, err := exe.Execute([]backends.Buffer{on0}, []bool{false, false}, 0); err == nil || !strings.Contains(err.Error(), "donate") {
		t.Errorf("2 donate flags for 1 input: got %v, want an error", err)
	}
	if _, err := exe.Execute([]backends.Buffer{on0}, []bool{true}, 0); err != nil {
		t.Errorf("1 donate flag for 1 input: %v", err)
	}

	spmd := b.Builder("spmd")
	if err := spmd.DistributedSPMD(2); err != nil {
		t.Fatal(err)
	}
	if err := spmd.DeviceAssignment(1, 0); err != nil {
		t.Fatal(err)
	}
	y := must(spmd.Parameter("y", s, nil))
	sum := must(spmd.AllReduce([]backends.Op{y}, backends.ReduceOpSum, nil))
	exe2 := must(spmd.Compile(sum, nil))
	defer exe2.Finalize()
	on1 := must(b.BufferFromFlatData(1, []float32{3, 4}, s))
	// Replica 0 runs on device 1 and replica 1 on device 0.
	if _, err := exe2.Execute([]backends.Buffer{on0, on1}, nil, 0); err == nil || !strings.Contains(err.Error(), "device") {
		t.Errorf("replicas' inputs on each other's devices: got %v, want an error", err)
	}
	out := must(exe2.Execute([]backends.Buffer{on1, on0}, nil, 0))
	for r, want := range []backends.DeviceNum{1, 0} {
		if d := must(b.BufferDeviceNum(out[r])); d != want {
			t.Errorf("replica %d: result on device %d, want %d", r, d, want)
		}
	}
	// Both replicas' results are one value in the program; GoMLX may
	// write into a buffer it owns, so they must not share memory.
	must(b.BufferData(out[0])).([]float32)[0] = 99
	if got := must(b.BufferData(out[1])).([]float32); got[0] != 4 || got[1] != 6 {
		t.Errorf("replica 1's sum %v after writing into replica 0's, want [4 6]", got)
	}
}

// TestSPMDParameterNames checks that a parameter may have any name,
// including the one the backend gives another parameter's replica.
func TestSPMDParameterNames(t *testing.T) {
	b := newDevices(t, "2")
	s := shapes.Make(dtypes.Float32)
	bld := b.Builder("names")
	if err := bld.DistributedSPMD(2); err != nil {
		t.Fatal(err)
	}
	if err := bld.DeviceAssignment(0, 1); err != nil {
		t.Fatal(err)
	}
	x := must(bld.Parameter("x", s, nil))
	y, err := bld.Parameter("x_replica1", s, nil)
	if err != nil {
		t.Fatalf("parameter x_replica1 after x: %v", err)
	}
	exe := must(bld.Compile([]backends.Op{must(bld.Sub(x, y))}, nil))
	defer exe.Finalize()
	in := []backends.Buffer{must(b.BufferFromFlatData(0, []float32{1}, s)), must(b.BufferFromFlatData(0, []float32{10}, s)),
		must(b.BufferFromFlatData(1, []float32{100}, s)), must(b.BufferFromFlatData(1, []float32{1000}, s))}
	out := must(exe.Execute(in, nil, 0))
	for r, want := range []float32{-9, -900} {
		got := make([]float32, 1)
		if err := b.BufferToFlatData(out[r], got); err != nil || got[0] != want {
			t.Errorf("replica %d: x - x_replica1 = %v (%v), want %v", r, got, err, want)
		}
	}
}

// TestConcurrentExecute runs a portable program on two devices and an
// SPMD program from several goroutines at once; run with -race, it
// checks the backend's own state (executables, buffers, devices) is safe
// to share.
func TestConcurrentExecute(t *testing.T) {
	b := newDevices(t, "2")
	s := shapes.Make(dtypes.Float32, 2)
	bld := b.Builder("portable")
	x := must(bld.Parameter("x", s, nil))
	neg := must(bld.Compile([]backends.Op{must(bld.Neg(x))}, nil))
	defer neg.Finalize()
	spmd := b.Builder("spmd")
	if err := spmd.DistributedSPMD(2); err != nil {
		t.Fatal(err)
	}
	if err := spmd.DeviceAssignment(0, 1); err != nil {
		t.Fatal(err)
	}
	y := must(spmd.Parameter("y", s, nil))
	sum := must(spmd.Compile(must(spmd.AllReduce([]backends.Op{y}, backends.ReduceOpSum, nil)), nil))
	defer sum.Finalize()

	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			d := backends.DeviceNum(g % 2)
			v := float32(g)
			for range 10 {
				in, err := b.BufferFromFlatData(d, []float32{v, 1}, s)
				if err != nil {
					t.Error(err)
					return
				}
				out, err := neg.Execute([]backends.Buffer{in}, nil, d)
				if err != nil {
					t.Error(err)
					return
				}
				got := make([]float32, 2)
				if err := b.BufferToFlatData(out[0], got); err != nil || got[0] != -v || got[1] != -1 {
					t.Errorf("goroutine %d: -x = %v (%v)", g, got, err)
				}
				other, err := b.BufferCopyToDevice(in, 1-d)
				if err != nil {
					t.Error(err)
					return
				}
				pair := []backends.Buffer{in, other}
				if d == 1 {
					pair = []backends.Buffer{other, in}
				}
				res, err := sum.Execute(pair, nil, 0)
				if err != nil {
					t.Error(err)
					return
				}
				for r := range 2 {
					if err := b.BufferToFlatData(res[r], got); err != nil || got[0] != 2*v || got[1] != 2 {
						t.Errorf("goroutine %d: replica %d of AllReduce = %v (%v)", g, r, got, err)
					}
				}
			}
		}()
	}
	wg.Wait()
}

// TestCacheKeyReplicas checks what the cache key follows: an SPMD
// program's replica count changes the program (a miss), the backend's
// device count and the device assignment do not (a hit across backends
// sharing a cache directory).
func TestCacheKeyReplicas(t *testing.T) {
	dir := t.TempDir()
	open := func(devices int) *gomlx.Backend {
		b, err := gomlx.NewWithLookup(stdctx.Background(), fmt.Sprintf("dir=%s,notune,devices=%d", dir, devices),
			func(string) (string, bool) { return "", false }, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Finalize)
		return b
	}
	compile := func(b *gomlx.Backend, replicas int, assigned ...backends.DeviceNum) bool {
		t.Helper()
		before := b.Stats().Hits
		bld := b.Builder("key")
		if replicas > 1 {
			if err := bld.DistributedSPMD(replicas); err != nil {
				t.Fatal(err)
			}
		}
		if assigned != nil {
			if err := bld.DeviceAssignment(assigned...); err != nil {
				t.Fatal(err)
			}
		}
		x := must(bld.Parameter("x", shapes.Make(dtypes.Float32, 3), nil))
		out := must(bld.AllReduce([]backends.Op{must(bld.Mul(x, x))}, backends.ReduceOpSum, nil))
		must(bld.Compile(out, nil)).Finalize()
		return b.Stats().Hits > before
	}
	b3 := open(3)
	if compile(b3, 2, 0, 1) {
		t.Errorf("first SPMD compile was a hit")
	}
	if compile(b3, 3, 0, 1, 2) {
		t.Errorf("3 replicas hit the 2-replica program")
	}
	if compile(b3, 1) {
		t.Errorf("1 replica hit an SPMD program")
	}
	b2 := open(2)
	if !compile(b2, 2, 1, 0) {
		t.Errorf("the 2-replica program on a 2-device backend, devices swapped, missed")
	}
}

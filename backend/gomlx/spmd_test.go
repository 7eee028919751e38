package gomlx_test

import (
	stdctx "context"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/xlacache/xlacache/backend/gomlx"
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
	for _, bad := range []string{"devices=0", "devices=65", "devices=two"} {
		if b, err := gomlx.NewWithLookup(stdctx.Background(), "dir="+t.TempDir()+","+bad, none, nil); err == nil {
			b.Finalize()
			t.Errorf("config %q: no error", bad)
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

	// A portable program runs on the device Execute names.
	bld := b.Builder("portable")
	x := must(bld.Parameter("x", s, nil))
	exe := must(bld.Compile([]backends.Op{must(bld.Neg(x))}, nil))
	defer exe.Finalize()
	out := must(exe.Execute([]backends.Buffer{buf}, nil, 1))
	if d := must(b.BufferDeviceNum(out[0])); d != 1 {
		t.Errorf("portable result on device %d, want 1", d)
	}
	got := make([]float32, 2)
	if err := b.BufferToFlatData(out[0], got); err != nil || !slices.Equal(got, []float32{-1, -2}) {
		t.Errorf("portable result %v (%v)", got, err)
	}
	if _, err := exe.Execute([]backends.Buffer{buf}, nil, 3); err == nil {
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

	bld := b.Builder("spmd")
	if err := bld.DistributedSPMD(3); err != nil {
		t.Fatal(err)
	}
	if err := bld.DeviceAssignment(2, 0, 2); err == nil {
		t.Errorf("DeviceAssignment with a device twice: no error")
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

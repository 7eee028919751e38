package cpu

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
)

// richPlan has every field of a plan set, optional ones both ways.
func richPlan() *Plan {
	lo, hi, tol := int64(-3), int64(1<<40), 0.125
	return &Plan{
		Format: formatVersion, Module: "main",
		Buffers: []Buffer{
			{DType: "f32", Shape: []int64{2, 3}, Arg: 0},
			{DType: "i32", Shape: nil, Arg: 1},
			{DType: "f32", Shape: []int64{2, 3}, Arg: -1, Const: bytes.Repeat([]byte{7}, 24)},
			{DType: "f32", Shape: []int64{0}, Arg: -1, Const: []byte{}},
			{DType: "f32", Shape: []int64{2, 3}, Arg: -1},
		},
		Steps: []Step{
			{Kernel: "k_add_0", Bufs: []int{0, 2, 4}},
			{Op: stepBranch, Bufs: []int{1}, Targets: []int{2, 3}},
			{Op: stepCopy, Bufs: []int{0, 4}},
			{Op: stepJump, Targets: []int{4}},
		},
		Checks: []Check{
			{Target: "check.expect_close", Actual: 4, Expected: 2, MinULP: &lo, MaxULP: &hi, Tolerance: &tol, File: "a.mlir", Line: 3, Col: 9},
			{Target: "check.expect_eq", Actual: 4, Expected: 2},
		},
		Outputs: []int{4, 4},
		Kernels: []KernelInfo{
			{Name: "k_add_0", Desc: "add f32[2,3]", Config: "tile=4 µ", Tuned: true, ObjectHit: true},
			{Name: "k_x", TuneHit: true},
		},
	}
}

func TestPlanCodecRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *Plan
	}{
		{"empty", &Plan{Format: formatVersion}},
		{"rich", richPlan()},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decodePlan(appendPlan(nil, tc.p))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.p) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tc.p)
			}
		})
	}
}

// TestPlanCodecRejects covers every prefix of a plan (truncation at each
// byte), trailing bytes, another format, and out-of-range values.
func TestPlanCodecRejects(t *testing.T) {
	good := appendPlan(nil, richPlan())
	for n := range len(good) {
		if _, err := decodePlan(good[:n]); err == nil {
			t.Fatalf("prefix of %d of %d bytes decoded", n, len(good))
		}
	}
	old := appendPlan(nil, &Plan{Format: formatVersion - 1})
	// A JSON plan (formats up to 4) starts with '{': format 123.
	for _, tc := range []struct {
		name string
		data []byte
		want string
	}{
		{"trailing", append(append([]byte{}, good...), 0), "after the plan"},
		{"old format", old, "plan format"},
		{"json", []byte(`{"format":4}`), "plan format 123"},
		{"huge count", []byte{formatVersion, 0, 0xff, 0xff, 0xff, 0xff, 0x0f}, "truncated"},
		{"bad presence", []byte{formatVersion, 0, 1, 0, 0, 0, 2}, "presence"},
		{"bad flags", []byte{formatVersion, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0x80}, "flags"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := decodePlan(tc.data)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

// BenchmarkDecodeExecutable times the executables tier's decoding of a
// plan the size of a small program's and of a big one's.
func BenchmarkDecodeExecutable(b *testing.B) {
	small := richPlan()
	big := richPlan()
	for range 60 {
		big.Steps = append(big.Steps, small.Steps[0])
		big.Kernels = append(big.Kernels, small.Kernels[0])
		big.Buffers = append(big.Buffers, small.Buffers[4])
	}
	for _, bc := range []struct {
		name string
		p    *Plan
	}{{"small", small}, {"big", big}} {
		data, err := encodeExecutable(bc.p, []byte("so"))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if _, _, err := decodeExecutable(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

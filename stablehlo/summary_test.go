package stablehlo

import "testing"

func TestSummary(t *testing.T) {
	tests := []struct {
		vals []float32
		want string
	}{
		{[]float32{1, 2}, "[1 2] sum=3"},
		{[]float32{0.5, 1, 1, 1, 1, 1.5}, "[0.5 1 1 1 ...] sum=6"},
		{nil, "[] sum=0"},
	}
	for _, tc := range tests {
		x := NewTensor(TensorType{Shape: []int64{int64(len(tc.vals))}, DType: F32})
		for i, v := range tc.vals {
			x.Float32s()[i] = v
		}
		if got := x.Summary(); got != tc.want {
			t.Errorf("Summary(%v) = %q, want %q", tc.vals, got, tc.want)
		}
	}
}

func TestSummaryComplex(t *testing.T) {
	x, _ := FromComplex64s([]int64{2}, []complex64{1 + 2i, -0.5i})
	if got, want := x.Summary(), "[(1+2i) (0-0.5i)] sum=(1+1.5i)"; got != want {
		t.Errorf("Summary = %q, want %q", got, want)
	}
}

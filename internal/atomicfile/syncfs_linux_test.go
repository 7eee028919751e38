package atomicfile

import "testing"

func TestKernelAtLeast(t *testing.T) {
	for rel, want := range map[string]bool{
		"6.18.44-fc-v1147": true, "5.8.0": true, "5.15.0-91-generic": true, "5.7.19": false,
		"4.19.0": false, "5.10": true, "": false, "x.y": false, "5.8-rc1": true,
	} {
		if got := kernelAtLeast(rel, 5, 8); got != want {
			t.Errorf("kernelAtLeast(%q, 5, 8) = %v, want %v", rel, got, want)
		}
	}
}

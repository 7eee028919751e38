package memtest

import "testing"

var sink []byte

func TestAllocated(t *testing.T) {
	const n = 8 << 20
	if got := Allocated(func() { sink = make([]byte, n) }); got < n {
		t.Fatalf("allocating %d bytes measured as %d", n, got)
	}
	sink = nil
	if got := Allocated(func() {}); got >= n {
		t.Fatalf("allocating nothing measured as %d bytes", got)
	}
}

package stablehlo

import (
	"strings"
	"testing"
)

// TestThreefry checks the Random123 known-answer vectors for
// Threefry-2x32 with 20 rounds (the ones JAX's tests use).
func TestThreefry(t *testing.T) {
	for _, c := range []struct{ key, ctr, want [2]uint32 }{
		{[2]uint32{0, 0}, [2]uint32{0, 0}, [2]uint32{0x6b200159, 0x99ba4efe}},
		{[2]uint32{0xffffffff, 0xffffffff}, [2]uint32{0xffffffff, 0xffffffff}, [2]uint32{0x1cb996fc, 0xbb002be7}},
		{[2]uint32{0x13198a2e, 0x03707344}, [2]uint32{0x243f6a88, 0x85a308d3}, [2]uint32{0xc4923a9c, 0x483df7a0}},
	} {
		if got := threefry2x32(c.ctr, c.key); got != c.want {
			t.Errorf("threefry2x32(%#x, key %#x) = %#x, want %#x", c.ctr, c.key, got, c.want)
		}
	}
}

func TestRngBitGenerator(t *testing.T) {
	// Key 0, counter 0: element e is threefry(e, 0) with the first word
	// as the low half; the counter advances by the element count.
	out := evalText(t, `func.func @main() -> (tensor<2xui64>, tensor<2x1xui64>) {
  %s = stablehlo.constant dense<[0, 0]> : tensor<2xui64>
  %n, %r = stablehlo.rng_bit_generator %s, algorithm = THREE_FRY : (tensor<2xui64>) -> (tensor<2xui64>, tensor<2x1xui64>)
  return %n, %r : tensor<2xui64>, tensor<2x1xui64>
}`)
	if s := out[0].Uint64s(); s[0] != 0 || s[1] != 2 {
		t.Errorf("new state %v, want [0 2]", s)
	}
	if got, want := out[1].Uint64s()[0], uint64(0x99ba4efe)<<32|0x6b200159; got != want {
		t.Errorf("first output %#x, want %#x", got, want)
	}
	for _, alg := range []string{"PHILOX", "DEFAULT"} {
		src := `func.func @main() -> tensor<4xui64> {
  %s = stablehlo.constant dense<[0, 0]> : tensor<2xui64>
  %n, %r = "stablehlo.rng_bit_generator"(%s) <{rng_algorithm = #stablehlo<rng_algorithm ` + alg + `>}> : (tensor<2xui64>) -> (tensor<2xui64>, tensor<4xui64>)
  return %r : tensor<4xui64>
}`
		_, err := Parse([]byte(src), "r.mlir")
		if err == nil || !isUnsupported(err) || !strings.Contains(err.Error(), alg) {
			t.Errorf("%s: got %v, want unsupported", alg, err)
		}
	}
}

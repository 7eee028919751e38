package pjrt

import (
	"bytes"
	"os"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// mapEntry encodes one map<string,string> entry as field num.
func mapEntry(num protowire.Number, k, v string) []byte {
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.BytesType)
	e = protowire.AppendString(e, k)
	e = protowire.AppendTag(e, 2, protowire.BytesType)
	e = protowire.AppendString(e, v)
	out := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(out, e)
}

func message(num protowire.Number, fields ...[]byte) []byte {
	out := protowire.AppendTag(nil, num, protowire.BytesType)
	return protowire.AppendBytes(out, bytes.Join(fields, nil))
}

func varint(num protowire.Number, v uint64) []byte {
	return protowire.AppendVarint(protowire.AppendTag(nil, num, protowire.VarintType), v)
}

func TestCanonicalOptions(t *testing.T) {
	debug := func(entries ...[]byte) []byte {
		return message(fieldCompileBuildOptions, varint(4, 1),
			message(fieldBuildDebugOptions, append([][]byte{varint(100, 1)}, entries...)...))
	}
	a1, a2 := mapEntry(fieldDebugLatencyEstimator, "rtt_us", "-1"), mapEntry(fieldDebugLatencyEstimator, "chunk_size_bytes", "-1")
	x1 := mapEntry(fieldCompileEnvOverrides, "a", "1")
	x2 := mapEntry(fieldCompileEnvOverrides, "b", "2")
	for _, tc := range []struct {
		name  string
		a, b  []byte
		equal bool
	}{
		{"debug map order", debug(a1, a2), debug(a2, a1), true},
		{"env overrides order", bytes.Join([][]byte{x1, varint(5, 1), x2}, nil), bytes.Join([][]byte{x2, varint(5, 1), x1}, nil), true},
		{"debug map value", debug(a1, a2), debug(a1, mapEntry(fieldDebugLatencyEstimator, "chunk_size_bytes", "7")), false},
		{"other field", debug(a1), bytes.Join([][]byte{debug(a1), varint(5, 1)}, nil), false},
		{"repeated non-map field order kept", bytes.Join([][]byte{varint(2, 1), varint(2, 2)}, nil), bytes.Join([][]byte{varint(2, 2), varint(2, 1)}, nil), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ca, err := canonicalOptions(tc.a)
			if err != nil {
				t.Fatal(err)
			}
			cb, err := canonicalOptions(tc.b)
			if err != nil {
				t.Fatal(err)
			}
			if got := bytes.Equal(ca, cb); got != tc.equal {
				t.Errorf("canonical forms equal: %v, want %v", got, tc.equal)
			}
		})
	}
	if _, err := canonicalOptions([]byte{0x1a, 0x05, 0x00}); err == nil {
		t.Error("truncated options accepted")
	}
}

// The compile options JAX 0.11.2 (with the lammps-jax-pjrt-cpu plugin,
// through the wrapper) sent for one program from two processes, as the
// helper received them: their bytes differ only in map order.
func TestCanonicalOptionsJAXProcesses(t *testing.T) {
	a, err := os.ReadFile("testdata/jax-0.11.2-options-a.pb")
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile("testdata/jax-0.11.2-options-b.pb")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Equal(a, b) {
		t.Fatal("the fixtures are identical: nothing to canonicalize")
	}
	ca, err := canonicalOptions(a)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := canonicalOptions(b)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ca, cb) {
		t.Error("one program's options from two JAX processes give two keys")
	}
}

package xla

import (
	"bytes"
	"strings"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"
)

// debugOpts builds a DebugOptions message from (field, value) pairs; a
// string value is encoded as bytes, an int as a varint.
func debugOpts(fields ...any) []byte {
	var b []byte
	for i := 0; i < len(fields); i += 2 {
		num := protowire.Number(fields[i].(int))
		switch v := fields[i+1].(type) {
		case string:
			b = protowire.AppendTag(b, num, protowire.BytesType)
			b = protowire.AppendString(b, v)
		case int:
			b = protowire.AppendTag(b, num, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(v))
		}
	}
	return b
}

func msgField(b []byte, num protowire.Number, payload []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, payload)
}

func varintField(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func overrideEntry(key, val string) []byte {
	var ov []byte
	ov = protowire.AppendTag(ov, 1, protowire.BytesType) // OptionOverrideProto.string_field
	ov = protowire.AppendString(ov, val)
	var e []byte
	e = protowire.AppendTag(e, 1, protowire.BytesType)
	e = protowire.AppendString(e, key)
	return msgField(e, 2, ov)
}

// compileOptions hand-builds a CompileOptionsProto like the one a program
// sends: portable, a build options message with replica/partition counts
// and the given DebugOptions, and optional env overrides.
func compileOptions(debug []byte, overrides ...[]byte) []byte {
	var ebo []byte
	ebo = varintField(ebo, 1, 0)  // device_ordinal
	ebo = msgField(ebo, 3, debug) // debug_options
	ebo = varintField(ebo, 4, 1)  // num_replicas
	ebo = varintField(ebo, 5, 1)  // num_partitions
	var co []byte
	co = varintField(co, 2, 0) // parameter_is_tupled_arguments
	co = msgField(co, 3, ebo)
	co = varintField(co, 4, 1) // compile_portable_executable
	for _, o := range overrides {
		co = msgField(co, 7, o)
	}
	co = varintField(co, 5, 7) // profile_version, after the overrides: order is kept
	return co
}

func mustNormalize(t *testing.T, b []byte) []byte {
	t.Helper()
	n, err := NormalizeCompileOptions(b)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func TestNormalizeCompileOptionsSameKey(t *testing.T) {
	common := []any{200, 3, 117, "keep_me"} // xla_gpu_autotune_level-like int, an unrelated string
	plain := compileOptions(debugOpts(common...))
	writer := compileOptions(debugOpts(append([]any{310, "/cache/a/xla_gpu_per_fusion_autotune_cache_dir", 324, 1, 306, "/cache/a/kernels"}, common...)...),
		overrideEntry("xla_gpu_per_fusion_autotune_cache_dir", "/cache/a"))
	reader := compileOptions(debugOpts(append(common, 324, 2, 310, "/other dir/x", 109, "/tmp/dump", 112, 1, 433, "re", 407, "/new/autotuner")...),
		overrideEntry("xla_dump_to", "/tmp/d"))
	pn, wn, rn := mustNormalize(t, plain), mustNormalize(t, writer), mustNormalize(t, reader)
	if !bytes.Equal(pn, wn) || !bytes.Equal(pn, rn) {
		t.Fatalf("normalized differ:\nplain  %x\nwriter %x\nreader %x", pn, wn, rn)
	}
	// Nothing to remove: the bytes are untouched.
	if !bytes.Equal(pn, plain) {
		t.Errorf("options without cache fields changed:\n%x\n%x", plain, pn)
	}
	// Idempotent.
	if !bytes.Equal(mustNormalize(t, wn), wn) {
		t.Error("normalizing twice changed the result")
	}
}

func TestNormalizeCompileOptionsOtherChangesMatter(t *testing.T) {
	base := mustNormalize(t, compileOptions(debugOpts(200, 3, 310, "/c")))
	variants := map[string][]byte{
		"debug option value":  compileOptions(debugOpts(200, 4, 310, "/c")),
		"extra debug option":  compileOptions(debugOpts(200, 3, 310, "/c", 61, "/usr/local/cuda")),
		"kept override":       compileOptions(debugOpts(200, 3, 310, "/c"), overrideEntry("xla_gpu_enable_triton_gemm", "false")),
		"top-level field":     append(compileOptions(debugOpts(200, 3, 310, "/c")), varintField(nil, 9, 1)...),
		"no debug options":    compileOptions(nil),
		"repeated debug opts": compileOptions(append(debugOpts(200, 3, 310, "/c"), debugOpts(200, 3)...)),
	}
	for name, v := range variants {
		if bytes.Equal(mustNormalize(t, v), base) {
			t.Errorf("%s: same normalized bytes as the base options", name)
		}
	}
}

func TestNormalizeCompileOptionsMalformed(t *testing.T) {
	good := compileOptions(debugOpts(200, 3, 310, "/c"))
	tests := map[string][]byte{
		"truncated":         good[:len(good)-3],
		"bad tag":           {0x80},
		"length past end":   {0x1a, 0x10, 0x00},
		"nested truncation": msgField(nil, 3, []byte{0x1a, 0x05, 0x08}),
		"end group":         {0x0c},
		"bad override key":  msgField(nil, 7, varintField(nil, 1, 5)),
	}
	for name, b := range tests {
		_, err := NormalizeCompileOptions(b)
		if err == nil || !strings.Contains(err.Error(), "offset") {
			t.Errorf("%s: err = %v, want an error naming the offset", name, err)
		}
	}
}

func FuzzNormalizeCompileOptions(f *testing.F) {
	f.Add(compileOptions(debugOpts(200, 3, 310, "/c", 324, 1)))
	f.Add(compileOptions(debugOpts(109, "/d"), overrideEntry("xla_dump_to", "/x")))
	f.Add([]byte{})
	f.Add([]byte{0x1a, 0x02, 0x1a, 0x00})
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := NormalizeCompileOptions(b)
		if err != nil {
			return
		}
		if len(n) > len(b) {
			t.Fatalf("normalized output longer than input: %d > %d", len(n), len(b))
		}
		again, err := NormalizeCompileOptions(n)
		if err != nil {
			t.Fatalf("normalized output does not parse: %v", err)
		}
		if !bytes.Equal(again, n) {
			t.Fatalf("not idempotent:\n%x\n%x", n, again)
		}
	})
}

func TestOptionsKey(t *testing.T) {
	o := compileOptions(debugOpts(200, 3))
	w, err := OptionsKey(compileOptions(debugOpts(200, 3, 324, 1)), `--xla_gpu_per_fusion_autotune_cache_dir=/w --xla_gpu_experimental_autotune_cache_mode=update --xla_gpu_autotune_level=4`)
	if err != nil {
		t.Fatal(err)
	}
	r, err := OptionsKey(compileOptions(debugOpts(200, 3, 324, 2)), `--xla_gpu_experimental_autotune_cache_mode=read --xla_gpu_autotune_level=4 --xla_dump_to=/d`)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(w, r) {
		t.Errorf("writer and reader keys differ:\n%q\n%q", w, r)
	}
	other, _ := OptionsKey(o, `--xla_gpu_autotune_level=2`)
	if bytes.Equal(other, w) {
		t.Error("a different XLA flag gave the same key component")
	}
	if _, err := OptionsKey(o, "flagsfile"); err == nil {
		t.Error("a flags-file reference must be read first, not keyed as text")
	}
}

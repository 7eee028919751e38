package xla

import (
	"bytes"
	"fmt"

	"google.golang.org/protobuf/encoding/protowire"
)

// Field numbers of the messages NormalizeCompileOptions walks. They are
// those of xla/pjrt/proto/compile_options.proto and xla/xla.proto, checked
// against the copies go-xla v0.1.4 vendors.
const (
	fieldExecutableBuildOptions = 3 // CompileOptionsProto.executable_build_options
	fieldEnvOptionOverrides     = 7 // CompileOptionsProto.env_option_overrides (map<string, OptionOverrideProto>)
	fieldDebugOptions           = 3 // ExecutableBuildOptionsProto.debug_options
	fieldMapKey                 = 1 // map entry key
)

// keyExcludedDebugFields are the DebugOptions fields cleared for keys: the
// cache paths and the cache mode (they say where caches live and which
// process writes, not what is compiled) and every xla_dump_* option (they
// say where to write debugging output).
var keyExcludedDebugFields = map[protowire.Number]string{
	306: FlagKernelCacheFile,
	310: FlagAutotuneCacheDir,
	324: FlagAutotuneCacheMode,
	407: "xla_gpu_experimental_autotuner_cache_dir",
	109: "xla_dump_to",
	110: "xla_dump_hlo_module_re",
	111: "xla_dump_hlo_pass_re",
	112: "xla_dump_hlo_as_text",
	113: "xla_dump_hlo_as_proto",
	114: "xla_dump_hlo_as_dot",
	115: "xla_dump_hlo_as_url",
	116: "xla_dump_hlo_as_html",
	118: "xla_dump_hlo_snapshots",
	131: "xla_dump_include_timestamp",
	132: "xla_dump_max_hlo_modules",
	144: "xla_dump_module_metadata",
	149: "xla_dump_fusion_visualization",
	151: "xla_dump_compress_protos",
	153: "xla_dump_disable_metadata",
	154: "xla_dump_hlo_pipeline_re",
	164: "xla_dump_hlo_as_long_text",
	182: "xla_dump_latency_hiding_schedule",
	185: "xla_dump_enable_mlir_pretty_form",
	290: "xla_dump_large_constants",
	381: "xla_dump_full_hlo_config",
	405: "xla_dump_hlo_unoptimized_snapshots",
	433: "xla_dump_emitter_re",
}

// KeyExcludedDebugOptions returns the DebugOptions field numbers that
// NormalizeCompileOptions clears, with their names, for documentation and
// `xlacache explain`.
func KeyExcludedDebugOptions() map[int]string {
	out := make(map[int]string, len(keyExcludedDebugFields))
	for n, name := range keyExcludedDebugFields {
		out[int(n)] = name
	}
	return out
}

// NormalizeCompileOptions returns a serialized CompileOptionsProto with
// the cache-path, cache-mode and dump debug options removed, for use in a
// cache key. Every occurrence is removed (a message may repeat a field and
// protobuf merges the repeats), including env_option_overrides entries
// whose key names such an option. Every other byte is kept as it was, in
// its original order, so any other change to the options changes the
// result. Malformed input is an error naming the byte offset.
func NormalizeCompileOptions(b []byte) ([]byte, error) {
	return rewrite(b, 0, "CompileOptionsProto", func(num protowire.Number, typ protowire.Type, val []byte, off int) ([]byte, bool, error) {
		switch {
		case num == fieldExecutableBuildOptions && typ == protowire.BytesType:
			nv, err := normalizeBuildOptions(val, off)
			return nv, true, err
		case num == fieldEnvOptionOverrides && typ == protowire.BytesType:
			key, err := mapEntryKey(val, off)
			if err != nil {
				return nil, false, err
			}
			if excludedFromKeyName(key) {
				return nil, false, nil
			}
		}
		return val, true, nil
	})
}

func normalizeBuildOptions(b []byte, base int) ([]byte, error) {
	return rewrite(b, base, "ExecutableBuildOptionsProto", func(num protowire.Number, typ protowire.Type, val []byte, off int) ([]byte, bool, error) {
		if num == fieldDebugOptions && typ == protowire.BytesType {
			nv, err := rewrite(val, off, "DebugOptions", func(num protowire.Number, _ protowire.Type, v []byte, _ int) ([]byte, bool, error) {
				if _, drop := keyExcludedDebugFields[num]; drop {
					return nil, false, nil
				}
				return v, true, nil
			})
			return nv, true, err
		}
		return val, true, nil
	})
}

// mapEntryKey returns the string key (field 1) of a serialized map entry.
func mapEntryKey(b []byte, base int) (string, error) {
	var key string
	_, err := rewrite(b, base, "env_option_overrides entry", func(num protowire.Number, typ protowire.Type, val []byte, off int) ([]byte, bool, error) {
		if num == fieldMapKey {
			if typ != protowire.BytesType {
				return nil, false, fmt.Errorf("offset %d: env_option_overrides key has wire type %d, want bytes", off, typ)
			}
			key = string(val)
		}
		return val, true, nil
	})
	return key, err
}

// fieldFunc decides what happens to one field. For a length-delimited
// field val is the payload; for other wire types it is the raw encoded
// value. It returns the (possibly rewritten) value and whether to keep it.
// off is the absolute offset of the value, for error messages.
type fieldFunc func(num protowire.Number, typ protowire.Type, val []byte, off int) ([]byte, bool, error)

// rewrite walks the fields of one message. Fields fn keeps unchanged are
// copied byte for byte (tag included, exactly as encoded); a changed
// length-delimited payload is re-encoded with its original tag bytes and a
// new length. base is the offset of b in the outermost input.
func rewrite(b []byte, base int, msg string, fn fieldFunc) ([]byte, error) {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		num, typ, tagLen := protowire.ConsumeTag(b[i:])
		if tagLen < 0 {
			return nil, fmt.Errorf("%s: offset %d: bad field tag: %w", msg, base+i, protowire.ParseError(tagLen))
		}
		if typ == protowire.EndGroupType {
			return nil, fmt.Errorf("%s: offset %d: unexpected end-group marker for field %d", msg, base+i, num)
		}
		valLen := protowire.ConsumeFieldValue(num, typ, b[i+tagLen:])
		if valLen < 0 {
			return nil, fmt.Errorf("%s: offset %d: field %d: %w", msg, base+i, num, protowire.ParseError(valLen))
		}
		raw := b[i : i+tagLen+valLen]
		valOff := base + i + tagLen
		val := b[i+tagLen : i+tagLen+valLen]
		if typ == protowire.BytesType {
			// Strip the length prefix: fn sees the payload.
			payload, n := protowire.ConsumeBytes(val)
			if n < 0 {
				return nil, fmt.Errorf("%s: offset %d: field %d: %w", msg, valOff, num, protowire.ParseError(n))
			}
			valOff += n - len(payload)
			val = payload
		}
		nv, keep, err := fn(num, typ, val, valOff)
		if err != nil {
			return nil, err
		}
		switch {
		case !keep:
		case typ == protowire.BytesType && !bytes.Equal(nv, val):
			out = append(out, b[i:i+tagLen]...)
			out = protowire.AppendBytes(out, nv)
		default:
			out = append(out, raw...)
		}
		i += tagLen + valLen
	}
	return out, nil
}

// OptionsKey returns the "options" component of a cache key for an XLA
// compilation: the normalized CompileOptionsProto, a zero byte, and the
// normalized XLA_FLAGS. Both are needed because XLA applies XLA_FLAGS to
// every compilation whose options carry no DebugOptions of their own
// (go-xla sends none unless XLA_DEBUG_OPTIONS is set), so the flags are
// part of what is compiled. Processes that differ only in cache
// directory, role or dump settings get the same component.
func OptionsKey(compileOptions []byte, xlaFlags string) ([]byte, error) {
	opts, err := NormalizeCompileOptions(compileOptions)
	if err != nil {
		return nil, err
	}
	flags, err := NormalizeFlagsForKey(xlaFlags)
	if err != nil {
		return nil, fmt.Errorf("XLA_FLAGS for the key: %w", err)
	}
	out := make([]byte, 0, len(opts)+1+len(flags))
	out = append(out, opts...)
	out = append(out, 0)
	return append(out, flags...), nil
}

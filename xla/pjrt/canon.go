package pjrt

import (
	"bytes"
	"fmt"
	"slices"

	"google.golang.org/protobuf/encoding/protowire"
)

// Protobuf map fields of the compile options. A map is serialized in the
// iteration order of the writer's hash map, which differs between
// processes: JAX's options carry DebugOptions'
// xla_gpu_analytical_latency_estimator_options, and the same program's
// options came out in a different byte order in every process. The key
// sorts their entries; every other byte stays in place, so any other
// change to the options still changes the key. (The inner compile gets
// the options as the client gave them.)
const (
	fieldCompileEnvOverrides   = 7   // CompileOptionsProto.env_option_overrides
	fieldCompileBuildOptions   = 3   // CompileOptionsProto.executable_build_options
	fieldBuildDebugOptions     = 3   // ExecutableBuildOptionsProto.debug_options
	fieldDebugLatencyEstimator = 357 // DebugOptions.xla_gpu_analytical_latency_estimator_options
	fieldDebugBackendExtraOpts = 500 // DebugOptions.xla_backend_extra_options
	fieldBuildCompEnvironments = 18  // ExecutableBuildOptionsProto.comp_envs (not a map: kept in order)
	_                          = fieldBuildCompEnvironments
	maxCanonicalNesting        = 3
)

// canonicalOptions returns serialized compile options with the entries of
// every known map field sorted, for use in a key.
func canonicalOptions(b []byte) ([]byte, error) {
	return sortMaps(b, 0, []protowire.Number{fieldCompileEnvOverrides}, map[protowire.Number]func([]byte, int) ([]byte, error){
		fieldCompileBuildOptions: func(b []byte, depth int) ([]byte, error) {
			return sortMaps(b, depth, nil, map[protowire.Number]func([]byte, int) ([]byte, error){
				fieldBuildDebugOptions: func(b []byte, depth int) ([]byte, error) {
					return sortMaps(b, depth, []protowire.Number{fieldDebugLatencyEstimator, fieldDebugBackendExtraOpts}, nil)
				},
			})
		},
	})
}

// sortMaps rewrites message b: the fields in maps (map entries) are
// collected, sorted by their bytes and appended after the other fields;
// the fields in nested are rewritten by their function.
func sortMaps(b []byte, depth int, maps []protowire.Number, nested map[protowire.Number]func([]byte, int) ([]byte, error)) ([]byte, error) {
	if depth > maxCanonicalNesting {
		return nil, fmt.Errorf("options nested too deep")
	}
	out := make([]byte, 0, len(b))
	var entries [][]byte
	for off := 0; off < len(b); {
		num, typ, n := protowire.ConsumeTag(b[off:])
		if n < 0 {
			return nil, fmt.Errorf("compile options: bad tag at byte %d: %w", off, protowire.ParseError(n))
		}
		m := protowire.ConsumeFieldValue(num, typ, b[off+n:])
		if m < 0 {
			return nil, fmt.Errorf("compile options: bad field %d at byte %d: %w", num, off, protowire.ParseError(m))
		}
		field := b[off : off+n+m]
		switch {
		case typ == protowire.BytesType && slices.Contains(maps, num):
			entries = append(entries, field)
		case typ == protowire.BytesType && nested[num] != nil:
			val, _ := protowire.ConsumeBytes(b[off+n:])
			nv, err := nested[num](val, depth+1)
			if err != nil {
				return nil, err
			}
			out = protowire.AppendTag(out, num, typ)
			out = protowire.AppendBytes(out, nv)
		default:
			out = append(out, field...)
		}
		off += n + m
	}
	slices.SortStableFunc(entries, bytes.Compare)
	for _, e := range entries {
		out = append(out, e...)
	}
	return out, nil
}

package pjrt

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"

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

// mlirBytecodeMagic starts an MLIR bytecode program ("ML\xefR").
const mlirBytecodeMagic = "ML\xefR"

// programKey is the key's "program" part: the format and the program. For
// MLIR text, SSA value names are renumbered (renameSSA): GoMLX names a
// program's parameters after its variables, and the loss metrics'
// variables carry a random UUID in their scope
// ("Moving_Average_Loss_uuid_<uuid>", gomlx v0.26.0
// pkg/ml/train/metrics/metrics.go, baseMetric.ScopeName), so every
// process's training step was the same program under other names and
// never hit. Names are not part of the parsed IR, so they never reach the
// compiler. Everything else (module name, attributes, locations, layout)
// stays byte for byte. Bytecode and other formats are used as they are.
func programKey(format string, program []byte) []byte {
	if format == "mlir" && !bytes.HasPrefix(program, []byte(mlirBytecodeMagic)) {
		return append([]byte(format+"\x00ssa-renamed\x00"), renameSSA(program)...)
	}
	return append([]byte(format+"\x00"), program...)
}

// renameSSA returns MLIR text with every SSA value name (%name, %42)
// replaced by %N, numbering the distinct names in order of first
// appearance; string literals and // comments are copied unchanged. The
// renaming is one to one and consistent over the whole text, so the
// result parses to the same IR, and two texts give the same result
// exactly when one is the other with its SSA values renamed: a different
// parameter order or a different use of a value still gives different
// bytes. It follows MLIR's lexer for value ids: '%' then digits only, or
// a letter or one of "$._-" followed by letters, digits and "$._-"; a
// result suffix (%x#1, %x:2) is kept as it is.
func renameSSA(b []byte) []byte {
	out := make([]byte, 0, len(b))
	names := map[string]int{}
	for i := 0; i < len(b); {
		switch c := b[i]; {
		case c == '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++ // an escaped character, '"' included
				}
				j++
			}
			j = min(j+1, len(b)) // the closing quote, if any
			out = append(out, b[i:j]...)
			i = j
		case c == '/' && i+1 < len(b) && b[i+1] == '/':
			j := len(b)
			if k := bytes.IndexByte(b[i:], '\n'); k >= 0 {
				j = i + k
			}
			out = append(out, b[i:j]...)
			i = j
		case c == '%':
			j := i + 1
			if j < len(b) && isDigit(b[j]) {
				for j < len(b) && isDigit(b[j]) {
					j++
				}
			} else if j < len(b) && (isLetter(b[j]) || isIDPunct(b[j])) {
				for j < len(b) && (isLetter(b[j]) || isDigit(b[j]) || isIDPunct(b[j])) {
					j++
				}
			}
			if j == i+1 {
				out = append(out, c) // not a value id: MLIR rejects it, kept as it is
				i++
				continue
			}
			n, ok := names[string(b[i+1:j])]
			if !ok {
				n = len(names)
				names[string(b[i+1:j])] = n
			}
			out = append(out, '%')
			out = strconv.AppendInt(out, int64(n), 10)
			i = j
		default:
			// Copy up to the next byte that can start a string, comment or name.
			j := i + 1
			for j < len(b) && b[j] != '"' && b[j] != '/' && b[j] != '%' {
				j++
			}
			out = append(out, b[i:j]...)
			i = j
		}
	}
	return out
}

func isDigit(c byte) bool   { return '0' <= c && c <= '9' }
func isLetter(c byte) bool  { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isIDPunct(c byte) bool { return c == '$' || c == '.' || c == '_' || c == '-' }

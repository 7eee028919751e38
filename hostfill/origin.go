package hostfill

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/xlacache/xlacache/internal/atomicfile"
)

// Packs scoped to a runtime.
//
// A pack records, in its head, the origin of its files: the runtime of
// the host that published it (what decides whether the files can be used
// at all) and, for explanations, the settings JAX hashes into its keys
// on that host. A fill skips a pack whose runtime conflicts with the
// host's without downloading it: the decision needs only the index,
// which the fill reads anyway. XLA's autotune results and kernel cache
// are not keyed by the XLA that wrote them, and a JAX entry of another
// jaxlib is at best never looked up, so a host of another runtime has
// nothing to gain from such a pack and something to lose (an XLA that
// loads results another release wrote).
//
// Two runtimes conflict when a field both know differs; a field either
// side does not know (an old pack, a job exec cannot inspect) conflicts
// with nothing, so untagged packs fill as they always did.

// Runtime is what decides whether a pack's files can be used on a host.
type Runtime struct {
	// JAXLib is the jaxlib release of the job's Python (exec's
	// --jaxlib-version, else read from the job's interpreter).
	JAXLib string
	// Platforms is JAX_PLATFORMS as the job sets it.
	Platforms string
	// Plugin identifies the PJRT plugin file the job loads
	// (XLACACHE_XLA_PLUGIN or --xla-plugin): "sha256:" and 16 hex digits
	// of its content.
	Plugin string
	// Tag is XLACACHE_RUNTIME_TAG: what exec cannot learn before JAX
	// starts, such as the device kind and topology ("tpu-v6e-8x8").
	Tag string
}

// IsZero reports whether nothing of the runtime is known.
func (r Runtime) IsZero() bool { return r == Runtime{} }

// fields lists the runtime's fields with their names in the origin
// encoding and in reports.
func (r Runtime) fields() []struct{ key, label, value string } {
	return []struct{ key, label, value string }{
		{"runtime.jaxlib", "jaxlib", r.JAXLib},
		{"runtime.platforms", "JAX_PLATFORMS", r.Platforms},
		{"runtime.plugin", "XLA plugin", r.Plugin},
		{"runtime.tag", "XLACACHE_RUNTIME_TAG", r.Tag},
	}
}

// String is the runtime for reports: its known fields, "unknown" when
// none is.
func (r Runtime) String() string {
	var parts []string
	for _, f := range r.fields() {
		if f.value != "" {
			parts = append(parts, f.label+" "+f.value)
		}
	}
	if len(parts) == 0 {
		return "unknown"
	}
	return strings.Join(parts, ", ")
}

// Difference is one setting whose value differs between two origins.
type Difference struct {
	// Setting names it as reports do ("jaxlib", "XLA_FLAGS", ...).
	Setting string
	// Theirs and Ours are its values on the other side and on this host;
	// "" when unset.
	Theirs, Ours string
	// Detail, when set, says what differs within the values (the XLA
	// flags of XLA_FLAGS that differ).
	Detail string
}

// String is the difference for reports: "jaxlib 0.12.0.1 vs 0.4.36".
func (d Difference) String() string {
	if d.Detail != "" {
		return d.Setting + " differ in " + d.Detail
	}
	return fmt.Sprintf("%s %s vs %s", d.Setting, orUnset(d.Theirs), orUnset(d.Ours))
}

func orUnset(s string) string {
	if s == "" {
		return "(unset)"
	}
	return s
}

// Conflicts returns the fields on which a pack of runtime theirs cannot
// be used by a host of runtime r: those both know, with different values.
func (r Runtime) Conflicts(theirs Runtime) []Difference {
	var out []Difference
	tf := theirs.fields()
	for i, f := range r.fields() {
		if f.value != "" && tf[i].value != "" && f.value != tf[i].value {
			out = append(out, Difference{Setting: f.label, Theirs: tf[i].value, Ours: f.value})
		}
	}
	return out
}

// Origin is what a pack records about where its files come from.
type Origin struct {
	// Runtime is the publishing host's.
	Runtime Runtime
	// Host is the publishing host's name, for reports.
	Host string
	// Settings are the settings JAX hashes into its keys on the
	// publishing process, as xla.JAXHashedSettings names them
	// ("env:XLA_FLAGS", "opt:xla_gpu_kernel_cache_file").
	Settings map[string]string
}

// IsZero reports whether the origin records nothing.
func (o Origin) IsZero() bool { return o.Runtime.IsZero() && o.Host == "" && len(o.Settings) == 0 }

// maxOrigin bounds an encoded origin (XLA_FLAGS are a few hundred
// bytes; 64 KiB leaves room for long ones while keeping every index a
// fill reads small).
const maxOrigin = 64 << 10

// Origin encoding: "key=value\n" lines in increasing key order, keys
// unique and made of letters, digits and "_.:-", values printable UTF-8
// (no control characters). Keys: host, runtime.* (Runtime's fields),
// setting.<name> (Settings). Other keys are kept in the head and
// ignored, so that a later release may record more.
const settingPrefix = "setting."

func validOriginKey(k string) bool {
	if k == "" || len(k) > 256 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("_.:-", c) >= 0) {
			return false
		}
	}
	return true
}

// validOriginValue accepts printable UTF-8 text: an origin read from the
// bucket is printed in logs and by explain, so no control character (a
// terminal escape, a newline) may come with it.
func validOriginValue(v string) bool {
	if !utf8.ValidString(v) {
		return false
	}
	for _, r := range v {
		if r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f {
			return false
		}
	}
	return true
}

// Validate reports whether the origin can be recorded: setting names made
// of letters, digits and "_.:-", values printable UTF-8 (no control
// characters), at most 64 KiB in all.
func (o Origin) Validate() error {
	_, err := o.encode()
	return err
}

// encode returns the origin's head bytes; nil when it is empty.
func (o Origin) encode() ([]byte, error) {
	kv := map[string]string{}
	for _, f := range o.Runtime.fields() {
		if f.value != "" {
			kv[f.key] = f.value
		}
	}
	if o.Host != "" {
		kv["host"] = o.Host
	}
	for k, v := range o.Settings {
		kv[settingPrefix+k] = v
	}
	if len(kv) == 0 {
		return nil, nil
	}
	keys := make([]string, 0, len(kv))
	for k := range kv {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := kv[k]
		if !validOriginKey(k) {
			return nil, fmt.Errorf("pack origin: bad setting name %q", k)
		}
		if !validOriginValue(v) {
			return nil, fmt.Errorf("pack origin: %s: value not printable UTF-8 text", k)
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
		b.WriteByte('\n')
	}
	if b.Len() > maxOrigin {
		return nil, fmt.Errorf("pack origin of %d bytes: at most %d", b.Len(), maxOrigin)
	}
	return []byte(b.String()), nil
}

// decodeOrigin parses an origin's head bytes, strictly: a head has one
// encoding, so that rebuilding it from its index gives the same bytes.
func decodeOrigin(b []byte) (Origin, error) {
	var o Origin
	if len(b) > maxOrigin {
		return o, fmt.Errorf("%w: origin of %d bytes", errBadPack, len(b))
	}
	s := string(b)
	if !strings.HasSuffix(s, "\n") {
		return o, fmt.Errorf("%w: origin does not end a line", errBadPack)
	}
	prev := ""
	for line := range strings.SplitSeq(strings.TrimSuffix(s, "\n"), "\n") {
		k, v, ok := strings.Cut(line, "=")
		if !ok || !validOriginKey(k) || !validOriginValue(v) {
			return o, fmt.Errorf("%w: origin line %q", errBadPack, line)
		}
		if k <= prev {
			return o, fmt.Errorf("%w: origin key %q out of order", errBadPack, k)
		}
		prev = k
		if v == "" {
			// Empty values are left out when encoding.
			return o, fmt.Errorf("%w: origin key %q without a value", errBadPack, k)
		}
		switch {
		case k == "host":
			o.Host = v
		case k == "runtime.jaxlib":
			o.Runtime.JAXLib = v
		case k == "runtime.platforms":
			o.Runtime.Platforms = v
		case k == "runtime.plugin":
			o.Runtime.Plugin = v
		case k == "runtime.tag":
			o.Runtime.Tag = v
		case strings.HasPrefix(k, settingPrefix) && len(k) > len(settingPrefix):
			if o.Settings == nil {
				o.Settings = map[string]string{}
			}
			o.Settings[k[len(settingPrefix):]] = v
		}
	}
	return o, nil
}

// SkippedRuntime is what a fill skipped of one runtime.
type SkippedRuntime struct {
	// Runtime is the packs' runtime.
	Runtime Runtime
	// Packs, Files and Bytes count the packs skipped, the files they
	// hold and the packs' size: requests and bytes not spent.
	Packs, Files int
	Bytes        int64
	// Why are the fields that conflict with the host's runtime.
	Why []Difference
}

// PackOrigin is one pack's index as this host keeps a copy of it.
type PackOrigin struct {
	// ID is the pack's id.
	ID string
	// Origin is what its publisher recorded.
	Origin Origin
	// Names are the files it holds.
	Names []string
}

// ReadOrigins returns the origins of the packs whose indexes this host's
// fills and publishes kept (skipped packs included: a fill reads every
// index), for explanations. The copies were verified when fetched; they
// are parsed again here but, without the signing key, not re-verified,
// so what they say is a diagnosis, never a reason to load anything.
// Unreadable copies are left out.
func ReadOrigins(ctx context.Context, root *os.Root) ([]PackOrigin, error) {
	ents, err := fs.ReadDir(root.FS(), stateRel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", stateRel, err)
	}
	var out []PackOrigin
	for _, e := range ents {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		id, ok := strings.CutSuffix(e.Name(), indexSuffix)
		if !ok || !validID(id) || !e.Type().IsRegular() {
			continue
		}
		b, err := atomicfile.ReadRegular(root, stateRel+"/"+e.Name(), 4<<30)
		if err != nil {
			continue
		}
		o, recs, err := DecodeIndexOrigin(b)
		if err != nil {
			continue
		}
		po := PackOrigin{ID: id, Origin: o, Names: make([]string, len(recs))}
		for i, r := range recs {
			po.Names[i] = r.Name
		}
		out = append(out, po)
	}
	return out, nil
}

// localOriginRel holds the origin of this host's latest exec, for
// `xlacache explain` to compare recorded origins with.
const localOriginRel = stateRel + "/origin"

// SaveLocalOrigin records o as this host's origin (the latest exec's).
func SaveLocalOrigin(opts Options, o Origin) error {
	if err := ensureState(opts); err != nil {
		return err
	}
	b, err := o.encode()
	if err != nil {
		return err
	}
	if err := atomicfile.Replace(localOriginRel, b, opts.writeOpts()); err != nil {
		return fmt.Errorf("recording this host's origin: %w", err)
	}
	return nil
}

// LocalOrigin returns the origin of this host's latest exec; ok is false
// when none was recorded.
func LocalOrigin(root *os.Root) (o Origin, ok bool, err error) {
	b, err := atomicfile.ReadRegular(root, localOriginRel, maxOrigin)
	if errors.Is(err, fs.ErrNotExist) {
		return o, false, nil
	}
	if err != nil {
		return o, false, fmt.Errorf("reading this host's origin: %w", err)
	}
	if len(b) == 0 {
		return o, true, nil
	}
	o, err = decodeOrigin(b)
	if err != nil {
		return o, false, fmt.Errorf("reading this host's origin: %w", err)
	}
	return o, true, nil
}

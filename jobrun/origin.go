package jobrun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/xla"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// This host's origin: what exec records in the packs it publishes
// (hostfill/origin.go) and what scopes its fills.
//
// The runtime is what exec can learn before the command starts, cheaply
// and reliably:
//   - jaxlib: --jaxlib-version, else, when the command is a Python
//     interpreter, its jaxlib distribution's version read with
//     importlib.metadata (jax itself is not imported: that takes seconds
//     and may touch devices);
//   - JAX_PLATFORMS, as the command gets it;
//   - the PJRT plugin (--xla-plugin or XLACACHE_XLA_PLUGIN): a hash of
//     the file, since two builds may share a version;
//   - XLACACHE_RUNTIME_TAG: what only the job knows before JAX starts
//     (device kind and topology: "tpu-v6e-8x8", "h100x8").
//
// The settings are those JAX hashes into its keys (xla.JAXHashedSettings
// of the command's environment), recorded for explanations only: two
// hosts whose settings differ can still use each other's autotune
// results, and JAX's keys already keep their executables apart.

// pythonName matches the file names of Python interpreters.
var pythonName = regexp.MustCompile(`^python[0-9.]*$`)

// jaxlibVersionRE bounds what is taken as a jaxlib version.
var jaxlibVersionRE = regexp.MustCompile(`^[0-9][0-9A-Za-z.+-]{0,63}$`)

// jaxlibProbeTimeout bounds the interpreter started to read jaxlib's
// version: a Python starts in well under a second; one that does not
// (a network filesystem stalling) costs the fill this much at most.
const jaxlibProbeTimeout = 10 * time.Second

// DetectJAXLib returns the jaxlib version of the Python interpreter
// python (a path or a name looked up in env's PATH), read from its
// installed distributions without importing jax; "" when python is not
// a Python interpreter's name or has no jaxlib.
func DetectJAXLib(ctx context.Context, python string, env []string) (string, error) {
	if !pythonName.MatchString(filepath.Base(python)) {
		return "", nil
	}
	ctx, cancel := context.WithTimeout(ctx, jaxlibProbeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, python, "-c",
		"import importlib.metadata as m\ntry:\n print(m.version('jaxlib'))\nexcept m.PackageNotFoundError:\n pass\n")
	// The job's environment: its PATH names the interpreter and its
	// PYTHONPATH (HPC modules) may be where jaxlib is, as for the job.
	cmd.Env = env
	cmd.WaitDelay = time.Second
	var out bytes.Buffer
	cmd.Stdout = &limitedWriter{w: &out, n: 256}
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("reading jaxlib's version from %s: %w", python, err)
	}
	v := strings.TrimSpace(out.String())
	if v == "" {
		return "", nil
	}
	if !jaxlibVersionRE.MatchString(v) {
		return "", fmt.Errorf("reading jaxlib's version from %s: %q is not a version", python, v)
	}
	return v, nil
}

// limitedWriter keeps the first n bytes written and drops the rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.n -= k
		if _, err := l.w.Write(p[:k]); err != nil {
			return 0, err
		}
	}
	return len(p), nil
}

// PluginSum identifies a PJRT plugin file by its content: "sha256:" and
// the first 16 hex digits of its SHA-256.
func PluginSum(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("hashing the XLA plugin: %w", err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hashing the XLA plugin %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil))[:16], nil
}

// detectRuntime works out the runtime of the job (see above); what it
// cannot learn stays unknown, which scopes nothing.
func (r *run) detectRuntime(ctx context.Context) hostfill.Runtime {
	j := r.j
	var rt hostfill.Runtime
	if v, ok := r.getenv(config.EnvRuntimeTag); ok {
		rt.Tag = strings.TrimSpace(v)
	}
	if v, ok := r.getenv("JAX_PLATFORMS"); ok {
		rt.Platforms = strings.TrimSpace(v)
	}
	plugin := j.PluginPath
	if plugin == "" {
		plugin, _ = r.getenv(config.EnvXLAPlugin)
	}
	if plugin != "" {
		if sum, err := PluginSum(plugin); err != nil {
			r.logs.Warn("runtime:plugin", "xlacache exec: the XLA plugin could not be identified; packs are not scoped to it", "err", err)
		} else {
			rt.Plugin = sum
		}
	}
	rt.JAXLib = j.JAXLibVersion
	if rt.JAXLib == "" && len(j.Args) > 0 && (j.Target == xla.TargetJAX || j.Target == xla.TargetAll) {
		v, err := DetectJAXLib(ctx, j.Args[0], r.env)
		if err != nil {
			r.logs.Warn("runtime:jaxlib", "xlacache exec: jaxlib's version is unknown; packs are not scoped to it", "err", err)
		}
		rt.JAXLib = v
	}
	return rt
}

// jaxSettings are the settings JAX hashes into its keys for a command
// run with env (KEY=VALUE strings) as process processIndex, by the
// jaxlib release jaxlib ("" for unknown: the current release's rules).
func jaxSettings(env []string, processIndex int, jaxlib string) map[string]string {
	vars := make([]xla.EnvVar, 0, 8)
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "JAX_") || k == xla.EnvXLAFlags {
			vars = append(vars, xla.EnvVar{Name: k, Value: v})
		}
	}
	// JAX splits XLA_FLAGS on whitespace: tabs and newlines are spaces
	// to it, and an origin holds no control characters.
	for i := range vars {
		vars[i].Value = strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, vars[i].Value)
	}
	ver := xla.DefaultVersion
	if v, err := xla.ParseVersion(jaxlib); err == nil {
		ver = v
	}
	s := xla.JAXHashedSettings(vars, processIndex, ver)
	// Per-process variables differ on every host and are not what makes
	// a key differ: JAX's key covers its configuration, not these.
	for _, k := range []string{"env:JAX_PROCESS_ID", "env:JAX_NUM_PROCESSES", "env:JAX_COORDINATOR_ADDRESS", "env:JAX_LOCAL_DEVICE_IDS"} {
		delete(s, k)
	}
	return s
}

// DescribeDifferences names what differs between an origin recorded
// elsewhere (theirs) and this host's (ours): the runtime's fields and
// the settings JAX hashes, XLA_FLAGS flag by flag. A setting one side
// did not record (an old pack, a field exec could not learn) is not
// named.
func DescribeDifferences(theirs, ours hostfill.Origin) []hostfill.Difference {
	out := ours.Runtime.Conflicts(theirs.Runtime)
	if theirs.Settings == nil || ours.Settings == nil {
		return out
	}
	keys := map[string]bool{}
	for k := range theirs.Settings {
		keys[k] = true
	}
	for k := range ours.Settings {
		keys[k] = true
	}
	sorted := make([]string, 0, len(keys))
	for k := range keys {
		sorted = append(sorted, k)
	}
	sort.Strings(sorted)
	jaxlibDiffers := len(out) > 0 && out[0].Setting == "jaxlib"
	for _, k := range sorted {
		if jaxlibDiffers && strings.HasPrefix(k, "opt:") {
			// The compile options JAX sets follow from its release
			// (xla.JAXHashedSettings): the jaxlib difference says it.
			continue
		}
		a, aok := theirs.Settings[k]
		b, bok := ours.Settings[k]
		if aok == bok && a == b {
			continue
		}
		name, isEnv := strings.CutPrefix(k, "env:")
		if !isEnv {
			name = "compile option " + strings.TrimPrefix(k, "opt:")
		}
		d := hostfill.Difference{Setting: name, Theirs: a, Ours: b}
		if k == "env:"+xla.EnvXLAFlags {
			detail, parsed := flagsDetail(a, b)
			if parsed && detail == "" {
				// The same flags in another order or spacing: JAX sorts
				// the flags it hashes.
				continue
			}
			d.Detail = detail
		}
		out = append(out, d)
	}
	return out
}

// flagsDetail names the XLA flags whose values differ between two
// XLA_FLAGS texts ("--xla_foo (1 vs 2), --xla_bar (unset vs set)"); ""
// when they differ only in order or
// spacing; parsed is false when either is not a list of flags (a file's
// name).
func flagsDetail(theirs, ours string) (detail string, parsed bool) {
	a, aerr := xla.ParseFlags(theirs)
	b, berr := xla.ParseFlags(ours)
	if aerr != nil || berr != nil {
		return "", false
	}
	last := func(p xla.ParsedFlags) map[string]xla.Flag {
		m := map[string]xla.Flag{}
		for _, f := range p.Flags {
			m[f.Name] = f
		}
		return m
	}
	am, bm := last(a), last(b)
	names := map[string]bool{}
	for n := range am {
		names[n] = true
	}
	for n := range bm {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	show := func(f xla.Flag, ok bool) string {
		switch {
		case !ok:
			return "unset"
		case !f.HasValue:
			return "set"
		}
		return f.Value
	}
	var parts []string
	for _, n := range sorted {
		fa, aok := am[n]
		fb, bok := bm[n]
		if aok == bok && fa == fb {
			continue
		}
		parts = append(parts, fmt.Sprintf("--%s (%s vs %s)", n, show(fa, aok), show(fb, bok)))
	}
	if len(parts) == 0 && a.Ignored != b.Ignored {
		parts = append(parts, "the text XLA ignores after the flags")
	}
	return strings.Join(parts, ", "), true
}

// JAXMismatch is a JAX program compiled on this host although another
// host (or an earlier run) had published an entry of the same module:
// JAX's key differed, and the recorded settings say which of them did.
type JAXMismatch struct {
	// Module is the program's module name; Key the entry compiled here.
	Module, Key string
	// TheirKey is the published entry of the module, from Host.
	TheirKey, Host string
	// Differences name the differing settings; none when every recorded
	// setting is equal (then the program itself, its device assignment
	// or something exec does not record differs).
	Differences []hostfill.Difference
}

// String is the mismatch for the report.
func (m JAXMismatch) String() string {
	host := m.Host
	if host == "" {
		host = "another host"
	}
	if len(m.Differences) == 0 {
		return fmt.Sprintf("JAX compiled %s here; %s published %s with the same recorded settings (the program, its device assignment or a setting exec does not record differs)", m.Key, host, m.TheirKey)
	}
	d := make([]string, len(m.Differences))
	for i, x := range m.Differences {
		d[i] = x.String()
	}
	return fmt.Sprintf("JAX compiled %s here; %s published %s: %s", m.Key, host, m.TheirKey, strings.Join(d, "; "))
}

// FindJAXMismatches compares the JAX entries this run wrote (written: their
// keys, as jaxcache.RunActivity.Written lists them; each is a compile)
// with the published entries of the same modules that the host's kept pack
// indexes name, and says which recorded setting differs (ours is this
// host's origin): one mismatch per module, against its closest published
// entry (the fewest differing settings).
func FindJAXMismatches(ctx context.Context, root *os.Root, written []string, ours hostfill.Origin) ([]JAXMismatch, error) {
	fresh := map[string][]string{} // module -> keys compiled by this run
	for _, k := range written {
		if m, _, ok := jaxcache.SplitKey(k); ok {
			fresh[m] = append(fresh[m], k)
		}
	}
	if len(fresh) == 0 {
		return nil, nil
	}
	origins, err := hostfill.ReadOrigins(ctx, root)
	if err != nil {
		return nil, err
	}
	published := PublishedJAXEntries(origins)
	var out []JAXMismatch
	modules := make([]string, 0, len(fresh))
	for m := range fresh {
		modules = append(modules, m)
	}
	sort.Strings(modules)
	for _, m := range modules {
		sort.Strings(fresh[m])
		mine := map[string]bool{}
		for _, k := range fresh[m] {
			mine[k] = true
		}
		// The closest published entry explains best: the fewest
		// differing settings, another host's before this one's own.
		var best *JAXMismatch
		for _, p := range published[m] {
			if mine[p.Key] {
				continue
			}
			c := JAXMismatch{Module: m, Key: fresh[m][0], TheirKey: p.Key, Host: p.Origin.Host,
				Differences: DescribeDifferences(p.Origin, ours)}
			if best == nil || len(c.Differences) < len(best.Differences) ||
				len(c.Differences) == len(best.Differences) && best.Host == ours.Host && c.Host != ours.Host {
				best = &c
			}
		}
		if best != nil {
			out = append(out, *best)
		}
	}
	return out, nil
}

// PublishedJAXEntry is a JAX entry a kept pack index names, with the
// origin its publisher recorded.
type PublishedJAXEntry struct {
	Key    string
	Origin hostfill.Origin
}

// PublishedJAXEntries returns the JAX entries the packs name, by module;
// of an entry in several packs, the first with an origin.
func PublishedJAXEntries(origins []hostfill.PackOrigin) map[string][]PublishedJAXEntry {
	seen := map[string]int{}
	out := map[string][]PublishedJAXEntry{}
	for _, po := range origins {
		for _, n := range po.Names {
			key, ok := strings.CutSuffix(n, jaxcache.CacheSuffix)
			if !ok || strings.Contains(key, "/") {
				continue
			}
			m, _, ok := jaxcache.SplitKey(key)
			if !ok {
				continue
			}
			if i, dup := seen[key]; dup {
				if out[m][i].Origin.IsZero() {
					out[m][i].Origin = po.Origin
				}
				continue
			}
			seen[key] = len(out[m])
			out[m] = append(out[m], PublishedJAXEntry{Key: key, Origin: po.Origin})
		}
	}
	return out
}

package xla

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Version is a release number of the XLA build a program loads. XLA has no
// release numbers of its own: its builds ship inside jaxlib and the PJRT
// plugin wheels (jax-cuda12-pjrt, jax-cuda13-pjrt), which share jaxlib's
// version, so that is the number used here.
type Version struct {
	Major, Minor, Patch int
}

// String formats v as "0.4.36".
func (v Version) String() string {
	return fmt.Sprintf("%d.%d.%d", v.Major, v.Minor, v.Patch)
}

// Less reports whether v is an earlier release than o.
func (v Version) Less(o Version) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	return v.Patch < o.Patch
}

// ParseVersion reads a release number as people write it: "0.4.36",
// "v0.4.36", "jaxlib-0.4.36", "jaxlib==0.4.36", "0.5" (patch 0), or with a
// local or pre-release suffix ("0.4.36.dev20241201", "0.5.0+cuda12") which
// is ignored.
func ParseVersion(s string) (Version, error) {
	in := s
	s = strings.TrimSpace(s)
	for _, p := range []string{"jaxlib==", "jaxlib-", "jaxlib", "jax==", "jax-", "xla-", "v"} {
		if strings.HasPrefix(strings.ToLower(s), p) {
			s = s[len(p):]
			break
		}
	}
	if i := strings.IndexAny(s, "+-"); i >= 0 {
		s = s[:i]
	}
	parts := strings.Split(s, ".")
	if len(parts) < 2 {
		return Version{}, fmt.Errorf("version %q: want MAJOR.MINOR[.PATCH], such as 0.4.36", in)
	}
	var nums [3]int
	for i := 0; i < 3 && i < len(parts); i++ {
		n, err := strconv.Atoi(parts[i])
		if err != nil || n < 0 {
			if i == 2 {
				break // "0.4.36rc1"-style or "dev" parts after the minor: keep patch 0
			}
			return Version{}, fmt.Errorf("version %q: part %d (%q) is not a number", in, i+1, parts[i])
		}
		nums[i] = n
	}
	return Version{nums[0], nums[1], nums[2]}, nil
}

// FlagInfo describes one XLA flag xlacache may set.
type FlagInfo struct {
	// Name is the flag (and DebugOptions field) name.
	Name string
	// Field is its DebugOptions field number.
	Field int
	// FirstRelease is the first jaxlib / PJRT plugin release known to
	// accept the flag.
	FirstRelease Version
	// EndRelease, when not zero, is the first release for which xlacache
	// no longer sets the flag (an exclusive upper bound): the release no
	// longer needs it, and a later one may not know it at all. Zero means
	// no upper bound is known from the sources.
	EndRelease Version
	// Evidence says how FirstRelease (and EndRelease) were established.
	Evidence string
}

// IsZero reports whether v is the zero Version (no release).
func (v Version) IsZero() bool { return v == Version{} }

// In reports whether release v is inside the flag's gate:
// FirstRelease <= v, and v < EndRelease when EndRelease is set.
func (f FlagInfo) In(v Version) bool {
	if v.Less(f.FirstRelease) {
		return false
	}
	return f.EndRelease.IsZero() || v.Less(f.EndRelease)
}

// jaxGate is the release from which JAX itself sets all of these options
// (jax-ml/jax, jax/_src/compiler.py, get_compile_options:
// "if compilation_cache.is_persistent_cache_enabled() and jaxlib_version >
// (0, 4, 35)"; the stored copy read carries that gate, the index did not
// give its commit). The fields themselves are older: xla_gpu_kernel_cache_file
// = 306, xla_gpu_per_fusion_autotune_cache_dir = 310,
// xla_gpu_experimental_autotune_cache_mode = 324 and
// xla_gpu_enable_llvm_module_compilation_parallelism = 268 are all in
// openxla/xla xla/xla.proto @00987f6e5a7b3ecd06b74e8fb590a875f48fbca5
// ("Next id: 337"). No jaxlib release number for the first three could be
// verified from the sources, so they are gated at the release JAX relies
// on: a later bound only ever leaves a cache off, while an earlier wrong
// bound would abort the process.
var jaxGate = Version{0, 4, 36}

// llvmParallelismEnd is the first release for which JAX no longer sets
// xla_gpu_enable_llvm_module_compilation_parallelism with the kernel cache:
// JAX 0.11.0 dropped it as a "no-op … in preparation for flag removal from
// XLA" (jax-ml/jax, jax/_src/compiler.py @cec06d1, 2026-08-08, as checked in
// ../shared/design.md §4). A release that does not need the flag is not
// given it: once XLA removes it, setting it aborts the process.
var llvmParallelismEnd = Version{0, 11, 0}

// Flags is the table of flags xlacache sets, with the releases that take
// each. The gating logic (Support) uses it when a release number is all that
// is known about the XLA a program loads.
//
// No upper bound is set for the three cache flags: no source read shows
// them removed. openxla/xla xla/debug_options_flags.cc
// @00ccad5d1736ed6fc9234ae7460407891be5fbe2 still parses
// xla_gpu_experimental_autotune_cache_mode (AutotuneCacheMode_Parse), and
// the stored copies of XLA's newer autotuner pass (autotuner_pass.cc; the
// index gave no commit for them) either read
// xla_gpu_experimental_autotuner_cache_dir (field 407) only, or read
// xla_gpu_per_fusion_autotune_cache_dir first and fall back to 407 when it
// is empty. Which jaxlib releases carry the 407-only pass could not be
// established from the sources, so 407 is not in this table (docs/xla.md,
// "Version gating").
var Flags = []FlagInfo{
	{FlagKernelCacheFile, 306, jaxGate, Version{}, "JAX sets it only for jaxlib > 0.4.35 (compiler.py get_compile_options); field 306 in xla.proto @00987f6"},
	{FlagAutotuneCacheDir, 310, jaxGate, Version{}, "JAX sets it only for jaxlib > 0.4.35 (compiler.py get_compile_options); field 310 in xla.proto @00987f6"},
	{FlagAutotuneCacheMode, 324, jaxGate, Version{}, "JAX sets it only for jaxlib > 0.4.35; JAX's cache_key_test sets it only for jaxlib > 0.4.35; field 324 in xla.proto @00987f6"},
	{FlagLLVMModuleParallelism, 268, jaxGate, llvmParallelismEnd, "set with the kernel cache for jaxlib > 0.4.35 (compiler.py get_compile_options: \"This option is required to use the kernel cache\"); JAX 0.11.0 stopped setting it (compiler.py @cec06d1: no-op, to be removed from XLA)"},
}

// DefaultVersion is assumed when nothing else is known about the XLA a
// program will load: no plugin file to probe and no version stated. It is
// the first release for which JAX itself turns these caches on, i.e. the
// assumption JAX makes. Every PJRT plugin that go-xla v0.1.4 installs is
// much newer (its CUDA installer fetches the latest jax-cuda12/13-pjrt, and
// its CPU plugin is built against PJRT C API 0.83); an older XLA must be
// declared with --jaxlib-version or probed with --xla-plugin.
var DefaultVersion = jaxGate

// SupportSource says how a Support was established.
type SupportSource string

const (
	// SourcePlugin: the plugin binary was probed for the flag names.
	SourcePlugin SupportSource = "plugin"
	// SourceVersion: the user stated the release number.
	SourceVersion SupportSource = "version"
	// SourceDefault: nothing was known; DefaultVersion was assumed.
	SourceDefault SupportSource = "default"
)

// Support is the set of xlacache's flags that the target XLA accepts.
type Support struct {
	// Source says how the set was established.
	Source SupportSource
	// Detail names the plugin path or the version used.
	Detail string
	known  map[string]bool
}

// Knows reports whether the target XLA accepts flag name.
func (s Support) Knows(name string) bool { return s.known[name] }

// Known lists the flags the target accepts, sorted.
func (s Support) Known() []string {
	out := make([]string, 0, len(s.known))
	for n, ok := range s.known {
		if ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

// String describes the support for logs and `xlacache env` comments.
func (s Support) String() string {
	return fmt.Sprintf("%s %s: knows %s", s.Source, s.Detail, strings.Join(s.Known(), ", "))
}

// SupportForVersion returns the flags release v accepts, per the Flags
// table.
func SupportForVersion(v Version, source SupportSource) Support {
	s := Support{Source: source, Detail: "jaxlib " + v.String(), known: map[string]bool{}}
	for _, f := range Flags {
		s.known[f.Name] = f.In(v)
	}
	return s
}

// ErrNotXLA is returned (wrapped) by ProbePlugin when a file carries no
// XLA flag table at all: it is not an XLA-based plugin (for example a
// PJRT plugin for another compiler), so no XLA flag may be set for it.
var ErrNotXLA = errors.New("no XLA flag table found")

// probeAnchor is a flag every XLA build has had for years; finding it
// proves the file contains XLA's flag table.
const probeAnchor = "xla_dump_to"

// ProbePlugin reads a PJRT plugin file (without loading it) and reports
// which of xlacache's flags its XLA knows. XLA registers every flag with
// its name as a NUL-terminated string literal (tsl::Flag("name", ...) in
// debug_options_flags.cc), so a build that knows a flag contains its name
// followed by a NUL byte, and one that does not know it cannot contain it
// that way: protobuf descriptors, the other place names appear, store them
// length-prefixed and followed by a field tag, not a NUL, and qualified
// names ("xla.DebugOptions.<field>") are told apart by the dot before. Reading the file
// needs no dlopen, runs no plugin code and cannot trigger XLA's flag
// parsing, so it is safe before anything is loaded.
func ProbePlugin(ctx context.Context, path string) (Support, error) {
	f, err := os.Open(path)
	if err != nil {
		return Support{}, fmt.Errorf("probe XLA plugin: %w", err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return Support{}, fmt.Errorf("probe XLA plugin %s: %w", path, err)
	}
	if !st.Mode().IsRegular() {
		return Support{}, fmt.Errorf("probe XLA plugin %s: not a regular file", path)
	}
	names := []string{probeAnchor}
	for _, fl := range Flags {
		names = append(names, fl.Name)
	}
	found, err := scanLiterals(ctx, f, names)
	if err != nil {
		return Support{}, fmt.Errorf("probe XLA plugin %s: %w", path, err)
	}
	if !found[probeAnchor] {
		return Support{}, fmt.Errorf("probe XLA plugin %s: %w", path, ErrNotXLA)
	}
	s := Support{Source: SourcePlugin, Detail: path, known: map[string]bool{}}
	for _, fl := range Flags {
		s.known[fl.Name] = found[fl.Name]
	}
	return s, nil
}

// scanLiterals reports which names occur in r as C string literals: the
// name, preceded by a byte that cannot be part of an identifier (or the
// start of the file) and followed by NUL. All names share a prefix
// ("xla_"), so one pass looks for the prefix and checks the string that
// follows against the set. It reads in blocks, keeping an overlap so a
// literal that straddles two blocks is still found, and checks ctx
// between blocks (plugins run to hundreds of megabytes).
func scanLiterals(ctx context.Context, r io.Reader, names []string) (map[string]bool, error) {
	const block = 4 << 20
	want := make(map[string]bool, len(names))
	prefix := ""
	maxLen := 0
	for i, n := range names {
		want[n] = true
		maxLen = max(maxLen, len(n))
		if i == 0 {
			prefix = n
		}
		for !strings.HasPrefix(n, prefix) {
			prefix = prefix[:len(prefix)-1]
		}
	}
	if prefix == "" {
		return nil, errors.New("scanLiterals: names share no prefix")
	}
	overlap := maxLen + 2
	found := make(map[string]bool, len(names))
	buf := make([]byte, 0, block+overlap)
	first := true
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := len(buf)
		buf = buf[:start+block]
		n, err := io.ReadFull(r, buf[start:])
		buf = buf[:start+n]
		eof := errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF)
		if err != nil && !eof {
			return nil, err
		}
		findLiterals(buf, []byte(prefix), want, found, first, maxLen)
		if eof || len(found) == len(names) {
			return found, nil
		}
		// Keep the tail so a literal across the boundary is seen whole; a
		// literal wholly inside the kept tail is seen twice, harmlessly.
		keep := min(overlap, len(buf))
		copy(buf, buf[len(buf)-keep:])
		buf = buf[:keep]
		first = false
	}
}

// findLiterals marks in found every wanted name that occurs in buf as a C
// string literal. atFileStart says buf[0] is the file's first byte. A
// literal cut by the end of buf is not seen here; the caller's overlap
// shows it whole in the next block.
func findLiterals(buf, prefix []byte, want, found map[string]bool, atFileStart bool, maxLen int) {
	for off := 0; ; {
		i := bytes.Index(buf[off:], prefix)
		if i < 0 {
			return
		}
		i += off
		off = i + 1
		// Not inside an identifier, and not the field part of a qualified
		// protobuf name ("xla.DebugOptions.<field>"), which generated
		// parsers keep for UTF-8 error messages whether or not a flag of
		// that name exists.
		if !((i == 0 && atFileStart) || (i > 0 && !isIdentByte(buf[i-1]) && buf[i-1] != '.')) {
			continue
		}
		end := bytes.IndexByte(buf[i:min(len(buf), i+maxLen+1)], 0)
		if end < 0 {
			continue // longer than any wanted name, or cut by the block end
		}
		if want[string(buf[i:i+end])] { // no allocation for a map lookup
			found[string(buf[i:i+end])] = true
		}
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

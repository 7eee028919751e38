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
	// RemovedRelease, when not zero, is the first release whose XLA no
	// longer registers the flag, so that setting it aborts the process
	// ("Unknown flag in XLA_FLAGS"). A flag with a removal on record is
	// never set on the default assumption (SourceDefault): with nothing
	// known about the XLA a program loads, it may well be that release or
	// a later one, and a flag left out only leaves a cache less effective.
	RemovedRelease Version
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

// llvmParallelismRemoved is the first release whose XLA aborts on
// xla_gpu_enable_llvm_module_compilation_parallelism: jaxlib 0.11.0.
// Tested: jaxlib 0.12.0.1 aborts on it and 0.4.36 accepts it
// (xla/jaxtest TestFlagsNeverAbort, docs/xla.md's census); 0.11.0 is the
// release in which JAX stopped setting it "in preparation for flag removal
// from XLA" (below), the earliest the removal can have shipped, and the
// bound a release number is checked against, so no release from 0.11.0 on
// is ever given the flag on a stated version either.
var llvmParallelismRemoved = Version{0, 11, 0}

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
// xla_gpu_experimental_autotune_cache_mode (AutotuneCacheMode_Parse).
// xla_gpu_experimental_autotuner_cache_dir (field 407) is not in this table
// but in ProbeOnlyFlags: no release number is known to carry it.
var Flags = []FlagInfo{
	{FlagKernelCacheFile, 306, jaxGate, Version{}, Version{}, "JAX sets it only for jaxlib > 0.4.35 (compiler.py get_compile_options); field 306 in xla.proto @00987f6"},
	{FlagAutotuneCacheDir, 310, jaxGate, Version{}, Version{}, "JAX sets it only for jaxlib > 0.4.35 (compiler.py get_compile_options); field 310 in xla.proto @00987f6"},
	{FlagAutotuneCacheMode, 324, jaxGate, Version{}, Version{}, "JAX sets it only for jaxlib > 0.4.35; JAX's cache_key_test sets it only for jaxlib > 0.4.35; field 324 in xla.proto @00987f6"},
	{FlagLLVMModuleParallelism, 268, jaxGate, llvmParallelismEnd, llvmParallelismRemoved, "set with the kernel cache for jaxlib > 0.4.35 (compiler.py get_compile_options: \"This option is required to use the kernel cache\"); JAX 0.11.0 stopped setting it (compiler.py @cec06d1: no-op, to be removed from XLA); XLA in jaxlib 0.12.0.1 aborts on it (xla/jaxtest TestFlagsNeverAbort), removal recorded at 0.11.0"},
}

// ProbeOnlyFlags are flags xlacache sets only when a probed plugin
// registers them (SourcePlugin): no jaxlib release could be tied to them
// from the sources, so SupportForVersion never knows them, whatever the
// version stated or assumed. A wrong guess would abort the process (XLA
// dies on an unknown flag in XLA_FLAGS), while a probe cannot be wrong in
// that direction: a build whose flag table lacks the name cannot contain
// it as a NUL-terminated literal.
//
// xla_gpu_experimental_autotuner_cache_dir (field 407), what the sources
// show (openxla/xla; "stored copy" = the index gave the file without its
// commit):
//
//   - Registration. Neither stored xla/debug_options_flags.cc registers it
//     (@00ccad5d1736ed6fc9234ae7460407891be5fbe2 and
//     @1ff3f7d797d12ef8f386fc529768f2bc841c2fdb: their flag lists go from
//     xla_gpu_experimental_autotune_cache_mode straight to
//     xla_enable_command_buffers_during_profiling), so XLA builds exist
//     that abort on it; a later stored copy sets its default ("") in
//     DefaultDebugOptionsIgnoringFlags. xla/xla.proto
//     @17c5b170eb226cdbec49fcafa5e15be61e5fd86e declares it ("Specifies the
//     directory to store per kernel autotuning cache"), fields up to 456.
//   - Readers. Only xla/service/gpu/autotuning/autotuner_pass.cc
//     (AutotunerPass::Create) reads it, in five stored versions: (a) 407
//     only, with FileBasedAutotunerCache (its own AutotunerCacheEntry
//     files, xla/backends/autotuner/file_based_autotuner_cache.cc
//     @bf97528881950b589f3b9aa9d74fc116ffd0e9fd); (b, c) 407 only, with
//     LegacyCache, which stores through AutotunerUtil exactly like the
//     xla_gpu_per_fusion_autotune_cache_dir autotuners (same file names
//     and format, same in-process map; legacy_cache.cc
//     @009374b0a96cc76c1595647ea0d0e4581f624ecd); (d) @cff9fb970b18271a073bc0326591d59cb20b7c3d
//     and (e): xla_gpu_per_fusion_autotune_cache_dir first, 407 only when
//     that is empty. In a stored xla/service/gpu/nvptx_compiler.cc the
//     pass of (c)/(d)'s signature runs by default for fusions (the
//     native vs block-level emitter choice) unless
//     xla_gpu_experimental_enable_fusion_autotuner (field 409) is false,
//     and the stored debug_options_flags.cc copy that has 407's default
//     sets 409 true; in (b)/(c) those results are persisted only through
//     407.
//   - The mode. Every version honours
//     xla_gpu_experimental_autotune_cache_mode: (a) maps READ to a
//     FileBasedCacheConfig READ whose Insert writes nothing; (b)-(e) pass
//     it to AutotunerUtil::AddResultToCaches, whose
//     AddResultToFileBasedCacheIfEnabled returns before writing in READ
//     (stored copies of autotuner_util.cc;
//     xla/service/gpu/autotuning/autotuner_cache.cc
//     @09cc5606d4694d51712e708b46d3dbd35d6cf3ae, its later home, likewise).
//     So a reader given 407 with mode READ does not write.
//   - JAX's key. jax-ml/jax jax/_src/cache_key.py never clears 407: not at
//     @32c99f627ea52dc7e23a819226b081f3653a55fe, not at
//     @032afca925404261df9953633a83a8e1840a754c (which clears the mode),
//     not in the newest stored copy (which also clears
//     xla_gpu_per_fusion_autotune_cache_dir), neither from the XLA_FLAGS
//     text nor from the compile options. Hence 407 is set only for Go
//     programs (Prepare, `xlacache env --target go`), whose keys are
//     xlacache's own and leave 407 out (NormalizeFlagsForKey,
//     NormalizeCompileOptions); putting it in a JAX process's XLA_FLAGS
//     would bring the cache path back into the key of JAX >= 0.11.0, which
//     took it out. Its value is the autotune directory, a function of the
//     cache directory alone: every process of a job gets the same bytes,
//     and the role shows only in the mode flag.
//   - Releases. Which jaxlib releases carry which version could not be
//     established: jax-ml/jax third_party/xla/revision.bzl and
//     workspace.bzl are stored at commits for which jax/version.py is not,
//     and the XLA commits they pin are not stored.
var ProbeOnlyFlags = []FlagInfo{
	{Name: FlagAutotunerCacheDir, Field: 407, Evidence: "set only when a probed plugin registers it (no release known); read by autotuner_pass.cc alone, honours the autotune mode; JAX hashes it, so it goes to Go programs only"},
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
// table. With source SourceDefault, v is an assumption, not a fact: a flag
// that a later release removed (RemovedRelease) is then not known either,
// because a program with no plugin to probe and no stated version most
// likely loads a current plugin (go-xla installs the newest), on which the
// flag would abort it.
func SupportForVersion(v Version, source SupportSource) Support {
	s := Support{Source: source, Detail: "jaxlib " + v.String(), known: map[string]bool{}}
	if source == SourceDefault {
		s.Detail = "jaxlib " + v.String() + " assumed"
	}
	for _, f := range Flags {
		s.known[f.Name] = f.In(v) && (source != SourceDefault || f.RemovedRelease.IsZero())
	}
	return s
}

// removedRelease is the release that removed flag name from XLA, per the
// Flags table, or the zero Version.
func removedRelease(name string) Version {
	for _, f := range Flags {
		if f.Name == name {
			return f.RemovedRelease
		}
	}
	return Version{}
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
	for _, fl := range ProbeOnlyFlags {
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
	for _, fl := range ProbeOnlyFlags {
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

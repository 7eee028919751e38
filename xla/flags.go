// Package xla turns on XLA's own compilation caches for Go programs that
// compile through XLA (go-xla, GoMLX) and for JAX processes launched from a
// shell, and derives cache keys from XLA compile options.
//
// XLA keeps two caches of its own, both configured through DebugOptions
// flags: the per-fusion autotune cache (a directory of text protos) and the
// kernel cache (one binary file). This package composes those flags from
// xlacache's options, with the right mode per process (UPDATE on the writer,
// READ elsewhere), merges them into XLA_FLAGS without overriding what the
// user set, and sets only flags the loaded XLA knows, because XLA aborts the
// process on an unknown flag.
//
// Order of calls in a Go program (see Prepare):
//
//	opts, _ := config.FromEnv(os.LookupEnv)
//	xla.Prepare(ctx, opts, xla.PrepareOptions{PluginName: "cuda"}) // before the plugin loads
//	backend := ...                                                 // go-xla / GoMLX: load the PJRT plugin
package xla

import (
	"errors"
	"fmt"
	"strings"

	"github.com/xlacache/xlacache/internal/layout"
)

// XLA flag names this package sets or recognises. They are XLA DebugOptions
// field names; on the command line and in XLA_FLAGS they take a "--" prefix.
const (
	// FlagAutotuneCacheDir is XLA's per-fusion autotune cache directory
	// (DebugOptions field 310). XLA requires the directory to exist. The
	// directory itself carries the flag's name (JAX's layout), so the flag
	// name is the layout's directory name.
	FlagAutotuneCacheDir = layout.XLAAutotuneDir
	// FlagAutotuneCacheMode selects how the autotune cache is used
	// (DebugOptions field 324): ModeUpdate reads and writes, ModeRead only
	// reads.
	FlagAutotuneCacheMode = "xla_gpu_experimental_autotune_cache_mode"
	// FlagKernelCacheFile is XLA's compiled-kernel cache file
	// (DebugOptions field 306); like the autotune directory, the file is
	// named after the flag.
	FlagKernelCacheFile = layout.XLAKernelFile
	// FlagLLVMModuleParallelism must be true for the kernel cache to be used;
	// JAX sets it together with the kernel cache for the same reason.
	FlagLLVMModuleParallelism = "xla_gpu_enable_llvm_module_compilation_parallelism"
	// FlagAutotunerCacheDir is the cache directory of XLA's newer
	// autotuner pass (DebugOptions field 407). Some XLA builds read only
	// this flag there, later ones read FlagAutotuneCacheDir first and fall
	// back to it; xlacache gives it the same directory as
	// FlagAutotuneCacheDir, and only to an XLA probed to register it (see
	// ProbeOnlyFlags).
	FlagAutotunerCacheDir = "xla_gpu_experimental_autotuner_cache_dir"
)

// Autotune cache modes, spelled as XLA's flag parser takes them: the
// setter for this flag (debug_options_flags.cc) calls
// DebugOptions::AutotuneCacheMode_Parse on the value as given, which
// accepts only the protobuf enum names. "update" or "read", as the flag's
// help text suggests, are rejected and the mode stays at its default,
// UPDATE, so a reader would write.
const (
	ModeUpdate = "AUTOTUNE_CACHE_MODE_UPDATE"
	ModeRead   = "AUTOTUNE_CACHE_MODE_READ"
)

// Flag is one XLA flag as it appears in XLA_FLAGS: --Name=Value.
type Flag struct {
	// Name is the flag name without leading dashes.
	Name string `json:"name"`
	// Value is the unquoted value; empty with HasValue false for a bare
	// boolean flag such as --xla_foo.
	Value string `json:"value,omitempty"`
	// HasValue is true when the flag was written with "=".
	HasValue bool `json:"has_value"`
}

// String renders the flag the way XLA's XLA_FLAGS parser reads it back,
// quoting the value when it contains whitespace or starts with a quote.
func (f Flag) String() string {
	if !f.HasValue {
		return "--" + f.Name
	}
	return "--" + f.Name + "=" + QuoteFlagValue(f.Value)
}

// whitespace is the set XLA's parser splits XLA_FLAGS on.
const whitespace = " \t\r\n"

// QuoteFlagValue quotes v for XLA_FLAGS. XLA's parser reads an unquoted
// value up to the next whitespace, and a double-quoted value up to the
// closing quote with backslash escaping the next character; so a value is
// quoted exactly when an unquoted one would be read differently.
func QuoteFlagValue(v string) string {
	if v != "" && !strings.ContainsAny(v, whitespace) && v[0] != '"' && v[0] != '\'' {
		return v
	}
	if v == "" {
		return v
	}
	var b strings.Builder
	b.Grow(len(v) + 2)
	b.WriteByte('"')
	for i := 0; i < len(v); i++ {
		if v[i] == '"' || v[i] == '\\' {
			b.WriteByte('\\')
		}
		b.WriteByte(v[i])
	}
	b.WriteByte('"')
	return b.String()
}

// ErrFlagsFile is returned (wrapped) by ParseFlags and MergeFlags when
// XLA_FLAGS names a file: XLA then reads its flags from that file, so the
// caller must read it (ReadFlagsFile) before merging.
var ErrFlagsFile = errors.New("XLA_FLAGS names a file of flags, not flags")

// ParsedFlags is the result of reading an XLA_FLAGS value the way XLA does.
type ParsedFlags struct {
	// Flags are the flags XLA would see, in order.
	Flags []Flag
	// Ignored is the text XLA stops at: its parser gives up silently at the
	// first token that does not start with '-', and never sees the rest.
	Ignored string
	// IgnoredOffset is the byte offset of Ignored in the input.
	IgnoredOffset int
}

// Lookup returns the value of the last occurrence of flag name, which is
// the one XLA applies, and whether the flag is present.
func (p ParsedFlags) Lookup(name string) (Flag, bool) {
	for i := len(p.Flags) - 1; i >= 0; i-- {
		if p.Flags[i].Name == name {
			return p.Flags[i], true
		}
	}
	return Flag{}, false
}

// ParseFlags splits an XLA_FLAGS value into flags following XLA's own
// parser (xla/parse_flags_from_env.cc): flags are separated by whitespace,
// a name is made of letters, digits, '-' and '_', and a value that starts
// with a quote runs to the matching quote (backslash escapes inside double
// quotes only). A value whose first non-blank character is not '-' names a
// file; ParseFlags then returns an error wrapping ErrFlagsFile.
func ParseFlags(s string) (ParsedFlags, error) {
	var out ParsedFlags
	b := skipWS(s, 0)
	if b < len(s) && s[b] != '-' {
		return out, fmt.Errorf("XLA_FLAGS=%q: %w", s, ErrFlagsFile)
	}
	for b < len(s) && s[b] == '-' {
		e := b
		for e < len(s) && isFlagNameByte(s[e]) {
			e++
		}
		name := strings.TrimLeft(s[b:e], "-")
		switch {
		case e+1 < len(s) && s[e] == '=' && (s[e+1] == '"' || s[e+1] == '\''):
			quote := s[e+1]
			var v strings.Builder
			i := e + 2
			for ; i < len(s) && s[i] != quote; i++ {
				c := s[i]
				if quote == '"' && c == '\\' && i+1 < len(s) {
					i++
					c = s[i]
				}
				v.WriteByte(c)
			}
			if i < len(s) {
				i++ // closing quote
			}
			out.Flags = append(out.Flags, Flag{Name: name, Value: v.String(), HasValue: true})
			e = i
		default:
			end := e
			for end < len(s) && !strings.ContainsRune(whitespace, rune(s[end])) {
				end++
			}
			// XLA hands the whole token to its flag matcher; a name with
			// characters outside the name alphabet matches no flag.
			n, v, has := strings.Cut(strings.TrimLeft(s[b:end], "-"), "=")
			f := Flag{Name: n, Value: v, HasValue: has}
			out.Flags = append(out.Flags, f)
			e = end
		}
		b = skipWS(s, e)
	}
	if b < len(s) {
		out.Ignored, out.IgnoredOffset = s[b:], b
	}
	return out, nil
}

func skipWS(s string, i int) int {
	for i < len(s) && strings.ContainsRune(whitespace, rune(s[i])) {
		i++
	}
	return i
}

func isFlagNameByte(c byte) bool {
	return c == '-' || c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
}

// Conflict records a flag xlacache wanted to set but the user had already
// set in XLA_FLAGS to another value. The user's value is kept.
type Conflict struct {
	Want Flag `json:"want"`
	User Flag `json:"user"`
}

// MergeResult is what MergeFlags produced.
type MergeResult struct {
	// Value is the new XLA_FLAGS value.
	Value string
	// Added are the flags xlacache added.
	Added []Flag
	// AlreadySet are flags the user had set to the same value.
	AlreadySet []Flag
	// Conflicts are flags the user had set to another value; the user's
	// value stays in effect.
	Conflicts []Conflict
}

// MergeFlags adds want to an existing XLA_FLAGS value. A flag the user
// already set is never duplicated or overridden: the user's setting wins,
// because XLA_FLAGS is where people pin behaviour deliberately (for
// example a different autotune directory on one host), and a conflict is
// reported so the caller can log it. The new flags go in front of the
// existing text, which is kept byte for byte: XLA applies the last
// occurrence of a flag, and stops parsing at the first non-flag token, so
// flags in front are always seen and never win over the user's.
func MergeFlags(existing string, want []Flag) (MergeResult, error) {
	var res MergeResult
	var parsed ParsedFlags
	if strings.TrimLeft(existing, whitespace) != "" {
		var err error
		parsed, err = ParseFlags(existing)
		if err != nil {
			return res, err
		}
	}
	var add []string
	for _, w := range want {
		if u, ok := parsed.Lookup(w.Name); ok {
			if u.Value == w.Value && u.HasValue == w.HasValue {
				res.AlreadySet = append(res.AlreadySet, w)
			} else {
				res.Conflicts = append(res.Conflicts, Conflict{Want: w, User: u})
			}
			continue
		}
		res.Added = append(res.Added, w)
		add = append(add, w.String())
	}
	trimmed := strings.TrimLeft(existing, whitespace)
	switch {
	case len(add) == 0:
		res.Value = existing
	case trimmed == "":
		res.Value = strings.Join(add, " ")
	default:
		res.Value = strings.Join(add, " ") + " " + existing
	}
	return res, nil
}

// excludedFromKey are flags that name where caches and dumps go or how the
// cache is used; they never change the compiled code, so they are left out
// of keys (as JAX leaves its dump flags and cache options out).
var excludedFromKey = map[string]bool{
	FlagAutotuneCacheDir:  true,
	FlagAutotuneCacheMode: true,
	FlagKernelCacheFile:   true,
	FlagAutotunerCacheDir: true,
}

// excludedFromKeyName reports whether an XLA flag or DebugOptions field
// name is one the key ignores: the cache options above and every
// xla_dump_* option.
func excludedFromKeyName(name string) bool {
	return excludedFromKey[name] || strings.HasPrefix(name, "xla_dump_")
}

// NormalizeFlagsForKey returns the XLA_FLAGS text that belongs in a cache
// key: the flags XLA would apply, minus cache-path, cache-mode and dump
// flags, one space apart. Two processes that differ only in role or cache
// directory get the same text.
func NormalizeFlagsForKey(xlaFlags string) (string, error) {
	if strings.TrimLeft(xlaFlags, whitespace) == "" {
		return "", nil
	}
	p, err := ParseFlags(xlaFlags)
	if err != nil {
		return "", err
	}
	parts := make([]string, 0, len(p.Flags))
	for _, f := range p.Flags {
		if excludedFromKeyName(f.Name) {
			continue
		}
		parts = append(parts, f.String())
	}
	return strings.Join(parts, " "), nil
}

package xla

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/xlacache/xlacache/config"
)

// Target says which kind of program a launch environment is for.
type Target string

const (
	// TargetAll serves JAX programs and Go programs that call Prepare. It
	// leaves XLA_FLAGS alone, because JAX hashes XLA_FLAGS into its cache
	// key and sets these options itself.
	TargetAll Target = "all"
	// TargetJAX serves JAX programs only.
	TargetJAX Target = "jax"
	// TargetGo serves Go programs (go-xla, GoMLX), including ones that do
	// not call Prepare: the cache flags go into XLA_FLAGS.
	TargetGo Target = "go"
)

// ParseTarget reads a --target value.
func ParseTarget(s string) (Target, error) {
	switch t := Target(strings.ToLower(strings.TrimSpace(s))); t {
	case TargetAll, TargetJAX, TargetGo:
		return t, nil
	case "gomlx", "go-xla":
		return TargetGo, nil
	}
	return "", fmt.Errorf("unknown target %q (use all, jax or go)", s)
}

// JAX's configuration variables (jax/_src/config.py reads each option
// from the upper-cased option name).
const (
	EnvJAXCacheDir       = "JAX_COMPILATION_CACHE_DIR"
	EnvJAXXLACaches      = "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES"
	EnvJAXMinCompileTime = "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS"
	EnvJAXMinEntrySize   = "JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES"
	// EnvJAXMaxSize is JAX's own bound on its cache directory. LaunchEnv
	// never sets it: see maxSizeNote.
	EnvJAXMaxSize = "JAX_COMPILATION_CACHE_MAX_SIZE"
)

// maxSizeNote says why XLACACHE_MAX_SIZE is not handed to JAX as
// JAX_COMPILATION_CACHE_MAX_SIZE:
//   - jax-ml/jax jax/_src/lru_cache.py
//     @1e79d0a98b7d86ead2e690f1d1a287ffe48806c6: any max_size other than -1
//     makes LRUCache.__init__ raise RuntimeError("Please install filelock
//     package to set `jax_compilation_cache_max_size`") when the filelock
//     package, which JAX does not install, is missing; at jax-ml/jax
//     @cec06d1 JAX then runs with its persistent cache off
//     (../shared/design.md §4).
//   - With a bound, LRUCache._evict_if_needed reads the `<key>-atime` file of
//     every `<key>-cache` entry with no existence check (the stored copy of
//     lru_cache.py with that layout; the index gave no commit), and JAX writes
//     `-atime` files only while bounded (lru_cache.py @cec06d116c05: the
//     fixtures in ../shared/fixtures/jax-cache/unbounded have none), so a
//     directory first filled without a bound makes every later bounded
//     write fail.
//
// xlacache bounds the directory itself, with `xlacache prune`.
const maxSizeNote = "xlacache bounds the directory itself (xlacache prune); not passed to JAX as " + EnvJAXMaxSize + ", which needs the filelock package and -atime files"

// EnvVar is one variable of a launch environment. Comment explains it for
// humans; shells get only Name and Value.
type EnvVar struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	Comment string `json:"comment,omitempty"`
}

// Launch is the environment that turns xlacache and XLA's caches on for a
// program launched from a shell.
type Launch struct {
	Vars []EnvVar `json:"vars"`
	// Skipped are XLA flags left out, with the reason.
	Skipped []Skip `json:"skipped,omitempty"`
	// Conflicts are cache flags the user already set in XLA_FLAGS.
	Conflicts []Conflict `json:"conflicts,omitempty"`
	// Support says what is known about the target XLA (TargetGo only).
	Support string `json:"support,omitempty"`
}

// JAXXLACachesValue spells a subcache selection the way JAX's
// jax_persistent_cache_enable_xla_caches takes it: "all", "none", or the
// XLA option name of the one subcache.
func JAXXLACachesValue(subs []config.Subcache) string {
	has := map[config.Subcache]bool{}
	for _, s := range subs {
		has[s] = true
	}
	switch {
	case has[config.SubcacheAutotune] && has[config.SubcacheKernels]:
		return "all"
	case has[config.SubcacheAutotune]:
		return string(config.SubcacheAutotune)
	case has[config.SubcacheKernels]:
		return string(config.SubcacheKernels)
	}
	return "none"
}

// LaunchEnv returns the environment for a process with opts (its process
// index and role already set) and the target program kind. existingFlags
// is the XLA_FLAGS the launched program would otherwise see; for TargetGo
// it is merged, never overridden. sup is what is known about the target
// XLA (only TargetGo uses it; JAX gates its own options by jaxlib
// version).
func LaunchEnv(opts config.Options, target Target, sup Support, existingFlags string) (Launch, error) {
	var l Launch
	if !opts.Enabled() {
		return l, fmt.Errorf("no cache directory: set %s or pass --dir", config.EnvDir)
	}
	subNames := make([]string, 0, len(opts.Subcaches))
	for _, s := range opts.Subcaches {
		subNames = append(subNames, s.Alias())
	}
	subVal := strings.Join(subNames, ",")
	if subVal == "" {
		subVal = "none"
	}
	role := "reader"
	if opts.Writer() {
		role = "writer"
	}
	l.Vars = append(l.Vars, EnvVar{config.EnvDir, opts.Dir, "xlacache's directory"})
	if opts.SubcachesExplicit {
		// Only a choice the user made: left unset, each backend keeps its
		// own default (autotune only for XLA, all for the cpu backend,
		// whose kernel names cannot clash).
		l.Vars = append(l.Vars, EnvVar{config.EnvEnableXLA, subVal, "XLA subcaches to turn on"})
	}
	l.Vars = append(l.Vars,
		EnvVar{config.EnvProcessIndex, strconv.Itoa(opts.ProcessIndex), "this process is a " + role},
		EnvVar{config.EnvRole, opts.Role.String(), ""},
		EnvVar{config.EnvMinCompileTime, strconv.FormatFloat(opts.MinCompileTime.Seconds(), 'g', -1, 64), ""},
		EnvVar{config.EnvMinEntrySize, strconv.FormatInt(opts.MinEntrySize, 10), ""},
	)
	if opts.MaxSize > 0 {
		l.Vars = append(l.Vars, EnvVar{config.EnvMaxSize, strconv.FormatInt(opts.MaxSize, 10), maxSizeNote})
	}
	if target == TargetAll || target == TargetJAX {
		// Every process of a job gets the same JAX_* values, whatever its
		// role: JAX hashes the serialized compile options into its cache
		// key, xla_gpu_kernel_cache_file included (and, in jax
		// 0.4.36-0.10.x, xla_gpu_enable_llvm_module_compilation_parallelism,
		// which it sets with the kernel cache), so a reader without the
		// kernel cache would compute different keys from process 0, the only
		// process that writes JAX's cache, and never hit. JAX itself gives
		// the kernel cache file to every process (it has no read-only mode
		// for it); the only setting that differs by role is the autotune
		// mode, which JAX chooses from jax.process_index() and leaves out of
		// its key (see JAXHashedSettings). xlacache's readers still never publish
		// the kernel cache file to a shared tier.
		l.Vars = append(l.Vars,
			EnvVar{EnvJAXCacheDir, opts.Dir, "JAX's executable cache, beside xlacache's; JAX puts XLA's subcaches at the same paths"},
			EnvVar{EnvJAXXLACaches, JAXXLACachesValue(opts.Subcaches), "the same on every process, so JAX's keys agree; JAX sets the XLA cache options itself (jaxlib >= 0.4.36), UPDATE on jax.process_index() 0, READ elsewhere"},
			EnvVar{EnvJAXMinCompileTime, strconv.FormatFloat(opts.MinCompileTime.Seconds(), 'g', -1, 64), ""},
			EnvVar{EnvJAXMinEntrySize, strconv.FormatInt(opts.MinEntrySize, 10), ""},
		)
		// XLACACHE_MAX_SIZE is deliberately not passed on as
		// JAX_COMPILATION_CACHE_MAX_SIZE: see maxSizeNote.
	}
	if target == TargetGo {
		l.Support = sup.String()
		flags, skips := CacheFlags(opts, sup)
		l.Skipped = append(l.Skipped, skips...)
		merged, err := MergeFlags(existingFlags, FollowUserAutotuneDir(existingFlags, flags))
		if err != nil {
			return l, fmt.Errorf("merge with %s: %w", EnvXLAFlags, err)
		}
		l.Conflicts = merged.Conflicts
		if merged.Value != "" {
			l.Vars = append(l.Vars, EnvVar{EnvXLAFlags, merged.Value, "XLA's cache flags in front of the existing XLA_FLAGS, which win on conflict"})
		}
	}
	return l, nil
}

// LaunchEnvFor is LaunchEnv for a program started outside xlacache (what
// `xlacache env` prints): existing is XLA_FLAGS as the environment gives
// it, which for TargetGo may name a file of flags (read first). For a Go
// writer it also creates the autotune directory XLA's flags name: XLA
// requires it to exist, and a program that does not call Prepare will
// not create it.
func LaunchEnvFor(opts config.Options, target Target, sup Support, existing string) (Launch, error) {
	if target == TargetGo {
		var err error
		if existing, err = InlineFlags(existing); err != nil {
			return Launch{}, err
		}
	}
	l, err := LaunchEnv(opts, target, sup, existing)
	if err != nil || target != TargetGo || !opts.Writer() {
		return l, err
	}
	for _, v := range l.Vars {
		if v.Name == EnvXLAFlags && opts.HasSubcache(config.SubcacheAutotune) {
			if err := CreateAutotuneDir(opts.Dir, opts.EffectiveDirMode()); err != nil {
				return l, err
			}
		}
	}
	return l, nil
}

// Shells FormatLaunch can write for.
const (
	ShellBash = "bash"
	ShellFish = "fish"
	ShellJSON = "json"
)

// FormatLaunch renders l for eval by a shell ("bash" also serves sh, zsh
// and ksh), or as JSON. Values are quoted so that any byte string,
// including paths with spaces and quotes, comes back unchanged.
func FormatLaunch(l Launch, shell string, header []string) (string, error) {
	var b strings.Builder
	switch strings.ToLower(shell) {
	case ShellBash, "sh", "zsh":
		for _, h := range header {
			b.WriteString(commentLine(h))
		}
		for _, s := range l.Skipped {
			b.WriteString(commentLine("not set: --" + s.Flag + ": " + s.Reason))
		}
		for _, c := range l.Conflicts {
			b.WriteString(commentLine("XLA_FLAGS already sets --" + c.User.Name + "=" + c.User.Value + "; kept (xlacache wanted " + c.Want.Value + ")"))
		}
		for _, v := range l.Vars {
			if v.Comment != "" {
				b.WriteString(commentLine(v.Comment))
			}
			b.WriteString("export " + v.Name + "=" + shQuote(v.Value) + "\n")
		}
	case ShellFish:
		for _, h := range header {
			b.WriteString(commentLine(h))
		}
		for _, s := range l.Skipped {
			b.WriteString(commentLine("not set: --" + s.Flag + ": " + s.Reason))
		}
		for _, v := range l.Vars {
			if v.Comment != "" {
				b.WriteString(commentLine(v.Comment))
			}
			b.WriteString("set -gx " + v.Name + " " + fishQuote(v.Value) + ";\n")
		}
	case ShellJSON:
		out := struct {
			Env map[string]string `json:"env"`
			Launch
		}{Env: map[string]string{}, Launch: l}
		for _, v := range l.Vars {
			out.Env[v.Name] = v.Value
		}
		js, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return "", fmt.Errorf("encode launch environment: %w", err)
		}
		b.Write(js)
		b.WriteByte('\n')
	default:
		return "", fmt.Errorf("unknown shell %q (use bash, fish or json)", shell)
	}
	return b.String(), nil
}

// commentLine makes a shell comment of s, one line per line of s, so a
// value with a newline cannot end the comment and run as a command.
func commentLine(s string) string {
	var b strings.Builder
	for _, line := range strings.Split(s, "\n") {
		b.WriteString("# " + line + "\n")
	}
	return b.String()
}

// shQuote quotes s for POSIX shells: single quotes keep every byte
// literally, and an embedded single quote is closed, escaped and reopened.
func shQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// fishQuote quotes s for fish, where single quotes keep every byte except
// that \' and \\ are escapes.
func fishQuote(s string) string {
	s = strings.ReplaceAll(s, `\`, `\\`)
	s = strings.ReplaceAll(s, `'`, `\'`)
	return "'" + s + "'"
}

package xla

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/xla/pjrt"
)

// Environment variables read by this package (beside config's XLACACHE_*).
const (
	// EnvXLAFlags is XLA's own flag variable.
	EnvXLAFlags = "XLA_FLAGS"
	// EnvXLAVersion states the jaxlib / PJRT plugin release of the XLA the
	// program loads, for gating when the plugin file cannot be probed.
	EnvXLAVersion = config.EnvXLAVersion
	// EnvXLAPlugin names the PJRT plugin file to probe for flag support.
	EnvXLAPlugin = config.EnvXLAPlugin
	// EnvPluginPath is go-xla's plugin search path variable.
	EnvPluginPath = "PJRT_PLUGIN_LIBRARY_PATH"
)

// Skip records a flag xlacache did not set, and why.
type Skip struct {
	Flag   string `json:"flag"`
	Reason string `json:"reason"`
}

// AutotuneDir and KernelFile return where XLA's subcaches live under the
// cache directory; the names follow XLA's flags (and JAX's layout), so a
// JAX process given the same directory uses the same files.
func AutotuneDir(dir string) string { return layout.Dir(dir).XLAAutotune() }

// CreateAutotuneDir creates XLA's autotune directory under the cache
// directory dir, and the tmp directory XLA writes results through, with
// exactly mode (not mode minus umask). XLA needs the directory to exist,
// and creates tmp itself with mode 0755, which would lock the other users
// of a group-shared directory out of writing results. Nothing is followed
// out of dir.
func CreateAutotuneDir(dir string, mode os.FileMode) error {
	if err := os.MkdirAll(dir, mode); err != nil {
		return fmt.Errorf("xla: create cache directory: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("xla: open cache directory: %w", err)
	}
	defer root.Close()
	if err := atomicfile.MkdirAllIn(root, layout.XLAAutotuneDir+"/"+layout.XLAAutotuneTmpDir, mode); err != nil {
		return fmt.Errorf("xla: create XLA autotune cache directory: %w", err)
	}
	return nil
}

// KernelFile returns the path of XLA's kernel cache file under dir.
func KernelFile(dir string) string { return layout.Dir(dir).XLAKernel() }

// CacheFlags returns the XLA flags that turn on the subcaches opts selects,
// for a target XLA with the given support, and the flags left out with the
// reason. The writer gets the autotune cache in UPDATE mode, every other
// process in READ mode. The kernel cache is given to the writer only: XLA
// has no read-only mode for it and appends to the file whenever it
// compiles a kernel the file lacks, so a reader would write to the shared
// cache. Wherever the autotune directory is given, so is
// FlagAutotunerCacheDir, with the same value, when the target XLA is known
// to register it (a probed plugin only; see ProbeOnlyFlags): the XLA
// builds whose newer autotuner pass reads only that flag then persist
// those results too, in the same files, under the same mode.
func CacheFlags(opts config.Options, sup Support) ([]Flag, []Skip) {
	if !opts.Enabled() {
		return nil, nil
	}
	var flags []Flag
	var skips []Skip
	unknown := func(name string) Skip {
		return Skip{name, fmt.Sprintf("the target XLA (%s %s) does not know it", sup.Source, sup.Detail)}
	}
	if opts.HasSubcache(config.SubcacheAutotune) {
		switch {
		case !sup.Knows(FlagAutotuneCacheDir):
			skips = append(skips, unknown(FlagAutotuneCacheDir))
		case !sup.Knows(FlagAutotuneCacheMode) && !opts.Writer():
			// Without the mode flag XLA updates the cache: a reader would write.
			skips = append(skips, Skip{FlagAutotuneCacheDir, "reader process and the target XLA has no " + FlagAutotuneCacheMode + " to make it read-only"})
		default:
			flags = append(flags, Flag{Name: FlagAutotuneCacheDir, Value: AutotuneDir(opts.Dir), HasValue: true})
			if sup.Knows(FlagAutotuneCacheMode) {
				mode := ModeRead
				if opts.Writer() {
					mode = ModeUpdate
				}
				flags = append(flags, Flag{Name: FlagAutotuneCacheMode, Value: mode, HasValue: true})
			}
			// Same directory as above: the pass's LegacyCache stores through
			// the same AutotunerUtil files as the per-fusion cache, and
			// later XLA reads the per-fusion flag first anyway. The mode
			// flag governs it too, so a reader stays read-only.
			if sup.Knows(FlagAutotunerCacheDir) {
				flags = append(flags, Flag{Name: FlagAutotunerCacheDir, Value: AutotuneDir(opts.Dir), HasValue: true})
			}
		}
	}
	if opts.HasSubcache(config.SubcacheKernels) {
		switch {
		case !opts.Writer():
			skips = append(skips, Skip{FlagKernelCacheFile, "reader process: XLA's kernel cache has no read-only mode"})
		case !sup.Knows(FlagKernelCacheFile):
			skips = append(skips, unknown(FlagKernelCacheFile))
		default:
			flags = append(flags, Flag{Name: FlagKernelCacheFile, Value: KernelFile(opts.Dir), HasValue: true})
		}
		// The kernel cache needs module-compilation parallelism on the
		// releases inside that flag's gate (Flags); outside it the flag is
		// a no-op or gone, and setting a flag XLA does not know aborts the
		// process. A probed plugin that still registers the flag accepts
		// it either way. Readers get it too, although they get no kernel
		// cache: it is part of the key (it is a compile option, not a
		// cache location), so every process of a job must carry the same
		// value or readers would never hit the writer's executables — as
		// JAX gives it to every process (compiler.py get_compile_options).
		switch {
		case !sup.Knows(FlagKernelCacheFile):
		case sup.Knows(FlagLLVMModuleParallelism):
			flags = append(flags, Flag{Name: FlagLLVMModuleParallelism, Value: "true", HasValue: true})
		case sup.Source == SourceDefault && removedRelease(FlagLLVMModuleParallelism) != (Version{}):
			skips = append(skips, Skip{FlagLLVMModuleParallelism, fmt.Sprintf("XLA removed it in jaxlib %s and the target XLA is unknown (%s): state --jaxlib-version or name the plugin to get it on an older XLA",
				removedRelease(FlagLLVMModuleParallelism), sup.Detail)})
		default:
			skips = append(skips, Skip{FlagLLVMModuleParallelism, fmt.Sprintf("not needed by, or unknown to, the target XLA (%s %s)", sup.Source, sup.Detail)})
		}
	}
	return flags, skips
}

// PrepareOptions says what Prepare knows about the XLA the program will
// load. With nothing set, the plugin named by XLACACHE_XLA_PLUGIN is
// probed, else XLACACHE_XLA_VERSION is used, else DefaultVersion.
type PrepareOptions struct {
	// Plugin is the path of the PJRT plugin file the program will load.
	// Prepare reads it (without loading it) to learn which flags it knows.
	Plugin string
	// PluginName is a go-xla plugin name ("cuda", "cpu"); when Plugin is
	// empty, Prepare looks for it where go-xla v0.1.4 looks (FindPlugin).
	PluginName string
	// Version is the jaxlib / PJRT plugin release, used when no plugin
	// file can be probed.
	Version string
	// LookupEnv and Setenv default to os.LookupEnv and os.Setenv.
	LookupEnv func(string) (string, bool)
	Setenv    func(key, value string) error
	// Logger receives one line per skipped or conflicting flag; nil uses
	// slog.Default().
	Logger *slog.Logger

	// NoWrapper leaves the plugin as it is: no executable tier (also
	// XLACACHE_PJRT_WRAP=0). By default Prepare puts xlacache's caching
	// PJRT wrapper in front of the plugin it found (see xla/pjrt), so a
	// new process loads the executables an earlier one compiled.
	NoWrapper bool
	// WrapperDir is where the wrapper is built with cc (default
	// <user cache dir>/xlacache-pjrt, as `xlacache pjrt env`).
	WrapperDir string
	// Helper, when set, is an xlacache binary that the wrapper starts as
	// `xlacache pjrt serve` on the cache directory's shared socket (one
	// helper for every process on it, configured by the environment).
	// Empty: the helper runs inside this process, with opts, until
	// Prepared.Close.
	Helper string
}

// Prepared reports what Prepare did.
type Prepared struct {
	// Support is what was established about the target XLA.
	Support Support
	// Flags are the flags xlacache wanted; Merge says which were added.
	Flags []Flag
	Merge MergeResult
	// Skipped are subcache flags left out, with the reason.
	Skipped []Skip
	// XLAFlags is XLA_FLAGS after Prepare.
	XLAFlags string
	// Wrapper is the caching PJRT wrapper set up in front of the plugin;
	// nil when none was (WrapperSkipped says why).
	Wrapper *pjrt.Setup
	// Plugin is the plugin file to load by path: the wrapper when one was
	// set up, else the plugin Prepare found (empty if none). A program
	// that loads its plugin by name needs nothing: the name finds the
	// wrapper through PJRT_PLUGIN_LIBRARY_PATH.
	Plugin string
	// WrapperSkipped is why no wrapper was set up.
	WrapperSkipped string

	wrap *wrapState
}

// Prepare sets up the process environment so that XLA, when the PJRT
// plugin is loaded, uses its caches under opts.Dir with this process's
// mode. Call it before the plugin is loaded (before go-xla's
// pjrt.GetPlugin, GoMLX's backends.New, or anything that compiles): XLA
// reads XLA_FLAGS once, the first time it needs its flags, and ignores
// later changes. It creates the autotune directory on the writer (XLA
// requires it to exist). On error nothing is changed and the program
// should carry on without XLA's caches; Prepare never aborts.
func Prepare(ctx context.Context, opts config.Options, po PrepareOptions) (*Prepared, error) {
	lookup, setenv, logger := po.LookupEnv, po.Setenv, po.Logger
	if lookup == nil {
		lookup = os.LookupEnv
	}
	if setenv == nil {
		setenv = os.Setenv
	}
	if logger == nil {
		logger = slog.Default()
	}
	p := &Prepared{}
	existing, _ := lookup(EnvXLAFlags)
	p.XLAFlags = existing
	if !opts.Enabled() {
		return p, nil
	}
	plugin := po.Plugin
	if plugin == "" && po.PluginName != "" {
		plugin, _ = FindPlugin(po.PluginName, lookup)
	}
	wrapped := false
	if plugin != "" && isWrapper(plugin) {
		// Prepared before in this process: probe the real plugin, and
		// leave the wrapper as it is.
		inner, _ := lookup(pjrt.EnvInner)
		plugin, wrapped = inner, true
		p.Plugin, p.WrapperSkipped = po.Plugin, "the plugin is already xlacache's wrapper"
	}
	sup, err := ResolveSupport(ctx, plugin, "", po.Version, lookup)
	if err != nil {
		return p, fmt.Errorf("xla: %w", err)
	}
	p.Support = sup
	p.Flags, p.Skipped = CacheFlags(opts, sup)
	for _, s := range p.Skipped {
		logger.Info("xlacache: XLA cache flag not set", "flag", s.Flag, "reason", s.Reason)
	}
	if len(p.Flags) > 0 {
		if err := p.setFlags(opts, existing, setenv, logger); err != nil {
			return p, err
		}
	}
	if wrapped {
		return p, nil
	}
	// The executable tier: a failure costs only the tier (one line), never
	// the flags above or the program.
	p.Plugin = plugin
	reason, err := setupWrapper(ctx, opts, po, plugin, lookup, setenv, logger, p)
	switch {
	case err != nil:
		p.WrapperSkipped = err.Error()
		logger.Warn("xlacache: no executable cache for the PJRT plugin; it compiles every program", "plugin", plugin, "err", err)
	case reason != "":
		p.WrapperSkipped = reason
	}
	return p, nil
}

// setFlags merges p.Flags into XLA_FLAGS (existing) and sets it.
func (p *Prepared) setFlags(opts config.Options, existing string, setenv func(string, string) error, logger *slog.Logger) error {
	base, err := InlineFlags(existing)
	if err != nil {
		return fmt.Errorf("xla: %w", err)
	}
	merged, err := MergeFlags(base, FollowUserAutotuneDir(base, p.Flags))
	if err != nil {
		return fmt.Errorf("xla: merge with %s: %w", EnvXLAFlags, err)
	}
	for _, c := range merged.Conflicts {
		logger.Warn("xlacache: XLA_FLAGS already sets a cache flag; keeping the user's value",
			"flag", c.Want.Name, "user", c.User.Value, "xlacache", c.Want.Value)
		if c.Want.Name == FlagAutotuneCacheMode && c.User.Value != ModeUpdate && c.User.Value != ModeRead && c.User.Value != "AUTOTUNE_CACHE_MODE_UNSPECIFIED" {
			logger.Warn("xlacache: XLA rejects this autotune cache mode and keeps UPDATE; use the enum name",
				"flag", c.Want.Name, "value", c.User.Value, "valid", ModeUpdate+", "+ModeRead)
		}
	}
	if opts.Writer() {
		for _, f := range merged.Added {
			if f.Name == FlagAutotuneCacheDir {
				if err := CreateAutotuneDir(opts.Dir, opts.EffectiveDirMode()); err != nil {
					return err
				}
			}
		}
	}
	if merged.Value != existing {
		if err := setenv(EnvXLAFlags, merged.Value); err != nil {
			return fmt.Errorf("xla: set %s: %w", EnvXLAFlags, err)
		}
	}
	p.Merge, p.XLAFlags = merged, merged.Value
	return nil
}

// FollowUserAutotuneDir returns want with FlagAutotunerCacheDir set to
// the autotune directory the user's XLA_FLAGS (existing) already names, if
// it names one: the user's FlagAutotuneCacheDir wins in MergeFlags, and
// the newer autotuner pass must then use that directory too, not a second
// cache beside it; an empty user value drops the flag. want is returned
// unchanged otherwise (also when existing does not parse; MergeFlags
// reports that).
func FollowUserAutotuneDir(existing string, want []Flag) []Flag {
	i := -1
	for j, f := range want {
		if f.Name == FlagAutotunerCacheDir {
			i = j
		}
	}
	if i < 0 || strings.TrimLeft(existing, whitespace) == "" {
		return want
	}
	parsed, err := ParseFlags(existing)
	if err != nil {
		return want
	}
	user, ok := parsed.Lookup(FlagAutotuneCacheDir)
	if !ok {
		return want
	}
	if user.Value == "" {
		// The user switched the per-fusion cache off: so is the pass's.
		return append(append([]Flag(nil), want[:i]...), want[i+1:]...)
	}
	out := append([]Flag(nil), want...)
	out[i].Value, out[i].HasValue = user.Value, true
	return out
}

// ResolveSupport establishes which flags the target XLA knows, from the
// best evidence available: a plugin file to probe (plugin, else the
// go-xla plugin called pluginName, else XLACACHE_XLA_PLUGIN), else a
// stated release (version, else XLACACHE_XLA_VERSION), else
// DefaultVersion. A file that is not an XLA plugin yields a Support that
// knows no flag.
func ResolveSupport(ctx context.Context, plugin, pluginName, version string, lookup func(string) (string, bool)) (Support, error) {
	if plugin == "" && pluginName != "" {
		plugin, _ = FindPlugin(pluginName, lookup)
	}
	if plugin == "" {
		plugin, _ = lookup(EnvXLAPlugin)
	}
	if plugin != "" {
		sup, err := ProbePlugin(ctx, plugin)
		if errors.Is(err, ErrNotXLA) {
			return Support{Source: SourcePlugin, Detail: plugin + " (not an XLA plugin)", known: map[string]bool{}}, nil
		}
		return sup, err
	}
	src := SourceVersion
	if version == "" {
		version, _ = lookup(EnvXLAVersion)
	}
	if version == "" {
		return SupportForVersion(DefaultVersion, SourceDefault), nil
	}
	v, err := ParseVersion(version)
	if err != nil {
		return Support{}, err
	}
	return SupportForVersion(v, src), nil
}

// maxFlagsFile bounds what ReadFlagsFile reads; XLA flag files are a few
// lines, and anything bigger is not one.
const maxFlagsFile = 1 << 20

// InlineFlags returns an XLA_FLAGS value as flags: the value itself, or,
// when it names a file (XLA's other syntax: a value that does not start
// with '-'), the file's content.
func InlineFlags(value string) (string, error) {
	if t := strings.TrimLeft(value, whitespace); t != "" && t[0] != '-' {
		return ReadFlagsFile(strings.TrimSpace(value))
	}
	return value, nil
}

// ReadFlagsFile reads a file of XLA flags, as XLA does when XLA_FLAGS
// holds a file name rather than flags.
func ReadFlagsFile(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("%s names a flags file: %w", EnvXLAFlags, err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFlagsFile+1))
	if err != nil {
		return "", fmt.Errorf("read XLA flags file %s: %w", path, err)
	}
	if len(b) > maxFlagsFile {
		return "", fmt.Errorf("XLA flags file %s is larger than %d bytes", path, maxFlagsFile)
	}
	return string(b), nil
}

// PluginSearchPaths returns the directories go-xla v0.1.4 searches for
// PJRT plugins: PJRT_PLUGIN_LIBRARY_PATH when set, else its default
// directories and LD_LIBRARY_PATH (it also reads /etc/ld.so.conf, which
// is left out here: the plugins it installs never go there).
func PluginSearchPaths(lookup func(string) (string, bool)) []string {
	if v, ok := lookup(EnvPluginPath); ok {
		var out []string
		for _, p := range strings.Split(v, ":") {
			if p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	var out []string
	if home, ok := lookup("HOME"); ok && home != "" {
		out = append(out, filepath.Join(home, ".local/lib/go-xla"), filepath.Join(home, ".local/lib/go-xla/nvidia"),
			filepath.Join(home, ".local/lib/gomlx/pjrt"))
	}
	out = append(out, "/usr/local/lib/go-xla", "/usr/local/lib/go-xla/nvidia", "/usr/local/lib/gomlx/pjrt")
	if v, ok := lookup("LD_LIBRARY_PATH"); ok {
		for _, p := range strings.Split(v, ":") {
			if filepath.IsAbs(p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// FindPlugin returns the file go-xla would load for plugin name, using
// its search path and file names (pjrt_c_api_<name>_plugin.so,
// pjrt-plugin-<name>.so, pjrt_plugin_<name>.so). An absolute name is
// returned as is.
func FindPlugin(name string, lookup func(string) (string, bool)) (string, bool) {
	if filepath.IsAbs(name) {
		return name, true
	}
	if strings.ContainsAny(name, `/\`) || name == "" || name == "." || name == ".." {
		return "", false
	}
	for _, dir := range PluginSearchPaths(lookup) {
		for _, pat := range []string{"pjrt_c_api_%s_plugin.so", "pjrt-plugin-%s.so", "pjrt_plugin_%s.so"} {
			p := filepath.Join(dir, fmt.Sprintf(pat, name))
			if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
				return p, true
			}
		}
	}
	return "", false
}

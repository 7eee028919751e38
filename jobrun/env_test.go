package jobrun

import (
	"fmt"
	"maps"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/xla"
)

// Exclusion lists of JAX's XLA_FLAGS hashing (jax-ml/jax
// jax/_src/cache_key.py, _hash_xla_flags / xla_flags_to_exclude_from_cache_key):
// older releases hash both autotune flags, later ones exclude
// --xla_gpu_experimental_autotune_cache_mode (with --xla_gpu_cuda_data_dir),
// the newest also --xla_gpu_per_fusion_autotune_cache_dir (three stored
// versions of the file read for this). Keys must agree under each.
var xlaFlagsExcluded = map[string][]string{
	"old":  {"--xla_dump_to", "--xla_force_host_platform_device_count"},
	"mode": {"--xla_dump_to", "--xla_force_host_platform_device_count", "--xla_gpu_cuda_data_dir", "--xla_gpu_experimental_autotune_cache_mode"},
	"new": {"--xla_dump_to", "--xla_force_host_platform_device_count",
		"--xla_gpu_experimental_autotune_cache_mode", "--xla_gpu_per_fusion_autotune_cache_dir"},
}

var (
	v0436 = mustVersion("0.4.36")
	v0110 = mustVersion("0.11.0")
)

func mustVersion(s string) xla.Version {
	v, err := xla.ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}

// jaxKeySettings models what a JAX process of release jax hashes into its
// cache key, launched with env as distributed process processID:
//   - the XLA_FLAGS text, split on whitespace, minus the exclusion list
//     (cache_key.py _hash_xla_flags);
//   - the compile options' debug options: XLA's defaults from XLA_FLAGS
//     (executable_build_options.cc mutable_debug_options), then what
//     compiler.py get_compile_options sets for jaxlib > 0.4.35 from
//     jax_persistent_cache_enable_xla_caches (a substring test) and
//     distributed.global_state.process_id, then what cache_key.py clears:
//     the autotune mode (since 0.4.36), the autotune directory (since
//     0.11.0).
//
// It also returns the autotune mode the process compiles with.
func jaxKeySettings(env map[string]string, processID int, jax xla.Version, excluded []string) (map[string]string, string) {
	h := map[string]string{}
	opts := map[string]string{}
	var kept []string
	// XLA reads the flags with its own parser (quotes and all) ...
	parsed, err := xla.ParseFlags(env[xla.EnvXLAFlags])
	if err != nil {
		panic(err)
	}
	for _, f := range parsed.Flags {
		opts[f.Name] = f.Value
	}
	// ... JAX hashes the text split on whitespace.
	for _, tok := range strings.Fields(env[xla.EnvXLAFlags]) {
		name, _, _ := strings.Cut(tok, "=")
		skip := false
		for _, e := range excluded {
			skip = skip || name == e
		}
		if !skip {
			kept = append(kept, tok)
		}
	}
	h["xla_flags"] = strings.Join(kept, " ")
	if dir := env[xla.EnvJAXCacheDir]; dir != "" && !jax.Less(v0436) {
		enabled := env[xla.EnvJAXXLACaches]
		if enabled == "all" || strings.Contains(enabled, xla.FlagKernelCacheFile) {
			opts[xla.FlagKernelCacheFile] = filepath.Join(dir, xla.FlagKernelCacheFile)
			if jax.Less(v0110) {
				opts[xla.FlagLLVMModuleParallelism] = "true"
			}
		}
		if enabled == "all" || strings.Contains(enabled, xla.FlagAutotuneCacheDir) {
			opts[xla.FlagAutotuneCacheDir] = filepath.Join(dir, xla.FlagAutotuneCacheDir)
			opts[xla.FlagAutotuneCacheMode] = xla.ModeRead
			if processID == 0 {
				opts[xla.FlagAutotuneCacheMode] = xla.ModeUpdate
			}
		}
	}
	mode := opts[xla.FlagAutotuneCacheMode]
	if opts[xla.FlagAutotuneCacheDir] == "" {
		mode = ""
	} else if mode == "" {
		mode = xla.ModeUpdate // XLA's default mode
	}
	delete(opts, xla.FlagAutotuneCacheMode)
	if !jax.Less(v0110) {
		delete(opts, xla.FlagAutotuneCacheDir)
	}
	for k, v := range opts {
		h["opt:"+k] = v
	}
	return h, mode
}

// TestKeysIdenticalAcrossProcesses: for every subcache choice and JAX
// release, every process of a job under exec (writer and readers, host
// leaders and not, jax.distributed or independent processes) hashes the
// same settings, and exactly the intended process runs the autotune cache
// in UPDATE mode.
func TestKeysIdenticalAcrossProcesses(t *testing.T) {
	type proc struct {
		index     int  // XLACACHE_PROCESS_INDEX
		processID int  // JAX's distributed process id
		leader    bool // the host's leader
	}
	scenarios := map[string][]proc{
		// One jax.distributed job over two hosts, two processes each.
		"distributed": {{0, 0, true}, {1, 1, false}, {2, 2, true}, {3, 3, false}},
		// Independent JAX processes on one host: each is process 0.
		"independent": {{0, 0, true}, {0, 0, false}, {0, 0, false}},
	}
	for _, subs := range []string{"autotune", "kernels", "all", "none"} {
		for _, ver := range []xla.Version{v0436, mustVersion("0.5.1"), mustVersion("0.10.2"), v0110} {
			for name, procs := range scenarios {
				for list, excluded := range xlaFlagsExcluded {
					t.Run(fmt.Sprintf("%s/%s/%s/%s", subs, ver, name, list), func(t *testing.T) {
						sc, err := config.ParseSubcaches(subs)
						if err != nil {
							t.Fatal(err)
						}
						var first map[string]string
						updates := 0
						for i, p := range procs {
							opts := config.Options{Dir: "/node/cache dir", Subcaches: sc, SubcachesExplicit: true, ProcessIndex: p.index}
							writer := p.leader && opts.Writer()
							l, err := launchFor(opts, "", xla.TargetAll, xla.SupportForVersion(ver, xla.SourceVersion), "--xla_gpu_autotune_level=2", writer)
							if err != nil {
								t.Fatal(err)
							}
							env := map[string]string{xla.EnvXLAFlags: "--xla_gpu_autotune_level=2"}
							for _, v := range l.Vars {
								env[v.Name] = v.Value
							}
							got, mode := jaxKeySettings(env, p.processID, ver, excluded)
							if !strings.Contains(env[xla.EnvXLAFlags], "--xla_gpu_autotune_level=2") {
								t.Errorf("process %d: the user's XLA_FLAGS lost: %q", i, env[xla.EnvXLAFlags])
							}
							if mode == xla.ModeUpdate {
								updates++
								if !writer {
									t.Errorf("process %d (index %d, leader %v) runs autotune in UPDATE", i, p.index, p.leader)
								}
							}
							if first == nil {
								first = got
							} else if !maps.Equal(first, got) {
								t.Errorf("process %d hashes\n%v\nprocess 0 hashes\n%v", i, got, first)
							}
						}
						// One writer per job (distributed: process 0; host
						// leaders elsewhere read) or per host (independent).
						wantUpdates := 0
						if subs == "autotune" || subs == "all" {
							wantUpdates = 1
						}
						if updates != wantUpdates {
							t.Errorf("%d processes in UPDATE mode, want %d", updates, wantUpdates)
						}
					})
				}
			}
		}
	}
}

// TestLaunchForLeavesUserAutotuneFlags: autotune settings the user put in
// XLA_FLAGS are not overridden, and XLA_FLAGS naming a file is left alone.
func TestLaunchForLeavesUserAutotuneFlags(t *testing.T) {
	sc, _ := config.ParseSubcaches("all")
	opts := config.Options{Dir: "/c", Subcaches: sc, SubcachesExplicit: true}
	sup := xla.SupportForVersion(xla.DefaultVersion, xla.SourceDefault)
	for _, existing := range []string{"--xla_gpu_experimental_autotune_cache_mode=AUTOTUNE_CACHE_MODE_UPDATE", "/path/to/flagfile"} {
		l, err := launchFor(opts, "", xla.TargetAll, sup, existing, false)
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range l.Vars {
			if v.Name == xla.EnvXLAFlags {
				t.Errorf("XLA_FLAGS=%q set over %q", v.Value, existing)
			}
			if v.Name == xla.EnvJAXXLACaches && v.Value != "all" {
				t.Errorf("%s=%q, want JAX's own arrangement", v.Name, v.Value)
			}
		}
	}
}

// TestLaunchForGoSecondWriter: for a Go program, a writer that is not its
// host's autotune writer reads (role and XLA_FLAGS mode).
func TestLaunchForGoSecondWriter(t *testing.T) {
	sc, _ := config.ParseSubcaches("autotune")
	opts := config.Options{Dir: "/c", Subcaches: sc, SubcachesExplicit: true}
	sup := xla.SupportForVersion(xla.DefaultVersion, xla.SourceDefault)
	for _, writer := range []bool{true, false} {
		l, err := launchFor(opts, "", xla.TargetGo, sup, "", writer)
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{}
		for _, v := range l.Vars {
			env[v.Name] = v.Value
		}
		wantMode, wantRole := xla.ModeRead, config.RoleReader.String()
		if writer {
			wantMode, wantRole = xla.ModeUpdate, config.RoleAuto.String()
		}
		if !strings.Contains(env[xla.EnvXLAFlags], wantMode) || env[config.EnvRole] != wantRole {
			t.Errorf("writer %v: XLA_FLAGS %q, role %q", writer, env[xla.EnvXLAFlags], env[config.EnvRole])
		}
	}
}

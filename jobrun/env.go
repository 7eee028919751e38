package jobrun

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/xla"
)

// One autotune writer per host.
//
// JAX runs XLA's autotune cache in UPDATE mode on every process whose
// distributed.global_state.process_id is 0 (jax-ml/jax
// jax/_src/compiler.py get_compile_options, @cec06d1), so several
// independent JAX processes on one host (sweeps, evaluation actors, one
// process per GPU without jax.distributed) all write the same autotune
// directory. Under exec only the host's leader may: every process gets
// the same XLA_FLAGS naming the autotune directory with mode READ, and
// only the leader keeps the autotune cache in JAX's
// JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES, so that JAX sets the directory
// and UPDATE over those defaults for it alone; the other processes keep
// the defaults XLA_FLAGS gives (READ).
//
// JAX's key stays identical across them:
//   - Compile options: JAX builds them from
//     ExecutableBuildOptions.debug_options, which XLA fills from XLA_FLAGS
//     on first use (openxla/xla xla/client/executable_build_options.cc,
//     mutable_debug_options: GetDebugOptionsFromFlags()). Every process so
//     carries the same xla_gpu_per_fusion_autotune_cache_dir, the path
//     JAX itself would set; the mode differs, and JAX clears it from the
//     key (cache_key.py, since jaxlib 0.4.36).
//   - XLA_FLAGS: JAX also hashes the variable's text minus an exclusion
//     list (cache_key.py _hash_xla_flags); newer releases exclude both
//     flags, older ones hash them, and the text is identical on every
//     process of the job either way.
//
// Not covered: the job's keys then differ from those of runs of the same
// program without exec (XLA_FLAGS differs), for the JAX releases that hash
// these two flags; and the process JAX gives UPDATE must be exec's
// leader, which it is unless the job uses jax.distributed with a process
// 0 that is not its host's local rank 0.

// launchFor returns the environment for a process under exec: what
// `xlacache env` prints for opts and target, with the one-writer-per-host
// arrangement above when autotuneWriter says whether this process is its
// host's autotune writer. sup is what the target XLA knows (the autotune
// flags are put in XLA_FLAGS only when it knows both). jaxDir is the path
// JAX is given for opts.Dir (JAX_COMPILATION_CACHE_DIR and the autotune
// directory under it): the same on every host of a job (jaxview.go).
func launchFor(opts config.Options, jaxDir string, target xla.Target, sup xla.Support, existingFlags string, autotuneWriter bool) (xla.Launch, error) {
	if target == xla.TargetGo && !autotuneWriter && opts.Writer() {
		// A Go program picks the mode from its role (xla.Prepare, or the
		// XLA_FLAGS LaunchEnv writes): a second writer on the host reads.
		opts.Role = config.RoleReader
	}
	l, err := xla.LaunchEnv(opts, target, sup, existingFlags)
	if err != nil || target == xla.TargetGo {
		return l, err
	}
	for i, v := range l.Vars {
		if v.Name == xla.EnvJAXCacheDir && jaxDir != "" && jaxDir != opts.Dir {
			l.Vars[i].Value = jaxDir
			l.Vars[i].Comment = "a link to " + opts.Dir + " whose path is the same on every host: JAX hashes paths under it into its keys"
		}
	}
	if jaxDir == "" {
		jaxDir = opts.Dir
	}
	if !opts.HasSubcache(config.SubcacheAutotune) {
		return l, nil
	}
	if !sup.Knows(xla.FlagAutotuneCacheDir) || !sup.Knows(xla.FlagAutotuneCacheMode) {
		return l, nil
	}
	merged, err := xla.MergeFlags(existingFlags, []xla.Flag{
		{Name: xla.FlagAutotuneCacheDir, Value: filepath.Join(jaxDir, xla.FlagAutotuneCacheDir), HasValue: true},
		{Name: xla.FlagAutotuneCacheMode, Value: xla.ModeRead, HasValue: true},
	})
	if errors.Is(err, xla.ErrFlagsFile) {
		return l, nil // flags in a file: left as they are, JAX's arrangement applies
	}
	if err != nil {
		return l, fmt.Errorf("merge with %s: %w", xla.EnvXLAFlags, err)
	}
	if len(merged.Conflicts) > 0 {
		// The user chose the autotune settings in XLA_FLAGS: leave JAX's
		// arrangement alone rather than half-override it.
		return l, nil
	}
	l.Vars = append(l.Vars, xla.EnvVar{Name: xla.EnvXLAFlags, Value: merged.Value,
		Comment: "the same on every process: the autotune directory JAX would set, READ unless JAX sets UPDATE (the host's autotune writer only)"})
	if !autotuneWriter {
		for i, v := range l.Vars {
			if v.Name == xla.EnvJAXXLACaches {
				subs := make([]config.Subcache, 0, len(opts.Subcaches))
				for _, s := range opts.Subcaches {
					if s != config.SubcacheAutotune {
						subs = append(subs, s)
					}
				}
				l.Vars[i].Value = xla.JAXXLACachesValue(subs)
				l.Vars[i].Comment = "autotune left to XLA_FLAGS (READ): another process is this host's autotune writer"
			}
		}
	}
	return l, nil
}

// environ applies l's variables to base (KEY=VALUE strings), replacing
// variables already set.
func environ(base []string, l xla.Launch) []string {
	set := map[string]string{}
	order := []string{}
	for _, v := range l.Vars {
		if _, ok := set[v.Name]; !ok {
			order = append(order, v.Name)
		}
		set[v.Name] = v.Value
	}
	out := make([]string, 0, len(base)+len(order))
	for _, kv := range base {
		k, _, _ := strings.Cut(kv, "=")
		if _, ok := set[k]; ok {
			continue
		}
		out = append(out, kv)
	}
	for _, k := range order {
		out = append(out, k+"="+set[k])
	}
	return out
}

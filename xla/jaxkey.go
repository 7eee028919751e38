package xla

import (
	"path/filepath"
	"strings"
)

// JAX releases at which the JAX-side handling of XLA's cache options
// changed (jax-ml/jax @cec06d1, 2026-08-08, jax/_src/compiler.py and
// cache_key.py; ../shared/design.md §1 and §4).
var (
	// jaxXLACachesFrom: JAX sets XLA's cache options only for jaxlib >
	// 0.4.35, and from then on clears the autotune mode from its key.
	jaxXLACachesFrom = Version{0, 4, 36}
	// jaxAutotuneDirExcludedFrom: JAX clears the autotune directory from
	// its key, and stops setting
	// xla_gpu_enable_llvm_module_compilation_parallelism.
	jaxAutotuneDirExcludedFrom = Version{0, 11, 0}
)

// JAXHashedSettings models, for one process, the cache-relevant settings a
// JAX process of the given release would hash into its cache key when
// launched with env (the variables a launch environment sets) as process
// processIndex of its job. The result maps "env:NAME" for every JAX_*
// variable and XLA_FLAGS, and "opt:FLAG" for each XLA cache option JAX
// sets in the compile options and does not exclude from the key:
//
//   - xla_gpu_kernel_cache_file: given to every process; hashed (the
//     serialized compile options keep it).
//   - xla_gpu_enable_llvm_module_compilation_parallelism: set with the
//     kernel cache by jax 0.4.36–0.10.x; hashed.
//   - xla_gpu_per_fusion_autotune_cache_dir: hashed before jax 0.11.0,
//     excluded since.
//   - xla_gpu_experimental_autotune_cache_mode: UPDATE on process 0, READ
//     elsewhere; excluded since jaxlib 0.4.36.
//
// Two processes of one job share JAX cache entries only if their results
// are equal. Like JAX, the subcache choice is read with a substring test.
func JAXHashedSettings(env []EnvVar, processIndex int, jax Version) map[string]string {
	h := map[string]string{}
	var dir, enable string
	for _, v := range env {
		if strings.HasPrefix(v.Name, "JAX_") || v.Name == EnvXLAFlags {
			h["env:"+v.Name] = v.Value
		}
		switch v.Name {
		case EnvJAXCacheDir:
			dir = v.Value
		case EnvJAXXLACaches:
			enable = v.Value
		}
	}
	if dir == "" || jax.Less(jaxXLACachesFrom) {
		return h
	}
	opts := map[string]string{}
	if enable == "all" || strings.Contains(enable, FlagKernelCacheFile) {
		opts[FlagKernelCacheFile] = filepath.Join(dir, FlagKernelCacheFile)
		if jax.Less(jaxAutotuneDirExcludedFrom) {
			opts[FlagLLVMModuleParallelism] = "true"
		}
	}
	if enable == "all" || strings.Contains(enable, FlagAutotuneCacheDir) {
		opts[FlagAutotuneCacheDir] = filepath.Join(dir, FlagAutotuneCacheDir)
		opts[FlagAutotuneCacheMode] = ModeRead
		if processIndex == 0 {
			opts[FlagAutotuneCacheMode] = ModeUpdate
		}
	}
	// JAX's exclusions from the key.
	delete(opts, FlagAutotuneCacheMode)
	if !jax.Less(jaxAutotuneDirExcludedFrom) {
		delete(opts, FlagAutotuneCacheDir)
	}
	for k, v := range opts {
		h["opt:"+k] = v
	}
	return h
}

package xla

import (
	"reflect"
	"testing"

	"github.com/xlacache/xlacache/config"
)

// TestJAXKeySettingsAgreeAcrossProcesses: for every subcache choice, the
// settings JAX hashes (JAXHashedSettings applies JAX's exclusion rules:
// autotune mode excluded since jaxlib 0.4.36, autotune directory since jax
// 0.11.0, kernel cache file and, in 0.4.36–0.10.x, the LLVM parallelism
// flag hashed) are identical for the writer and every reader of one job.
func TestJAXKeySettingsAgreeAcrossProcesses(t *testing.T) {
	dir := "/shared/xla cache"
	choices := map[string][]config.Subcache{
		"none":     nil,
		"autotune": {config.SubcacheAutotune},
		"kernels":  {config.SubcacheKernels},
		"all":      {config.SubcacheAutotune, config.SubcacheKernels},
	}
	versions := []Version{{0, 4, 35}, {0, 4, 36}, {0, 5, 0}, {0, 10, 9}, {0, 11, 0}, {0, 11, 1}}
	// Processes of one job: index and xlacache role. The role may be forced
	// (XLACACHE_ROLE); JAX still picks its autotune mode by process index.
	procs := []struct {
		index int
		role  config.Role
	}{{0, config.RoleAuto}, {1, config.RoleAuto}, {7, config.RoleAuto}, {0, config.RoleReader}, {3, config.RoleWriter}}
	for name, subs := range choices {
		for _, explicit := range []bool{true, false} {
			for _, target := range []Target{TargetAll, TargetJAX} {
				for _, v := range versions {
					var first map[string]string
					for _, p := range procs {
						o := opts(dir, p.index, p.role, subs...)
						o.SubcachesExplicit = explicit
						l, err := LaunchEnv(o, target, Support{}, "")
						if err != nil {
							t.Fatal(err)
						}
						for _, s := range l.Skipped {
							if s.Flag == FlagKernelCacheFile {
								t.Errorf("%s %s process %d: kernel cache skipped: %s", name, target, p.index, s.Reason)
							}
						}
						h := JAXHashedSettings(l.Vars, p.index, v)
						if first == nil {
							first = h
							// Not vacuous: the kernel cache is hashed where JAX sets it.
							_, hasKC := h["opt:"+FlagKernelCacheFile]
							wantKC := (name == "kernels" || name == "all") && !v.Less(Version{0, 4, 36})
							if hasKC != wantKC {
								t.Errorf("%s jax %s: kernel cache hashed %v, want %v: %v", name, v, hasKC, wantKC, h)
							}
							_, hasLLVM := h["opt:"+FlagLLVMModuleParallelism]
							if hasLLVM != (wantKC && v.Less(Version{0, 11, 0})) {
								t.Errorf("%s jax %s: LLVM parallelism hashed %v: %v", name, v, hasLLVM, h)
							}
							continue
						}
						if !reflect.DeepEqual(h, first) {
							t.Errorf("subcaches %s (explicit %v), target %s, jax %s: process %d (%v) hashes\n %v\nprocess 0 hashes\n %v",
								name, explicit, target, v, p.index, p.role, h, first)
						}
					}
				}
			}
		}
	}
}

// TestJAXHashedSettingsExclusions checks the model itself: the autotune mode
// differs between processes but is never hashed, and the autotune directory
// is hashed only before jax 0.11.0.
func TestJAXHashedSettingsExclusions(t *testing.T) {
	env := []EnvVar{{EnvJAXCacheDir, "/d", ""}, {EnvJAXXLACaches, "all", ""}}
	for _, tc := range []struct {
		v       Version
		wantDir bool
	}{{Version{0, 4, 36}, true}, {Version{0, 10, 0}, true}, {Version{0, 11, 0}, false}} {
		h := JAXHashedSettings(env, 1, tc.v)
		if _, ok := h["opt:"+FlagAutotuneCacheMode]; ok {
			t.Errorf("jax %s: mode hashed", tc.v)
		}
		if _, ok := h["opt:"+FlagAutotuneCacheDir]; ok != tc.wantDir {
			t.Errorf("jax %s: autotune dir hashed %v, want %v", tc.v, ok, tc.wantDir)
		}
	}
	// A launch that gave the kernel cache to process 0 only (the old
	// behaviour) splits the key.
	w := JAXHashedSettings(env, 0, Version{0, 5, 0})
	r := JAXHashedSettings([]EnvVar{env[0], {EnvJAXXLACaches, FlagAutotuneCacheDir, ""}}, 1, Version{0, 5, 0})
	if reflect.DeepEqual(w, r) {
		t.Error("model does not see a kernel cache given to the writer only")
	}
}

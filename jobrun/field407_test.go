package jobrun

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/xla"
)

// probedSupport writes a file shaped like an XLA plugin that registers
// every flag xlacache knows, xla_gpu_experimental_autotuner_cache_dir
// (field 407) included, and probes it.
func probedSupport(t *testing.T) xla.Support {
	t.Helper()
	var b strings.Builder
	b.WriteString("\x7fELF")
	for _, n := range []string{"xla_dump_to", xla.FlagAutotuneCacheDir, xla.FlagAutotuneCacheMode,
		xla.FlagKernelCacheFile, xla.FlagLLVMModuleParallelism, xla.FlagAutotunerCacheDir} {
		b.WriteString("\x00" + n + "\x00")
	}
	p := filepath.Join(t.TempDir(), "plugin.so")
	if err := os.WriteFile(p, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	sup, err := xla.ProbePlugin(context.Background(), p)
	if err != nil {
		t.Fatal(err)
	}
	if !sup.Knows(xla.FlagAutotunerCacheDir) {
		t.Fatalf("probe: %s", sup)
	}
	return sup
}

// TestKeysIdenticalAcrossProcessesProbed407 extends
// TestKeysIdenticalAcrossProcesses to a probed XLA that registers field
// 407: JAX hashes 407 (jax-ml/jax jax/_src/cache_key.py clears it in no
// stored version), so a JAX launch under exec never carries it, and every
// process still hashes the same settings. A Go launch carries it, with the
// same bytes on every process.
func TestKeysIdenticalAcrossProcessesProbed407(t *testing.T) {
	sup := probedSupport(t)
	procs := []struct {
		index, processID int
		leader           bool
	}{{0, 0, true}, {1, 1, false}, {2, 2, true}, {3, 3, false}}
	for _, subs := range []string{"autotune", "kernels", "all", "none"} {
		for _, ver := range []xla.Version{v0436, mustVersion("0.10.2"), v0110} {
			for list, excluded := range xlaFlagsExcluded {
				t.Run(fmt.Sprintf("%s/%s/%s", subs, ver, list), func(t *testing.T) {
					sc, err := config.ParseSubcaches(subs)
					if err != nil {
						t.Fatal(err)
					}
					var first map[string]string
					var go407, goKey string
					for i, p := range procs {
						opts := config.Options{Dir: "/node/cache dir", Subcaches: sc, SubcachesExplicit: true, ProcessIndex: p.index}
						writer := p.leader && opts.Writer()
						l, err := launchFor(opts, "", xla.TargetAll, sup, "", writer)
						if err != nil {
							t.Fatal(err)
						}
						env := map[string]string{}
						for _, v := range l.Vars {
							env[v.Name] = v.Value
						}
						if strings.Contains(env[xla.EnvXLAFlags], xla.FlagAutotunerCacheDir) {
							t.Errorf("process %d: JAX launch carries 407: %q", i, env[xla.EnvXLAFlags])
						}
						got, _ := jaxKeySettings(env, p.processID, ver, excluded)
						if first == nil {
							first = got
						} else if !maps.Equal(first, got) {
							t.Errorf("process %d hashes\n%v\nprocess 0 hashes\n%v", i, got, first)
						}
						g, err := launchFor(opts, "", xla.TargetGo, sup, "", writer)
						if err != nil {
							t.Fatal(err)
						}
						var flags string
						for _, v := range g.Vars {
							if v.Name == xla.EnvXLAFlags {
								flags = v.Value
							}
						}
						pf, err := xla.ParseFlags(flags)
						if err != nil {
							t.Fatal(err)
						}
						f, ok := pf.Lookup(xla.FlagAutotunerCacheDir)
						if want := subs == "autotune" || subs == "all"; ok != want {
							t.Fatalf("process %d (go): 407 present %v, want %v: %q", i, ok, want, flags)
						}
						key, err := xla.NormalizeFlagsForKey(flags)
						if err != nil {
							t.Fatal(err)
						}
						if i == 0 {
							go407, goKey = f.String(), key
						} else {
							if f.String() != go407 {
								t.Errorf("process %d (go): %q, process 0 %q", i, f.String(), go407)
							}
							// xlacache's own key: the same for every process.
							if key != goKey {
								t.Errorf("process %d (go) keys XLA_FLAGS as %q, process 0 as %q", i, key, goKey)
							}
						}
					}
				})
			}
		}
	}
}

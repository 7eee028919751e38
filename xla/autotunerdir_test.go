package xla

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
)

// allLiterals are the names a current XLA plugin registers as flags.
var allLiterals = []string{probeAnchor, FlagAutotuneCacheDir, FlagAutotuneCacheMode, FlagKernelCacheFile, FlagLLVMModuleParallelism}

// TestAutotunerDirGate: field 407 is known only from a probed plugin that
// registers it as a flag, never from a stated or assumed release; when it
// is known it follows the per-fusion directory exactly (same value, same
// processes), and the mode flag keeps readers read-only.
func TestAutotunerDirGate(t *testing.T) {
	ctx := context.Background()
	probe := func(t *testing.T, literals, descriptorOnly []string) Support {
		t.Helper()
		s, err := ProbePlugin(ctx, fakePlugin(t, 64, literals, descriptorOnly))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	with407 := append(append([]string(nil), allLiterals...), FlagAutotunerCacheDir)
	const d = "/cache dir"
	A, K := config.SubcacheAutotune, config.SubcacheKernels
	dirFlag := FlagAutotuneCacheDir + "=" + AutotuneDir(d)
	newFlag := FlagAutotunerCacheDir + "=" + AutotuneDir(d)
	tests := []struct {
		name   string
		sup    func(t *testing.T) Support
		knows  bool
		writer string // names(CacheFlags) for the writer, autotune only
		reader string // and for a reader
	}{
		{"probed plugin registering 407", func(t *testing.T) Support { return probe(t, with407, nil) }, true,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeUpdate + " " + newFlag,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeRead + " " + newFlag},
		{"probed plugin without 407", func(t *testing.T) Support { return probe(t, allLiterals, nil) }, false,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeUpdate,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeRead},
		// The field in the embedded descriptor (length-prefixed) or in a
		// qualified UTF-8 check name is no registration.
		{"407 only in the protobuf descriptor", func(t *testing.T) Support {
			return probe(t, append(append([]string(nil), allLiterals...), "xla.DebugOptions."+FlagAutotunerCacheDir), []string{FlagAutotunerCacheDir})
		}, false,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeUpdate,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeRead},
		{"407 but no mode flag: readers get nothing", func(t *testing.T) Support {
			return probe(t, []string{probeAnchor, FlagAutotuneCacheDir, FlagAutotunerCacheDir}, nil)
		}, true, dirFlag + " " + newFlag, ""},
		{"407 but no per-fusion flag: nothing", func(t *testing.T) Support {
			return probe(t, []string{probeAnchor, FlagAutotuneCacheMode, FlagAutotunerCacheDir}, nil)
		}, true, "", ""},
		{"default release", func(*testing.T) Support { return SupportForVersion(DefaultVersion, SourceDefault) }, false,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeUpdate,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeRead},
		{"old release", func(*testing.T) Support { return SupportForVersion(Version{0, 4, 35}, SourceVersion) }, false, "", ""},
	}
	for _, v := range []string{"0.4.36", "0.5.0", "0.6.2", "0.7.2", "0.8.1", "0.10.2", "0.11.0", "0.20.0", "1.0.0"} {
		ver, err := ParseVersion(v)
		if err != nil {
			t.Fatal(err)
		}
		tests = append(tests, struct {
			name   string
			sup    func(t *testing.T) Support
			knows  bool
			writer string
			reader string
		}{"stated jaxlib " + v, func(*testing.T) Support { return SupportForVersion(ver, SourceVersion) }, false,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeUpdate,
			dirFlag + " " + FlagAutotuneCacheMode + "=" + ModeRead})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sup := tc.sup(t)
			if sup.Knows(FlagAutotunerCacheDir) != tc.knows {
				t.Fatalf("Knows(%s) = %v, want %v (%s)", FlagAutotunerCacheDir, !tc.knows, tc.knows, sup)
			}
			w, _ := CacheFlags(opts(d, 0, config.RoleAuto, A), sup)
			r, _ := CacheFlags(opts(d, 3, config.RoleAuto, A), sup)
			if names(w) != tc.writer {
				t.Errorf("writer: %q\nwant     %q", names(w), tc.writer)
			}
			if names(r) != tc.reader {
				t.Errorf("reader: %q\nwant     %q", names(r), tc.reader)
			}
			// Without the autotune subcache, 407 is never set.
			k, _ := CacheFlags(opts(d, 0, config.RoleAuto, K), sup)
			if strings.Contains(names(k), FlagAutotunerCacheDir) {
				t.Errorf("kernels only: %q", names(k))
			}
		})
	}
	// A release number never reaches a probe-only flag, and a probe-only
	// flag is in no release table.
	for _, f := range ProbeOnlyFlags {
		for _, tf := range Flags {
			if tf.Name == f.Name {
				t.Errorf("%s is both in Flags and ProbeOnlyFlags", f.Name)
			}
		}
	}
}

// cacheRelevant returns the cache flags of an XLA_FLAGS value as name ->
// value (the last occurrence, as XLA applies it).
func cacheRelevant(t *testing.T, xlaFlags string) map[string]string {
	t.Helper()
	p, err := ParseFlags(xlaFlags)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, f := range p.Flags {
		out[f.Name] = f.String()
	}
	return out
}

// TestAutotunerDirIdenticalAcrossProcesses: every process of one job (the
// writer, readers, forced roles) that gets field 407 gets byte-identical
// text for it, equal to its per-fusion directory, and the only autotune
// setting that differs by role is the mode; xlacache's key text for the
// autotune subcache is identical across them.
func TestAutotunerDirIdenticalAcrossProcesses(t *testing.T) {
	sup, err := ProbePlugin(context.Background(), fakePlugin(t, 64, append(append([]string(nil), allLiterals...), FlagAutotunerCacheDir), nil))
	if err != nil {
		t.Fatal(err)
	}
	type proc struct {
		index int
		role  config.Role
	}
	procs := []proc{{0, config.RoleAuto}, {1, config.RoleAuto}, {2, config.RoleReader}, {0, config.RoleReader}, {5, config.RoleWriter}}
	for _, subs := range []string{"autotune", "kernels", "all", "none"} {
		for _, user := range []string{"", "--xla_gpu_autotune_level=2", `--xla_gpu_per_fusion_autotune_cache_dir="/shared/at dir"`} {
			t.Run(fmt.Sprintf("%s/%q", subs, user), func(t *testing.T) {
				sc, err := config.ParseSubcaches(subs)
				if err != nil {
					t.Fatal(err)
				}
				var first map[string]string
				var firstKey string
				for i, p := range procs {
					o := config.Options{Dir: "/node/cache dir", Subcaches: sc, SubcachesExplicit: true, ProcessIndex: p.index, Role: p.role}
					l, err := LaunchEnv(o, TargetGo, sup, user)
					if err != nil {
						t.Fatal(err)
					}
					flags := user
					for _, v := range l.Vars {
						if v.Name == EnvXLAFlags {
							flags = v.Value
						}
					}
					got := cacheRelevant(t, flags)
					hasAutotune := subs == "autotune" || subs == "all"
					if _, ok := got[FlagAutotunerCacheDir]; ok != hasAutotune {
						t.Fatalf("process %d: 407 present %v, want %v: %q", i, ok, hasAutotune, flags)
					}
					if hasAutotune {
						// 407 names exactly the directory XLA's per-fusion
						// cache uses in this process (the user's if set).
						dir, _ := ParseFlags(flags)
						d310, _ := dir.Lookup(FlagAutotuneCacheDir)
						d407, _ := dir.Lookup(FlagAutotunerCacheDir)
						if d310.Value != d407.Value || d407.Value == "" {
							t.Errorf("process %d: 407=%q, per-fusion dir %q", i, d407.Value, d310.Value)
						}
					}
					key, err := NormalizeFlagsForKey(flags)
					if err != nil {
						t.Fatal(err)
					}
					if first == nil {
						first, firstKey = got, key
						continue
					}
					for _, name := range []string{FlagAutotuneCacheDir, FlagAutotunerCacheDir} {
						if got[name] != first[name] {
							t.Errorf("process %d: %s %q, process 0 %q", i, name, got[name], first[name])
						}
					}
					// Every choice: readers get no kernel cache, but the
					// compile option that goes with it
					// (xla_gpu_enable_llvm_module_compilation_parallelism,
					// which NormalizeFlagsForKey keeps) as the writer does.
					if key != firstKey {
						t.Errorf("process %d key text %q, process 0 %q", i, key, firstKey)
					}
				}
			})
		}
	}
}

// TestFollowUserAutotuneDir: the user's per-fusion directory in XLA_FLAGS
// wins, and 407 follows it; a 407 the user set is theirs (a conflict).
func TestFollowUserAutotuneDir(t *testing.T) {
	want := []Flag{
		{Name: FlagAutotuneCacheDir, Value: "/c/a", HasValue: true},
		{Name: FlagAutotuneCacheMode, Value: ModeRead, HasValue: true},
		{Name: FlagAutotunerCacheDir, Value: "/c/a", HasValue: true},
	}
	tests := []struct {
		existing string
		want407  string // "" = absent
		conflict bool
	}{
		{"", "/c/a", false},
		{"--xla_gpu_autotune_level=2", "/c/a", false},
		{`--xla_gpu_per_fusion_autotune_cache_dir="/u ser"`, "/u ser", false},
		{`--xla_gpu_per_fusion_autotune_cache_dir=/x --xla_gpu_per_fusion_autotune_cache_dir=/y`, "/y", false},
		{"--xla_gpu_per_fusion_autotune_cache_dir=", "", false},
		{"--xla_gpu_experimental_autotuner_cache_dir=/mine", "/mine", true},
		{"/a/flag/file", "/c/a", false}, // not parsed here; MergeFlags refuses it
	}
	for _, tc := range tests {
		got := FollowUserAutotuneDir(tc.existing, want)
		if want[2].Value != "/c/a" {
			t.Fatal("want was modified in place")
		}
		m, err := MergeFlags(tc.existing, got)
		if tc.existing == "/a/flag/file" {
			if err == nil {
				t.Error("a flags file was merged")
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		p, _ := ParseFlags(m.Value)
		f, ok := p.Lookup(FlagAutotunerCacheDir)
		if (tc.want407 != "") != ok || f.Value != tc.want407 {
			t.Errorf("XLA_FLAGS %q -> %q: 407 %q (%v), want %q", tc.existing, m.Value, f.Value, ok, tc.want407)
		}
		hasConflict := false
		for _, c := range m.Conflicts {
			hasConflict = hasConflict || c.Want.Name == FlagAutotunerCacheDir
		}
		if hasConflict != tc.conflict {
			t.Errorf("XLA_FLAGS %q: 407 conflict %v, want %v", tc.existing, hasConflict, tc.conflict)
		}
	}
}

// TestPrepareProbedAutotunerDir: Prepare with a plugin file that
// registers 407 gives the writer and a reader the same 407 text, the
// writer UPDATE and the reader READ; a JAX launch environment never
// carries 407 (JAX hashes it).
func TestPrepareProbedAutotunerDir(t *testing.T) {
	ctx := context.Background()
	plugin := fakePlugin(t, 64, append(append([]string(nil), allLiterals...), FlagAutotunerCacheDir), nil)
	dir := filepath.Join(t.TempDir(), "cache")
	var texts []string
	for _, index := range []int{0, 1} {
		env := fakeEnv{EnvXLAVersion: "0.4.36"} // the probe wins over a stated version
		p, err := Prepare(ctx, opts(dir, index, config.RoleAuto, config.SubcacheAutotune), PrepareOptions{Plugin: plugin, LookupEnv: env.lookup, Setenv: env.set})
		if err != nil {
			t.Fatal(err)
		}
		if p.Support.Source != SourcePlugin {
			t.Fatalf("support %s", p.Support)
		}
		pf, _ := ParseFlags(env[EnvXLAFlags])
		f, ok := pf.Lookup(FlagAutotunerCacheDir)
		if !ok || f.Value != AutotuneDir(dir) {
			t.Fatalf("process %d: XLA_FLAGS=%q", index, env[EnvXLAFlags])
		}
		texts = append(texts, f.String())
		mode, _ := pf.Lookup(FlagAutotuneCacheMode)
		if want := map[int]string{0: ModeUpdate, 1: ModeRead}[index]; mode.Value != want {
			t.Errorf("process %d: mode %q, want %q", index, mode.Value, want)
		}
	}
	if texts[0] != texts[1] {
		t.Errorf("writer %q, reader %q", texts[0], texts[1])
	}
	sup, err := ProbePlugin(ctx, plugin)
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []Target{TargetAll, TargetJAX} {
		l, err := LaunchEnv(opts(dir, 1, config.RoleAuto, config.SubcacheAutotune), target, sup, "")
		if err != nil {
			t.Fatal(err)
		}
		for _, v := range l.Vars {
			if strings.Contains(v.Value, FlagAutotunerCacheDir) {
				t.Errorf("target %s: %s=%q", target, v.Name, v.Value)
			}
		}
	}
}

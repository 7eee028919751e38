package jaxtest_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
)

// trainResult is what testdata/train.py prints.
type trainResult struct {
	JAX    string         `json:"jax"`
	Events map[string]int `json:"events"`
	Keys   []struct {
		Module string `json:"module"`
		Key    string `json:"key"`
		Hit    bool   `json:"hit"`
	} `json:"keys"`
	Losses          []string `json:"losses"`
	FinalLoss       string   `json:"final_loss"`
	ParamsSHA256    string   `json:"params_sha256"`
	FirstStepS      float64  `json:"first_step_s"`
	TotalS          float64  `json:"total_s"`
	CacheDir        string   `json:"cache_dir"`
	EnableXLACaches string   `json:"enable_xla_caches"`
	XLAFlags        string   `json:"xla_flags"`
}

// hits and misses count the lookups JAX logged.
func (r trainResult) hits() (hits, misses int) {
	for _, k := range r.Keys {
		if k.Hit {
			hits++
		} else {
			misses++
		}
	}
	return hits, misses
}

// keySet is the set of keys JAX computed.
func (r trainResult) keySet() map[string]bool {
	m := map[string]bool{}
	for _, k := range r.Keys {
		m[k.Key] = true
	}
	return m
}

// keyOfModule is the first key JAX computed for module.
func (r trainResult) keyOfModule(module string) string {
	for _, k := range r.Keys {
		if k.Module == module {
			return k.Key
		}
	}
	return ""
}

// same says how two runs' numbers differ, "" when bit-identical.
func (r trainResult) same(o trainResult) string {
	if r.ParamsSHA256 != o.ParamsSHA256 || r.FinalLoss != o.FinalLoss || strings.Join(r.Losses, ",") != strings.Join(o.Losses, ",") {
		return fmt.Sprintf("params %s / %s, losses %v %s / %v %s", r.ParamsSHA256, o.ParamsSHA256, r.Losses, r.FinalLoss, o.Losses, o.FinalLoss)
	}
	return ""
}

// trainArgs are the test's model: small, so it compiles fast.
var trainArgs = []string{"--layers", "3", "--width", "32", "--steps", "5"}

// parseTrain reads train.py's line from a finished run.
func parseTrain(r run) (trainResult, error) {
	var res trainResult
	if r.err != nil || r.exitCode != 0 {
		return res, fmt.Errorf("exit %d %v\nstderr: %s", r.exitCode, r.err, tail(r.stderr, 3000))
	}
	if err := line(r.stdout, "JAXTEST_TRAIN", &res); err != nil {
		return res, fmt.Errorf("%v\nstdout: %s\nstderr: %s", err, tail(r.stdout, 2000), tail(r.stderr, 2000))
	}
	return res, nil
}

// execEnv is the environment of a process under exec on a host whose
// directory is dir, for the test's runs (every compile stored).
func execEnv(dir string, extra ...string) []string {
	return cleanEnv(append([]string{"XLACACHE_DIR=" + dir, "XLACACHE_MIN_COMPILE_TIME_SECS=0", "XLACACHE_MIN_ENTRY_SIZE_BYTES=0"}, extra...)...)
}

// TestEveryHostWarm is issue 21's test 3: host A runs a real JAX training
// loop (an MLP; init, train step, eval and predict jitted, five steps)
// under `xlacache exec`, cold; host B, with another directory (another
// path) and the same bucket, runs it under exec and every jitted function
// hits JAX's persistent cache, counted from JAX itself (its hit and miss
// logs and jax.monitoring events), with bit-identical parameters and
// losses. The hosts run one after the other, so they need no namespace of
// their own: exec's link for JAX follows each host's directory.
func TestEveryHostWarm(t *testing.T) {
	bucket := startBucket(t)
	for _, jl := range jaxlibs {
		for _, sub := range []string{"autotune", "all"} {
			t.Run(jl.version+"/"+sub, func(t *testing.T) {
				t.Parallel()
				py := testneed.PeerPython(t, jl.list)
				bin := xlacacheBin(t)
				base := t.TempDir()
				shared := append(bucket(strings.ReplaceAll(t.Name(), "/", "-")), "XLACACHE_ENABLE_XLA_CACHES="+sub)
				var res [2]trainResult
				for i, dir := range []string{filepath.Join(base, "host-a", "cache"), filepath.Join(base, "host b", "scratch", "xlacache")} {
					r := runCmd(t, execEnv(dir, shared...), bin, append([]string{"exec", "--", py, testdata(t, "train.py")}, trainArgs...)...)
					var err error
					if res[i], err = parseTrain(r); err != nil {
						t.Fatalf("host %c: %v", 'A'+i, err)
					}
				}
				a, b := res[0], res[1]
				ha, ma := a.hits()
				hb, mb := b.hits()
				t.Logf("host A: %d lookups, %d hits, %d misses; host B: %d hits, %d misses; %d entries on host B",
					len(a.Keys), ha, ma, hb, mb, len(jaxEntries(t, filepath.Join(base, "host b", "scratch", "xlacache"))))
				if ha != 0 || ma < 4 {
					t.Fatalf("host A was not cold: %d hits, %d misses (want 0 and at least the 4 jitted functions)", ha, ma)
				}
				if mb != 0 || hb != ma || b.Events[eventHit] != hb || b.Events[eventMiss] != 0 {
					t.Errorf("host B: %d hits and %d misses (events %v), want %d and 0", hb, mb, b.Events, ma)
					kb := b.keySet()
					for k := range a.keySet() {
						if !kb[k] {
							t.Errorf("  host A's key %s: not computed on host B", k)
						}
					}
				}
				if d := a.same(b); d != "" {
					t.Errorf("results differ: %s", d)
				}
				if a.CacheDir != b.CacheDir {
					t.Errorf("JAX saw its directory as %s on host A and %s on host B: one path for every host expected", a.CacheDir, b.CacheDir)
				}
			})
		}
	}
}

// TestIndependentProcesses is issue 21's test 4: several JAX processes
// without jax.distributed (each is JAX's process 0) under exec on one
// directory, at once: exactly one runs XLA's autotune cache in UPDATE
// mode (the others READ, as JAX's compile options show), all compute the
// same keys, none fails; on the next run every process hits every
// function.
func TestIndependentProcesses(t *testing.T) {
	const n = 3
	for _, jl := range jaxlibs {
		t.Run(jl.version, func(t *testing.T) {
			t.Parallel()
			py := testneed.PeerPython(t, jl.list)
			bin := xlacacheBin(t)
			dir := filepath.Join(t.TempDir(), "cache")
			var runs [2][]trainResult
			for round := range 2 {
				rs := runJob(t, n, func(i int) ([]string, []string) {
					return execEnv(dir), append([]string{bin, "exec", "--", py, testdata(t, "train.py")}, trainArgs...)
				})
				for i, r := range rs {
					res, err := parseTrain(r)
					if err != nil {
						t.Fatalf("round %d, process %d: %v", round+1, i, err)
					}
					runs[round] = append(runs[round], res)
				}
			}
			// One autotune writer: only it keeps the autotune cache in
			// JAX's list (JAX then sets UPDATE for it); the others read it
			// from XLA_FLAGS with READ.
			writers := 0
			for _, r := range runs[0] {
				if strings.Contains(r.EnableXLACaches, "autotune") {
					writers++
				}
				if !strings.Contains(r.XLAFlags, "AUTOTUNE_CACHE_MODE_READ") {
					t.Errorf("XLA_FLAGS %q: no READ mode", r.XLAFlags)
				}
			}
			if writers != 1 {
				t.Errorf("%d processes run the autotune cache in UPDATE mode, want 1", writers)
			}
			want := runs[0][0].keySet()
			for round := range 2 {
				for i, r := range runs[round] {
					got := r.keySet()
					for k := range got {
						if !want[k] {
							t.Errorf("round %d, process %d computed key %s, which process 0 of round 1 did not", round+1, i, k)
						}
					}
					if len(got) != len(want) {
						t.Errorf("round %d, process %d: %d distinct keys, process 0 of round 1: %d", round+1, i, len(got), len(want))
					}
					if d := r.same(runs[0][0]); d != "" {
						t.Errorf("round %d, process %d: results differ: %s", round+1, i, d)
					}
				}
			}
			for i, r := range runs[1] {
				if h, m := r.hits(); m != 0 || h != len(runs[0][0].Keys) {
					t.Errorf("round 2, process %d: %d hits, %d misses, want %d and 0", i, h, m, len(runs[0][0].Keys))
				}
			}
			if _, err := os.Stat(dir); err != nil {
				t.Fatal(err)
			}
		})
	}
}

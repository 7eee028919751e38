package cpu

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/xlacache/xlacache/stablehlo"
)

// TestTuneSet checks the candidates the autotuner builds for every kernel
// of the examples: the reference comes first (the runtime routine for a
// product that has one, with no ikj loop; else the default), the rest is
// a subset of the candidates in their order, within maxTuneCands, the
// candidates that never won (see tuneSet) are gone, and the ones that did
// win stay: A read in place (and packed only where no such twin exists)
// and, with several threads, more than one split (but no row split
// beside a column split); of the reductions'
// unrolled loops, the widest (u = 8) alone.
func TestTuneSet(t *testing.T) {
	for _, ex := range []string{"mlp", "transformer", "cnn", "resnetblock"} {
		for _, threads := range []int{1, 2} {
			t.Run(ex+"/"+string(rune('0'+threads)), func(t *testing.T) {
				text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
				if err != nil {
					t.Fatal(err)
				}
				flat, err := stablehlo.Inline(parseText(t, string(text)))
				if err != nil {
					t.Fatal(err)
				}
				l, err := analyze(flat.Main(), ex)
				if err != nil {
					t.Fatal(err)
				}
				pruned, unrolled := 0, 0
				for _, op := range l.roots {
					k, err := newKernel(l, op, threads)
					if err != nil {
						t.Fatal(err)
					}
					set := tuneSet(k)
					ref := 0
					if r := findConfig(k.cands, Config{Name: routineConfig}); r >= 0 {
						ref = r
					} else if k.kind == "dot" && k.cands[0].Name == "ikj" && len(k.cands) > 1 {
						t.Errorf("%s: an f32 product of buffers without the runtime routine", k.desc)
					}
					if len(set) == 0 || set[0] != ref {
						t.Fatalf("%s: set %v does not start with the reference %s", k.desc, set, k.cands[ref])
					}
					if ref != 0 && slices.Contains(set, 0) {
						t.Errorf("%s: builds the ikj loop beside the runtime routine: %v", k.desc, names(k, set))
					}
					if len(set) > maxTuneCands {
						t.Errorf("%s: %d candidates, want at most %d", k.desc, len(set), maxTuneCands)
					}
					for i := 1; i < len(set); i++ {
						if set[i] == ref || (i > 1 && set[i] <= set[i-1]) || set[i] >= len(k.cands) {
							t.Fatalf("%s: set %v is not an ordered subset of %d candidates", k.desc, set, len(k.cands))
						}
					}
					if len(set) < len(k.cands) {
						pruned++
					}
					pa, par := map[int]bool{}, map[int]bool{}
					var lead *Config
					unroll := false
					for _, c := range set {
						cfg := k.cands[c]
						switch cfg.Name {
						case "tiled":
							t.Errorf("%s: kept the cache-tiled candidate", k.desc)
						case "unroll":
							if cfg.p("u") != 8 {
								t.Errorf("%s: kept %s beside the widest unroll", k.desc, cfg)
							}
							unroll = true
							unrolled++
						case "micro":
							if lead == nil {
								lead = &cfg
							}
							if cfg.p("mr") != lead.p("mr") || cfg.p("kc") != lead.p("kc") || cfg.p("order") != 0 {
								t.Errorf("%s: kept %s beside %s", k.desc, cfg, *lead)
							}
							pa[cfg.p("pa")], par[cfg.p("par")] = true, true
							if cfg.p("pa") == 1 && findConfig(k.cands, cfg.without("pa")) >= 0 {
								t.Errorf("%s: kept %s beside its twin reading A in place", k.desc, cfg)
							}
						}
					}
					if !unroll && slices.ContainsFunc(k.cands, func(c Config) bool { return c.Name == "unroll" }) {
						t.Errorf("%s: the widest unroll was pruned: %v", k.desc, names(k, set))
					}
					if k.kind == "dot" && lead != nil {
						if !pa[0] {
							t.Errorf("%s: want a candidate reading A in place, got %v", k.desc, names(k, set))
						}
						// Other splits stay, but for rows beside a column split.
						others := slices.ContainsFunc(k.cands, func(c Config) bool {
							return c.Name == "micro" && c.p("par") != lead.p("par") && (c.p("par") != parRows || lead.p("par") != parCols)
						})
						if threads > 1 && k.parallel(*lead) && others && len(par) < 2 {
							t.Errorf("%s: want more than one split, got %v", k.desc, names(k, set))
						}
						if par[parRows] && lead.p("par") == parCols {
							t.Errorf("%s: kept a row split beside the column split: %v", k.desc, names(k, set))
						}
					}
				}
				if ex == "transformer" && unrolled == 0 {
					t.Errorf("no reduction kept its unrolled candidate")
				}
				if pruned == 0 {
					t.Errorf("no kernel's candidates were pruned")
				}
			})
		}
	}
}

func names(k *kernel, set []int) []string {
	var out []string
	for _, c := range set {
		out = append(out, k.cands[c].String())
	}
	return out
}

// TestTuneSetDefaultOnly: a kernel with one candidate tunes nothing but
// keeps it.
func TestTuneSetDefaultOnly(t *testing.T) {
	k := &kernel{cands: defaultOnly()}
	if got := tuneSet(k); len(got) != 1 || got[0] != 0 {
		t.Errorf("tuneSet(default only) = %v, want [0]", got)
	}
	// A default that is itself a dominated shape is still kept.
	k = &kernel{cands: []Config{{Name: "tiled"}, {Name: "micro", Params: map[string]int{"mr": 6, "kc": 256}}, {Name: "tiled"}}}
	if got := tuneSet(k); len(got) != 2 || got[0] != 0 || got[1] != 1 {
		t.Errorf("tuneSet = %v, want [0 1]", got)
	}
}

// TestRelevant: matrix products and convolutions are always worth
// tuning; other kernels only when their work is big in itself or a fair
// share of the program's largest.
func TestRelevant(t *testing.T) {
	const big = 1 << 30
	tests := []struct {
		kind string
		work int64
		want bool
	}{
		{"dot", 1 << 15, true},
		{"convgemm", 1 << 15, true},
		{"reduce", big / relevanceShare, true},
		{"reduce", big/relevanceShare - 1, true}, // still above relevantWork
		{"reduce", relevantWork, true},
		{"reduce", relevantWork - 1, false},
		{"reduce", big, true},
		{"loop", 1 << 14, false},
	}
	// The resnetblock example's batch-norm reductions beside its
	// convolutions, and the transformer's reductions beside its products.
	if !relevant(&kernel{kind: "reduce", work: 6422528}, 3699376128) {
		t.Errorf("resnetblock's reductions are not tuned")
	}
	if relevant(&kernel{kind: "reduce", work: 65536}, 33554432) {
		t.Errorf("transformer's reductions are tuned")
	}
	for _, tc := range tests {
		if got := relevant(&kernel{kind: tc.kind, work: tc.work}, big); got != tc.want {
			t.Errorf("relevant(%s, work %d of %d) = %v, want %v", tc.kind, tc.work, big, got, tc.want)
		}
	}
	// A product whose default is the runtime routine: only from
	// 1/routineRelevanceShare of the largest, so not embedding's
	// attention products (2^20) beside its feed-forward ones (2^24).
	onRoutine := func(work int64) *kernel { return &kernel{kind: "dot", work: work, routine: &runtimeRoutine{}} }
	if !relevant(onRoutine(big/routineRelevanceShare), big) {
		t.Errorf("a product on the routine at 1/%d of the largest is not tuned", routineRelevanceShare)
	}
	if relevant(onRoutine(big/routineRelevanceShare-1), big) {
		t.Errorf("a product on the routine below 1/%d of the largest is tuned", routineRelevanceShare)
	}
	if relevant(onRoutine(1<<20), 1<<24) {
		t.Errorf("embedding's attention products are tuned")
	}
}

// us gives timing samples in microseconds.
func us(v ...float64) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, x := range v {
		out[i] = time.Duration(x * float64(time.Microsecond))
	}
	return out
}

// TestClearWinner: timing stops early only when one candidate's slowest
// sample beats every other's fastest by more than stableBand.
func TestClearWinner(t *testing.T) {
	tests := []struct {
		name    string
		samples [][]time.Duration
		want    bool
	}{
		{"separated", [][]time.Duration{us(100, 110, 105), us(50, 52, 51)}, true},
		{"overlapping", [][]time.Duration{us(100, 60, 105), us(50, 62, 51)}, false},
		{"within the stable band", [][]time.Duration{us(100, 101, 102), us(98, 99, 99)}, false},
		{"skipped candidates ignored", [][]time.Duration{us(100, 110), nil, us(50, 52)}, true},
		{"one candidate left", [][]time.Duration{us(100, 300), nil}, true},
		{"nothing timed", [][]time.Duration{nil, nil}, false},
		{"three, two close", [][]time.Duration{us(200, 210), us(50, 52), us(53, 54)}, false},
	}
	for _, tc := range tests {
		if got := clearWinner(tc.samples); got != tc.want {
			t.Errorf("%s: clearWinner = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestSettled: timing also stops when no rival has taken a single sample
// more than stableBand below the median of the candidate that would be
// chosen now, and goes on while one has.
func TestSettled(t *testing.T) {
	tests := []struct {
		name    string
		samples [][]time.Duration
		want    bool
	}{
		{"clear winner", [][]time.Duration{us(100, 110, 105), us(50, 52, 51)}, true},
		{"tie within the band", [][]time.Duration{us(100, 101, 102), us(98, 99, 99)}, true},
		{"slow default, two tied", [][]time.Duration{us(3000), us(170, 174, 172), us(175, 169, 171)}, true},
		{"rival faster in one sample", [][]time.Duration{us(100, 101, 102), us(120, 90, 121)}, false},
		{"pick by order, rival far below once", [][]time.Duration{us(100, 100, 100), us(99, 80, 101)}, false},
		{"noisy leader, rival within band", [][]time.Duration{us(90, 100, 130), us(104, 98, 99)}, true},
		{"nothing timed", [][]time.Duration{nil, nil}, false},
	}
	for _, tc := range tests {
		if got := settled(tc.samples); got != tc.want {
			t.Errorf("%s: settled = %v, want %v", tc.name, got, tc.want)
		}
	}
}

package cpu

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

// TestBuildQueue runs the queue as one compiler would, each unit taking
// its measured cost of the clock: the choice depends on those costs alone.
func TestBuildQueue(t *testing.T) {
	tests := []struct {
		name   string
		order  []int
		cost   []time.Duration // per unit, by index
		budget time.Duration
		want   []int // the units built, in order
	}{
		{"no budget builds all", []int{0, 1, 2}, []time.Duration{10, 20, 30}, -1, []int{0, 1, 2}},
		{"the first is always built", []int{1, 0}, []time.Duration{5, 100}, 10, []int{1}},
		{"zero budget still builds the first", []int{0, 1}, []time.Duration{5, 5}, 0, []int{0}},
		{"the crossing unit is built, later ones not", []int{0, 1, 2}, []time.Duration{6, 6, 6}, 10, []int{0, 1}},
		{"exactly spent stops", []int{0, 1, 2}, []time.Duration{5, 5, 5}, 10, []int{0, 1}},
		{"order decides, not position", []int{2, 1, 0}, []time.Duration{6, 6, 6}, 10, []int{2, 1}},
		{"within budget builds all", []int{0, 1, 2}, []time.Duration{1, 2, 3}, 10, []int{0, 1, 2}},
		{"nothing to do", nil, nil, 10, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := func() []int {
				var clock time.Duration
				q := &buildQueue{order: tc.order, budget: tc.budget, elapsed: func() time.Duration { return clock }}
				var got []int
				for {
					i, ok := q.take()
					if !ok {
						break
					}
					got = append(got, i)
					clock += tc.cost[i]
				}
				if _, ok := q.take(); ok {
					t.Error("the queue handed out a unit after saying it was done")
				}
				return got
			}
			got := run()
			if !slices.Equal(got, tc.want) {
				t.Errorf("built %v, want %v", got, tc.want)
			}
			if again := run(); !slices.Equal(again, got) {
				t.Errorf("same costs, other choice: %v, then %v", got, again)
			}
		})
	}
}

func TestSlowCandidates(t *testing.T) {
	tests := []struct {
		name  string
		first []time.Duration
		want  []bool
	}{
		{"default far slower", []time.Duration{300, 60, 70, 100}, []bool{true, false, false, false}},
		{"within the factor", []time.Duration{140, 60, 149}, []bool{false, false, false}},
		{"just beyond", []time.Duration{151, 60}, []bool{true, false}},
		{"skipped ones are never slow", []time.Duration{0, 500, 100}, []bool{false, true, false}},
		{"the fastest never is", []time.Duration{10}, []bool{false}},
		{"none run", []time.Duration{0, 0}, []bool{false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := slowCandidates(tc.first); !slices.Equal(got, tc.want) {
				t.Errorf("slowCandidates(%v) = %v, want %v", tc.first, got, tc.want)
			}
		})
	}
}

func TestTuneOrder(t *testing.T) {
	k := func(kind string, work int64) *kernel { return &kernel{kind: kind, work: work} }
	tests := []struct {
		name string
		ks   []*kernel
		want []int
	}{
		{"bigger product first", []*kernel{k("dot", 1<<16), k("dot", 1<<20)}, []int{1, 0}},
		{"ties keep program order", []*kernel{k("dot", 1<<16), k("convgemm", 1<<16), k("dot", 1<<16)}, []int{0, 1, 2}},
		// A reduction's element costs more than a vectorized
		// multiply-add, so it outranks a product of equal work...
		{"reduction outranks an equal product", []*kernel{k("dot", 1<<18), k("reduce", 1<<18)}, []int{1, 0}},
		// ...but not one of far more.
		{"big product outranks a reduction", []*kernel{k("reduce", 1<<18), k("convgemm", 1<<24)}, []int{1, 0}},
		{"empty", nil, []int{}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tuneOrder(tc.ks); !slices.Equal(got, tc.want) {
				t.Errorf("tuneOrder = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestParseTuneMode(t *testing.T) {
	tests := []struct {
		value       string
		set         bool
		budget, off bool
		bad         bool
	}{
		{"", false, false, false, false},
		{"", true, false, false, false},
		{"full", true, false, false, false},
		{"budget", true, true, false, false},
		{"off", true, false, true, false},
		{"Full", true, false, false, true},
		{"on", true, false, false, true},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%q", tc.value), func(t *testing.T) {
			lookup := func(name string) (string, bool) {
				if name != config.EnvCPUTune {
					t.Errorf("looked up %s", name)
				}
				return tc.value, tc.set
			}
			budget, off, err := parseTuneMode(lookup)
			if (err != nil) != tc.bad {
				t.Fatalf("err = %v, want an error: %v", err, tc.bad)
			}
			if err != nil && !strings.Contains(err.Error(), config.EnvCPUTune) {
				t.Errorf("error %q does not name %s", err, config.EnvCPUTune)
			}
			if budget != tc.budget || off != tc.off {
				t.Errorf("budget, off = %v, %v; want %v, %v", budget, off, tc.budget, tc.off)
			}
		})
	}
}

func TestNewReadsTuneMode(t *testing.T) {
	t.Setenv(config.EnvCPUTune, "budget")
	if b := New(); !b.BudgetTune || b.NoTune {
		t.Errorf("XLACACHE_CPU_TUNE=budget: BudgetTune %v, NoTune %v", b.BudgetTune, b.NoTune)
	}
	t.Setenv(config.EnvCPUTune, "")
	if b := New(); b.BudgetTune || b.NoTune {
		t.Errorf("XLACACHE_CPU_TUNE unset: BudgetTune %v, NoTune %v, want full tuning", b.BudgetTune, b.NoTune)
	}
	t.Setenv(config.EnvCPUTune, "off")
	if b := New(); b.BudgetTune || !b.NoTune {
		t.Errorf("XLACACHE_CPU_TUNE=off: BudgetTune %v, NoTune %v", b.BudgetTune, b.NoTune)
	}
	t.Setenv(config.EnvCPUTune, "sometimes")
	b := New()
	if _, err := b.KeyParts(context.Background(), cache.Program{Name: "x", Text: []byte(sharingProgram)}); err == nil || !strings.Contains(err.Error(), config.EnvCPUTune) {
		t.Errorf("a bad XLACACHE_CPU_TUNE: KeyParts err = %v, want one naming it", err)
	}
}

func TestOptionsKeyTuneMode(t *testing.T) {
	p := cache.Program{Name: "x"}
	full, budget, off := &Backend{Threads: 2}, &Backend{Threads: 2, BudgetTune: true}, &Backend{Threads: 2, NoTune: true}
	if budget.optionsKey(p) == full.optionsKey(p) {
		t.Error("full tuning shares the budget's key, so it would load a budget-tuned executable")
	}
	if strings.Contains(full.optionsKey(p), "\ntune=") {
		t.Errorf("the default's key changed: %q", full.optionsKey(p))
	}
	// A budget means nothing without tuning.
	if off.optionsKey(p) != (&Backend{Threads: 2, NoTune: true, BudgetTune: true}).optionsKey(p) {
		t.Error("NoTune with and without BudgetTune differ in key")
	}
}

// chainProgram is a chain of n matrix products of different shapes: n
// distinct kernels worth tuning, whose candidates cost far more C than
// their defaults.
func chainProgram(n int) string {
	dims := make([]int, n+2)
	for i := range dims {
		dims[i] = 40 + 8*i
	}
	var sb strings.Builder
	// Arguments: x (d0 x d1) and weights w_i (d_i x d_{i+1}).
	sb.WriteString("func.func @main(%x: tensor<")
	fmt.Fprintf(&sb, "%dx%dxf32>", dims[0], dims[1])
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, ", %%w%d: tensor<%dx%dxf32>", i, dims[i], dims[i+1])
	}
	fmt.Fprintf(&sb, ") -> tensor<%dx%dxf32> {\n", dims[0], dims[n+1])
	prev := "%x"
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&sb, "  %%p%d = stablehlo.dot_general %s, %%w%d, contracting_dims = [1] x [0] : (tensor<%dx%dxf32>, tensor<%dx%dxf32>) -> tensor<%dx%dxf32>\n",
			i, prev, i, dims[0], dims[i], dims[i], dims[i+1], dims[0], dims[i+1])
		prev = fmt.Sprintf("%%p%d", i)
	}
	fmt.Fprintf(&sb, "  return %s : tensor<%dx%dxf32>\n}\n", prev, dims[0], dims[n+1])
	return sb.String()
}

// TestTuneBudgetLeavesKernelsForLater checks the budget end to end: a
// cold compile of a program with many products tunes only some of them,
// in order of benefit (the biggest), stores autotune records for those
// alone, and runs correctly; a compile with full tuning (a key of its
// own) then finds those records and tunes the rest.
func TestTuneBudgetLeavesKernelsForLater(t *testing.T) {
	const n = 10
	text := chainProgram(n)
	dir := t.TempDir()
	t.Setenv(config.EnvCPUTune, "") // each case sets the mode itself
	compile := func(dir string, full, off bool) (*cache.Report, *Executable) {
		c := openCacheDir(t, dir)
		defer c.Close()
		b := New()
		b.NoTune, b.BudgetTune = off, !full
		b.TuneBudget = 20 * time.Millisecond
		// One compiler, and a budget spent once anything is built: the
		// budget compile builds the first unit in benefit order alone.
		b.Jobs, b.tuneFactor = 1, 1e-9
		return compileIn(t, c, b, "chain", text)
	}
	m := parseText(t, text)
	args := randomArgs(m, 5)
	_, ref := compile(t.TempDir(), false, true)
	want, err := ref.Run(context.Background(), args)
	ref.Close()
	if err != nil {
		t.Fatal(err)
	}

	rep, exe := compile(dir, false, false)
	defer exe.Close()
	// The products' work grows along the chain: the last is the biggest.
	var tuned, untuned []int
	for i, k := range exe.Kernels() {
		if k.Tuned {
			tuned = append(tuned, i)
		} else {
			untuned = append(untuned, i)
		}
	}
	if !slices.Equal(tuned, []int{n - 1}) {
		t.Fatalf("budget compile tuned kernels %v, want only the biggest product, %d (%+v)", tuned, n-1, rep.Tiers)
	}
	if got := rep.Tiers["cpu/autotune"]; got.Misses != n {
		t.Errorf("autotune tier %+v: want %d misses", got, n)
	}
	got, err := exe.Run(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, got, want, 1e-3)

	rep, full := compile(dir, true, false)
	defer full.Close()
	if rep.Hit {
		t.Fatal("full tuning loaded the budget compile's executable")
	}
	hits := 0
	for _, k := range full.Kernels() {
		if !k.Tuned {
			t.Errorf("full tuning left %s untuned", k.Desc)
		}
		if k.TuneHit {
			hits++
		}
	}
	// Records for the kernels tuned, none for those left out.
	if hits != len(tuned) {
		t.Errorf("full tuning found %d autotune records, want the budget compile's %d", hits, len(tuned))
	}
	got, err = full.Run(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, got, want, 1e-3)
}

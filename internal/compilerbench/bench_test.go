package compilerbench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testneed"
	"github.com/xlacache/xlacache/npy"
	"github.com/xlacache/xlacache/stablehlo"
)

var (
	update   = flag.Bool("update", false, "rewrite the table in docs/cpu.md and the summary in README.md")
	programs = flag.String("compilerbench.programs", "mlp,transformer,cnn,embedding,resnetblock,transformer4l,gomlx-mlp,gomlx-transformer", "programs, comma-separated: <name> runs examples/<name>/<name>.mlir, gomlx-<model> trains examples/gomlx/trainmodel's model through GoMLX")
	threads  = flag.String("compilerbench.threads", "1,2", "thread counts, comma-separated")
	engines  = flag.String("compilerbench.engines", "cpu-untuned,cpu,xla,iree", "engines, comma-separated")
	refLimit = flag.Duration("compilerbench.reflimit", time.Minute, "how long the interpreter may take for a reference before XLA:CPU's output is the reference instead")
	minRuns  = flag.Int("compilerbench.minruns", 5, "at least this many timed runs per cell")
	minTotal = flag.Duration("compilerbench.mintotal", time.Second, "and at least this much time in timed runs")
	slowRun  = flag.Duration("compilerbench.slowrun", time.Second, "a program whose warm-up run takes this long or longer gets -compilerbench.slowruns timed runs instead")
	slowRuns = flag.Int("compilerbench.slowruns", 3, "timed runs for slow programs (see -compilerbench.slowrun); 0: no exception")
	rounds   = flag.Int("compilerbench.rounds", 5, "child processes per cell, in rounds over the program's cells; the table shows the median over them of the cold compile, the warm start and the run")
)

// ireeList is the peer list (peers/iree-3.13.0.txt) that installs IREE.
const ireeList = "iree-3.13.0"

func TestMain(m *testing.M) {
	if p := os.Getenv(envChild); p != "" {
		childMain(p)
	}
	os.Exit(m.Run())
}

// cell is one engine on one program at one thread count.
type cell struct {
	Program, Engine string
	Threads         int
	report
	Run   float64 // median of RunsS
	Worst float64 // compare's worst error fraction over all outputs
	Wrong string  // why the outputs are wrong, or why the cell failed
	Skip  string  // why the engine cannot run this program at all
}

// engineSpec is an engine as the benchmark runs it.
type engineSpec struct {
	key, label string
	plugin     string // xla only
}

// BenchmarkCompilers runs every program through every engine at every
// thread count, each engine in a child process pinned with taskset to as
// many CPUs as it has threads, checks each output against the reference
// and prints the table (and, with -update, writes it into docs/cpu.md and
// the README). Run with -benchtime 1x: one iteration is the whole table.
func BenchmarkCompilers(b *testing.B) {
	root, err := testneed.RepoRoot()
	if err != nil {
		b.Fatal(err)
	}
	var specs []engineSpec
	for _, e := range strings.Split(*engines, ",") {
		switch e {
		case "cpu-untuned":
			specs = append(specs, engineSpec{key: e, label: "xlacache cpu, untuned"})
		case "cpu":
			specs = append(specs, engineSpec{key: e, label: "xlacache cpu, tuned"})
		case "xla":
			plugins := testneed.PJRTPlugins(b)
			for _, name := range slices.Sorted(mapKeys(plugins)) {
				specs = append(specs, engineSpec{key: "xla", label: "XLA:CPU " + pluginLabel(name), plugin: plugins[name]})
			}
		case "iree":
			testneed.PeerPython(b, ireeList)
			specs = append(specs, engineSpec{key: e, label: "IREE 3.13.0 llvm-cpu"})
		default:
			b.Fatalf("unknown engine %q", e)
		}
	}
	var ts []int
	for _, s := range strings.Split(*threads, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err != nil || n < 1 || n > runtime.NumCPU() {
			b.Fatalf("thread count %q: want 1..%d", s, runtime.NumCPU())
		}
		ts = append(ts, n)
	}
	pol := policy{MinRuns: *minRuns, MaxRuns: max(*minRuns, 50), MinTotal: minTotal.Seconds(),
		SlowS: slowRun.Seconds(), SlowRuns: *slowRuns}
	for i := 0; i < b.N; i++ {
		if i > 0 {
			break // one iteration is the whole table
		}
		var cells []cell
		refs := map[string]string{}
		load := loadAvg()
		for _, prog := range strings.Split(*programs, ",") {
			run := func() ([]cell, string) { return runProgram(b, root, prog, specs, ts, pol) }
			if strings.HasPrefix(prog, gomlxPrefix) {
				run = func() ([]cell, string) { return runGoMLXProgram(b, prog, specs, ts, pol) }
			}
			t0 := time.Now()
			cs, ref := run()
			// Per program, so that the table's time budget can be checked
			// program by program (-compilerbench.programs).
			b.Logf("%s: every cell in %v", prog, time.Since(t0).Round(time.Second))
			cells = append(cells, cs...)
			refs[prog] = ref
		}
		load = load + " at the start, " + loadAvg() + " at the end"
		table := renderTable(cells, refs, specs, ts)
		summary := renderSummary(cells)
		machine := machineLine(load)
		fmt.Println(machine)
		fmt.Println(table)
		fmt.Println(summary)
		if *update {
			if err := updateDocs(root, machine, table, summary); err != nil {
				b.Fatal(err)
			}
		}
	}
}

func mapKeys(m map[string]string) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

// pluginLabel names a plugin by its wheel, with the version the peer list
// pins.
func pluginLabel(name string) string {
	switch {
	case strings.Contains(name, "xla_cpu_pjrt"):
		return "(xla-cpu-pjrt 0.0.1)"
	case strings.Contains(name, "lammps"):
		return "(lammps-jax-pjrt-cpu 0.11.2)"
	}
	return "(" + name + ")"
}

// runProgram writes the program's inputs, computes the reference and runs
// every engine at every thread count.
func runProgram(b *testing.B, root, prog string, specs []engineSpec, ts []int, pol policy) ([]cell, string) {
	path := filepath.Join(root, "examples", prog, prog+".mlir")
	text, err := os.ReadFile(path)
	if err != nil {
		b.Fatal(err)
	}
	m, err := stablehlo.Parse(text, prog+".mlir")
	if err != nil {
		b.Fatal(err)
	}
	work := b.TempDir()
	args := inputs(m)
	var inPaths []string
	for i, a := range args {
		arr, err := npy.FromTensor(a)
		if err != nil {
			b.Fatal(err)
		}
		p := filepath.Join(work, fmt.Sprintf("arg%d.npy", i))
		if err := npy.WriteFile(p, arr); err != nil {
			b.Fatal(err)
		}
		inPaths = append(inPaths, p)
	}

	// The reference: the interpreter, unless it takes too long on this
	// program; then XLA:CPU's output at the first thread count, and every
	// other engine (XLA:CPU at other thread counts too) is checked against it.
	refName := "interpreter"
	var ref []*npy.Array
	ctx, cancel := context.WithTimeout(context.Background(), *refLimit)
	t0 := time.Now()
	outs, err := stablehlo.EvalContext(ctx, m, "main", args)
	cancel()
	switch {
	case err == nil:
		for _, o := range outs {
			a, err := npy.FromTensor(o)
			if err != nil {
				b.Fatal(err)
			}
			ref = append(ref, a)
		}
		b.Logf("%s: reference from the interpreter in %v", prog, time.Since(t0).Round(time.Millisecond))
	case errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil:
		refName = ""
		b.Logf("%s: the interpreter took over %v; XLA:CPU's output is the reference", prog, *refLimit)
	default:
		b.Fatalf("%s: interpreter: %v", prog, err)
	}

	var cells []cell
	var specOf []engineSpec
	for _, n := range ts {
		for _, s := range specs {
			cells = append(cells, cell{Program: prog, Engine: s.label, Threads: n})
			specOf = append(specOf, s)
		}
	}
	gots := runRounds(b, cells, func(i, round int) (report, []*npy.Array, error) {
		s, dir := specOf[i], roundDir(b, work, specOf[i].key, cells[i].Threads, i, round)
		rep, err := childReport(b, job{Engine: s.key, Program: prog, Path: path, Inputs: inPaths, Threads: cells[i].Threads,
			Dir: dir, Plugin: s.plugin, Report: filepath.Join(dir, "report.json"), Policy: pol})
		if err != nil {
			return rep, nil, err
		}
		got, err := readArrays(rep.Outputs)
		return rep, got, err
	})
	// Without the interpreter's reference, the first XLA:CPU cell's
	// output (its first round's) is it; compared once every cell ran.
	for i, s := range specOf {
		if ref == nil && s.key == "xla" && cells[i].Wrong == "" && len(gots[i]) > 0 {
			ref, refName = gots[i][0], s.label+" at "+fmt.Sprint(cells[i].Threads)+" thread(s)"
		}
	}
	checkCells(b, cells, gots, ref)
	if refName == "" {
		refName = "none (the interpreter was too slow and XLA:CPU did not run)"
	}
	return cells, refName
}

// roundDir makes the scratch directory of cell i (engine key, threads) in
// a round.
func roundDir(b *testing.B, work, key string, threads, i, round int) string {
	dir := filepath.Join(work, fmt.Sprintf("%s-%d-%d-r%d", key, threads, i, round+1))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	return dir
}

// childReport runs j in a child process; an error the child reported is
// the error.
func childReport(b *testing.B, j job) (report, error) {
	rep, err := runChild(b, j)
	if err == nil && rep.Err != "" {
		err = errors.New(rep.Err)
	}
	return rep, err
}

// runRounds runs every cell that is not skipped -compilerbench.rounds
// times, in rounds: every engine at every thread count, then all of them
// again. one(i, round) runs cell i's child process(es) and returns its
// report and outputs. A cell's times are the medians over its rounds: the
// cold compile's, the warm start's and the run medians'; RunsS keeps
// every timed run. On this shared VM a child's times move with the
// process, not only with its runs: the same program's 2-thread run
// median read 1.9, 2.8 and 3.3 ms in three children a minute apart, and
// one cold compile read 418 ms where the command line's median was
// 261. In rounds, a disturbed minute lands on one sample of several
// cells, not on every sample of one. The result is the outputs of every
// round of every cell; a round that fails marks its cell wrong.
func runRounds(b *testing.B, cells []cell, one func(i, round int) (report, []*npy.Array, error)) [][][]*npy.Array {
	gots := make([][][]*npy.Array, len(cells))
	// Per cell, one sample per round that ran.
	compiles := make([][]float64, len(cells))
	warmStarts := make([][]float64, len(cells))
	runs := make([][]float64, len(cells))
	for r := range max(*rounds, 1) {
		for i := range cells {
			c := &cells[i]
			if c.Wrong != "" || c.Skip != "" {
				continue
			}
			t0 := time.Now()
			rep, got, err := one(i, r)
			if err != nil {
				if r == 0 {
					c.report = rep
				}
				c.Wrong = err.Error()
				if r > 0 {
					c.Wrong = fmt.Sprintf("round %d: %v", r+1, err)
				}
				b.Logf("%s %s %d thread(s), round %d: %s", c.Program, c.Engine, c.Threads, r+1, c.Wrong)
				continue
			}
			if r == 0 {
				c.report = rep
				c.RunsS = nil
			}
			compiles[i] = append(compiles[i], rep.CompileS)
			if rep.WarmS >= 0 {
				warmStarts[i] = append(warmStarts[i], rep.WarmS)
			}
			runs[i] = append(runs[i], median(rep.RunsS))
			c.RunsS = append(c.RunsS, rep.RunsS...)
			gots[i] = append(gots[i], got)
			b.Logf("%s %s %d thread(s), round %d: compile %s, warm %s, run %s (%d runs) [%v]",
				c.Program, c.Engine, c.Threads, r+1, secs(rep.CompileS), secs(rep.WarmS), secs(median(rep.RunsS)), len(rep.RunsS), time.Since(t0).Round(time.Second))
			if rep.Note != "" {
				b.Logf("  %s", rep.Note)
			}
		}
	}
	for i := range cells {
		c := &cells[i]
		if c.Wrong != "" || c.Skip != "" {
			continue
		}
		c.CompileS, c.WarmS, c.Run = median(compiles[i]), median(warmStarts[i]), median(runs[i])
		if len(compiles[i]) > 1 {
			b.Logf("%s %s %d thread(s): compiles %s, warm starts %s, runs %s; medians %s, %s, %s", c.Program, c.Engine, c.Threads,
				secsList(compiles[i]), secsList(warmStarts[i]), secsList(runs[i]), secs(c.CompileS), secs(c.WarmS), secs(c.Run))
		}
	}
	return gots
}

func secsList(v []float64) string {
	if len(v) == 0 {
		return "n/a"
	}
	var ss []string
	for _, x := range v {
		ss = append(ss, secs(x))
	}
	return strings.Join(ss, " ")
}

// checkCells compares each cell's outputs, every round's (gots, by cell
// then round), with ref and marks the cells whose outputs are wrong.
func checkCells(b *testing.B, cells []cell, gots [][][]*npy.Array, ref []*npy.Array) {
	for i := range cells {
		c := &cells[i]
		if c.Wrong != "" || c.Skip != "" {
			continue
		}
		for r, got := range gots[i] {
			w, err := compareAll(got, ref, tolerancesFor(c.Program))
			c.Worst = max(c.Worst, w)
			if err != nil {
				c.Wrong = "wrong output: " + err.Error()
				if len(gots[i]) > 1 {
					c.Wrong = fmt.Sprintf("wrong output in round %d: %v", r+1, err)
				}
				break
			}
		}
		b.Logf("%s %s %d thread(s): worst error %.3g of allowed %s", c.Program, c.Engine, c.Threads, c.Worst, c.Wrong)
	}
}

// compareAll compares every output; worst is the largest error fraction.
func compareAll(got, ref []*npy.Array, tols map[string]tolerance) (float64, error) {
	if ref == nil {
		return 0, errors.New("no reference")
	}
	if len(got) != len(ref) {
		return math.Inf(1), fmt.Errorf("%d outputs, reference has %d", len(got), len(ref))
	}
	worst := 0.0
	for i := range got {
		w, err := compare(got[i], ref[i], tols)
		worst = max(worst, w)
		if err != nil {
			return worst, fmt.Errorf("output %d: %w", i, err)
		}
	}
	return worst, nil
}

func readArrays(paths []string) ([]*npy.Array, error) {
	var out []*npy.Array
	for _, p := range paths {
		a, err := npy.ReadFile(p)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

// runChild runs j in a child process pinned to CPUs 0..Threads-1.
func runChild(b *testing.B, j job) (report, error) {
	var rep report
	jobPath := filepath.Join(j.Dir, "job.json")
	data, err := json.Marshal(j)
	if err != nil {
		return rep, err
	}
	if err := os.WriteFile(jobPath, data, 0o644); err != nil {
		return rep, err
	}
	cpus := fmt.Sprintf("0-%d", j.Threads-1)
	var cmd *exec.Cmd
	if j.Engine == "iree" {
		py := testneed.PeerPython(b, ireeList)
		script, err := filepath.Abs("testdata/iree_bench.py")
		if err != nil {
			return rep, err
		}
		cmd = exec.Command("taskset", "-c", cpus, py, script, jobPath)
	} else {
		cmd = exec.Command("taskset", "-c", cpus, os.Args[0], "-test.run=^$")
	}
	cmd.Env = append(os.Environ(), envChild+"="+jobPath, fmt.Sprintf("XLACACHE_CPU_THREADS=%d", j.Threads))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return rep, fmt.Errorf("%s child: %v: %s", j.Engine, err, lastLine(out.String()))
	}
	data, err = os.ReadFile(j.Report)
	if err != nil {
		return rep, fmt.Errorf("%s child wrote no report: %v: %s", j.Engine, err, lastLine(out.String()))
	}
	if err := json.Unmarshal(data, &rep); err != nil {
		return rep, fmt.Errorf("%s child's report: %w", j.Engine, err)
	}
	return rep, nil
}

func lastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		s = s[i+1:]
	}
	if len(s) > 300 {
		s = s[:300]
	}
	return s
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return -1
	}
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// inputs makes deterministic arguments for main: floats uniform in ±1,
// scaled by 2/sqrt(the second-to-last dimension) for matrices and
// kernels (a dense layer's or convolution's input width) so activations
// stay in tanh's and softmax's interesting range; integers (token ids,
// indices) in [0, 16), in range of every example's tables.
func inputs(m *stablehlo.Module) []*stablehlo.Tensor {
	rng := rand.New(rand.NewPCG(23, 7))
	var args []*stablehlo.Tensor
	for _, a := range m.Main().Args {
		t := stablehlo.NewTensor(a.Type)
		scale := 1.0
		if r := a.Type.Rank(); r >= 2 {
			scale = 2 / math.Sqrt(float64(a.Type.Shape[r-2]))
		}
		switch a.Type.DType {
		case stablehlo.F32:
			v := t.Float32s()
			for i := range v {
				v[i] = float32((rng.Float64()*2 - 1) * scale)
			}
		case stablehlo.F64:
			v := t.Float64s()
			for i := range v {
				v[i] = (rng.Float64()*2 - 1) * scale
			}
		case stablehlo.I32:
			v := t.Int32s()
			for i := range v {
				v[i] = int32(rng.IntN(16))
			}
		case stablehlo.I64:
			v := t.Int64s()
			for i := range v {
				v[i] = int64(rng.IntN(16))
			}
		default:
			panic(fmt.Sprintf("inputs: dtype %s not generated", a.Type))
		}
		args = append(args, t)
	}
	return args
}

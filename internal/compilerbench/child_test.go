package compilerbench

// The engines run in child processes (this test binary, started again
// under taskset), so that each engine and thread count gets the same CPUs
// and nothing of one engine's run (thread pools, loaded code, caches in
// memory) is left in the next one's process.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/go-xla/pkg/pjrt"
	"github.com/gomlx/go-xla/pkg/types/dtypes"

	"github.com/xlacache/xlacache/backend/cpu"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/npy"
	"github.com/xlacache/xlacache/stablehlo"
)

// envChild names the job file of a child process; its content says which
// engine to run.
const envChild = "XLACACHE_COMPILERBENCH_JOB"

// job is one engine on one program at one thread count, in a child.
type job struct {
	Engine  string   `json:"engine"` // "cpu", "cpu-untuned", "xla", "iree"
	Program string   `json:"program"`
	Path    string   `json:"path"`    // the StableHLO text
	Inputs  []string `json:"inputs"`  // one .npy per argument of main
	Threads int      `json:"threads"` // also the CPUs the child is pinned to
	Dir     string   `json:"dir"`     // scratch: cache directory, outputs
	Plugin  string   `json:"plugin,omitempty"`
	Report  string   `json:"report"` // where the child writes its report
	Policy  policy   `json:"policy"`
	// Steps and Warm are for the gomlx-* engines (gomlx_test.go): the
	// timed training steps, and a warm start's process.
	Steps int  `json:"steps,omitempty"`
	Warm  bool `json:"warm,omitempty"`
}

// policy says how many timed runs make a median: at least MinRuns and
// MinTotal seconds of runs, at most MaxRuns. The first run (warm-up) is
// not counted.
//
// A program whose warm-up run takes SlowS seconds or more gets exactly
// SlowRuns timed runs instead (when SlowRuns > 0): the four-layer
// transformer's training step runs for seconds, and five runs of it in
// each of the table's cells would take most of the table's time budget.
type policy struct {
	MinRuns  int     `json:"min_runs"`
	MaxRuns  int     `json:"max_runs"`
	MinTotal float64 `json:"min_total_s"`
	SlowS    float64 `json:"slow_s,omitempty"`
	SlowRuns int     `json:"slow_runs,omitempty"`
}

// forWarmup is the policy for a program whose warm-up run took warm
// seconds.
func (p policy) forWarmup(warm float64) policy {
	if p.SlowRuns > 0 && p.SlowS > 0 && warm >= p.SlowS {
		p.MinRuns, p.MaxRuns, p.MinTotal = p.SlowRuns, p.SlowRuns, 0
	}
	return p
}

// report is what a child found. Times in seconds; a negative time is n/a.
type report struct {
	CompileS float64   `json:"compile_s"`
	WarmS    float64   `json:"warm_s"`
	RunsS    []float64 `json:"runs_s"`
	Outputs  []string  `json:"outputs"` // .npy files, one per result
	Note     string    `json:"note,omitempty"`
	Err      string    `json:"err,omitempty"`
	// FirstLoss is a GoMLX training's loss after its first step.
	FirstLoss float32 `json:"first_loss,omitempty"`
}

// childMain runs the job named by envChild and exits. It is called from
// TestMain before any test runs.
func childMain(path string) {
	var j job
	rep := report{CompileS: -1, WarmS: -1}
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, &j)
	}
	if err == nil {
		err = residentCode(j)
	}
	if err == nil {
		switch j.Engine {
		case "cpu", "cpu-untuned":
			err = runCPU(j, &rep)
		case "xla":
			err = runXLA(j, &rep)
		case "gomlx-cpu", "gomlx-cpu-untuned", "gomlx-xla":
			err = runGoMLX(j, &rep)
		default:
			err = fmt.Errorf("unknown engine %q", j.Engine)
		}
	}
	if err != nil {
		rep.Err = err.Error()
	}
	out, _ := json.Marshal(rep)
	if j.Report == "" {
		fmt.Fprintln(os.Stderr, string(out))
		os.Exit(1)
	}
	if werr := os.WriteFile(j.Report, out, 0o644); werr != nil {
		fmt.Fprintln(os.Stderr, werr)
		os.Exit(1)
	}
	os.Exit(0)
}

// residentCode puts the engine's compiler in the page cache before its
// compile is timed, as on a machine that compiles now and then. This VM
// pages out file pages left unused for about a minute (a DAMON "pageout"
// scheme: age at least 12 aggregations of 5 s), so a child that started
// after a long cell found cc1, as and ld, or the plugin's library, on
// disk: the same 27 KB unit (resnetblock's) took 114 ms in cc right after
// 90 s idle and 64-71 ms just after another compile. Both kinds of engine
// get the same thing, and nothing in the child is initialized by it: the
// cpu engines run the C toolchain once on a file of their own (the
// processes exit; what stays is the page cache), XLA:CPU's engines read
// their plugin's file. IREE's child (a Python process) is left alone: its
// compile time is in the table but in no goal.
func residentCode(j job) error {
	switch j.Engine {
	case "xla", "gomlx-xla":
		f, err := os.Open(j.Plugin)
		if err != nil {
			return fmt.Errorf("reading the plugin: %w", err)
		}
		defer f.Close()
		if _, err := io.Copy(io.Discard, f); err != nil {
			return fmt.Errorf("reading the plugin: %w", err)
		}
		return nil
	case "cpu", "cpu-untuned", "gomlx-cpu", "gomlx-cpu-untuned":
		dir, err := os.MkdirTemp(j.Dir, "toolchain")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		src := filepath.Join(dir, "t.c")
		if err := os.WriteFile(src, []byte("#include <math.h>\nfloat f(float x) { return expf(x) + 1; }\n"), 0o644); err != nil {
			return err
		}
		cc := os.Getenv(config.EnvCC)
		if cc == "" {
			cc = "cc"
		}
		// The backend links with ld.gold where there is one (else ld),
		// so the link is tried with gold first.
		obj, lib := filepath.Join(dir, "t.o"), filepath.Join(dir, "t.so")
		if out, err := exec.Command(cc, "-O2", "-fPIC", "-march=native", "-c", src, "-o", obj).CombinedOutput(); err != nil {
			return fmt.Errorf("toolchain warm-up: %v: %s", err, out)
		}
		if exec.Command(cc, "-shared", "-fuse-ld=gold", obj, "-lm", "-o", lib).Run() != nil {
			if out, err := exec.Command(cc, "-shared", obj, "-lm", "-o", lib).CombinedOutput(); err != nil {
				return fmt.Errorf("toolchain warm-up: %v: %s", err, out)
			}
		}
	}
	return nil
}

// timeRuns runs f once to warm up, then times it per the policy.
func timeRuns(p policy, f func() error) ([]float64, error) {
	t0 := time.Now()
	if err := f(); err != nil {
		return nil, err
	}
	p = p.forWarmup(time.Since(t0).Seconds())
	var runs []float64
	total := 0.0
	for len(runs) < p.MaxRuns && (len(runs) < p.MinRuns || total < p.MinTotal) {
		t0 := time.Now()
		if err := f(); err != nil {
			return nil, err
		}
		d := time.Since(t0).Seconds()
		runs = append(runs, d)
		total += d
	}
	return runs, nil
}

// loadJob parses the program and reads its inputs.
func loadJob(j job) ([]byte, *stablehlo.Module, []*stablehlo.Tensor, error) {
	text, err := os.ReadFile(j.Path)
	if err != nil {
		return nil, nil, nil, err
	}
	m, err := stablehlo.Parse(text, filepath.Base(j.Path))
	if err != nil {
		return nil, nil, nil, err
	}
	args, err := npy.LoadArgs(strings.Join(j.Inputs, ","), m.Main())
	if err != nil {
		return nil, nil, nil, fmt.Errorf("inputs: %w", err)
	}
	return text, m, args, nil
}

// writeOutputs writes the results as out<i>.npy in dir.
func writeOutputs(dir string, outs []*stablehlo.Tensor, rep *report) error {
	for i, t := range outs {
		a, err := npy.FromTensor(t)
		if err != nil {
			return err
		}
		p := filepath.Join(dir, fmt.Sprintf("out%d.npy", i))
		if err := npy.WriteFile(p, a); err != nil {
			return err
		}
		rep.Outputs = append(rep.Outputs, p)
	}
	return nil
}

// runCPU: a cold compile into an empty cache directory, then a warm start
// (a new Cache and Backend on the same directory: key, lookup, checks,
// load), then the runs on the warm executable.
func runCPU(j job, rep *report) error {
	ctx := context.Background()
	text, _, args, err := loadJob(j)
	if err != nil {
		return err
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	compile := func() (*cpu.Executable, *cache.Report, time.Duration, error) {
		opts := config.Defaults()
		opts.Dir = filepath.Join(j.Dir, "cache")
		opts.MinCompileTime = 0
		c, err := cache.Open(ctx, opts, logger)
		if err != nil {
			return nil, nil, 0, err
		}
		be := cpu.New()
		be.Threads = j.Threads
		be.NoTune = j.Engine == "cpu-untuned"
		t0 := time.Now()
		exe, r, err := cache.Compile(ctx, c, be, cache.Program{Name: j.Program, Text: text})
		d := time.Since(t0)
		if err != nil {
			return nil, nil, 0, err
		}
		return exe.(*cpu.Executable), r, d, nil
	}
	exe, r, cold, err := compile()
	if err != nil {
		return fmt.Errorf("cold compile: %w", err)
	}
	if r.Hit {
		return fmt.Errorf("cold compile hit the cache")
	}
	exe.Close()
	rep.CompileS = cold.Seconds()
	// Where the cold compile's time went, for the log.
	var phases []string
	for _, p := range r.PhaseTotals() {
		phases = append(phases, fmt.Sprintf("%s=%v", p.Name, p.Duration.Round(time.Millisecond)))
	}
	rep.Note = "cold compile phases: " + strings.Join(phases, " ")
	exe, r, warm, err := compile()
	if err != nil {
		return fmt.Errorf("warm start: %w", err)
	}
	defer exe.Close()
	if !r.Hit {
		return fmt.Errorf("warm start missed the executables tier")
	}
	rep.WarmS = warm.Seconds()
	var outs []*stablehlo.Tensor
	rep.RunsS, err = timeRuns(j.Policy, func() error {
		var err error
		outs, err = exe.Run(ctx, args)
		return err
	})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return writeOutputs(j.Dir, outs, rep)
}

// xlaDTypes maps the programs' element types to go-xla's.
var xlaDTypes = map[stablehlo.DType]dtypes.DType{
	stablehlo.F32: dtypes.Float32, stablehlo.F64: dtypes.Float64,
	stablehlo.I32: dtypes.Int32, stablehlo.I64: dtypes.Int64,
	stablehlo.F16: dtypes.Float16, stablehlo.BF16: dtypes.BFloat16,
	stablehlo.I8: dtypes.Int8, stablehlo.UI8: dtypes.Uint8, stablehlo.I1: dtypes.Bool,
}

// runXLA: the real plugin compiles the StableHLO text (go-xla's
// Compile().WithStableHLO, the way GoMLX's xla backend hands XLA a
// program) and runs it; a run is Execute plus copying every result to
// the host, as the cpu backend's Run returns host tensors. go-xla has no
// executable serialization, so there is no warm start here: the xla/pjrt
// wrapper's hit is measured in docs/pjrt.md.
func runXLA(j job, rep *report) error {
	// XLA's client sizes its thread pools from the affinity mask
	// (tsl::port::MaxParallelism), which taskset set for this process.
	runtime.LockOSThread()
	text, m, args, err := loadJob(j)
	if err != nil {
		return err
	}
	p, err := pjrt.GetPlugin(j.Plugin)
	if err != nil {
		return err
	}
	client, err := p.NewClient(nil)
	if err != nil {
		return err
	}
	t0 := time.Now()
	exe, err := client.Compile().WithStableHLO(text).Done()
	if err != nil {
		return fmt.Errorf("compile: %w", err)
	}
	rep.CompileS = time.Since(t0).Seconds()
	rep.Note = "warm start n/a in-process (go-xla cannot deserialize); see docs/pjrt.md for the wrapper's hit"
	var inputs []*pjrt.Buffer
	for i, a := range args {
		dt, ok := xlaDTypes[a.Type.DType]
		if !ok {
			return fmt.Errorf("argument %d: dtype %s not mapped", i, a.Type)
		}
		dims := make([]int, len(a.Type.Shape))
		for k, d := range a.Type.Shape {
			dims[k] = int(d)
		}
		buf, err := client.BufferFromHost().FromRawData(a.Data, dt, dims).Done()
		if err != nil {
			return err
		}
		inputs = append(inputs, buf)
	}
	results := m.Main().ResultTypes
	var outs []*stablehlo.Tensor
	rep.RunsS, err = timeRuns(j.Policy, func() error {
		bufs, err := exe.Execute(inputs...).DonateNone().Done()
		if err != nil {
			return err
		}
		if len(bufs) != len(results) {
			return fmt.Errorf("%d results, want %d", len(bufs), len(results))
		}
		outs = outs[:0]
		for i, b := range bufs {
			t := stablehlo.NewTensor(results[i])
			if err := b.ToHost(t.Data); err != nil {
				return err
			}
			b.Destroy()
			outs = append(outs, t)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return writeOutputs(j.Dir, slices.Clone(outs), rep)
}

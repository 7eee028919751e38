package compilerbench

// The GoMLX rows: trainbench's MLP and transformer training steps
// (examples/gomlx/trainmodel) trained by GoMLX itself, on xlacache's GoMLX
// backend (package gomlx: StableHLO through the cache onto the cpu
// backend) and on GoMLX's xla backend with the real plugin by path. The
// programs are "gomlx-mlp" and "gomlx-transformer"; each cell is a child
// process as for the StableHLO programs.

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends"
	xlabackend "github.com/gomlx/gomlx/backends/xla"

	"github.com/xlacache/xlacache/examples/gomlx/trainmodel"
	"github.com/xlacache/xlacache/gomlx"
	"github.com/xlacache/xlacache/npy"
	"github.com/xlacache/xlacache/stablehlo"
)

// gomlxSteps is fixed, not a policy: the losses of two backends are
// compared after the same number of steps.
var gomlxSteps = flag.Int("compilerbench.gomlxsteps", 30, "timed training steps after the first, for the gomlx-* programs")

// gomlxPrefix marks the programs trained through GoMLX.
const gomlxPrefix = "gomlx-"

// timedBackend times every Builder.Compile of the backend it wraps: what
// GoMLX waited for executables (graph to StableHLO, then the compile or,
// for xlacache, a cache hit).
type timedBackend struct {
	backends.Backend
	mu      sync.Mutex
	compile time.Duration
}

// Builder implements backends.Backend.
func (t *timedBackend) Builder(name string) backends.Builder {
	return timedBuilder{Builder: t.Backend.Builder(name), t: t}
}

func (t *timedBackend) compileTime() time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.compile
}

type timedBuilder struct {
	backends.Builder
	t *timedBackend
}

// Compile implements backends.Builder.
func (b timedBuilder) Compile(outputs []backends.Op, shardings []*backends.ShardingSpec) (backends.Executable, error) {
	t0 := time.Now()
	exe, err := b.Builder.Compile(outputs, shardings)
	d := time.Since(t0)
	b.t.mu.Lock()
	b.t.compile += d
	b.t.mu.Unlock()
	return exe, err
}

// runGoMLX is a child's GoMLX job: Engine "gomlx-cpu", "gomlx-cpu-untuned"
// or "gomlx-xla"; Program the trainmodel name. It builds the trainer, runs
// the first step (CompileS: the time in Compile calls, the variables'
// initialization graph and the training step's), then Steps timed steps,
// and writes the last loss as out0.npy. With Warm (xlacache only, a second
// process on the first one's cache directory) it runs only the first step
// and reports its Compile calls' time as WarmS; every compile must hit.
// Both report the first step's loss.
func runGoMLX(j job, rep *report) error {
	var be backends.Backend
	var xc *gomlx.Backend
	var err error
	switch j.Engine {
	case "gomlx-cpu", "gomlx-cpu-untuned":
		cfg := "dir=" + filepath.Join(j.Dir, "cache") + ",min_compile_time_secs=0"
		if j.Engine == "gomlx-cpu-untuned" {
			cfg += ",notune"
		}
		xc, err = gomlx.NewWithLookup(context.Background(), cfg, os.LookupEnv, nil)
		be = xc
	case "gomlx-xla":
		// The plugin by path: GoMLX neither searches nor installs one.
		xlabackend.EnableAutoInstall(false)
		be, err = xlabackend.New(j.Plugin)
	default:
		err = fmt.Errorf("unknown engine %q", j.Engine)
	}
	if err != nil {
		return fmt.Errorf("backend: %w", err)
	}
	defer be.Finalize()
	tb := &timedBackend{Backend: be}
	step, err := trainmodel.New(tb, j.Program)
	if err != nil {
		return err
	}
	t0 := time.Now()
	loss, err := step.Run()
	if err != nil {
		return fmt.Errorf("first step: %w", err)
	}
	first := time.Since(t0)
	rep.FirstLoss = loss
	if j.Warm {
		s := xc.Stats()
		if s.Compiles == 0 || s.Hits != s.Compiles {
			return fmt.Errorf("warm start: %d of %d programs from the cache", s.Hits, s.Compiles)
		}
		rep.WarmS = tb.compileTime().Seconds()
		// xlacache's own part of the warm start: the cache's lookups and
		// loads; the rest is GoMLX building its graphs and go-xla
		// writing their StableHLO text, which the xla backend pays too.
		rep.Note = fmt.Sprintf("warm first step %s (%d programs from the cache; %s of the warm start in the cache)", secs(first.Seconds()), s.Hits, secs(s.CompileTime.Seconds()))
		return nil
	}
	rep.CompileS = tb.compileTime().Seconds()
	rep.Note = fmt.Sprintf("first step %s", secs(first.Seconds()))
	for range j.Steps {
		t := time.Now()
		if loss, err = step.Run(); err != nil {
			return fmt.Errorf("step: %w", err)
		}
		rep.RunsS = append(rep.RunsS, time.Since(t).Seconds())
	}
	out := stablehlo.NewTensor(stablehlo.TensorType{DType: stablehlo.F32})
	out.Float32s()[0] = loss
	return writeOutputs(j.Dir, []*stablehlo.Tensor{out}, rep)
}

// runGoMLXProgram runs prog ("gomlx-<model>") on every engine at every
// thread count: the cpu engines through xlacache's GoMLX backend (cold,
// then a warm start in a new process), xla through GoMLX's xla backend on
// each plugin; IREE has no GoMLX backend, which its cell says. The
// reference is the first XLA:CPU cell's loss after the same steps.
func runGoMLXProgram(b *testing.B, prog string, specs []engineSpec, ts []int, pol policy) ([]cell, string) {
	model := strings.TrimPrefix(prog, gomlxPrefix)
	work := b.TempDir()
	var cells []cell
	var specOf []engineSpec
	for _, n := range ts {
		for _, s := range specs {
			c := cell{Program: prog, Engine: s.label, Threads: n}
			c.CompileS, c.WarmS = -1, -1
			if s.key == "iree" {
				c.Skip = "n/a: GoMLX has no IREE backend"
			}
			cells = append(cells, c)
			specOf = append(specOf, s)
		}
	}
	gots := runRounds(b, cells, func(i, round int) (report, []*npy.Array, error) {
		s, dir := specOf[i], roundDir(b, work, specOf[i].key, cells[i].Threads, i, round)
		j := job{Engine: "gomlx-" + s.key, Program: model, Threads: cells[i].Threads, Dir: dir, Plugin: s.plugin,
			Report: filepath.Join(dir, "report.json"), Policy: pol, Steps: *gomlxSteps}
		rep, err := childReport(b, j)
		if err == nil && s.key != "xla" {
			// The warm start: a new process on the cache the cold one
			// filled; its first step must give the cold one's loss bit
			// for bit (the same executables).
			w := j
			w.Warm, w.Report = true, filepath.Join(dir, "warm.json")
			var wr report
			if wr, err = childReport(b, w); err != nil {
				err = fmt.Errorf("warm start: %w", err)
			} else {
				rep.WarmS = wr.WarmS
				rep.Note += "; " + wr.Note
				if wr.FirstLoss != rep.FirstLoss {
					err = fmt.Errorf("warm start: first loss %v, cold process %v", wr.FirstLoss, rep.FirstLoss)
				}
			}
		}
		if err != nil {
			return rep, nil, err
		}
		got, err := readArrays(rep.Outputs)
		return rep, got, err
	})
	var ref []*npy.Array
	refName := "none (XLA:CPU did not run)"
	for i := range cells {
		if c := &cells[i]; ref == nil && c.Wrong == "" && c.Skip == "" && strings.HasPrefix(c.Engine, "XLA:CPU") && len(gots[i]) > 0 {
			ref, refName = gots[i][0], fmt.Sprintf("%s at %d thread(s), the loss after %d steps", c.Engine, c.Threads, 1+*gomlxSteps)
		}
	}
	checkCells(b, cells, gots, ref)
	return cells, refName
}

// Command trainbench times GoMLX training steps on GoMLX's XLA backend:
// an MLP or a small transformer, built with GoMLX's layers and trained by
// its Trainer (Adam). It prints one JSON line: the time of the first
// training step (graph building, variable initialization, compilation and
// one step), of the second step, and from process start until the first
// step was done. With XLACACHE_DIR set it calls xla.Prepare first, so the
// plugin runs behind xlacache's caching PJRT wrapper; without, it uses the
// plain plugin. Through the wrapper it also reports the wrapper's
// counters: the time spent in compile calls (what the program waited for
// runnable programs: compiles or hits), of it in the inner compile and in
// the inner deserialize. examples/gomlx's TestBenchTrainingSteps runs it.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"

	xlabackend "github.com/gomlx/gomlx/backends/xla"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	mlctx "github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train"
	"github.com/gomlx/gomlx/pkg/ml/train/losses"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/examples/gomlx/trainmodel"
	"github.com/xlacache/xlacache/internal/pjrtcounters"
	"github.com/xlacache/xlacache/xla"
)

var start = time.Now()

func main() {
	model := flag.String("model", "mlp", "mlp or transformer")
	plugin := flag.String("plugin", "", "PJRT plugin path")
	flag.Parse()
	if err := run(*model, *plugin); err != nil {
		fmt.Fprintln(os.Stderr, "trainbench:", err)
		os.Exit(1)
	}
}

func run(model, plugin string) error {
	xlabackend.EnableAutoInstall(false)
	opts, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		return err
	}
	wrapped := false
	if opts.Enabled() {
		p, err := xla.Prepare(context.Background(), opts, xla.PrepareOptions{Plugin: plugin, Logger: slog.New(served)})
		if err != nil {
			return err
		}
		defer p.Close()
		if p.Wrapper == nil {
			return fmt.Errorf("no wrapper: %s", p.WrapperSkipped)
		}
		plugin, wrapped = p.Plugin, true
	}
	backend, err := xlabackend.New(plugin)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	// The client exists from here: a prefetch of cached executables could
	// start now (docs/pjrt.md, Training-step benchmark).
	client := time.Since(start)
	modelFn, inputs, labels, err := trainmodel.Model(model)
	if err != nil {
		return err
	}
	ctx := mlctx.New()
	if seed := os.Getenv("TRAINBENCH_SEED"); seed != "" {
		var n int64
		fmt.Sscan(seed, &n)
		ctx.SetParam(mlctx.ParamInitialSeed, n)
	}
	trainer := train.NewTrainer(backend, ctx, modelFn, losses.MeanSquaredError, optimizers.Adam().Done(), nil, nil)
	t0 := time.Now()
	if _, err := trainer.TrainStep(nil, inputs, labels); err != nil {
		return fmt.Errorf("first step: %w", err)
	}
	first, ready := time.Since(t0), time.Since(start)
	t1 := time.Now()
	m, err := trainer.TrainStep(nil, inputs, labels)
	if err != nil {
		return fmt.Errorf("second step: %w", err)
	}
	second := time.Since(t1)
	out := map[string]any{
		"model": model, "wrapped": wrapped, "loss": tensors.ToScalar[float32](m[0]),
		"first_step_ms": ms(first), "second_step_ms": ms(second), "ready_ms": ms(ready),
		"client_ms": ms(client),
	}
	if wrapped {
		c, err := pjrtcounters.Read(plugin)
		if err != nil {
			return err
		}
		nsMS := func(d time.Duration) float64 { return float64(d) / 1e6 }
		out["compiles"], out["hits"] = c.InnerCompiles, c.Hits
		out["deserialize_ms"], out["inner_compile_ms"], out["compile_call_ms"] = nsMS(c.Deserialize), nsMS(c.InnerCompile), nsMS(c.CompileCall)
		out["probe_ms"] = nsMS(c.Probe)
		out["served"] = served.take()
	}
	return json.NewEncoder(os.Stdout).Encode(out)
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// served keeps the in-process helper's per-compile lines ("pjrt helper:
// served", with the time of each phase) for the benchmark's breakdown of
// a hit's overhead; every other line goes to stderr at Info and above.
var served = &servedLog{next: slog.NewTextHandler(os.Stderr, nil)}

type servedLog struct {
	next  slog.Handler
	mu    sync.Mutex
	lines []map[string]any
}

func (l *servedLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *servedLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *servedLog) WithGroup(string) slog.Handler            { return l }

func (l *servedLog) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "pjrt helper: served" {
		if r.Level >= slog.LevelInfo {
			return l.next.Handle(ctx, r)
		}
		return nil
	}
	m := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.Any()
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, m)
	l.mu.Unlock()
	return nil
}

func (l *servedLog) take() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.lines
}

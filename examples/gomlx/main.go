// Command gomlx trains a small GoMLX model (a linear regression by
// gradient descent) with xlacache configured from the environment.
//
// Without a PJRT plugin, or with GOMLX_BACKEND=xlacache, it trains on
// xlacache's own GoMLX backend (package gomlx): GoMLX's graphs become
// StableHLO, compiled by the cpu backend through the cache, so a second
// run starts from the cache. It prints the time to the first step and how
// many programs came from the cache.
//
// With an XLA PJRT plugin installed (go-xla's search path, or
// PJRT_PLUGIN_LIBRARY_PATH) and GOMLX_BACKEND unset or xla, it calls
// xla.Prepare before the plugin is loaded, so XLA compiles with its
// autotune (and, if selected, kernel) cache under XLACACHE_DIR, then
// trains on GoMLX's XLA backend, through xlacache's caching PJRT wrapper
// (xla/pjrt), which Prepare puts in front of the plugin: a second run
// loads the compiled training step instead of compiling it.
// GOMLX_BACKEND=xla:/path/to/plugin.so names the plugin by path.
// GOMLX_BACKEND=go selects GoMLX's pure-Go
// backend. It never downloads a plugin.
//
//	XLACACHE_DIR=/tmp/xc go run ./examples/gomlx
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	xlabackend "github.com/gomlx/gomlx/backends/xla"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/xlacache/xlacache/config"
	xgomlx "github.com/xlacache/xlacache/gomlx"
	"github.com/xlacache/xlacache/xla"
)

func main() {
	if err := run(context.Background(), os.Stdout, os.LookupEnv); err != nil {
		fmt.Fprintln(os.Stderr, "gomlx example:", err)
		os.Exit(1)
	}
}

// result is what a training run reached.
type result struct {
	backend      string
	xlaCaches    bool
	w, b         float32
	first, final float32
	// firstStep is the time of the first step (graph building and
	// compilation included); steps is the time of all the others.
	firstStep, steps time.Duration
}

// run picks the backend, prepares XLA's caches when XLA is used, and
// trains.
func run(ctx context.Context, out io.Writer, lookup func(string) (string, bool)) error {
	opts, err := config.FromEnv(lookup)
	if err != nil {
		return err
	}
	backend, cachesOn, err := newBackend(ctx, out, opts, lookup)
	if err != nil {
		return err
	}
	defer backend.Finalize()
	r, err := train(backend)
	if err != nil {
		return err
	}
	r.xlaCaches = cachesOn
	fmt.Fprintf(out, "trained on %s: loss %.6g -> %.6g, y = %.3f*x + %.3f (want 3x + 1)\n", r.backend, r.first, r.final, r.w, r.b)
	fmt.Fprintf(out, "first step %s, then %d steps in %s", r.firstStep.Round(time.Millisecond), steps-1, r.steps.Round(time.Millisecond))
	if xb, ok := backend.(*xgomlx.Backend); ok {
		s := xb.Stats()
		fmt.Fprintf(out, "; %d program(s) compiled, %d from the cache (%s)", s.Compiles, s.Hits, xb.Options().Dir)
	}
	fmt.Fprintln(out)
	return nil
}

// newBackend returns the backend GOMLX_BACKEND names: "go" for the
// pure-Go backend; "xla" (or nothing) for GoMLX's XLA backend, with XLA's
// caches prepared first, when a PJRT plugin is installed; otherwise
// xlacache's GoMLX backend, configured by the environment and
// GOMLX_BACKEND's "xlacache:..." options.
func newBackend(ctx context.Context, out io.Writer, opts config.Options, lookup func(string) (string, bool)) (backends.Backend, bool, error) {
	// Never download plugins from an example; use what is installed.
	xlabackend.EnableAutoInstall(false)
	v, _ := lookup(backends.ConfigEnvVar)
	name, cfg, _ := strings.Cut(v, ":")
	switch name {
	case "go", "simplego":
		b, err := simplego.New(cfg)
		if err != nil {
			return nil, false, fmt.Errorf("pure-Go backend: %w", err)
		}
		return b, false, nil
	case "xla", "stablehlo", "hlo", "shlo", "":
		if plugin := pickPlugin(lookup); plugin != "" {
			return newXLABackend(ctx, out, opts, plugin, lookup)
		}
		fmt.Fprintln(out, "no XLA PJRT plugin found: XLA's caches are inactive; running on xlacache's GoMLX backend")
		cfg = ""
	case xgomlx.Name:
	default:
		return nil, false, fmt.Errorf("%s=%q: want xlacache, xla or go", backends.ConfigEnvVar, v)
	}
	b, err := xgomlx.NewWithLookup(ctx, cfg, lookup, nil)
	if err != nil {
		return nil, false, err
	}
	return b, false, nil
}

// newXLABackend returns GoMLX's XLA backend on plugin, with XLA's caches
// prepared first.
func newXLABackend(ctx context.Context, out io.Writer, opts config.Options, plugin string, lookup func(string) (string, bool)) (backends.Backend, bool, error) {
	// Order matters: XLA reads XLA_FLAGS once, when it first needs its
	// flags, which is after the plugin is loaded. Prepare must run first.
	cachesOn := false
	p, err := xla.Prepare(ctx, opts, xla.PrepareOptions{PluginName: plugin, LookupEnv: lookup})
	switch {
	case err != nil:
		slog.Warn("xlacache: XLA's caches stay off", "err", err)
	case !opts.Enabled():
		fmt.Fprintln(out, "XLACACHE_DIR is not set: XLA's caches are inactive")
	default:
		var set []string
		for _, f := range p.Merge.Added {
			set = append(set, f.String())
		}
		cachesOn = len(p.Flags) > 0
		fmt.Fprintf(out, "XLA plugin %q (%s); XLA cache flags: %s\n", plugin, p.Support.Detail, strings.Join(set, " "))
		if p.Wrapper != nil {
			// Load the wrapper by path: go-xla would find it by name too
			// (PJRT_PLUGIN_LIBRARY_PATH), but not when plugin is a path.
			fmt.Fprintf(out, "executable cache: xlacache's PJRT wrapper around %s\n", p.Wrapper.Inner)
			plugin, cachesOn = p.Plugin, true
		} else {
			fmt.Fprintf(out, "executable cache: off (%s)\n", p.WrapperSkipped)
		}
	}
	b, err := xlabackend.New(plugin)
	if err != nil {
		return nil, false, fmt.Errorf("XLA backend with plugin %q: %w", plugin, err)
	}
	return b, cachesOn, nil
}

// pickPlugin chooses the PJRT plugin: the one GOMLX_BACKEND names
// ("xla:cuda", or a path: "xla:/opt/pjrt/pjrt_c_api_cpu_plugin.so"), else cuda, else cpu, else any installed one. It only
// lists files; nothing is loaded.
func pickPlugin(lookup func(string) (string, bool)) string {
	avail := xlabackend.GetAvailablePlugins()
	if v, ok := lookup(backends.ConfigEnvVar); ok {
		name, cfg, _ := strings.Cut(v, ":")
		if name != "xla" && name != "stablehlo" {
			return "" // the user asked for another backend
		}
		if cfg, _, _ = strings.Cut(cfg, ","); cfg != "" {
			if slices.Contains(avail, cfg) {
				return cfg
			}
			// A plugin given by path, as GoMLX takes it.
			if filepath.IsAbs(cfg) {
				if st, err := os.Stat(cfg); err == nil && st.Mode().IsRegular() {
					return cfg
				}
			}
			return ""
		}
	}
	for _, want := range []string{"cuda", "cpu"} {
		if slices.Contains(avail, want) {
			return want
		}
	}
	if len(avail) > 0 {
		return avail[0]
	}
	return ""
}

// steps is the number of training steps.
const steps = 200

// train fits y = w*x + b to points of y = 3x + 1 by gradient descent, with
// the gradient computed by GoMLX's automatic differentiation.
func train(backend backends.Backend) (result, error) {
	r := result{backend: backend.Name()}
	step, err := graph.NewExecAny(backend, func(in []*graph.Node) []*graph.Node {
		w, b, x, y := in[0], in[1], in[2], in[3]
		pred := graph.Add(graph.Mul(x, w), b)
		loss := graph.ReduceAllMean(graph.Square(graph.Sub(pred, y)))
		grads := graph.Gradient(loss, w, b)
		lr := graph.Scalar(w.Graph(), w.DType(), 0.1)
		return []*graph.Node{graph.Sub(w, graph.Mul(lr, grads[0])), graph.Sub(b, graph.Mul(lr, grads[1])), loss}
	})
	if err != nil {
		return r, fmt.Errorf("build training step: %w", err)
	}
	defer step.Finalize()
	xs := make([]float32, 32)
	ys := make([]float32, 32)
	for i := range xs {
		xs[i] = float32(i)/16 - 1
		ys[i] = 3*xs[i] + 1
	}
	x, y := tensors.FromValue(xs), tensors.FromValue(ys)
	w, b := float32(0), float32(0)
	start := time.Now()
	for i := range steps {
		if i == 1 {
			r.firstStep, start = time.Since(start), time.Now()
		}
		outs, err := step.Exec(w, b, x, y)
		if err != nil {
			return r, fmt.Errorf("training step %d: %w", i, err)
		}
		w, b = tensors.ToScalar[float32](outs[0]), tensors.ToScalar[float32](outs[1])
		loss := tensors.ToScalar[float32](outs[2])
		if i == 0 {
			r.first = loss
		}
		r.final = loss
	}
	r.steps = time.Since(start)
	r.w, r.b = w, b
	return r, nil
}

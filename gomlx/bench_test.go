package gomlx_test

import (
	stdctx "context"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"

	"github.com/xlacache/xlacache/gomlx"
)

// Benchmarks against GoMLX's pure-Go backend on the same programs (the
// models of examples/mlp and examples/transformer, trained with Adam):
//
//	go test -run '^$' -bench . -benchtime 5x ./backend/gomlx/
//
// They report the pure-Go time over the xlacache time as "speedup" (one
// warm training step) and "first-step-ratio" (a new process, warm cache,
// up to the end of its first step), and the first, cold, process's time
// as "cold-xlacache-ms".

// model builds one training step (returning the loss) for inputs x, y;
// inputs returns their values.
type model struct {
	name   string
	vars   map[string][]int
	inputs func() (x, y *tensors.Tensor)
	loss   func(ctx *context.Context, x, y *graph.Node) *graph.Node
}

// det are deterministic values in [-scale/2, scale/2).
func det(n int, scale float32) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = scale * (float32(math.Mod(float64(i)*0.6180339887, 1)) - 0.5)
	}
	return v
}

func param(ctx *context.Context, g *graph.Graph, name string) *graph.Node {
	return ctx.GetVariable(name).ValueGraph(g)
}

var models = map[string]model{
	"mlp": {
		vars: map[string][]int{"w1": {784, 512}, "b1": {1, 512}, "w2": {512, 512}, "b2": {1, 512}, "w3": {512, 10}, "b3": {1, 10}},
		inputs: func() (*tensors.Tensor, *tensors.Tensor) {
			return tensors.FromFlatDataAndDimensions(det(64*784, 2), 64, 784), tensors.FromFlatDataAndDimensions(det(64*10, 1), 64, 10)
		},
		loss: func(ctx *context.Context, x, y *graph.Node) *graph.Node {
			g := x.Graph()
			p := func(n string) *graph.Node { return param(ctx, g, n) }
			h := graph.Tanh(graph.Add(graph.MatMul(x, p("w1")), p("b1")))
			h = graph.Tanh(graph.Add(graph.MatMul(h, p("w2")), p("b2")))
			probs := graph.Softmax(graph.Add(graph.MatMul(h, p("w3")), p("b3")), -1)
			return graph.ReduceAllMean(graph.Square(graph.Sub(probs, y)))
		},
	},
	"transformer": {
		vars: map[string][]int{"g1": {1, 256}, "be1": {1, 256}, "wq": {256, 256}, "wk": {256, 256}, "wv": {256, 256},
			"wo": {256, 256}, "g2": {1, 256}, "be2": {1, 256}, "w1": {256, 1024}, "b1": {1, 1024}, "w2": {1024, 256}, "b2": {1, 256}},
		inputs: func() (*tensors.Tensor, *tensors.Tensor) {
			return tensors.FromFlatDataAndDimensions(det(128*256, 2), 128, 256), tensors.FromFlatDataAndDimensions(det(128*256, 1), 128, 256)
		},
		loss: func(ctx *context.Context, x, y *graph.Node) *graph.Node {
			const seq, width, heads = 128, 256, 4
			g := x.Graph()
			p := func(n string) *graph.Node { return param(ctx, g, n) }
			norm := func(v *graph.Node, gamma, beta string) *graph.Node {
				c := graph.Sub(v, graph.ReduceAndKeep(v, graph.ReduceMean, -1))
				vr := graph.ReduceAndKeep(graph.Square(c), graph.ReduceMean, -1)
				return graph.Add(graph.Mul(graph.Div(c, graph.Sqrt(graph.AddScalar(vr, 1e-5))), p(gamma)), p(beta))
			}
			h := norm(x, "g1", "be1")
			split := func(w string) *graph.Node {
				return graph.Transpose(graph.Reshape(graph.MatMul(h, p(w)), seq, heads, width/heads), 0, 1)
			}
			q, k, v := split("wq"), split("wk"), split("wv")
			scores := graph.MulScalar(graph.Einsum("hqd,hkd->hqk", q, k), 1/math.Sqrt(width/heads))
			att := graph.Einsum("hqk,hkd->hqd", graph.Softmax(scores, -1), v)
			att = graph.Reshape(graph.Transpose(att, 0, 1), seq, width)
			r := graph.Add(x, graph.MatMul(att, p("wo")))
			f := graph.Tanh(graph.Add(graph.MatMul(norm(r, "g2", "be2"), p("w1")), p("b1")))
			out := graph.Add(r, graph.Add(graph.MatMul(f, p("w2")), p("b2")))
			return graph.ReduceAllMean(graph.Square(graph.Sub(out, y)))
		},
	},
}

// trainer prepares m's Adam training step on backend; step runs one
// (compiling on the first call) and returns the loss.
func trainer(backend backends.Backend, m model) (step func() (float32, error), err error) {
	ctx := context.New()
	for name, dims := range m.vars {
		n := 1
		for _, d := range dims {
			n *= d
		}
		ctx.VariableWithValue(name, tensors.FromFlatDataAndDimensions(det(n, 0.1), dims...))
	}
	opt := optimizers.Adam().LearningRate(1e-3).Done()
	exec, err := context.NewExec(backend, ctx, func(ctx *context.Context, x, y *graph.Node) *graph.Node {
		loss := m.loss(ctx, x, y)
		opt.UpdateGraph(ctx, x.Graph(), loss)
		return loss
	})
	if err != nil {
		return nil, err
	}
	x, y := m.inputs()
	return func() (float32, error) {
		out, err := exec.Exec(x, y)
		if err != nil {
			return 0, err
		}
		return tensors.ToScalar[float32](out[0]), nil
	}, nil
}

// mustTrainer is trainer for benchmarks; each step fails b on error.
func mustTrainer(b *testing.B, backend backends.Backend, m model) func() float32 {
	step, err := trainer(backend, m)
	if err != nil {
		b.Fatal(err)
	}
	return func() float32 {
		l, err := step()
		if err != nil {
			b.Fatal(err)
		}
		return l
	}
}

func benchBackend(b *testing.B) backends.Backend {
	dir := os.Getenv("XLACACHE_BENCH_DIR")
	if dir == "" {
		dir = b.TempDir()
	}
	xb, err := gomlx.NewWithLookup(stdctx.Background(), "dir="+dir, func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(xb.Finalize)
	return xb
}

// BenchmarkTrainStep times one warm Adam step of each model on both
// backends, alternating, and checks they compute the same loss.
func BenchmarkTrainStep(b *testing.B) {
	for _, name := range []string{"mlp", "transformer"} {
		b.Run(name, func(b *testing.B) {
			sg, err := simplego.New("")
			if err != nil {
				b.Fatal(err)
			}
			defer sg.Finalize()
			xs, ss := mustTrainer(b, benchBackend(b), models[name]), mustTrainer(b, sg, models[name])
			lx, ls := xs(), ss() // compile, and the first step
			if math.Abs(float64(lx-ls)) > 1e-4*math.Max(1, math.Abs(float64(ls))) {
				b.Fatalf("first loss: xlacache %v, pure Go %v", lx, ls)
			}
			var tx, ts time.Duration
			b.ResetTimer()
			for range b.N {
				start := time.Now()
				xs()
				tx += time.Since(start)
				start = time.Now()
				ss()
				ts += time.Since(start)
			}
			b.ReportMetric(float64(tx.Microseconds())/float64(b.N)/1000, "xlacache-ms/step")
			b.ReportMetric(float64(ts.Microseconds())/float64(b.N)/1000, "purego-ms/step")
			b.ReportMetric(float64(ts)/float64(tx), "speedup")
		})
	}
}

// firstStepChild is the environment variable that makes the test binary
// a child process for BenchmarkFirstStep: "backend model".
const firstStepChild = "XLACACHE_GOMLX_FIRST_STEP"

func TestMain(m *testing.M) {
	if v := os.Getenv(firstStepChild); v != "" {
		os.Exit(firstStep(v))
	}
	os.Exit(m.Run())
}

// firstStep builds the backend and model and runs one step; the parent
// times the whole process.
func firstStep(spec string) int {
	name, model, _ := strings.Cut(spec, " ")
	var backend backends.Backend
	var err error
	if name == "simplego" {
		backend, err = simplego.New("")
	} else {
		backend, err = gomlx.NewWithLookup(stdctx.Background(), "dir="+os.Getenv("XLACACHE_BENCH_DIR"),
			func(string) (string, bool) { return "", false }, nil)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	step, err := trainer(backend, models[model])
	if err == nil {
		var loss float32
		if loss, err = step(); err == nil {
			fmt.Println(loss)
			return 0
		}
	}
	fmt.Fprintln(os.Stderr, err)
	return 1
}

// BenchmarkFirstStep times new processes up to the end of their first
// training step: the pure-Go backend (nothing to compile) against xlacache
// with a warm cache.
func BenchmarkFirstStep(b *testing.B) {
	for _, model := range []string{"mlp", "transformer"} {
		b.Run(model, func(b *testing.B) {
			dir := b.TempDir()
			child := func(backend string) (time.Duration, float64) {
				cmd := exec.Command(os.Args[0])
				cmd.Env = append(os.Environ(), firstStepChild+"="+backend+" "+model, "XLACACHE_BENCH_DIR="+dir)
				start := time.Now()
				out, err := cmd.CombinedOutput()
				if err != nil {
					b.Fatalf("%s child: %v\n%s", backend, err, out)
				}
				loss, err := strconv.ParseFloat(strings.TrimSpace(string(out)), 64)
				if err != nil {
					b.Fatalf("%s child output %q", backend, out)
				}
				return time.Since(start), loss
			}
			cold, lx := child("xlacache") // fills the cache
			var tx, ts time.Duration
			b.ResetTimer()
			for range b.N {
				d, l := child("xlacache")
				tx += d
				if l != lx {
					b.Fatalf("warm loss %v, cold %v", l, lx)
				}
				d, _ = child("simplego")
				ts += d
			}
			b.ReportMetric(float64(tx.Microseconds())/float64(b.N)/1000, "xlacache-ms")
			b.ReportMetric(float64(ts.Microseconds())/float64(b.N)/1000, "purego-ms")
			b.ReportMetric(float64(tx)/float64(ts), "first-step-ratio")
			b.ReportMetric(float64(cold.Milliseconds()), "cold-xlacache-ms")
		})
	}
}

package gomlx_test

import (
	stdctx "context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/backends/simplego"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/dtypes/bfloat16"
	"github.com/gomlx/gomlx/pkg/core/graph"
	"github.com/gomlx/gomlx/pkg/core/shapes"
	"github.com/gomlx/gomlx/pkg/core/tensors"
	"github.com/gomlx/gomlx/pkg/ml/context"
	"github.com/gomlx/gomlx/pkg/ml/train/optimizers"
	"github.com/x448/float16"

	"github.com/xlacache/xlacache/gomlx"
)

// newBackend opens the xlacache backend on a fresh cache directory,
// ignoring the process environment.
func newBackend(t *testing.T) *gomlx.Backend {
	t.Helper()
	b, err := gomlx.NewWithLookup(stdctx.Background(), "dir="+t.TempDir()+",notune,min_compile_time_secs=0",
		func(string) (string, bool) { return "", false }, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Finalize)
	return b
}

func newSimpleGo(t *testing.T) backends.Backend {
	t.Helper()
	b, err := simplego.New("")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Finalize)
	return b
}

// closeTo fails unless got and want agree to rel relative (or absolute,
// near zero) error.
func closeTo(t *testing.T, what string, got, want, rel float64) {
	t.Helper()
	if math.IsNaN(got) || math.Abs(got-want) > rel*math.Max(1, math.Abs(want)) {
		t.Errorf("%s: got %.9g, want %.9g (±%g)", what, got, want, rel)
	}
}

// linearRegression runs steps of gradient descent on y = 3x + 1 and
// returns the loss of every step.
func linearRegression(t *testing.T, backend backends.Backend, steps int) []float64 {
	t.Helper()
	exec, err := graph.NewExecAny(backend, func(in []*graph.Node) []*graph.Node {
		w, b, x, y := in[0], in[1], in[2], in[3]
		loss := graph.ReduceAllMean(graph.Square(graph.Sub(graph.Add(graph.Mul(x, w), b), y)))
		grads := graph.Gradient(loss, w, b)
		lr := graph.Scalar(w.Graph(), w.DType(), 0.1)
		return []*graph.Node{graph.Sub(w, graph.Mul(lr, grads[0])), graph.Sub(b, graph.Mul(lr, grads[1])), loss}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	xs, ys := make([]float32, 32), make([]float32, 32)
	for i := range xs {
		xs[i] = float32(i)/16 - 1
		ys[i] = 3*xs[i] + 1
	}
	w, b := float32(0), float32(0)
	var losses []float64
	for range steps {
		outs, err := exec.Exec(w, b, xs, ys)
		if err != nil {
			t.Fatal(err)
		}
		w, b = tensors.ToScalar[float32](outs[0]), tensors.ToScalar[float32](outs[1])
		losses = append(losses, float64(tensors.ToScalar[float32](outs[2])))
	}
	return losses
}

func TestLinearRegressionMatchesSimpleGo(t *testing.T) {
	got := linearRegression(t, newBackend(t), 50)
	want := linearRegression(t, newSimpleGo(t), 50)
	for i := range got {
		closeTo(t, "loss", got[i], want[i], 1e-5)
	}
	if got[len(got)-1] > got[0]/100 {
		t.Errorf("did not converge: %v", got)
	}
}

// mlp trains a 2-layer tanh MLP with Adam on a fixed regression task,
// with deterministic initial weights (so both backends start equal).
func mlp(t *testing.T, backend backends.Backend, steps int) []float64 {
	t.Helper()
	const batch, in, hidden = 32, 8, 16
	det := func(n int, scale float32) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = scale * (float32(math.Mod(float64(i)*0.6180339887, 1)) - 0.5)
		}
		return v
	}
	ctx := context.New()
	ctx.VariableWithValue("w1", tensors.FromFlatDataAndDimensions(det(in*hidden, 1), in, hidden))
	ctx.VariableWithValue("b1", tensors.FromFlatDataAndDimensions(make([]float32, hidden), 1, hidden))
	ctx.VariableWithValue("w2", tensors.FromFlatDataAndDimensions(det(hidden, 1), hidden, 1))
	ctx.VariableWithValue("b2", tensors.FromFlatDataAndDimensions(make([]float32, 1), 1, 1))
	opt := optimizers.Adam().LearningRate(0.01).Done()
	exec, err := context.NewExecAny(backend, ctx, func(ctx *context.Context, in []*graph.Node) []*graph.Node {
		x, y := in[0], in[1]
		g := x.Graph()
		v := func(name string) *graph.Node { return ctx.GetVariable(name).ValueGraph(g) }
		h := graph.Tanh(graph.Add(graph.Dot(x, v("w1")), v("b1")))
		pred := graph.Add(graph.Dot(h, v("w2")), v("b2"))
		loss := graph.ReduceAllMean(graph.Square(graph.Sub(pred, y)))
		opt.UpdateGraph(ctx, g, loss)
		return []*graph.Node{loss}
	})
	if err != nil {
		t.Fatal(err)
	}
	defer exec.Finalize()
	xs := tensors.FromFlatDataAndDimensions(det(batch*in, 2), batch, in)
	ys := make([]float32, batch)
	for i := range ys {
		ys[i] = float32(math.Sin(float64(i)))
	}
	yt := tensors.FromFlatDataAndDimensions(ys, batch, 1)
	var losses []float64
	for range steps {
		outs, err := exec.Exec(xs, yt)
		if err != nil {
			t.Fatal(err)
		}
		losses = append(losses, float64(tensors.ToScalar[float32](outs[0])))
	}
	return losses
}

func TestMLPAdamMatchesSimpleGo(t *testing.T) {
	got := mlp(t, newBackend(t), 30)
	want := mlp(t, newSimpleGo(t), 30)
	for i := range got {
		closeTo(t, "loss", got[i], want[i], 1e-5)
	}
	if got[len(got)-1] >= got[0]*0.8 {
		t.Errorf("did not train: %v", got)
	}
}

// TestUnsupportedIsAnError checks that ops and dtypes the backend lacks
// return errors naming them, through the builder and through GoMLX's
// graph API, and that Capabilities agrees.
func TestUnsupportedIsAnError(t *testing.T) {
	b := newBackend(t)
	bld := b.Builder("unsupported")
	x, err := bld.Parameter("x", shapes.Make(dtypes.Float32, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := bld.DistributedAutoSharding(); err == nil || !strings.Contains(err.Error(), "AutoSharding") {
		t.Errorf("DistributedAutoSharding: got %v, want an error naming it", err)
	}
	if _, err := bld.AllReduce([]backends.Op{x}, backends.ReduceOpSum, [][]int{{0, 1}}); err == nil || !strings.Contains(err.Error(), "AllReduce") {
		t.Errorf("AllReduce over a replica the program lacks: got %v, want an error naming AllReduce", err)
	}
	if _, err := bld.Parameter("f8", shapes.Make(dtypes.F8E5M2, 2), nil); err == nil || !strings.Contains(err.Error(), "F8E5M2") {
		t.Errorf("F8E5M2 parameter: got %v, want an error naming the dtype", err)
	}
	if _, err := bld.Add(x, "not an op"); err == nil || !strings.Contains(err.Error(), "Add") {
		t.Errorf("Add with a foreign operand: got %v", err)
	}
	exec, err := graph.NewExec(b, func(x *graph.Node) *graph.Node { return graph.ConvertDType(x, dtypes.F8E5M2) })
	if err == nil {
		_, err = exec.Exec([]float32{1, 2})
	}
	if err == nil || !strings.Contains(err.Error(), "F8E5M2") {
		t.Errorf("graph.ConvertDType to F8E5M2: got %v, want an error naming the dtype", err)
	}
	caps := b.Capabilities()
	for op, want := range map[backends.OpType]bool{backends.OpTypeAllReduce: true, backends.OpTypeAllGather: false,
		backends.OpTypeGather: true, backends.OpTypeBatchNormGradient: true, backends.OpTypeRNGBitGenerator: true} {
		if caps.Operations[op] != want {
			t.Errorf("Capabilities %s = %v, want %v", op, caps.Operations[op], want)
		}
	}
	if caps.DTypes[dtypes.F8E5M2] || !caps.DTypes[dtypes.BFloat16] || !caps.DTypes[dtypes.Float16] {
		t.Errorf("Capabilities dtypes: %v", caps.DTypes)
	}
}

// TestHalfPrecision runs arithmetic in bf16 (against the pure-Go backend)
// and f16 (which it lacks; against values computed here).
func TestHalfPrecision(t *testing.T) {
	fn := func(x *graph.Node) *graph.Node { return graph.Add(graph.Mul(x, x), graph.OnePlus(x)) }
	vals := []float32{0.5, -1.25, 3}
	bf := []bfloat16.BFloat16{bfloat16.FromFloat32(0.5), bfloat16.FromFloat32(-1.25), bfloat16.FromFloat32(3)}
	got := graph.MustExecOnce(newBackend(t), fn, bf)
	want := graph.MustExecOnce(newSimpleGo(t), fn, bf)
	if got.String() != want.String() {
		t.Errorf("bf16: got %s, want %s", got, want)
	}
	f16 := []float16.Float16{float16.Fromfloat32(0.5), float16.Fromfloat32(-1.25), float16.Fromfloat32(3)}
	out := tensors.MustCopyFlatData[float16.Float16](graph.MustExecOnce(newBackend(t), fn, f16))
	for i, v := range vals {
		if w := v*v + 1 + v; out[i].Float32() != w {
			t.Errorf("f16 [%d]: got %v, want %v", i, out[i].Float32(), w)
		}
	}
}

// TestRandomUniform checks the RNG decomposition: values in [0, 1) with
// a plausible mean, and a new state each call.
func TestRandomUniform(t *testing.T) {
	b := newBackend(t)
	seed, err := graph.RNGStateFromSeed(42)
	if err != nil {
		t.Fatal(err)
	}
	out := graph.MustExecOnceN(b, func(state *graph.Node) []*graph.Node {
		s2, v := graph.RandomUniform(state, shapes.Make(dtypes.Float32, 1000))
		return []*graph.Node{s2, v}
	}, seed)
	if s := out[0].Shape(); !s.Equal(backends.RNGStateShape) {
		t.Fatalf("state shape %s", s)
	}
	var sum float64
	for _, v := range tensors.MustCopyFlatData[float32](out[1]) {
		if v < 0 || v >= 1 {
			t.Fatalf("value %v outside [0, 1)", v)
		}
		sum += float64(v)
	}
	if mean := sum / 1000; mean < 0.45 || mean > 0.55 {
		t.Errorf("mean %v", mean)
	}
}

// TestBatchNorm compares the decomposed batch-norm ops with the
// definitions computed here.
func TestBatchNorm(t *testing.T) {
	b := newBackend(t)
	xs := []float32{1, 2, 3, 4, 5, 7}    // [3, 2], feature axis 1
	gs := []float32{1, -1, 2, 0, 0.5, 1} // gradient of the output
	out := graph.MustExecOnceN(b, func(x, g *graph.Node) []*graph.Node {
		scale := graph.Const(x.Graph(), []float32{2, 3})
		offset := graph.Const(x.Graph(), []float32{0.5, -1})
		n, m, v := graph.InternalBatchNormForTraining(x, scale, offset, 1e-3, 1)
		gx, gs, gb := graph.InternalBatchNormGradient(x, scale, m, v, g, 1e-3, 1)
		inf := graph.InternalBatchNormForInference(x, scale, offset, m, v, 1e-3, 1)
		return []*graph.Node{n, m, v, gx, gs, gb, inf}
	}, tensors.FromFlatDataAndDimensions(xs, 3, 2), tensors.FromFlatDataAndDimensions(gs, 3, 2))
	flat := func(i int) []float32 { return tensors.MustCopyFlatData[float32](out[i]) }
	scale, offset, eps := []float64{2, 3}, []float64{0.5, -1}, 1e-3
	for c := range 2 {
		var mean, vr float64
		for r := range 3 {
			mean += float64(xs[r*2+c]) / 3
		}
		for r := range 3 {
			d := float64(xs[r*2+c]) - mean
			vr += d * d / 3
		}
		rstd := 1 / math.Sqrt(vr+eps)
		closeTo(t, "mean", float64(flat(1)[c]), mean, 1e-5)
		closeTo(t, "variance", float64(flat(2)[c]), vr, 1e-5)
		var gOff, gScale float64
		for r := range 3 {
			xhat := (float64(xs[r*2+c]) - mean) * rstd
			closeTo(t, "normalized", float64(flat(0)[r*2+c]), xhat*scale[c]+offset[c], 1e-5)
			closeTo(t, "inference", float64(flat(6)[r*2+c]), xhat*scale[c]+offset[c], 1e-5)
			gOff += float64(gs[r*2+c])
			gScale += float64(gs[r*2+c]) * xhat
		}
		closeTo(t, "grad offset", float64(flat(5)[c]), gOff, 1e-5)
		closeTo(t, "grad scale", float64(flat(4)[c]), gScale, 1e-5)
		for r := range 3 {
			xhat := (float64(xs[r*2+c]) - mean) * rstd
			want := scale[c] * rstd / 3 * (3*float64(gs[r*2+c]) - gOff - xhat*gScale)
			closeTo(t, "grad operand", float64(flat(3)[r*2+c]), want, 1e-4)
		}
	}
}

func TestConfig(t *testing.T) {
	none := func(string) (string, bool) { return "", false }
	for _, bad := range []string{"nosuch=1", "dir", "jobs=0", "role=boss"} {
		if b, err := gomlx.NewWithLookup(stdctx.Background(), bad, none, nil); err == nil {
			b.Finalize()
			t.Errorf("config %q: no error", bad)
		}
	}
	dir := t.TempDir()
	b, err := gomlx.NewWithLookup(stdctx.Background(), "dir="+dir+",role=writer,jobs=1", none, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b.Finalize()
	if o := b.Options(); o.Dir != dir || o.Role.String() != "writer" {
		t.Errorf("options: dir %q role %v", o.Dir, o.Role)
	}
	// Without dir=, the environment's XLACACHE_DIR applies.
	env := func(k string) (string, bool) {
		if k == "XLACACHE_DIR" {
			return dir, true
		}
		return "", false
	}
	b2, err := gomlx.NewWithLookup(stdctx.Background(), "", env, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Finalize()
	if b2.Options().Dir != dir {
		t.Errorf("dir from the environment: %q", b2.Options().Dir)
	}
	if _, err := backends.NewWithConfig("xlacache:dir=" + t.TempDir()); err != nil {
		t.Errorf("backends.NewWithConfig: %v", err)
	}
}

// TestWarmBackendHitsTheCache compiles the same graph in two backends on
// one directory (as two processes would): the second compile is a hit.
func TestWarmBackendHitsTheCache(t *testing.T) {
	dir := t.TempDir()
	none := func(string) (string, bool) { return "", false }
	for i, wantHits := range []int{0, 1} {
		b, err := gomlx.NewWithLookup(stdctx.Background(), "dir="+dir+",notune,min_compile_time_secs=0", none, nil)
		if err != nil {
			t.Fatal(err)
		}
		got := graph.MustExecOnce(b, func(x *graph.Node) *graph.Node { return graph.Tanh(x) }, []float32{0, 1})
		if v := tensors.MustCopyFlatData[float32](got); v[0] != 0 || math.Abs(float64(v[1])-math.Tanh(1)) > 1e-6 {
			t.Errorf("run %d: tanh = %v", i, v)
		}
		if s := b.Stats(); s.Compiles != 1 || s.Hits != wantHits {
			t.Errorf("run %d: stats %+v, want 1 compile with %d hits", i, s, wantHits)
		}
		b.Finalize()
	}
}

// TestRNGBitGenerator checks rng_bit_generator's forms: GoMLX's 3-word
// state (and a 2-word one) comes back with the same shape and the
// 128-bit counter advanced by the Philox blocks drawn, values have the
// requested shape, and bad states and dtypes are errors naming the op.
func TestRNGBitGenerator(t *testing.T) {
	b := newBackend(t)
	for _, c := range []struct {
		words  int
		shape  shapes.Shape
		blocks uint64 // Philox blocks of 4 uint32 drawn
	}{
		{3, shapes.Make(dtypes.Uint32, 5), 2},
		{3, shapes.Make(dtypes.Uint64, 2, 3), 3},
		{3, shapes.Make(dtypes.Uint8, 5), 2}, // one uint32 per value
		{3, shapes.Make(dtypes.Float32, 4), 1},
		{2, shapes.Make(dtypes.Int64, 3), 2},
	} {
		bld := b.Builder("rng")
		st, err := bld.Parameter("state", shapes.Make(dtypes.Uint64, c.words), nil)
		if err != nil {
			t.Fatal(err)
		}
		ns, v, err := bld.RNGBitGenerator(st, c.shape)
		if err != nil {
			t.Fatalf("state uint64[%d], values %s: %v", c.words, c.shape, err)
		}
		if s, _ := bld.OpShape(v); !s.Equal(c.shape) {
			t.Errorf("values shape %s, want %s", s, c.shape)
		}
		exe, err := bld.Compile([]backends.Op{ns, v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		state := []uint64{7, 100, 5}[:c.words]
		in, err := b.BufferFromFlatData(0, state, shapes.Make(dtypes.Uint64, c.words))
		if err != nil {
			t.Fatal(err)
		}
		out, err := exe.Execute([]backends.Buffer{in}, nil, 0)
		exe.Finalize()
		if err != nil {
			t.Fatal(err)
		}
		got := make([]uint64, c.words)
		if err := b.BufferToFlatData(out[0], got); err != nil {
			t.Fatal(err)
		}
		want := append([]uint64{7, 100 + c.blocks}, state[2:]...)
		if !slices.Equal(got, want) {
			t.Errorf("state uint64[%d] %v after drawing %s: %v, want %v", c.words, state, c.shape, got, want)
		}
	}
	for _, c := range []struct {
		state, values shapes.Shape
	}{
		{shapes.Make(dtypes.Uint64, 4), shapes.Make(dtypes.Uint32, 2)},
		{shapes.Make(dtypes.Uint32, 3), shapes.Make(dtypes.Uint32, 2)},
		{shapes.Make(dtypes.Uint64, 1, 3), shapes.Make(dtypes.Uint32, 2)},
		{shapes.Make(dtypes.Uint64, 3), shapes.Make(dtypes.Bool, 2)},
		{shapes.Make(dtypes.Uint64, 3), shapes.Make(dtypes.Complex64, 2)},
		{shapes.Make(dtypes.Uint64, 3), shapes.Make(dtypes.F8E5M2, 2)},
	} {
		bld := b.Builder("bad rng")
		st, err := bld.Parameter("state", c.state, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := bld.RNGBitGenerator(st, c.values); err == nil || !strings.Contains(err.Error(), "RNGBitGenerator") {
			t.Errorf("state %s, values %s: got %v, want an error naming RNGBitGenerator", c.state, c.values, err)
		}
	}
}

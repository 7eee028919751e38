package cpu

import (
	"context"
	"log/slog"
	"math"
	"runtime"
	"sync"
	"testing"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/stablehlo"
)

// parseText parses and verifies a test program.
func parseText(t *testing.T, src string) *stablehlo.Module {
	t.Helper()
	m, err := stablehlo.Parse([]byte(src), "test.mlir")
	if err != nil {
		t.Fatal(err)
	}
	if err := stablehlo.Verify(m); err != nil {
		t.Fatal(err)
	}
	return m
}

// lowerText parses and verifies src (named file) and lowers it with
// lowerModule: what tests of one kernel start from.
func lowerText(tb testing.TB, src, file string) *lowering {
	tb.Helper()
	m, err := stablehlo.Parse([]byte(src), file)
	if err != nil {
		tb.Fatal(err)
	}
	if err := stablehlo.Verify(m); err != nil {
		tb.Fatal(err)
	}
	return lowerModule(tb, m, file)
}

// lowerModule inlines m and analyzes its main function, as the pipeline
// does before it builds kernels.
func lowerModule(tb testing.TB, m *stablehlo.Module, file string) *lowering {
	tb.Helper()
	flat, err := stablehlo.Inline(m)
	if err != nil {
		tb.Fatal(err)
	}
	l, err := analyze(flat.Main(), file)
	if err != nil {
		tb.Fatal(err)
	}
	return l
}

// compileText parses src and compiles it with a fresh backend, outside
// any cache; the executable is closed when the test ends. A compile
// failure shows the source, since random programs are only reproducible
// from it.
func compileText(t *testing.T, src string) (*stablehlo.Module, *Executable) {
	t.Helper()
	return compileTextWith(t, src, New())
}

// compileTextWith is compileText with backend b.
func compileTextWith(t *testing.T, src string, b *Backend) (*stablehlo.Module, *Executable) {
	t.Helper()
	m := parseText(t, src)
	exe, err := b.CompileModule(context.Background(), m, nil)
	if err != nil {
		t.Fatalf("%v\n%s", err, src)
	}
	t.Cleanup(func() { exe.Close() })
	return m, exe
}

// runBoth runs exe and the reference interpreter on the same arguments.
func runBoth(t *testing.T, exe *Executable, m *stablehlo.Module, args []*stablehlo.Tensor) (got, want []*stablehlo.Tensor) {
	t.Helper()
	got, err := exe.Run(context.Background(), args)
	if err != nil {
		t.Fatal(err)
	}
	want, err = stablehlo.Eval(m, "", args)
	if err != nil {
		t.Fatal(err)
	}
	return got, want
}

// randomDifferential compiles n generated programs, each in its own
// subtest named by gen, and has check compare program i's results with
// the interpreter's. A failing program's text is logged: it is only
// reproducible from it. The programs are generated in order and checked
// in order (gen and check may share a seeded generator), but compiled
// GOMAXPROCS at a time beforehand: running the C compiler is most of the
// time, and one program's kernels rarely keep two cores busy.
func randomDifferential(t *testing.T, n int, gen func(i int) (name, src string), check func(t *testing.T, m *stablehlo.Module, exe *Executable, i int)) {
	type program struct {
		name, src string
		m         *stablehlo.Module
		exe       *Executable
		err       error
	}
	progs := make([]program, n)
	for i := range progs {
		progs[i].name, progs[i].src = gen(i)
	}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range progs {
		p := &progs[i]
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			if p.m, p.err = stablehlo.Parse([]byte(p.src), "test.mlir"); p.err != nil {
				return
			}
			if p.err = stablehlo.Verify(p.m); p.err != nil {
				return
			}
			p.exe, p.err = New().CompileModule(context.Background(), p.m, nil)
		})
	}
	wg.Wait()
	for i := range progs {
		if e := progs[i].exe; e != nil {
			t.Cleanup(func() { e.Close() })
		}
	}
	for i, p := range progs {
		t.Run(p.name, func(t *testing.T) {
			if p.err != nil {
				t.Fatalf("%v\n%s", p.err, p.src)
			}
			check(t, p.m, p.exe, i)
			if t.Failed() {
				t.Log(p.src)
			}
		})
	}
}

// sameValues compares outputs bit for bit, except that any NaN matches any
// NaN (C and Go may propagate different NaN payloads).
func sameValues(got, want *stablehlo.Tensor) (int64, bool) {
	if !got.Type.Equal(want.Type) {
		return -1, false
	}
	n := got.Type.NumElements()
	es := int64(got.Type.DType.Size())
	for i := int64(0); i < n; i++ {
		if string(got.Data[i*es:(i+1)*es]) == string(want.Data[i*es:(i+1)*es]) {
			continue
		}
		if got.Type.DType.IsFloat() && math.IsNaN(got.Float64At(i)) && math.IsNaN(want.Float64At(i)) {
			continue
		}
		return i, false
	}
	return 0, true
}

// assertSame reports each of the outputs numbered outs (every output when
// outs is empty) that differs from the interpreter's by sameValues; what
// says which run it was (a seed, say) and may be empty.
func assertSame(t *testing.T, what string, got, want []*stablehlo.Tensor, outs ...int) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%d outputs, want %d", len(got), len(want))
	}
	if len(outs) == 0 {
		for j := range got {
			outs = append(outs, j)
		}
	}
	if what != "" {
		what += " "
	}
	for _, j := range outs {
		if i, ok := sameValues(got[j], want[j]); !ok {
			t.Errorf("%soutput %d differs at element %d:\ncpu    %v\ninterp %v", what, j, i, got[j], want[j])
		}
	}
}

// openCache opens a cache on opts with a zero minimum compile time, so
// every compile is stored; the caller closes it.
func openCache(t testing.TB, opts config.Options, logger *slog.Logger) *cache.Cache {
	t.Helper()
	opts.MinCompileTime = 0
	c, err := xlacache.Open(context.Background(), opts, logger)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// openCacheDir is openCache on directory dir with the default options
// and logger.
func openCacheDir(t testing.TB, dir string) *cache.Cache {
	t.Helper()
	opts := config.Defaults()
	opts.Dir = dir
	return openCache(t, opts, nil)
}

// compileIn compiles text as program name through c with backend b.
func compileIn(t testing.TB, c *cache.Cache, b *Backend, name, text string) (*cache.Report, *Executable) {
	t.Helper()
	exe, rep, err := cache.Compile(context.Background(), c, b, cache.Program{Name: name, Text: []byte(text)})
	if err != nil {
		t.Fatalf("compiling %s: %v", name, err)
	}
	return rep, exe.(*Executable)
}

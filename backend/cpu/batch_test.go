package cpu

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

// kernelSource is a final kernel source of class cls whose functions are
// body (not valid C: planBatches and encodeBatch never compile).
func kernelSource(name string, cls int, body string) cc.Source {
	return cc.Source{Name: name, Code: []byte(classPrelude(cls) + body)}
}

func TestPlanBatches(t *testing.T) {
	name := func(i int) string { return fmt.Sprintf("k_%024x", i) }
	next := 0
	plain := func(n, size int) []cc.Source {
		var out []cc.Source
		for range n {
			next++
			out = append(out, kernelSource(name(next), classPlain, strings.Repeat("x", size)))
		}
		return out
	}
	tests := []struct {
		name        string
		srcs        []cc.Source
		jobs, limit int
		want        []int // kernels per batch
	}{
		{"one job, one unit", plain(5, 10), 1, maxBatchKernels, []int{5}},
		{"two jobs, two units", plain(6, 10), 2, maxBatchKernels, []int{3, 3}},
		{"more jobs than kernels", plain(2, 10), 8, maxBatchKernels, []int{1, 1}},
		{"limit splits evenly", plain(40, 10), 1, maxBatchKernels, []int{14, 13, 13}},
		{"unit per kernel", plain(3, 10), 2, 1, []int{1, 1, 1}},
		// 3 units on 2 jobs would leave one job the last unit alone.
		{"units a multiple of the jobs", plain(34, 10), 2, maxBatchKernels, []int{9, 9, 8, 8}},
		{"a multiple of the jobs, but no more units than kernels", plain(5, 10), 4, 1, []int{1, 1, 1, 1, 1}},
		{"rounded up, each within the limit", plain(5, 10), 2, 2, []int{2, 1, 1, 1}},
		{"limit above the maximum", plain(20, 10), 1, 100, []int{10, 10}},
		{"sizes balance", append(plain(1, 6000), plain(3, 1000)...), 2, maxBatchKernels, []int{1, 3}},
		// Each kernel costs a fixed amount too: by size alone 2 KB of one
		// kernel would balance 30 tiny ones.
		{"kernels cost apart from size", append(plain(1, 2000), plain(6, 10)...), 2, maxBatchKernels, []int{3, 4}},
		// Two inline tanh calls weigh like 6 KB of plain code.
		{"transcendental calls weigh", append([]cc.Source{kernelSource(name(80), classPlain, "xk_tanhf(xk_tanhf(")}, plain(3, 10)...), 2, maxBatchKernels, []int{1, 3}},
		// Contiguous runs would put both big kernels in the first unit.
		{"big kernels spread", append(plain(2, 50), plain(3, 5)...), 2, maxBatchKernels, []int{3, 2}},
		{"a unit never exceeds the limit", append(plain(1, 40000), plain(20, 1)...), 2, maxBatchKernels, []int{5, 16}},
		{"levels apart", append(plain(2, 10), withOpt(plain(2, 10), "-O2")...), 1, maxBatchKernels, []int{2, 2}},
		{"classes apart", append(plain(2, 10),
			kernelSource(name(90), classComplex, "c"), kernelSource(name(91), classFFT, "f"), kernelSource(name(92), classComplex, "c2")),
			1, maxBatchKernels, []int{2, 2, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bs, err := planBatches(tc.srcs, tc.jobs, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			var got []int
			var all []string
			for _, b := range bs {
				got = append(got, len(b.members))
				all = append(all, b.members...)
				// The unit is the class's preludes once, then each
				// member's own functions.
				m0, _ := splitKernel(sourceNamed(tc.srcs, b.members[0]))
				want := classPrelude(m0.class)
				for _, m := range b.members {
					mm, _ := splitKernel(sourceNamed(tc.srcs, m))
					if mm.class != m0.class {
						t.Errorf("batch %s mixes classes", b.src.Name)
					}
					if mm.src.Opt != b.src.Opt {
						t.Errorf("batch %s (level %q) holds kernel %s of level %q", b.src.Name, b.src.Opt, m, mm.src.Opt)
					}
					want += mm.code
				}
				if string(b.src.Code) != want {
					t.Errorf("batch %s source is not its class prelude and its members' functions", b.src.Name)
				}
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("batch sizes %v, want %v", got, tc.want)
			}
			if len(all) != len(tc.srcs) {
				t.Errorf("%d kernels in batches, want %d", len(all), len(tc.srcs))
			}
			sort.Strings(all)
			if len(slices.Compact(all)) != len(tc.srcs) {
				t.Errorf("a kernel is in two batches")
			}
		})
	}
	if _, err := planBatches([]cc.Source{{Name: name(1), Code: []byte("int x;")}}, 1, 1); err == nil {
		t.Error("a source without the prelude was accepted")
	}
}

// withOpt sets the optimization level of srcs.
func withOpt(srcs []cc.Source, opt string) []cc.Source {
	for i := range srcs {
		srcs[i].Opt = opt
	}
	return srcs
}

// TestUntunedConvCheapLevel checks that an untuned convolution is
// compiled at cheapOpt, keyed apart from the same source at -O3, and
// computes bit for bit what the -O3 object computes.
func TestUntunedConvCheapLevel(t *testing.T) {
	const src = `func.func @main(%x: tensor<2x20x20x8xf32>, %w: tensor<3x3x8x20xf32>, %b: tensor<20xf32>) -> tensor<2x20x20x20xf32> {
  %0 = stablehlo.convolution(%x, %w) dim_numbers = [b, 0, 1, f]x[0, 1, i, o]->[b, 0, 1, f], window = {stride = [1, 1], pad = [[1, 1], [1, 1]]} {batch_group_count = 1 : i64, feature_group_count = 1 : i64} : (tensor<2x20x20x8xf32>, tensor<3x3x8x20xf32>) -> tensor<2x20x20x20xf32>
  %1 = stablehlo.broadcast_in_dim %b, dims = [3] : (tensor<20xf32>) -> tensor<2x20x20x20xf32>
  %2 = stablehlo.add %0, %1 : tensor<2x20x20x20xf32>
  return %2 : tensor<2x20x20x20xf32>
}`
	if cheapOpt == "" {
		t.Fatal("cheapOpt is empty: untuned convolutions are compiled at -O3")
	}
	m := parseText(t, src)
	args := randomArgs(m, 3)
	compile := func(opt string) []*stablehlo.Tensor {
		saved := cheapOpt
		cheapOpt = opt
		defer func() { cheapOpt = saved }()
		c := testCache(t, t.TempDir())
		b := New()
		b.NoTune = true
		_, exe := compileIn(t, c, b, "conv", src)
		defer exe.Close()
		var convs int
		for _, k := range exe.Kernels() {
			if strings.HasPrefix(k.Desc, "convolution") {
				convs++
			}
		}
		if convs != 1 {
			t.Fatalf("%d convolution kernels, want 1: %+v", convs, exe.Kernels())
		}
		got, err := exe.Run(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		return got
	}
	cheap := compile(cheapOpt)
	full := compile("")
	want, err := stablehlo.Eval(m, "", args)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, cheap, want, 1e-4)
	if !slices.Equal(cheap[0].Data, full[0].Data) {
		t.Errorf("the convolution at %s computes other bits than at -O3", cheapOpt)
	}

	c, err := cc.Find(context.Background())
	if err != nil {
		t.Skipf("no C compiler: %v", err)
	}
	pl := &pipeline{cc: c}
	s := cc.Source{Name: "k_000000000000000000000001", Code: []byte("int x;")}
	o3 := pl.objectKey(s)
	s.Opt = cheapOpt
	if pl.objectKey(s).String() == o3.String() {
		t.Error("a kernel's object key does not depend on its optimization level")
	}
}

func sourceNamed(srcs []cc.Source, name string) cc.Source {
	for _, s := range srcs {
		if s.Name == name {
			return s
		}
	}
	return cc.Source{}
}

func TestBatchPayload(t *testing.T) {
	members := []string{"k_0123456789abcdef01234567", "k_89abcdef0123456789abcdef"}
	obj := []byte("\x7fELF object bytes\n")
	data := encodeBatch(members, obj)
	gotM, gotO, err := decodeBatch(data)
	if err != nil || !slices.Equal(gotM, members) || string(gotO) != string(obj) {
		t.Fatalf("round trip: %v %q %v", gotM, gotO, err)
	}
	bad := []struct{ name, data string }{
		{"empty", ""},
		{"other magic", "xlacache-cpu-kernel-batch 2\n1\nk_0123456789abcdef01234567\nobj"},
		{"no count", batchMagic},
		{"zero kernels", batchMagic + "0\nobj"},
		{"too many", batchMagic + "17\n" + strings.Repeat("k_0123456789abcdef01234567\n", 17) + "obj"},
		{"leading zero", batchMagic + "01\nk_0123456789abcdef01234567\nobj"},
		{"sign", batchMagic + "+1\nk_0123456789abcdef01234567\nobj"},
		{"short name", batchMagic + "1\nk_0123\nobj"},
		{"upper-case hex", batchMagic + "1\nk_0123456789ABCDEF01234567\nobj"},
		{"path in name", batchMagic + "1\nk_0123456789abcdef0123/../\nobj"},
		{"repeated", batchMagic + "2\nk_0123456789abcdef01234567\nk_0123456789abcdef01234567\nobj"},
		{"truncated names", batchMagic + "2\nk_0123456789abcdef01234567\n"},
		{"no object", batchMagic + "1\nk_0123456789abcdef01234567\n"},
	}
	for _, tc := range bad {
		if m, _, err := decodeBatch([]byte(tc.data)); err == nil {
			t.Errorf("%s: accepted, members %v", tc.name, m)
		}
	}
}

// FuzzDecodeBatch checks that decodeBatch never panics and that whatever
// it accepts is what encodeBatch would make of it.
func FuzzDecodeBatch(f *testing.F) {
	f.Add(encodeBatch([]string{"k_0123456789abcdef01234567"}, []byte("obj")))
	f.Add([]byte(batchMagic + "2\nk_0123456789abcdef01234567\nk_0123456789abcdef01234568\n\x7fELF"))
	f.Fuzz(func(t *testing.T, data []byte) {
		members, obj, err := decodeBatch(data)
		if err != nil {
			return
		}
		if len(members) == 0 || len(members) > maxBatchKernels || len(obj) == 0 {
			t.Fatalf("accepted %d members and %d object bytes", len(members), len(obj))
		}
		for _, m := range members {
			if !kernelName(m) {
				t.Fatalf("accepted kernel name %q", m)
			}
		}
		if string(encodeBatch(members, obj)) != string(data) {
			t.Fatalf("accepted a payload encodeBatch would not make")
		}
	})
}

// sharedMultiplyA and sharedMultiplyB share one kernel (a*b on their
// arguments, materialized as a result) and nothing else.
const sharedMultiplyA = `func.func @main(%a: tensor<64x96xf32>, %b: tensor<64x96xf32>) -> (tensor<64x96xf32>, tensor<64xf32>) {
  %0 = stablehlo.multiply %a, %b : tensor<64x96xf32>
  %1 = stablehlo.constant dense<0.0> : tensor<f32>
  %2 = stablehlo.reduce(%0 init: %1) applies stablehlo.add across dimensions = [1] : (tensor<64x96xf32>, tensor<f32>) -> tensor<64xf32>
  return %0, %2 : tensor<64x96xf32>, tensor<64xf32>
}
`

const sharedMultiplyB = `func.func @main(%a: tensor<64x96xf32>, %b: tensor<64x96xf32>) -> (tensor<64x96xf32>, tensor<64x96xf32>) {
  %0 = stablehlo.multiply %a, %b : tensor<64x96xf32>
  %1 = stablehlo.exponential %0 : tensor<64x96xf32>
  return %0, %1 : tensor<64x96xf32>, tensor<64x96xf32>
}
`

// TestColdCompileInvocations counts the compiler runs of cold compiles, so
// that batching kernels into few translation units cannot silently
// regress to one per kernel: the embedding example's cold untuned
// compile runs one compiler invocation for all its kernels (on one job)
// and one link; a second program sharing kernels compiles only the
// kernels it does not share, and with the kernel tier warm nothing is
// compiled at all.
func TestColdCompileInvocations(t *testing.T) {
	logPath := countingCompiler(t)
	if _, err := cc.Find(context.Background()); err != nil { // probe first: not counted
		t.Fatal(err)
	}
	dir := t.TempDir()
	// embedding: more kernels with C of their own than one batch holds.
	text, err := os.ReadFile(filepath.Join("../../examples", "embedding", "embedding.mlir"))
	if err != nil {
		t.Fatal(err)
	}
	compile := func(name, text string) (final, units, links int, kernels []KernelInfo) {
		t.Helper()
		os.Remove(logPath)
		c := openCacheDir(t, dir)
		defer c.Close()
		b := New()
		b.NoTune = true
		b.Jobs = 1
		rep, exe := compileIn(t, c, b, name, text)
		defer exe.Close()
		if rep.Hit {
			t.Fatalf("%s: executable hit, want a compile", name)
		}
		finals, other, ls := invocations(t, logPath)
		if len(other) != 0 {
			t.Errorf("%s: unexpected compiler runs:\n%s", name, strings.Join(other, "\n"))
		}
		for _, line := range finals {
			units += strings.Count(line, ".c")
		}
		return len(finals), units, len(ls), exe.Kernels()
	}
	final, units, links, kernels := compile("embedding", string(text))
	// Runtime routines (runtime.go: the untuned matrix products) have no
	// object: only the others are compiled, hit or missed.
	kernels = slices.DeleteFunc(kernels, KernelInfo.Runtime)
	distinct := map[string]bool{}
	for _, k := range kernels {
		distinct[k.Name] = true
		if k.ObjectHit {
			t.Errorf("cold compile: kernel %s was an object hit", k.Name)
		}
	}
	if len(distinct) <= maxBatchKernels {
		t.Fatalf("embedding has %d distinct compiled kernels; the test wants more than one batch's worth", len(distinct))
	}
	wantUnits := (len(distinct) + maxBatchKernels - 1) / maxBatchKernels
	if final != 1 || units != wantUnits || links != 1 {
		t.Errorf("cold compile of %d kernels: %d compiler runs of %d units and %d links, want 1 run of %d units and 1 link",
			len(distinct), final, units, links, wantUnits)
	}

	// With the executable gone, every kernel comes from the kernel tier.
	if err := os.RemoveAll(filepath.Join(dir, "executables")); err != nil {
		t.Fatal(err)
	}
	final, _, links, kernels = compile("embedding", string(text))
	for _, k := range kernels {
		if !k.ObjectHit && !k.Runtime() {
			t.Errorf("kernel tier warm: kernel %s was compiled", k.Name)
		}
	}
	if final != 0 || links != 1 {
		t.Errorf("kernel tier warm: %d compiler runs and %d links, want none and 1", final, links)
	}

	// A program sharing a kernel with another compiles only its own
	// kernel, in one unit, and links the other program's batch object.
	// (Not tunedProgram and sharingProgram: the kernel they share is a
	// matrix product, a runtime routine in an untuned build.)
	compile("first", sharedMultiplyA)
	final, units, _, kernels = compile("sharing", sharedMultiplyB)
	var compiled, hits int
	for _, k := range kernels {
		if k.Runtime() {
			continue
		}
		if k.ObjectHit {
			hits++
		} else {
			compiled++
		}
	}
	if compiled != 1 || hits != 1 || final != 1 || units != 1 {
		t.Errorf("program sharing one of two kernels: %d compiled in %d runs of %d units, %d hits; want 1 in 1 of 1, 1 hit", compiled, final, units, hits)
	}
}

// BenchmarkColdCompileBatching compiles each example cold and untuned
// two ways, interleaved round by round so that the machine's load hits
// both alike: a translation unit per kernel (how kernels were compiled
// before batching) and in batches. It reports the median of each and
// their ratio, and the two ways' run times, interleaved (the same code in
// batches must not run slower). Run with -benchtime=1x.
func BenchmarkColdCompileBatching(b *testing.B) {
	const rounds = 5
	for _, ex := range []string{"mlp", "transformer", "cnn", "embedding", "resnetblock"} {
		b.Run(ex, func(b *testing.B) {
			text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
			if err != nil {
				b.Fatal(err)
			}
			m := loadModule(b, filepath.Join("../../examples", ex, ex+".mlir"))
			args := randomArgs(m, 1)
			exes := map[int]*Executable{}
			cold := func(limit int) time.Duration {
				c := testCache(b, b.TempDir())
				be := New()
				be.NoTune, be.batchLimit = true, limit
				start := time.Now()
				_, exe := compileIn(b, c, be, ex, string(text))
				d := time.Since(start)
				if old := exes[limit]; old != nil {
					old.Close()
				}
				exes[limit] = exe
				return d
			}
			defer func() {
				for _, e := range exes {
					e.Close()
				}
			}()
			// run times the two ways' last executables, interleaved: the
			// same kernels in batches must run as fast as compiled alone.
			run := func() (per, batched time.Duration) {
				var ps, bs []time.Duration
				for range 15 {
					for _, limit := range []int{1, 0} {
						start := time.Now()
						if _, err := exes[limit].Run(context.Background(), args); err != nil {
							b.Fatal(err)
						}
						if limit == 1 {
							ps = append(ps, time.Since(start))
						} else {
							bs = append(bs, time.Since(start))
						}
					}
				}
				return median(ps), median(bs)
			}
			for i := 0; i < b.N; i++ {
				var per, batched []time.Duration
				for r := range rounds {
					if r%2 == 0 {
						per = append(per, cold(1))
						batched = append(batched, cold(0))
					} else {
						batched = append(batched, cold(0))
						per = append(per, cold(1))
					}
				}
				mp, mb := median(per), median(batched)
				b.Logf("unit per kernel %v, batched %v (medians of %d interleaved rounds)", mp.Round(time.Millisecond), mb.Round(time.Millisecond), rounds)
				b.ReportMetric(mp.Seconds(), "per_kernel_s")
				b.ReportMetric(mb.Seconds(), "batched_s")
				b.ReportMetric(float64(mp)/float64(mb), "speedup_x")
				rp, rb := run()
				b.Logf("run: unit per kernel %v, batched %v (medians of 15 interleaved runs)", rp.Round(time.Microsecond), rb.Round(time.Microsecond))
				b.ReportMetric(float64(rp)/float64(rb), "run_per_kernel_over_batched_x")
			}
		})
	}
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// compileUntuned compiles text untuned in a new Cache on dir and returns
// the compile's error, for the tests that make compiles fail or cancel
// them.
func compileUntuned(ctx context.Context, t *testing.T, dir, name, text string) (*Executable, error) {
	t.Helper()
	c := openCacheDir(t, dir)
	defer c.Close()
	b := New()
	b.NoTune = true
	exe, _, err := cache.Compile(ctx, c, b, cache.Program{Name: name, Text: []byte(text)})
	if err != nil {
		return nil, err
	}
	return exe.(*Executable), nil
}

// TestKernelTierLinkFailureRecompiles: objects from the kernel tier that
// verify but do not link are a cache failure, not a failed compile. The
// compiler wrapper fails the first link after the flag file appears; a
// compile whose kernels all come from the kernel tier then quarantines
// those entries, compiles every kernel afresh, links and runs, and the
// next compile takes the fresh entries. A link failure with no entry from
// the tier is the compile's own error.
func TestKernelTierLinkFailureRecompiles(t *testing.T) {
	flag := filepath.Join(t.TempDir(), "fail-next-link")
	wrapCompiler(t, fmt.Sprintf(`case " $* " in *" -shared "*) if [ -e '%s' ]; then rm -f '%s'; echo 'planted link failure' >&2; exit 1; fi;; esac
`, flag, flag))
	dir := t.TempDir()
	compile := func(name string) (*Executable, error) {
		t.Helper()
		return compileUntuned(context.Background(), t, dir, name, sharingProgram)
	}
	plant := func() {
		t.Helper()
		if err := os.WriteFile(flag, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	// Cold: nothing from the tier, so the link failure is the error.
	plant()
	if _, err := compile("cold"); err == nil || !strings.Contains(err.Error(), "planted link failure") {
		t.Fatalf("cold compile with a failing link: err %v, want the link's error", err)
	}
	exe, err := compile("cold")
	if err != nil {
		t.Fatal(err)
	}
	exe.Close()

	// Kernel tier warm, executable gone: the link of the tier's objects
	// fails, and the compile recovers.
	if err := os.RemoveAll(filepath.Join(dir, "executables")); err != nil {
		t.Fatal(err)
	}
	plant()
	exe, err = compile("warm")
	if err != nil {
		t.Fatalf("a kernel-tier object that does not link failed the compile: %v", err)
	}
	for _, k := range exe.Kernels() {
		if k.ObjectHit {
			t.Errorf("after the link failure kernel %s still came from the tier", k.Name)
		}
	}
	exe.Close()
	if _, err := os.Stat(flag); !os.IsNotExist(err) {
		t.Fatalf("the planted link failure did not happen (flag file: %v)", err)
	}
	q, _ := filepath.Glob(filepath.Join(dir, "quarantine", "*"))
	if len(q) == 0 {
		t.Errorf("no kernel-tier entry quarantined after its object failed to link")
	}

	// The fresh entries serve the next compile.
	if err := os.RemoveAll(filepath.Join(dir, "executables")); err != nil {
		t.Fatal(err)
	}
	exe, err = compile("again")
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	wantObjectHits(t, exe, "the entry stored after the recovery")
}

// wantObjectHits fails t for each kernel of exe that was compiled rather
// than taken from the kernel tier; want says which entry should have
// served it.
func wantObjectHits(t *testing.T, exe *Executable, want string) {
	t.Helper()
	for _, k := range exe.Kernels() {
		if !k.ObjectHit && !k.Runtime() {
			t.Errorf("kernel %s was compiled again; want %s", k.Name, want)
		}
	}
}

// TestKernelOpt pins which level each kind of kernel is compiled at: the
// cheaper levels only without tuning, and only ones the compiler accepts
// (cc.Levels); the level is part of the object key, so a change here
// must be a deliberate one.
func TestKernelOpt(t *testing.T) {
	tests := []struct {
		kind   string
		noTune bool
		want   string
	}{
		{"convgemm", true, cc.LevelVectorCode},
		{"dot", true, cc.LevelVectorize},
		{"loop", true, cc.LevelVectorize},
		{"reduce", true, cc.LevelVectorize},
		{"convgemm", false, ""},
		{"dot", false, ""},
		{"loop", false, ""},
	}
	for _, tc := range tests {
		got := kernelOpt(&kernel{kind: tc.kind}, tc.noTune)
		if got != tc.want {
			t.Errorf("kernelOpt(%s, noTune=%v) = %q, want %q", tc.kind, tc.noTune, got, tc.want)
		}
		if got != "" && !slices.Contains(cc.Levels, got) {
			t.Errorf("kernelOpt(%s, noTune=%v) = %q, not one of cc.Levels", tc.kind, tc.noTune, got)
		}
	}
}

// TestCancelledLinkKeepsEntries: a link that fails because the caller
// cancelled the compile (an interrupt) says nothing about the objects, so
// the kernel-tier entries it linked are not quarantined, and the next
// compile takes them. The compiler wrapper holds the link until the
// compile is cancelled.
func TestCancelledLinkKeepsEntries(t *testing.T) {
	dir := t.TempDir()
	linking := filepath.Join(t.TempDir(), "linking")
	hold := filepath.Join(t.TempDir(), "hold-links")
	wrapCompiler(t, fmt.Sprintf(`case " $* " in *" -shared "*) if [ -e '%[2]s' ]; then : > '%[1]s'; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done; fi;; esac
`, linking, hold))
	compile := func(ctx context.Context, name string) (*Executable, error) {
		t.Helper()
		return compileUntuned(ctx, t, dir, name, sharingProgram)
	}
	exe, err := compile(context.Background(), "cold")
	if err != nil {
		t.Fatal(err)
	}
	exe.Close()
	if err := os.RemoveAll(filepath.Join(dir, "executables")); err != nil {
		t.Fatal(err)
	}
	// Kernel tier warm: the compile links the tier's objects, and is
	// cancelled while it does.
	if err := os.WriteFile(hold, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			if _, err := os.Stat(linking); err == nil {
				cancel()
				return
			}
			select {
			case <-ctx.Done():
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	if _, err := compile(ctx, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Fatalf("compile cancelled during its link: %v, want context.Canceled", err)
	}
	os.Remove(hold)
	if q, _ := filepath.Glob(filepath.Join(dir, "quarantine", "*")); len(q) != 0 {
		t.Errorf("a cancelled link quarantined %d entries: %q", len(q), q)
	}
	exe, err = compile(context.Background(), "after")
	if err != nil {
		t.Fatal(err)
	}
	defer exe.Close()
	wantObjectHits(t, exe, "its entry, kept through the cancelled link")
}

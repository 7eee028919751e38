package cpu

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/config"
)

// definedByFinalCompiles is the set of kernels that the compiles of
// final kernels in the invocation log define.
func definedByFinalCompiles(t *testing.T, logPath string) map[string]bool {
	t.Helper()
	final, _, _ := invocations(t, logPath)
	out := map[string]bool{}
	for _, line := range final {
		_, defs, _ := strings.Cut(line, "# defines")
		for _, k := range strings.Fields(defs) {
			out[k] = true
		}
	}
	return out
}

// TestTunedColdCompileReusesCandidateObjects checks that a tuned cold
// compile takes each tuned kernel's final object from its candidates'
// object (reuse.go) instead of compiling the winner again, at 1 and 2
// threads (where parallel candidates, with their _par and _parts
// symbols, can win); that the program computes what the interpreter
// does; and that the objects it stored serve a later compile from the
// kernel tier with no compile at all.
func TestTunedColdCompileReusesCandidateObjects(t *testing.T) {
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("threads=%d", threads), func(t *testing.T) {
			logPath := countingCompiler(t)
			dir := t.TempDir()
			m := parseText(t, tunedProgram)
			args := randomArgs(m, 5)
			compile := func() ([]KernelInfo, map[string]bool) {
				t.Helper()
				os.Remove(logPath)
				c := openCacheDir(t, dir)
				defer c.Close()
				b := New()
				b.TuneBudget = 20 * time.Millisecond
				b.Threads = threads
				rep, exe := compileIn(t, c, b, "tuned", tunedProgram)
				defer exe.Close()
				if rep.Hit {
					t.Fatal("executable hit, want a compile")
				}
				got, want := runBoth(t, exe, m, args)
				assertClose(t, got, want, 1e-4)
				return exe.Kernels(), definedByFinalCompiles(t, logPath)
			}
			kernels, compiled := compile()
			tuned := 0
			for _, k := range kernels {
				if !k.Tuned {
					continue
				}
				tuned++
				if compiled[k.Name] {
					t.Errorf("tuned kernel %s (%s, %s) was compiled again for the final library", k.Name, k.Desc, k.Config)
				}
			}
			if tuned == 0 {
				t.Fatal("no kernel was tuned; the test needs one")
			}

			// With the executable gone, the objects made from candidates
			// come from the kernel tier.
			if err := os.RemoveAll(filepath.Join(dir, "executables")); err != nil {
				t.Fatal(err)
			}
			kernels, compiled = compile()
			for _, k := range kernels {
				if !k.ObjectHit {
					t.Errorf("kernel tier warm: kernel %s (%s) was not an object hit", k.Name, k.Desc)
				}
			}
			if len(compiled) != 0 {
				t.Errorf("kernel tier warm: compiled %v", compiled)
			}
		})
	}
}

// TestCandidateObjectReuseFailure checks that a candidate object that
// cannot be made into the final kernel's object (the symbol rewrite
// fails, produces garbage, or leaves the symbols as they were: what a
// corrupt object or a broken objcopy would do) degrades to compiling the
// kernel as before, with one warning, and a correct program.
func TestCandidateObjectReuseFailure(t *testing.T) {
	for _, tc := range []struct{ name, objcopy string }{
		{"fails", "echo broken >&2; exit 1"},
		{"garbage", `for a; do out=$a; done; printf 'not an object' > "$out"`},
		{"unchanged", `for a; do in=$out; out=$a; done; cp "$in" "$out"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tools := t.TempDir()
			fake := filepath.Join(tools, "objcopy")
			if err := os.WriteFile(fake, []byte("#!/bin/sh\n"+tc.objcopy+"\n"), 0o700); err != nil {
				t.Fatal(err)
			}
			// The compiler names its objcopy (-print-prog-name); the
			// wrapper names the fake one, and logs the rest.
			logPath := filepath.Join(t.TempDir(), "invocations.log")
			wrapCompiler(t, fmt.Sprintf(`case "$1" in -print-prog-name=objcopy) echo '%s'; exit 0;; esac
defs=""
for a in "$@"; do case "$a" in *_b_*.c) defs="$defs $(sed -n 's/^void \(k_[0-9a-f]*\)(void\*\* bufs).*/\1/p' "$a" | tr '\n' ' ')";; esac; done
printf '%%s # defines %%s\n' "$*" "$defs" >> '%s'
`, fake, logPath))
			var logs bytes.Buffer
			opts := config.Defaults()
			opts.Dir = t.TempDir()
			c := openCache(t, opts, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
			defer c.Close()
			b := New()
			b.TuneBudget = 20 * time.Millisecond
			_, exe := compileIn(t, c, b, "tuned", tunedProgram)
			defer exe.Close()
			m := parseText(t, tunedProgram)
			got, want := runBoth(t, exe, m, randomArgs(m, 5))
			assertClose(t, got, want, 1e-4)
			compiled := definedByFinalCompiles(t, logPath)
			tuned := 0
			for _, k := range exe.Kernels() {
				if k.Tuned {
					tuned++
					if !compiled[k.Name] {
						t.Errorf("tuned kernel %s was not compiled after its candidate object failed", k.Name)
					}
				}
			}
			if tuned == 0 {
				t.Fatal("no kernel was tuned; the test needs one")
			}
			if n := strings.Count(logs.String(), "candidate object failed"); n != 1 {
				t.Errorf("%d warnings about candidate objects, want 1:\n%s", n, logs.String())
			}
		})
	}
}

// TestWinnerObjectRejectsCorruptObject checks winnerObject on an object
// that is not ELF: an error, never a panic.
func TestWinnerObjectRejectsCorruptObject(t *testing.T) {
	co := candidateObject{unit: tuneUnit{syms: []string{"a_x_c0"}}}
	co.obj.Name, co.obj.Data = "a_x", []byte("\x7fELF garbage")
	pl := &pipeline{b: New()}
	if _, err := pl.winnerObject(context.Background(), co, 0, "k_0"); err == nil {
		t.Fatal("winnerObject accepted a corrupt object")
	}
}

// TestWinnerObjectsMatchCandidates makes every plausible candidate
// (tuneSet) of every kernel of parallelPrograms into a final kernel
// object (winnerObject), links all of a kernel's into one library (the
// other candidates' symbols are local, so they must not clash) and checks
// each final kernel against its candidate in the timed library: the same
// entry points (serial, parallel and parts count) and bit-identical
// outputs at 1 and 3 threads.
func TestWinnerObjectsMatchCandidates(t *testing.T) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		t.Skip(err)
	}
	const threads = 3
	pl := &pipeline{b: New(), cc: comp, log: slog.Default()}
	ctx := context.Background()
	for name, src := range parallelPrograms {
		t.Run(name, func(t *testing.T) {
			l := lowerText(t, src, name+".mlir")
			sawParallel := false
			for _, op := range l.roots {
				k, err := newKernel(l, op, threads)
				if err != nil {
					t.Fatal(err)
				}
				u, err := pl.candidateUnit(k)
				if err != nil {
					t.Fatal(err)
				}
				obj, so, err := comp.BuildObjectShared(ctx, u.src)
				if err != nil {
					t.Fatal(err)
				}
				co := candidateObject{unit: u, obj: obj}
				var finals []cc.Object
				var names, syms []string
				for n, c := range u.cands {
					if u.syms[n] == "" {
						continue // the runtime routine: no code
					}
					s, err := finalSource(k, k.cands[c], false)
					if err != nil {
						t.Fatal(err)
					}
					names, syms = append(names, s.Name), append(syms, u.syms[n])
					o, err := pl.winnerObject(ctx, co, n, s.Name)
					if err != nil {
						t.Fatalf("%s %s: %v", k.desc, k.cands[c], err)
					}
					finals = append(finals, o)
					sawParallel = sawParallel || k.parallel(k.cands[c])
				}
				linked, err := comp.Link(ctx, finals)
				if err != nil {
					t.Fatalf("%s: linking its %d final objects together: %v", k.desc, len(finals), err)
				}
				compareLibraries(t, k, so, syms, linked, names, threads)
			}
			if !sawParallel {
				t.Fatalf("no plausible candidate of %s is parallel", name)
			}
		})
	}
}

// compareLibraries checks that kernel k's symbols want in library a and
// got in library b have the same entry points and compute bit-identical
// outputs at 1 and threads threads.
func compareLibraries(t *testing.T, k *kernel, a []byte, want []string, b []byte, got []string, threads int) {
	t.Helper()
	la, err := cc.OpenBytes(a)
	if err != nil {
		t.Fatal(err)
	}
	defer la.Close()
	lb, err := cc.OpenBytes(b)
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	h, err := newHarness(k)
	if err != nil {
		t.Fatal(err)
	}
	defer h.free()
	for n := range want {
		fa, err := resolveKernel(la, want[n])
		if err != nil {
			t.Fatal(err)
		}
		fb, err := resolveKernel(lb, got[n])
		if err != nil {
			t.Fatalf("%s: final kernel %s: %v", k.desc, got[n], err)
		}
		if (fa.part != nil) != (fb.part != nil) || fa.parts != fb.parts {
			t.Fatalf("%s: final kernel %s: parallel %v with %d parts, candidate %v with %d", k.desc, got[n], fb.part != nil, fb.parts, fa.part != nil, fa.parts)
		}
		for _, th := range []int{1, threads} {
			h.clearOutputs()
			fa.run(h.ptrs, th)
			wantOut := h.outputs()
			h.clearOutputs()
			fb.run(h.ptrs, th)
			for i, o := range h.outputs() {
				if !bytes.Equal(o, wantOut[i]) {
					t.Errorf("%s: final kernel %s output %d at %d threads differs from its candidate's", k.desc, got[n], i, th)
				}
			}
		}
	}
}

// BenchmarkTunedColdCompileReuse compiles examples cold and tuned two
// ways, interleaved round by round so that the machine's load hits both
// alike: compiling the tuned kernels' winners again for the final library
// (as before reuse.go) and reusing their candidates' objects. It reports
// the medians of the wall time and of the CPU time of the compile's child
// processes (the C compiler, linker and objcopy: robust to load), and the
// two ways' run times, interleaved (the reused code is the code that was
// timed, so it must not run slower). Run with -benchtime=1x; the examples
// with XLACACHE_REUSE_EXAMPLES (comma-separated, default mlp,transformer,
// cnn,embedding), the threads with XLACACHE_REUSE_THREADS (default 1).
func BenchmarkTunedColdCompileReuse(b *testing.B) {
	const rounds = 3
	examples := cmp.Or(os.Getenv("XLACACHE_REUSE_EXAMPLES"), "mlp,transformer,cnn,embedding")
	threads, _ := strconv.Atoi(cmp.Or(os.Getenv("XLACACHE_REUSE_THREADS"), "1"))
	for _, ex := range strings.Split(examples, ",") {
		b.Run(ex, func(b *testing.B) {
			text, err := os.ReadFile(filepath.Join("../../examples", ex, ex+".mlir"))
			if err != nil {
				b.Fatal(err)
			}
			m := loadModule(b, filepath.Join("../../examples", ex, ex+".mlir"))
			args := randomArgs(m, 1)
			exes := map[bool]*Executable{}
			defer func() {
				for _, e := range exes {
					e.Close()
				}
			}()
			cold := func(noReuse bool) (wall, cpu time.Duration) {
				c := testCache(b, b.TempDir())
				defer c.Close()
				be := New()
				be.Threads, be.noReuse = threads, noReuse
				before := childCPU(b)
				start := time.Now()
				rep, exe := compileIn(b, c, be, ex, string(text))
				wall, cpu = time.Since(start), childCPU(b)-before
				var phases []string
				for _, p := range rep.Phases {
					if p.Name == "autotune" || p.Name == "cc" || p.Name == "link" {
						phases = append(phases, fmt.Sprintf("%s=%v", p.Name, p.Duration.Round(time.Millisecond)))
					}
				}
				b.Logf("reuse=%v: %v wall, %v compiler CPU, phases %s", !noReuse, wall.Round(time.Millisecond), cpu.Round(time.Millisecond), strings.Join(phases, " "))
				if old := exes[noReuse]; old != nil {
					old.Close()
				}
				exes[noReuse] = exe
				return wall, cpu
			}
			for i := 0; i < b.N; i++ {
				walls := map[bool][]time.Duration{}
				cpus := map[bool][]time.Duration{}
				for r := range rounds {
					for _, noReuse := range []bool{r%2 == 0, r%2 != 0} {
						w, c := cold(noReuse)
						walls[noReuse] = append(walls[noReuse], w)
						cpus[noReuse] = append(cpus[noReuse], c)
					}
				}
				runs := map[bool][]time.Duration{}
				for range 15 {
					for _, noReuse := range []bool{true, false} {
						start := time.Now()
						if _, err := exes[noReuse].Run(context.Background(), args); err != nil {
							b.Fatal(err)
						}
						runs[noReuse] = append(runs[noReuse], time.Since(start))
					}
				}
				b.Logf("tuned cold compile: recompiling winners %v wall, %v compiler CPU; reusing candidates %v wall, %v compiler CPU (medians of %d interleaved rounds); run %v vs %v",
					median(walls[true]).Round(time.Millisecond), median(cpus[true]).Round(time.Millisecond),
					median(walls[false]).Round(time.Millisecond), median(cpus[false]).Round(time.Millisecond), rounds,
					median(runs[true]).Round(time.Microsecond), median(runs[false]).Round(time.Microsecond))
				b.ReportMetric(float64(median(walls[true]).Milliseconds()), "recompile-ms")
				b.ReportMetric(float64(median(walls[false]).Milliseconds()), "reuse-ms")
				b.ReportMetric(float64(median(cpus[true]).Milliseconds()), "recompile-cc-cpu-ms")
				b.ReportMetric(float64(median(cpus[false]).Milliseconds()), "reuse-cc-cpu-ms")
			}
		})
	}
}

// childCPU is the user and system CPU time of this process's waited-for
// child processes so far.
func childCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

package cpu

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

// candidateFile matches the source file of an autotune candidate library
// (BuildShared names it <unit>.c; units are a_<hash>).
var candidateFile = regexp.MustCompile(`(^|/)(a_[0-9a-f]{24})\.c$`)

// sharedPrograms are two different programs whose only kernel worth
// tuning is the same dot_general.
var sharedPrograms = []struct{ name, text string }{{"sharing", sharingProgram}, {"tiers", tierProgram}}

// compileTogether compiles sharedPrograms at the same time through two
// caches opened on one directory with the given subcaches on: the lease
// files make the caches coordinate exactly as two processes would. It
// returns the executables, the reports, and the compiler's invocation log.
func compileTogether(t *testing.T, subcaches []config.Subcache) ([]*Executable, []*cache.Report, string) {
	t.Helper()
	logPath := countingCompiler(t)
	dir := t.TempDir()
	caches := make([]*cache.Cache, len(sharedPrograms))
	for i := range caches {
		opts := config.Defaults()
		opts.Dir = dir
		opts.Subcaches, opts.SubcachesExplicit = subcaches, true
		// Long enough never to run out on a loaded machine: a waiter
		// that gives up compiles itself, which the tests would report.
		opts.WaitTimeout = 5 * time.Minute
		c := openCache(t, opts, nil)
		t.Cleanup(func() { c.Close() })
		caches[i] = c
	}
	exes := make([]*Executable, len(sharedPrograms))
	reps := make([]*cache.Report, len(sharedPrograms))
	errs := make([]error, len(sharedPrograms))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range sharedPrograms {
		wg.Add(1)
		go func() {
			defer wg.Done()
			b := New()
			b.TuneBudget = 20 * time.Millisecond
			<-start // both begin together, so their compiles overlap
			exe, rep, err := cache.Compile(context.Background(), caches[i], b, cache.Program{Name: p.name, Text: []byte(p.text)})
			if err != nil {
				errs[i] = fmt.Errorf("compiling %s: %w", p.name, err)
				return
			}
			exes[i], reps[i] = exe.(*Executable), rep
		}()
	}
	close(start)
	wg.Wait()
	t.Cleanup(func() {
		for _, e := range exes {
			if e != nil {
				e.Close()
			}
		}
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for i, p := range sharedPrograms {
		m := parseText(t, p.text)
		got, want := runBoth(t, exes[i], m, randomArgs(m, uint64(11+i)))
		assertClose(t, got, want, 1e-4)
	}
	return exes, reps, logPath
}

// sharedKernel returns each executable's only tuned kernel, failing unless
// it is the same kernel in both.
func sharedKernel(t *testing.T, exes []*Executable) []KernelInfo {
	t.Helper()
	shared := make([]KernelInfo, len(exes))
	for i, e := range exes {
		n := 0
		for _, k := range e.Kernels() {
			if k.Tuned {
				shared[i] = k
				n++
			}
		}
		if n != 1 {
			t.Fatalf("%s: %d tuned kernels, want exactly the shared dot_general: %+v", sharedPrograms[i].name, n, e.Kernels())
		}
	}
	if shared[0].Desc != shared[1].Desc {
		t.Fatalf("the programs' tuned kernels differ (%s vs %s); the test programs no longer share one", shared[0].Desc, shared[1].Desc)
	}
	return shared
}

// compileRuns counts, in the compiler log, the runs per autotune candidate
// unit and the runs that compiled the final kernel object named final.
func compileRuns(t *testing.T, logPath, final string) (candidates map[string]int, finals int) {
	t.Helper()
	data, err := os.ReadFile(logPath)
	if err != nil {
		t.Fatal(err)
	}
	candidates = map[string]int{}
	for _, line := range strings.Split(string(data), "\n") {
		args, defines, _ := strings.Cut(line, " # defines ")
		unit := false
		for _, arg := range strings.Fields(args) {
			if m := candidateFile.FindStringSubmatch(arg); m != nil {
				candidates[m[2]]++
			}
			unit = unit || finalKernelFile.MatchString(arg)
		}
		if unit && slices.Contains(strings.Fields(defines), final) {
			finals++
		}
	}
	return candidates, finals
}

// checkCandidatesOnce fails unless one candidate library was built (the
// shared kernel's), and built once.
func checkCandidatesOnce(t *testing.T, candidateRuns map[string]int) {
	t.Helper()
	if len(candidateRuns) != 1 {
		t.Errorf("candidate libraries built: %v, want one (the shared kernel's)", candidateRuns)
	}
	for unit, n := range candidateRuns {
		if n != 1 {
			t.Errorf("the shared kernel's candidates %s were compiled %d times, want once", unit, n)
		}
	}
}

// TestSharedKernelSingleFlight compiles two different programs that share
// one dot_general kernel at the same time, as two processes would (see
// compileTogether). The shared kernel must be tuned once, and its autotune
// candidates compiled once, by one side, with the other side waiting for
// the entries; its final object is made from the candidates' object
// (reuse.go), stored before the autotune record, so it is compiled by
// neither side and the waiting side finds it. Both results must match the
// interpreter. With plain Gets instead of claims both sides tune and
// compile the kernel.
func TestSharedKernelSingleFlight(t *testing.T) {
	exes, reps, logPath := compileTogether(t, config.AllSubcaches())
	shared := sharedKernel(t, exes)
	// One side tuned; the other took its record (after waiting for it).
	if shared[0].TuneHit == shared[1].TuneHit {
		t.Errorf("shared kernel: tune hits %v and %v, want exactly one side to tune it (autotune tiers: %+v, %+v)",
			shared[0].TuneHit, shared[1].TuneHit, reps[0].Tiers["cpu/autotune"], reps[1].Tiers["cpu/autotune"])
	}
	if shared[0].Name != shared[1].Name {
		t.Errorf("shared kernel compiled as %s and %s: each side chose its own configuration (%s, %s)", shared[0].Name, shared[1].Name, shared[0].Config, shared[1].Config)
	}

	candidateRuns, finalRuns := compileRuns(t, logPath, shared[0].Name)
	checkCandidatesOnce(t, candidateRuns)
	if finalRuns != 0 {
		t.Errorf("the shared kernel's final object %s was compiled %d times, want none (made from its candidates)", shared[0].Name, finalRuns)
	}
	if shared[0].ObjectHit == shared[1].ObjectHit || shared[0].TuneHit != shared[0].ObjectHit {
		t.Errorf("shared kernel: object hits %v and %v (tune hits %v and %v), want the side that took the record to find the object too",
			shared[0].ObjectHit, shared[1].ObjectHit, shared[0].TuneHit, shared[1].TuneHit)
	}
}

// TestSharedCandidatesSingleFlight is TestSharedKernelSingleFlight with the
// autotune tier off: both sides must time the shared kernel themselves,
// but its candidate library, in the kernel tier, is built only once.
func TestSharedCandidatesSingleFlight(t *testing.T) {
	exes, _, logPath := compileTogether(t, []config.Subcache{config.SubcacheKernels})
	shared := sharedKernel(t, exes)
	if shared[0].TuneHit || shared[1].TuneHit {
		t.Fatalf("tune hits %v and %v without an autotune tier", shared[0].TuneHit, shared[1].TuneHit)
	}
	candidateRuns, _ := compileRuns(t, logPath, shared[0].Name)
	checkCandidatesOnce(t, candidateRuns)
}

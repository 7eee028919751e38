package cpu

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unsafe"

	"github.com/x448/float16"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/backend/cpu/internal/rt"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/stablehlo"
)

const (
	subAutotune = config.SubcacheAutotune
	subKernels  = config.SubcacheKernels
)

// tuneRecord is what the autotune tier stores per kernel.
type tuneRecord struct {
	Config  Config           `json:"config"`
	Timings map[string]int64 `json:"timings_ns"`
}

// autotune picks a configuration per kernel: the default for kernels too
// small to benefit, alone or beside the program's biggest (see relevant),
// the autotune tier's answer on a hit, and otherwise the fastest
// candidate by timing (see tuneAll). Identical kernels are tuned
// once, and so are kernels that another process is tuning at the same
// time: the tier's claims make this process wait for that process's record
// instead (see cache.Tier.GetOrClaim). The claims on the kernels this
// process tunes are held until their records are stored. With
// BudgetTune, a budget (tunebudget.go) may leave kernels at their default,
// without a record.
func (pl *pipeline) autotune(ctx context.Context, kernels []*kernel) ([]Config, []KernelInfo, error) {
	configs := make([]Config, len(kernels))
	infos := make([]KernelInfo, len(kernels))
	tier := pl.env.Tier(subAutotune)
	first := map[string]int{} // default source -> first kernel with it
	dup := map[int]int{}      // kernel -> the identical kernel tuned for it
	var tuned []int           // distinct kernels worth tuning
	var keys []cache.Key      // their autotune tier keys, by position in tuned
	var maxWork int64         // the largest tunable kernel's work (see relevant)
	for _, k := range kernels {
		if k.tunable() {
			maxWork = max(maxWork, k.work)
		}
	}
	for i, k := range kernels {
		configs[i] = k.cands[0]
		if pl.b.NoTune {
			configs[i] = untunedConfig(k)
		}
		infos[i] = KernelInfo{Desc: k.desc, Config: configs[i].String()}
		if pl.b.NoTune || k.rt != nil || !k.tunable() || !relevant(k, maxWork) {
			continue
		}
		def, err := k.source(k.cands[0], "KERNEL_SYMBOL")
		if err != nil {
			return nil, nil, err
		}
		if j, ok := first[def]; ok {
			dup[i] = j
			continue
		}
		first[def] = i
		tuned = append(tuned, i)
		keys = append(keys, tuneKey(pl.cc, k, def, pl.b.threads()))
	}
	found, release := tier.GetOrClaim(ctx, keys)
	defer release()
	var miss []int // positions in tuned
	for n, i := range tuned {
		k := kernels[i]
		if data, ok := found[n]; ok {
			var rec tuneRecord
			if err := json.Unmarshal(data, &rec); err == nil {
				if c := findConfig(k.cands, rec.Config); c >= 0 {
					configs[i] = k.cands[c]
					infos[i].Config, infos[i].Tuned, infos[i].TuneHit = k.cands[c].String(), true, true
					continue
				}
			}
			pl.warnOnce("tune-entry", "ignoring unusable autotune entry; re-tuning", "tier", subAutotune, "kernel", k.desc)
		}
		miss = append(miss, n)
	}
	if len(miss) > 0 {
		start := time.Now()
		todo := make([]*kernel, len(miss))
		for m, n := range miss {
			todo[m] = kernels[tuned[n]]
		}
		pending := map[int]bool{} // kernels whose configuration timing decides
		for _, n := range miss {
			pending[tuned[n]] = true
		}
		for i, j := range dup {
			if pending[j] {
				pending[i] = true
			}
		}
		wait, err := pl.startFixedObjects(ctx, kernels, configs, infos, pending, len(todo))
		if err != nil {
			return nil, nil, err
		}
		defer wait()
		budget := func() (time.Duration, error) { return pl.tuneBudget(ctx, kernels) }
		recs, err := pl.tuneAll(ctx, todo, budget)
		if err != nil {
			return nil, nil, err
		}
		won := make([]Config, len(todo))
		for m, rec := range recs {
			if rec != nil {
				won[m] = rec.Config
			}
		}
		// The final objects before the records: see reuseCandidates.
		if err := pl.reuseCandidates(ctx, todo, won); err != nil {
			return nil, nil, err
		}
		per := time.Since(start) / time.Duration(len(miss))
		for m, n := range miss {
			i := tuned[n]
			if recs[m] == nil {
				// Left out by the budget: the default, and no record,
				// so that a later compile can still tune it.
				continue
			}
			configs[i] = recs[m].Config
			infos[i].Config, infos[i].Tuned = recs[m].Config.String(), true
			payload, _ := json.Marshal(recs[m])
			if err := tier.Put(ctx, keys[n], payload, per); err != nil {
				// The cache counts and logs store failures once per kind;
				// a line per kernel here would repeat it.
				pl.log.Debug("storing an autotune result failed", "kernel", kernels[i].desc, "err", err)
			}
		}
	}
	for i, j := range dup {
		configs[i] = configs[j]
		infos[i].Config, infos[i].Tuned, infos[i].TuneHit = infos[j].Config, infos[j].Tuned, infos[j].TuneHit
	}
	return configs, infos, nil
}

// startFixedObjects starts compiling, beside the candidate builds (units
// of them), the final objects of the kernels whose configuration is
// already known: all but those pending (being timed, or duplicates of
// one), configs and infos as autotune has them before timing. The
// objects land in pl.held, where the final build takes them, so the
// final compile is left with the tuned kernels, whose objects are mostly
// their candidates' (reuse.go). It does so only where a CPU would
// otherwise wait: each kernel's candidates are one compiler process, and
// fewer of them than the compilers that may run (cpuJobs) leave the rest
// idle for the whole candidate build; the background compile gets those.
// cnn's tuned compile at 2 CPUs built one candidate unit for 233 ms,
// then its other kernels for 106 ms. Not with BudgetTune: its untuned
// build compiles those objects first (tunebudget.go), and extra load
// would move its budget. The returned wait, which the caller defers,
// cancels what is still running on an error return and waits for it;
// timing waits for it first (waitFixedObjects). Its failure fails
// nothing: the final build compiles whatever is not held, and reports
// its own errors.
func (pl *pipeline) startFixedObjects(ctx context.Context, kernels []*kernel, configs []Config, infos []KernelInfo, pending map[int]bool, units int) (wait func(), err error) {
	jobs := pl.cpuJobs() - units
	if jobs < 1 || pl.b.BudgetTune {
		return func() {}, nil
	}
	var srcs []cc.Source
	for i, k := range kernels {
		if pending[i] || finalRoutine(k, configs[i], infos[i].Tuned) != nil || k.copy {
			continue
		}
		s, err := finalSource(k, configs[i], pl.b.NoTune)
		if err != nil {
			return nil, err
		}
		srcs = append(srcs, s)
	}
	if len(srcs) == 0 {
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := pl.compileObjectsJobs(ctx, srcs, make([]KernelInfo, len(srcs)), nil, jobs, true); err != nil {
			pl.log.Debug("compiling fixed kernels beside the candidates failed; the final build compiles them", "err", err)
		}
	}()
	pl.fixedDone = done
	return func() {
		cancel()
		<-done
	}, nil
}

// waitFixedObjects waits for startFixedObjects' compile, if one runs.
func (pl *pipeline) waitFixedObjects() {
	if pl.fixedDone != nil {
		<-pl.fixedDone
	}
}

// A kernel other than a matrix product or convolution is tuned only when
// its work is at least relevantWork elements or 1/relevanceShare of the
// program's largest tunable kernel's work. The transformer example's
// reductions (32-64 K elements) ran 4-200 us each, their candidates
// saving about 0.2 ms of a 7-16 ms run (1-3%), while building those
// doubled its tuned compile (3.5-4.6 s against 7.5-10.5 s). The
// absolute floor keeps big reductions tuned however big the products
// beside them: the resnetblock example's batch-norm reductions (6.4 M
// elements, 1/576 of its convolutions' multiply-adds, but each of the
// product's multiply-adds is vectorized and each reduction element is a
// memory access) take hundreds of milliseconds more in the default,
// strided order. The floor was 2^18 elements until the four-layer
// transformer's 16 layer-norm and bias reductions (2^18 to 2^21
// elements) were found to cost 1.9 s of its 2.3 s tuned compile on one
// CPU for under 1% of its run (628 against 631-637 ms a run, 1 thread,
// BenchmarkKernelProfile): at 2^22 it compiles in 0.68 s. Matrix
// products whose default is the ikj loop are always tuned: it runs
// 2-10x slower than the register-blocked candidates, so even a small
// one matters to the run time.
const (
	relevanceShare = 64
	relevantWork   = 1 << 22
)

// routineRelevanceShare is relevanceShare for a product whose default
// is the runtime routine: it is tuned only from 1/routineRelevanceShare
// of the program's largest tunable kernel's work. The routine runs the
// examples' products within 0-7% of their tuned kernels at 1 thread
// (embedding's 8x4x32x32 attention products 49 and 38 µs against 49 and
// 36, BenchmarkKernelProfile), so a product that small beside the
// program's biggest cannot pay for its candidates: those two were 300 ms
// of embedding's 770 ms tuned compile on one CPU.
const routineRelevanceShare = 8

// relevant reports whether tuning k can matter to the program's run time,
// given maxWork, the largest work among the program's tunable kernels.
func relevant(k *kernel, maxWork int64) bool {
	if k.kind == "dot" || k.kind == "convgemm" {
		// Where the runtime routine is the default (routineConfig),
		// a small one runs within about 2x of its tuned kernel, so
		// a share rule applies (routineRelevanceShare): mlp's 64x10
		// product (1/78 of its work) ran 13 µs tuned against 29 µs
		// on the routine (BenchmarkKernelProfile, 1 thread: the
		// program 1.26-1.27 against 1.27-1.28 ms), and its
		// candidates were a sixth of the tuned compile (583-591
		// against 478-498 ms on one CPU).
		if k.routine != nil {
			return k.work >= maxWork/routineRelevanceShare
		}
		return true
	}
	if k.kind == "reduce" && len(k.cands) > 0 && k.cands[0].Name == "rowmajor" {
		// Its default already reads in order and vectorizes
		// (reduceCandidates, leadingReduce).
		return false
	}
	return k.work >= relevantWork || k.work >= maxWork/relevanceShare
}

func findConfig(cands []Config, c Config) int {
	for i, x := range cands {
		if x.String() == c.String() {
			return i
		}
	}
	return -1
}

// candidateSymbol stands for a candidate's symbol while a unit's content
// hash is computed: the hash names the symbols, so it cannot cover them.
const candidateSymbol = "XK_CANDIDATE_SYMBOL"

// tuneUnit is one kernel's plausible candidates (tuneSet) as one
// translation unit, built into its own shared library and cached in the
// kernel tier. Its name and its symbols derive from its content alone
// (never from the kernel's position in a program), so two programs that
// share a kernel share the library.
type tuneUnit struct {
	src   cc.Source
	cands []int    // the candidates it holds, as indices into the kernel's cands; cands[0] is the reference (tuneSet)
	syms  []string // per entry of cands; "" for the runtime routine, which has no code in the unit
	key   cache.Key
}

// Compile cost is what bounds the autotuner: a register-blocked candidate
// costs the compiler about as much as the rest of a small program, and a
// tuned cold compile used to build every candidate of every tunable
// kernel (about 11 per dot kernel, 10-39x XLA:CPU's whole compile). So
// only plausible candidates are built and timed (tuneSet): those that
// differ from the leading register-blocked candidate in the parameters
// that decide the winner, by measurement, on the examples. Timing every
// candidate of the mlp, transformer and cnn examples at 1 and 2 threads
// (AVX2, issue 23, interleaved timings) put the winner among the
// micro-kernels with the leading candidate's rows (mr), depth (kc) and
// loop order, differing only in packing A (pa) and in the parallel split
// (par, serial included), for 29 of 34 kernels; for the other 5 one of
// those was within 3-11% of the winner (mr = 4, kc = 128/512, order 1;
// the cache-tiled loop never came close). For convolutions the leading
// gemm's rows and vector count (mr, nv) are kept, with its gathering and
// serial variants.

// maxTuneCands bounds the candidates one kernel's tuning builds and times,
// the default included; tuneSet keeps the leading ones in candidate order
// (the candidate lists put the likelier winners first).
const maxTuneCands = 6

// tuneSet lists the candidates of k worth building and timing, as indices
// into k.cands in their order, but for the first: the reference every
// other candidate's output is checked against, and the fallback when no
// other candidate wins. That is the runtime routine where k has one
// (routineConfig: no compile, and not timed), and otherwise the default
// (0).
// A product with the routine builds no ikj loop, and a register-blocked
// candidate that packs A (pa=1) is not built beside its twin that reads
// A in place: timing both on the examples' 26 products at 1 and 2
// threads, reading A in place won 22 times, by up to 2-4x on small
// products (64x10: 13 against 25 µs), and packing it won 4 times by 5-9%.
func tuneSet(k *kernel) []int {
	lead := func(name string) (Config, bool) {
		for _, c := range k.cands {
			if c.Name == name {
				return c, true
			}
		}
		return Config{}, false
	}
	micro, hasMicro := lead("micro")
	gemm, hasGemm := lead("gemm")
	_, hasWino := lead("wino")
	maxUnroll := 0
	for _, c := range k.cands {
		if c.Name == "unroll" {
			maxUnroll = max(maxUnroll, c.p("u"))
		}
	}
	out := []int{0}
	if r := slices.IndexFunc(k.cands, func(c Config) bool { return c.Name == routineConfig }); r >= 0 {
		out[0] = r
	}
	for c := 1; c < len(k.cands) && len(out) < maxTuneCands; c++ {
		cfg := k.cands[c]
		switch {
		case cfg.Name == routineConfig:
			continue // first, if anywhere
		case cfg.Name == "micro" && cfg.p("pa") == 1 && findConfig(k.cands, cfg.without("pa")) >= 0:
			continue
		case cfg.Name == "micro" && cfg.p("par") == parRows && micro.p("par") == parCols:
			// Splitting rows, each part packing all of B, where the
			// leading split is by columns: on the examples' products at 2
			// threads it lost to the column split by up to 3x (transformer
			// 128x256: 690 against 260 µs) and won once, by 5%
			// (embedding's 256x512, within the timing noise).
			continue
		case cfg.Name == "gemm" && out[0] != 0 && hasWino:
			// Where Winograd applies, it won on every convolution of the
			// examples, by 1.6-2.1x (cnn's 16x28x28x16 and 16x14x14x32:
			// 197 against 314 µs and 249 against 514; resnetblock's: 47
			// against 99 ms, 1 thread), and the gemm variants were half
			// of the candidates' compile and most of their timing. The
			// convolution routine is the reference and the fallback.
			continue
		case cfg.Name == "tiled" && hasMicro:
			continue // the register-blocked kernels beat it by 2-10x
		case cfg.Name == "micro" && (cfg.p("mr") != micro.p("mr") || cfg.p("kc") != micro.p("kc") || cfg.p("order") != micro.p("order")):
			continue
		case cfg.Name == "gemm" && hasGemm && (cfg.p("mr") != gemm.p("mr") || cfg.p("nv") != gemm.p("nv")):
			continue
		case cfg.Name == "unroll" && cfg.p("u") != maxUnroll:
			// Only the widest unrolled reduction (u = 8). Timing every
			// reduction candidate of the six examples at 1 and 2 threads
			// (AVX2, 20 kernels) never had u = 2 or 4 win or come within
			// 34% of the winner (u = 8 won 18 times, 1.3-6.3x ahead of
			// u = 4), and their bodies were a third of a reduction unit's
			// compile. Without them a parallel reduction's serial scalar
			// loop fits within maxTuneCands.
			continue
		}
		out = append(out, c)
	}
	return out
}

// candidateUnit builds the translation unit of k's plausible candidates.
func (pl *pipeline) candidateUnit(k *kernel) (tuneUnit, error) {
	return pl.candidateUnitOf(k, tuneSet(k))
}

// candidateUnitOf builds the translation unit of the candidates set (indices
// into k.cands, set[0] == 0). Tests build every candidate this way: a
// record written before tuneSet pruned a kind may still name it.
func (pl *pipeline) candidateUnitOf(k *kernel, set []int) (tuneUnit, error) {
	bodies := make([]string, len(set))
	parts := [][]byte{[]byte(prelude)}
	for n, c := range set {
		if k.cands[c].Name == routineConfig {
			parts = append(parts, []byte(routineConfig)) // no code: built into the binary
			continue
		}
		b, err := k.body(k.cands[c], candidateSymbol)
		if err != nil {
			return tuneUnit{}, err
		}
		bodies[n] = b
		parts = append(parts, []byte(b))
	}
	name := "a_" + cc.Hash(parts...)[:24]
	var code strings.Builder
	code.WriteString(prelude)
	u := tuneUnit{cands: set, syms: make([]string, len(bodies))}
	for n, b := range bodies {
		if b == "" {
			continue // the runtime routine
		}
		u.syms[n] = fmt.Sprintf("%s_c%d", name, n)
		// ReplaceAll: a parallel kernel names its symbol in both entry
		// points.
		code.WriteString(strings.ReplaceAll(b, candidateSymbol, u.syms[n]))
	}
	u.src = cc.Source{Name: name, Code: []byte(code.String())}
	u.key = candidateKey(pl.cc, u.src)
	return u, nil
}

// tuneAll times the candidates of each kernel and picks one per kernel.
// Each kernel's candidates form one translation unit built into a shared
// library of its own (see candidateLibs); loading the libraries needs no
// link step, so with the kernel tier warm this phase runs no compiler at
// all. Candidates whose results disagree with the default are discarded;
// the rest are timed (see pickConfig). budget, called only when some
// candidate library is not in the kernel tier, bounds the candidate builds
// (see buildQueue; negative: no bound); a kernel whose candidates it
// leaves out gets a nil record.
func (pl *pipeline) tuneAll(ctx context.Context, ks []*kernel, budget func() (time.Duration, error)) ([]*tuneRecord, error) {
	units := make([]tuneUnit, len(ks))
	limit := time.Duration(-1)
	tier := pl.env.Tier(subKernels)
	for i, k := range ks {
		u, err := pl.candidateUnit(k)
		if err != nil {
			return nil, err
		}
		units[i] = u
		// Has, not Get: it counts nothing, and the lookup that counts
		// is candidateLibs'.
		if limit < 0 && budget != nil && (tier == nil || !tier.Has(u.key)) {
			if limit, err = budget(); err != nil {
				return nil, err
			}
			budget = nil
		}
	}
	libs, fromCache, step, err := pl.candidateLibs(ctx, ks, units, limit)
	if err != nil {
		return nil, err
	}
	// Candidates are timed on a quiet machine: no compile beside them.
	pl.waitFixedObjects()
	timeStart := time.Now()
	defer func() { pl.log.Debug("autotune timing done", "took", time.Since(timeStart)) }()
	// Timing counts against the budget too: half of it, shared by the
	// kernels to time, bounds each one's sampling (at least 3 rounds
	// still run; see medians). The four-layer transformer spent twice as
	// long timing its biggest kernels as building their candidates.
	timing := pl.b.TuneBudget
	if timing <= 0 {
		timing = time.Second
	}
	if n := countLibs(libs); limit >= 0 && n > 0 {
		timing = min(timing, limit/2/time.Duration(n))
	}
	recs := make([]*tuneRecord, len(ks))
	for i, k := range ks {
		if libs[i] == nil {
			continue // left out by the budget
		}
		lib, err := cc.OpenBytes(libs[i])
		if err != nil && fromCache[i] {
			// A verified entry that will not load (a changed system
			// library, say) is rebuilt rather than failing the compile.
			pl.warnOnce("tune-load", "cached autotune candidates did not load; rebuilding", "tier", subKernels, "kernel", k.desc, "err", err)
			if err = pl.buildUnits(ctx, ks, units, libs, []int{i}, -1, func() {}); err == nil {
				lib, err = cc.OpenBytes(libs[i])
			}
		}
		if err != nil {
			return nil, fmt.Errorf("autotuning %s: %w", k.desc, err)
		}
		kStart := time.Now()
		rec, err := pl.timeCandidates(ctx, lib, k, units[i], timing)
		lib.Close()
		pl.log.Debug("autotune kernel timed", "kernel", k.desc, "cands", len(units[i].cands), "took", time.Since(kStart))
		if err != nil {
			return nil, err
		}
		recs[i] = &rec
		step()
	}
	return recs, nil
}

// countLibs counts the non-nil libraries.
func countLibs(libs [][]byte) int {
	n := 0
	for _, l := range libs {
		if l != nil {
			n++
		}
	}
	return n
}

// candidateLibs returns each unit's candidate library, taken from the
// kernel tier when it is there (fromCache) and otherwise compiled (up to
// jobs compilers at once) and stored. A library that another process is
// building at the same time is waited for rather than built twice; the
// claims on the libraries built here are released once they are stored,
// before any timing. step advances the "autotune" progress, which counts
// the libraries built and then the kernels timed. Libraries are built in
// the order of tuneOrder while the budget lasts (see buildQueue); a
// library left out is nil, and its kernel is neither built nor timed.
func (pl *pipeline) candidateLibs(ctx context.Context, ks []*kernel, units []tuneUnit, budget time.Duration) (libs [][]byte, fromCache []bool, step func(), err error) {
	tier := pl.env.Tier(subKernels)
	keys := make([]cache.Key, len(units))
	for i, u := range units {
		keys[i] = u.key
	}
	found, release := tier.GetOrClaim(ctx, keys)
	defer release()
	libs = make([][]byte, len(ks))
	fromCache = make([]bool, len(ks))
	var todo []int
	for _, i := range tuneOrder(ks) {
		if data, ok := found[i]; ok && len(data) > 0 {
			libs[i], fromCache[i] = data, true
			continue
		}
		todo = append(todo, i)
	}
	total := len(todo) + len(ks)
	done := 0
	step = func() {
		done++
		pl.progress("autotune", done, total)
	}
	pl.progress("autotune", 0, total)
	if budget < 0 {
		// No budget, so every unit is built: largest first, since with a
		// few compilers in parallel a big unit started last would leave
		// the others idle. With a budget the order is the benefit's.
		sort.SliceStable(todo, func(a, b int) bool { return len(units[todo[a]].src.Code) > len(units[todo[b]].src.Code) })
	}
	buildStart := time.Now()
	if err := pl.buildUnits(ctx, ks, units, libs, todo, budget, step); err != nil {
		return nil, nil, nil, err
	}
	built := 0
	for _, i := range todo {
		if libs[i] != nil {
			built++
		}
	}
	if built < len(todo) {
		pl.log.Debug("autotune budget spent: kernels left untuned", "kernels", len(ks), "left", len(todo)-built, "budget", budget)
		total = built + len(ks) - (len(todo) - built) // the rest will not be timed
	}
	pl.log.Debug("autotune candidates ready", "kernels", len(ks), "built", built, "took", time.Since(buildStart))
	return libs, fromCache, step, nil
}

// buildUnits compiles the units listed in todo, in that order, up to jobs
// at once, each to an object and a library linked from it, and stores
// each library in the kernel tier; the objects are kept for the final
// library (keepCandidates, reuse.go). step is called
// after each one. Once budget (if not negative) has passed since the
// call, no unit is started (see buildQueue): those left have nil libs.
func (pl *pipeline) buildUnits(ctx context.Context, ks []*kernel, units []tuneUnit, libs [][]byte, todo []int, budget time.Duration, step func()) error {
	if len(todo) == 0 {
		return nil
	}
	tier := pl.env.Tier(subKernels)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	start := time.Now()
	q := &buildQueue{order: todo, budget: budget, elapsed: func() time.Duration { return time.Since(start) }}
	var errMu sync.Mutex
	var errs []error
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range min(pl.b.jobs(), len(todo)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				if ctx.Err() != nil {
					return
				}
				i, ok := q.take()
				if !ok {
					return
				}
				start := time.Now()
				obj, so, err := pl.cc.BuildObjectShared(ctx, units[i].src)
				if err != nil {
					errMu.Lock()
					errs = append(errs, fmt.Errorf("autotuning %s (candidates %s): %w", ks[i].desc, units[i].src.Name, err))
					errMu.Unlock()
					cancel() // one failure fails the compile; stop the rest
					return
				}
				libs[i] = so
				pl.keepCandidates(ks[i], units[i], obj)
				if err := tier.Put(ctx, units[i].key, so, time.Since(start)); err != nil {
					pl.log.Debug("storing autotune candidates failed", "kernel", ks[i].desc, "err", err) // the cache logs it once
				}
				mu.Lock()
				step()
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	// Report the failure that caused the others, not their cancellation.
	for _, err := range errs {
		if err != nil && !errors.Is(err, context.Canceled) {
			return err
		}
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return ctx.Err()
}

// timeCandidates runs every candidate of u once on the same random
// inputs, discards those that disagree with the reference (the first:
// the default, or the runtime routine, which runs from the binary),
// times the rest interleaved within budget (see harness.medians) and
// picks one with pickConfig.
func (pl *pipeline) timeCandidates(ctx context.Context, lib *cc.Library, k *kernel, u tuneUnit, budget time.Duration) (tuneRecord, error) {
	h, err := newHarness(k)
	if err != nil {
		return tuneRecord{}, err
	}
	defer h.free()
	rec := tuneRecord{Timings: map[string]int64{}}
	var ref [][]byte
	fns := make([]*kernelFn, len(u.syms))
	bufs := make([]unsafe.Pointer, len(u.syms))
	first := make([]time.Duration, len(u.syms))
	threads := pl.b.threads()
	for n, name := range u.syms {
		if err := ctx.Err(); err != nil {
			return tuneRecord{}, err
		}
		var fn kernelFn
		if name == "" {
			fn, bufs[n], err = h.routine()
		} else {
			fn, err = resolveKernel(lib, name)
			bufs[n] = h.ptrs
		}
		if err != nil {
			return tuneRecord{}, fmt.Errorf("autotuning %s: %w", k.desc, err)
		}
		h.clearOutputs()
		start := time.Now()
		fn.run(bufs[n], threads)
		first[n] = max(time.Since(start), 1)
		outs := h.outputs()
		if n == 0 {
			ref = outs
		} else if !closeEnough(k, ref, outs) {
			pl.log.Warn("autotune candidate disagrees with the reference; skipping it", "kernel", k.desc, "config", k.cands[u.cands[n]].String())
			continue
		}
		if name == "" {
			// The runtime routine is the reference and the fallback,
			// not timed: see routineConfig.
			continue
		}
		fns[n] = &fn
	}
	times, err := h.medians(ctx, fns, bufs, first, budget, threads)
	if err != nil {
		return tuneRecord{}, err
	}
	for n, t := range times {
		if t >= 0 {
			rec.Timings[k.cands[u.cands[n]].String()] = t.Nanoseconds()
		}
	}
	var cached func(int) bool
	if pl.env.Tier(subKernels) != nil {
		cached = func(n int) bool { return pl.objectCached(k, k.cands[u.cands[n]]) }
	}
	pick := pickConfig(times, cached)
	if pl.b.pickRoutine && u.syms[0] == "" {
		pick = 0
	}
	rec.Config = k.cands[u.cands[pick]]
	pl.log.Debug("autotune choice", "kernel", k.desc, "config", rec.Config.String(), "timings_ns", rec.Timings)
	return rec, nil
}

const (
	// slowFactor: see medians.
	slowFactor = 2.5
	// stableBand: the first candidate (in candidate order) within this
	// fraction of the fastest wins, so timing noise rarely flips the choice
	// between runs.
	stableBand = 0.03
	// cachedBand: a candidate whose final kernel object is already in the
	// kernel tier wins over faster ones within this fraction of the
	// fastest, which saves a compiler run when only the autotune tier was
	// lost. An earlier compile measured it fastest, so a difference this
	// small is noise: re-timing the MLP example's dot kernels eight times
	// on a loaded 2-core machine put the first run's winner up to 21%
	// behind the fastest candidate of a later run (the top register-blocked
	// variants differ by a few percent in truth).
	cachedBand = 0.20
)

// pickConfig chooses among candidates timed as times (negative: discarded;
// times[0], the default, is never discarded). cached, when non-nil, reports
// whether a candidate's final object is cached; it is asked only about
// candidates within cachedBand of the fastest, fastest first, and only
// when there is a real choice.
func pickConfig(times []time.Duration, cached func(int) bool) int {
	fastest := time.Duration(-1)
	for _, t := range times {
		if t >= 0 && (fastest < 0 || t < fastest) {
			fastest = t
		}
	}
	if fastest < 0 {
		return 0
	}
	var band []int
	for c, t := range times {
		if t >= 0 && float64(t) <= float64(fastest)*(1+cachedBand) {
			band = append(band, c)
		}
	}
	if cached != nil && len(band) > 1 {
		sort.SliceStable(band, func(i, j int) bool { return times[band[i]] < times[band[j]] })
		for _, c := range band {
			if cached(c) {
				return c
			}
		}
	}
	for c, t := range times {
		if t >= 0 && float64(t) <= float64(fastest)*(1+stableBand) {
			return c
		}
	}
	return 0
}

// harness holds C buffers with random inputs for one kernel.
type harness struct {
	k    *kernel
	bufs []unsafe.Pointer
	ptrs unsafe.Pointer
	// extra is C memory of the runtime routine's call (see routine).
	extra []unsafe.Pointer
}

// routine returns the kernel's runtime routine and the buffer table it
// runs on: the harness's operand buffers in the routine's order, its
// parameter block and the harness's output buffer.
func (h *harness) routine() (kernelFn, unsafe.Pointer, error) {
	r := h.k.routine
	if r == nil {
		return kernelFn{}, nil, errors.New("no runtime routine fits the kernel")
	}
	fn, ok := rt.Lookup(r.name)
	if !ok {
		return kernelFn{}, nil, fmt.Errorf("unknown runtime routine %s", r.name)
	}
	// The block is derived from the kernel's types, not read from a
	// cache; checking it anyway keeps the routine inside the buffers.
	if err := fn.Check(r.params, r.inputs[0].Type.NumElements(), r.inputs[1].Type.NumElements(), h.k.outputs[0].Type.NumElements()); err != nil {
		return kernelFn{}, nil, err
	}
	params := rt.EncodeParams(r.params)
	p := cc.Alloc(len(params))
	tab := cc.Alloc(8 * 4)
	for _, a := range []unsafe.Pointer{p, tab} {
		if a != nil {
			h.extra = append(h.extra, a)
		}
	}
	if p == nil || tab == nil {
		return kernelFn{}, nil, errors.New("out of memory")
	}
	copy(unsafe.Slice((*byte)(p), len(params)), params)
	slots := unsafe.Slice((*uintptr)(tab), 4)
	for i, in := range r.inputs {
		n := slices.Index(h.k.inputs, in)
		if n < 0 {
			return kernelFn{}, nil, errors.New("the routine's operand is not a kernel input")
		}
		slots[i] = uintptr(h.bufs[n])
	}
	slots[2], slots[3] = uintptr(p), uintptr(h.bufs[len(h.k.inputs)])
	return runtimeFn(fn, params), tab, nil
}

func newHarness(k *kernel) (*harness, error) {
	h := &harness{k: k}
	rng := rand.New(rand.NewPCG(1, 2))
	all := append(append([]*stablehlo.Value{}, k.inputs...), k.outputs...)
	for i, v := range all {
		n := int(v.Type.ByteSize())
		p := cc.Alloc(n)
		if p == nil {
			h.free()
			return nil, fmt.Errorf("autotuning %s: out of memory", k.desc)
		}
		h.bufs = append(h.bufs, p)
		if i < len(k.inputs) {
			fillRandom(unsafe.Slice((*byte)(p), n), v.Type.DType, rng)
		}
	}
	h.ptrs = cc.Alloc(8 * (len(all) + 1))
	if h.ptrs == nil {
		h.free()
		return nil, fmt.Errorf("autotuning %s: out of memory", k.desc)
	}
	// Integers, not pointers, in C memory (see Executable.Run).
	slots := unsafe.Slice((*uintptr)(h.ptrs), len(all)+1)
	for i, p := range h.bufs {
		slots[i] = uintptr(p)
	}
	return h, nil
}

func (h *harness) free() {
	for _, p := range h.bufs {
		cc.Free(p)
	}
	h.bufs = nil
	cc.Free(h.ptrs)
	h.ptrs = nil
	for _, p := range h.extra {
		cc.Free(p)
	}
	h.extra = nil
}

func (h *harness) clearOutputs() {
	for i, v := range h.k.outputs {
		p := h.bufs[len(h.k.inputs)+i]
		b := unsafe.Slice((*byte)(p), int(v.Type.ByteSize()))
		for j := range b {
			b[j] = 0xA5 // a pattern a correct kernel must overwrite
		}
	}
}

func (h *harness) outputs() [][]byte {
	var out [][]byte
	for i, v := range h.k.outputs {
		p := h.bufs[len(h.k.inputs)+i]
		out = append(out, append([]byte(nil), unsafe.Slice((*byte)(p), int(v.Type.ByteSize()))...))
	}
	return out
}

// medians times the non-nil fns interleaved: each round takes one sample of
// every candidate, so a burst of load from other processes hits all of them
// alike instead of skewing whichever ran during it. first holds each
// candidate's checking run (timeCandidates), which stands as its first
// sample's estimate when it took 1 ms or more: running every candidate
// once more only to size the samples cost a tuned cold compile of the
// four-layer transformer about 0.7 s, most of it the products' ikj
// default (50-70 ms a run, 3x the register-blocked ones). A sample repeats a kernel enough to last about a
// millisecond; sampling stops after 7 rounds, or after at least 3 once
// budget is spent or the choice is settled (settled); with one candidate
// left there is no choice, and its checking run stands. Skipped (nil)
// candidates get -1. Parallel candidates run on threads threads, each
// candidate on its buffer table bufs[c].
func (h *harness) medians(ctx context.Context, fns []*kernelFn, bufs []unsafe.Pointer, first []time.Duration, budget time.Duration, threads int) ([]time.Duration, error) {
	inner := make([]int, len(fns))
	for c, fn := range fns {
		if fn == nil {
			first[c] = 0 // 0 means skipped
			continue
		}
		if first[c] < time.Millisecond {
			// A first call's fixed costs (page faults on the library's
			// code, waking the pool) could be most of a short one's
			// run and mark it slow; a second run costs under 1 ms.
			start := time.Now()
			fn.run(bufs[c], threads)
			first[c] = max(time.Since(start), 1)
		}
		one := first[c]
		inner[c] = 1
		if one < time.Millisecond && one > 0 {
			inner[c] = int(time.Millisecond / one)
		}
		if inner[c] > 1000 {
			inner[c] = 1000
		}
	}
	live := 0
	for _, fn := range fns {
		if fn != nil {
			live++
		}
	}
	if live <= 1 {
		// Nothing to choose between: the one candidate's checking run
		// stands as its time.
		out := make([]time.Duration, len(fns))
		for c, fn := range fns {
			out[c] = -1
			if fn != nil {
				out[c] = first[c]
			}
		}
		return out, nil
	}
	samples := make([][]time.Duration, len(fns))
	// A candidate whose first run took more than slowFactor times the
	// fastest first run cannot win: it is not sampled again, and its
	// first run stands as its time. Products' defaults (the ikj loop) run
	// 2-10x slower than the register-blocked candidates, and on big
	// kernels timing them took most of the tuning time.
	slow := slowCandidates(first)
	for c, fn := range fns {
		if slow[c] && fn != nil {
			// A first run stands for a whole sample only once a second
			// one agrees: a first call's cold costs (page faults on
			// fresh scratch memory and code) made the examples' 150 µs
			// products take 1-2 ms once, marking them slow for good.
			start := time.Now()
			fn.run(bufs[c], threads)
			first[c] = min(first[c], max(time.Since(start), 1))
		}
	}
	slow = slowCandidates(first)
	for c, o := range first {
		if slow[c] {
			samples[c] = []time.Duration{o}
		}
	}
	begin := time.Now()
	for round := 0; round < 7 && (round < 3 || time.Since(begin) < budget && !settled(samples)); round++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		for c, fn := range fns {
			if fn == nil || slow[c] {
				continue
			}
			s := time.Now()
			for i := 0; i < inner[c]; i++ {
				fn.run(bufs[c], threads)
			}
			samples[c] = append(samples[c], time.Since(s)/time.Duration(inner[c]))
		}
	}
	return sampleMedians(samples), nil
}

// sampleMedians returns each candidate's median sample, -1 for one
// without samples. It sorts copies: samples keeps growing.
func sampleMedians(samples [][]time.Duration) []time.Duration {
	out := make([]time.Duration, len(samples))
	for c, ss := range samples {
		if len(ss) == 0 {
			out[c] = -1
			continue
		}
		ss = slices.Clone(ss)
		slices.Sort(ss)
		out[c] = ss[len(ss)/2]
	}
	return out
}

// slowCandidates reports which candidates' first runs (first; 0 for a
// skipped candidate) took more than slowFactor times the fastest.
func slowCandidates(first []time.Duration) []bool {
	var best time.Duration
	for _, o := range first {
		if o > 0 && (best == 0 || o < best) {
			best = o
		}
	}
	slow := make([]bool, len(first))
	for c, o := range first {
		slow[c] = o > 0 && float64(o) > slowFactor*float64(best)
	}
	return slow
}

// clearWinner reports whether samples (per candidate; nil for a skipped
// one) already settle the choice: one candidate's slowest sample beats
// every other candidate's fastest by more than stableBand, so further
// rounds would take time without a plausible change of winner. Without
// it a loaded machine runs all 7 rounds of every kernel within its
// budget (TuneBudget), also where the first 3 separate the candidates
// plainly (the register-blocked products against the ikj default).
func clearWinner(samples [][]time.Duration) bool {
	lead, leadMax := -1, time.Duration(0)
	for c, ss := range samples {
		if len(ss) == 0 {
			continue
		}
		if m := slices.Max(ss); lead < 0 || m < leadMax {
			lead, leadMax = c, m
		}
	}
	if lead < 0 {
		return false
	}
	for c, ss := range samples {
		if c != lead && len(ss) > 0 && float64(slices.Min(ss)) <= float64(leadMax)*(1+stableBand) {
			return false
		}
	}
	return true
}

// settled reports whether more rounds are unlikely to change the choice
// by more than stableBand: either clearWinner, or no other candidate has
// taken even one sample more than stableBand faster than the median of
// the candidate pickConfig would choose now. A rival truly faster than
// that by more than the band would have shown it in most of its samples,
// and the median of 3 is below the true median 1/2 of the time, their
// minimum 7/8; candidates that stay within the band of each other (the
// products' two leading register-blocked variants, 2-5% apart in the
// four-layer transformer) are the ones the band says not to choose
// between by timing, and they used to take all 7 rounds: 40% of that
// program's timing phase.
func settled(samples [][]time.Duration) bool {
	if clearWinner(samples) {
		return true
	}
	meds := sampleMedians(samples)
	p := pickConfig(meds, nil)
	if meds[p] < 0 {
		return false
	}
	floor := float64(meds[p]) * (1 - stableBand)
	for c, ss := range samples {
		if c != p && len(ss) > 0 && float64(slices.Min(ss)) < floor {
			return false
		}
	}
	return true
}

func fillRandom(b []byte, d stablehlo.DType, rng *rand.Rand) {
	switch d {
	case stablehlo.F32:
		for i := 0; i+4 <= len(b); i += 4 {
			binary.LittleEndian.PutUint32(b[i:], math.Float32bits(float32(rng.Float64()*2-1)))
		}
	case stablehlo.F64:
		for i := 0; i+8 <= len(b); i += 8 {
			binary.LittleEndian.PutUint64(b[i:], math.Float64bits(rng.Float64()*2-1))
		}
	case stablehlo.I1:
		for i := range b {
			b[i] = byte(rng.IntN(2))
		}
	case stablehlo.C64:
		fillRandom(b, stablehlo.F32, rng) // both parts uniform in [-1, 1)
	case stablehlo.C128:
		fillRandom(b, stablehlo.F64, rng)
	case stablehlo.F16, stablehlo.BF16:
		for i := 0; i+2 <= len(b); i += 2 {
			f := float32(rng.Float64()*2 - 1)
			h := uint16(math.Float32bits(f) >> 16) // bf16: truncation is fine for random data
			if d == stablehlo.F16 {
				h = float16.Fromfloat32(f).Bits()
			}
			binary.LittleEndian.PutUint16(b[i:], h)
		}
	default:
		size := d.Size()
		for i := 0; i+size <= len(b); i += size {
			v := uint64(rng.IntN(17)) - 8
			if d.IsUnsigned() {
				v = uint64(rng.IntN(9))
			}
			for j := 0; j < size; j++ {
				b[i+j] = byte(v >> (8 * j))
			}
		}
	}
}

// closeEnough compares a candidate's outputs with the default's: integers
// exactly, floats within a relative tolerance that allows reassociation.
func closeEnough(k *kernel, a, b [][]byte) bool {
	for i, v := range k.outputs {
		switch v.Type.DType {
		case stablehlo.F32:
			x, y := a[i], b[i]
			for j := 0; j+4 <= len(x); j += 4 {
				p := float64(math.Float32frombits(binary.LittleEndian.Uint32(x[j:])))
				q := float64(math.Float32frombits(binary.LittleEndian.Uint32(y[j:])))
				if !floatClose(p, q, 1e-3) {
					return false
				}
			}
		case stablehlo.F64:
			x, y := a[i], b[i]
			for j := 0; j+8 <= len(x); j += 8 {
				p := math.Float64frombits(binary.LittleEndian.Uint64(x[j:]))
				q := math.Float64frombits(binary.LittleEndian.Uint64(y[j:]))
				if !floatClose(p, q, 1e-9) {
					return false
				}
			}
		default:
			if string(a[i]) != string(b[i]) {
				return false
			}
		}
	}
	return true
}

func floatClose(p, q, tol float64) bool {
	if math.IsNaN(p) || math.IsNaN(q) {
		return math.IsNaN(p) && math.IsNaN(q)
	}
	if p == q {
		return true
	}
	return math.Abs(p-q) <= tol*math.Max(1, math.Max(math.Abs(p), math.Abs(q)))
}

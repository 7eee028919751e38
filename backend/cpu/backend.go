package cpu

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/stablehlo"
)

var _ cache.Backend = (*Backend)(nil)

// Backend is the cpu backend. The zero value is not usable; call New.
type Backend struct {
	// TuneBudget bounds the timing runs of one kernel's candidates.
	TuneBudget time.Duration
	// NoTune compiles every kernel in its default configuration, without
	// timing candidates, and runs f32/f64 products and convolutions with
	// the routines built into the binary (runtime.go); it is part of the
	// key: the code differs.
	NoTune bool
	// BudgetTune bounds a cold compile's autotuning by a per-compile
	// budget (tunebudget.go) that leaves the least promising kernels at
	// their default; unset, every kernel worth tuning is tuned (the
	// default: the cache pays for tuning once). It is part of the key: the
	// code differs. New sets it, or NoTune, from XLACACHE_CPU_TUNE.
	BudgetTune bool
	// Jobs is how many C compiler processes run at once.
	Jobs int
	// Progress, when non-nil, is told about autotuning and compilation
	// progress (stage "autotune" or "compile").
	Progress func(stage string, done, total int)
	// Threads bounds how many threads a kernel runs on (New sets it from
	// XLACACHE_CPU_THREADS, default: the CPUs in the process's affinity
	// mask; 0 or less means 1, more than config.MaxCPUThreads means that
	// many: the worker pool never shrinks). The autotuner times kernels on this many
	// threads, so it is part of the autotune and executable keys.
	Threads int

	// batchLimit bounds the kernels per translation unit of a cold
	// compile; 0 means maxBatchKernels. Benchmarks set 1 to compare with
	// a unit per kernel.
	batchLimit int
	// noReuse compiles tuned kernels' final objects again instead of
	// taking them from their candidates' objects (reuse.go); benchmarks
	// set it to compare the two.
	noReuse bool
	// tuneFactor replaces tuneBudgetFactor when positive; tests set a
	// tiny one to make the budget's choice certain.
	tuneFactor float64
	// cpus replaces the CPUs this process may use, when positive, in
	// how many compilers run at once (cpuJobs); tests set it.
	cpus int
	// noRoutines runs every kernel as generated code, with no runtime
	// routine (runtime.go); tests set it to exercise the generated
	// kernels' own paths.
	noRoutines bool
	// pickRoutine makes the autotuner choose the runtime routine
	// wherever it is a candidate (routineConfig), whatever the timings;
	// tests set it to make that choice certain.
	pickRoutine bool

	// threadsErr is a bad XLACACHE_CPU_THREADS or XLACACHE_CPU_TUNE seen by New, reported by
	// every compile and load rather than silently replaced.
	threadsErr error

	mu     sync.Mutex
	parsed map[[32]byte]*stablehlo.Module
}

// New returns a cpu backend with default settings.
func New() *Backend {
	threads, err := config.CPUThreadsFromEnv(os.LookupEnv)
	budget, off, terr := parseTuneMode(os.LookupEnv)
	return &Backend{TuneBudget: 1500 * time.Millisecond, Jobs: 2, Threads: threads, NoTune: off, BudgetTune: budget, threadsErr: errors.Join(err, terr)}
}

// Prepare starts, in the background, what the first compile or warm
// start of a process would otherwise wait for: finding the C compiler
// (its path, the memo of its probe or the probe itself, and the CPU's
// features: 0.2-0.4 ms of file reads with a memo, the probe's compiler
// runs without), then what the first load of a kernel library needs
// (cc.PrepareLoad), and the fingerprint of the C preludes that every key
// holds (codegenFingerprint: a hash of 49 KB, about 0.1 ms on first use).
// A caller with other work before its first Compile, such as GoMLX
// building its first graph, calls it first. It reports nothing: the
// compile or load that needs these reports any error.
func (b *Backend) Prepare() {
	go func() {
		_, _ = cc.Find(context.Background())
		codegenFingerprint()
		cc.PrepareLoad()
	}()
}

// threads is the effective thread bound.
func (b *Backend) threads() int {
	return min(max(b.Threads, 1), config.MaxCPUThreads)
}

// Name implements cache.Backend.
func (b *Backend) Name() string { return "cpu" }

// KernelsContentAddressed tells the core that this backend's kernel cache
// cannot clash, so every subcache is on by default.
func (b *Backend) KernelsContentAddressed() bool { return true }

// parse parses and verifies program text, memoizing the last few modules so
// that KeyParts and Compile of the same text parse once.
func (b *Backend) parse(p cache.Program) (*stablehlo.Module, error) {
	sum := sha256.Sum256(p.Text)
	b.mu.Lock()
	m, ok := b.parsed[sum]
	b.mu.Unlock()
	if ok {
		return m, nil
	}
	m, err := stablehlo.Parse(p.Text, programFile(p)) // Parse verifies
	if err != nil {
		return nil, err
	}
	b.remember(sum, m)
	return m, nil
}

// programFile is the file name p's module carries in error messages.
func programFile(p cache.Program) string {
	if p.Name == "" {
		return "program"
	}
	return p.Name
}

// remember memoizes m as the module of the text whose hash is sum.
func (b *Backend) remember(sum [32]byte, m *stablehlo.Module) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.parsed == nil || len(b.parsed) > 8 {
		b.parsed = map[[32]byte]*stablehlo.Module{}
	}
	b.parsed[sum] = m
}

// UseParsed gives the backend m, which the caller parsed (and so
// verified) from p.Text with stablehlo.Parse: KeyParts and Compile of p
// then use it instead of parsing p.Text again. The key is the same as for
// a module the backend parsed itself (it is made from m's canonical
// text). m must not be modified afterwards.
func (b *Backend) UseParsed(p cache.Program, m *stablehlo.Module) {
	// Error messages name the program as if the backend had parsed it.
	named := *m
	named.File = programFile(p)
	b.remember(sha256.Sum256(p.Text), &named)
}

// Compile implements cache.Backend.
func (b *Backend) Compile(ctx context.Context, p cache.Program, env *cache.Session) (cache.Executable, error) {
	start := time.Now()
	m, err := b.parse(p)
	if err != nil {
		return nil, err
	}
	env.Phase("parse", time.Since(start))
	return b.CompileModule(ctx, m, env)
}

// Load implements cache.Backend.
func (b *Backend) Load(ctx context.Context, data []byte, env *cache.Session) (cache.Executable, error) {
	if b.threadsErr != nil {
		return nil, fmt.Errorf("cpu: %w", b.threadsErr)
	}
	plan, so, err := decodeExecutable(data)
	if err != nil {
		return nil, err
	}
	// The core times the whole load as its "load" phase.
	return newExecutable(plan, so, b.threads())
}

// CompileModule compiles a parsed, verified module. env may be nil (no
// cache tiers).
func (b *Backend) CompileModule(ctx context.Context, m *stablehlo.Module, env *cache.Session) (*Executable, error) {
	if b.threadsErr != nil {
		return nil, fmt.Errorf("cpu: %w", b.threadsErr)
	}
	pl := &pipeline{b: b, env: env, log: env.Logger()}
	return pl.run(ctx, m)
}

// pipeline is one compile.
type pipeline struct {
	b   *Backend
	env *cache.Session
	cc  *cc.Compiler
	log *slog.Logger

	progressMu sync.Mutex
	// quiet silences progress while the autotuner's untuned build runs
	// (tunebudget.go): it is part of the "autotune" stage.
	quiet bool
	// held is every kernel object this compile has compiled or taken from
	// the kernel tier, by kernel name (see compileObjects): the final
	// build takes the untuned build's objects from it, without a second
	// lookup or compile.
	held map[string]heldObject
	// candObjs is the candidate object of each kernel whose candidates
	// this compile built, for the final library (reuse.go).
	candMu   sync.Mutex
	candObjs map[*kernel]candidateObject
	// reused counts the final objects made from candidate objects.
	reused int
	// storing holds a channel per storeBehind still running, closed
	// when its stores are done and their claims released.
	storeMu sync.Mutex
	storing []chan struct{}
	// fixedDone is closed when the compile startFixedObjects started
	// beside the candidate builds is over (nil: none started).
	fixedDone chan struct{}

	warnMu sync.Mutex
	warned map[string]bool // warnOnce kinds already logged at Warn
}

// warnOnce logs a cache failure that may repeat for every kernel (a
// damaged entry, a library that will not load) at Warn the first time its
// kind is seen in this compile and at Debug after: one clear line per
// failure, not one per kernel.
func (pl *pipeline) warnOnce(kind, msg string, args ...any) {
	pl.warnMu.Lock()
	first := !pl.warned[kind]
	if first {
		if pl.warned == nil {
			pl.warned = map[string]bool{}
		}
		pl.warned[kind] = true
	}
	pl.warnMu.Unlock()
	if first {
		pl.log.Warn(msg, args...)
	} else {
		pl.log.Debug(msg, args...)
	}
}

func (pl *pipeline) phase(name string, start time.Time) {
	pl.env.Phase(name, time.Since(start))
}

func (pl *pipeline) progress(stage string, done, total int) {
	if pl.b.Progress != nil && !pl.quiet {
		// Compiles report from several goroutines; callbacks such as a
		// terminal progress bar expect one call at a time.
		pl.progressMu.Lock()
		defer pl.progressMu.Unlock()
		pl.b.Progress(stage, done, total)
	}
}

func (pl *pipeline) run(ctx context.Context, m *stablehlo.Module) (*Executable, error) {
	defer pl.waitStores()
	start := time.Now()
	file := m.File
	if file == "" {
		file = m.Name
	}
	flat, err := stablehlo.Inline(m)
	if err != nil {
		return nil, fmt.Errorf("%s: inlining: %w", file, err)
	}
	fn := flat.Main()
	if fn == nil {
		return nil, fmt.Errorf("%s: no main function", file)
	}
	l, err := analyze(fn, file)
	if err != nil {
		return nil, err
	}
	pl.phase("fuse", start)

	start = time.Now()
	kernels := make([]*kernel, 0, len(l.roots))
	for _, op := range l.roots {
		k, err := newKernel(l, op, pl.b.threads())
		if err != nil {
			return nil, err
		}
		kernels = append(kernels, k)
	}
	// Big products run the gemm routine untimed (routineMinWork); the
	// autotuner skips them. Kernels it leaves in their default
	// configuration (every kernel of an untuned build) get a routine
	// after it, where one fits.
	for _, k := range kernels {
		if pl.b.noRoutines {
			k.routine = nil
			k.cands = slices.DeleteFunc(k.cands, func(c Config) bool { return c.Name == routineConfig })
			continue
		}
		if k.work >= routineMinWork && k.kind == "dot" {
			k.rt = k.routine
		} else if r, ok := winoRoutine(k); ok && !pl.b.NoTune {
			k.rt = r
		} else if r, ok := poolRoutine(k); ok {
			k.rt = r
		}
		k.copy = copyReshape(k)
	}
	pl.phase("codegen", start)

	// The compiler is looked up only now: an unsupported program is
	// rejected above without needing one.
	if pl.cc, err = cc.Find(ctx); err != nil {
		return nil, err
	}
	pl.cc.PrepareLink(ctx)
	start = time.Now()
	configs, infos, err := pl.autotune(ctx, kernels)
	if err != nil {
		return nil, err
	}
	pl.phase("autotune", start)

	start = time.Now()
	srcs := make([]cc.Source, len(kernels))
	for i, k := range kernels {
		k.rt = finalRoutine(k, configs[i], infos[i].Tuned)
		if k.rt != nil {
			srcs[i] = cc.Source{Name: k.rt.name}
			infos[i].Name, infos[i].Config = k.rt.name, k.rt.String()
			continue
		}
		if k.copy {
			srcs[i] = cc.Source{Name: copyKernel}
			infos[i].Name, infos[i].Config = copyKernel, "plan copy step"
			continue
		}
		if srcs[i], err = finalSource(k, configs[i], pl.b.NoTune); err != nil {
			return nil, err
		}
		infos[i].Name = srcs[i].Name
	}
	pl.phase("codegen", start)

	start = time.Now()
	objs, err := pl.compileObjects(ctx, srcs, infos, nil)
	if err != nil {
		return nil, err
	}
	// "cc", not "compile": the core reports the whole backend compile as
	// "compile".
	pl.phase("cc", start)

	start = time.Now()
	var so []byte
	if len(objs) > 0 { // else every kernel is a runtime routine: no library
		so, err = pl.cc.Link(ctx, objs)
	}
	// A link the caller cancelled says nothing about the objects: an
	// interrupted compile must not quarantine good entries.
	if err != nil && ctx.Err() == nil && (pl.reused > 0 || slices.ContainsFunc(infos, func(i KernelInfo) bool { return i.ObjectHit })) {
		// An object from the kernel tier verified but does not link (an
		// entry a faulty build stored, say), or one made from candidate
		// objects does not (reuse.go): a cache failure, which degrades to
		// compiling every kernel afresh; the entries used are quarantined
		// and the fresh objects replace them.
		pl.log.Warn("linking objects from the kernel tier failed; compiling every kernel afresh", "program", file, "err", err)
		if objs, err = pl.compileObjects(ctx, srcs, infos, fmt.Errorf("object does not link: %w", err)); err != nil {
			return nil, err
		}
		so, err = pl.cc.Link(ctx, objs)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", file, err)
	}
	pl.phase("link", start)

	plan := buildPlan(l, flat, kernels, srcs, infos)
	if err := plan.validate(nil); err != nil {
		return nil, fmt.Errorf("cpu: internal error: %w", err)
	}
	start = time.Now()
	e, err := newExecutable(plan, so, pl.b.threads())
	if err != nil {
		return nil, err
	}
	pl.phase("load", start)
	return e, nil
}

// finalRoutine is the runtime routine k runs on in configuration cfg
// (tuned: chosen by timing or an autotune record), or nil where it runs
// its own object: the routine chosen before tuning (k.rt), else k's
// routine where k is left in its default configuration (an untuned
// build, or a kernel too small to pay for timing) or tuned to it.
func finalRoutine(k *kernel, cfg Config, tuned bool) *runtimeRoutine {
	if k.rt == nil && (!tuned || cfg.Name == routineConfig) {
		return k.routine
	}
	return k.rt
}

// finalSource is the translation unit of k's kernel in configuration cfg,
// named by a hash of its content: the same kernel in any program gets the
// same name and so the same kernel-tier entry, and different kernels can
// never share a name. Its level is kernelOpt's for a build tuned or not
// (noTune): the level is part of the object key, so every caller gets it
// the same way.
func finalSource(k *kernel, cfg Config, noTune bool) (cc.Source, error) {
	opt := kernelOpt(k, noTune)
	body, err := k.sourceAt(cfg, "KERNEL_SYMBOL", opt)
	if err != nil {
		return cc.Source{}, err
	}
	name := "k_" + cc.Hash([]byte(body))[:24]
	// ReplaceAll: a parallel kernel names its symbol in both entry points.
	return cc.Source{Name: name, Code: []byte(strings.ReplaceAll(body, "KERNEL_SYMBOL", name)), Opt: opt}, nil
}

// objectCached reports whether k's final object in configuration cfg is in
// the kernel tier. It uses Has, not Get: the autotuner asks about several
// candidates and compiles at most one of them, so a Get here would count a
// miss for each candidate that is never compiled. The later Get in
// compileObjects still verifies the entry (and counts the hit or miss).
func (pl *pipeline) objectCached(k *kernel, cfg Config) bool {
	s, err := finalSource(k, cfg, pl.b.NoTune)
	if err != nil {
		return false
	}
	return pl.env.Tier(subKernels).Has(pl.objectKey(s))
}

// compileObjects gets each kernel's object from the kernel tier or compiles
// it; identical kernels are compiled once, and so are kernels that another
// process is compiling at the same time (a program sharing them): the
// tier's claims make this process wait for that process's object instead
// (see cache.Tier.GetOrClaim). The claims are held until the objects
// compiled here are stored. Each distinct kernel counts one hit or one
// miss. Missing kernels are compiled a batch of them per translation unit
// (batch.go), and the result holds each batch object once. A non-nil
// reject says why the entries found are unusable: each is quarantined
// (cache.Tier.Reject) and every kernel compiled afresh. Runtime routines
// (runtime.go) have no object and are skipped.
func (pl *pipeline) compileObjects(ctx context.Context, srcs []cc.Source, infos []KernelInfo, reject error) ([]cc.Object, error) {
	return pl.compileObjectsJobs(ctx, srcs, infos, reject, pl.cpuJobs(), false)
}

// cpuJobs is how many compilers run at once: Jobs, at most one per CPU
// this process may use.
func (pl *pipeline) cpuJobs() int {
	return min(pl.b.jobs(), cmp.Or(pl.b.cpus, config.DefaultCPUThreads()))
}

// compileObjectsJobs is compileObjects with up to jobs compilers at once,
// reporting no progress if quiet.
func (pl *pipeline) compileObjectsJobs(ctx context.Context, srcs []cc.Source, infos []KernelInfo, reject error, jobs int, quiet bool) ([]cc.Object, error) {
	tier := pl.env.Tier(subKernels)
	// defined holds every kernel symbol of the objects chosen so far: an
	// entry whose batch would define one again is not used (the linker
	// would reject the duplicate), and its kernel is compiled instead.
	defined := map[string]bool{}
	hit := map[string]bool{} // kernels whose object came from the tier
	var out []cc.Object
	var distinct []cc.Source
	var keys []cache.Key
	seen := map[string]bool{}
	for _, s := range srcs {
		if seen[s.Name] || isRuntime(s.Name) || s.Name == copyKernel { // a runtime routine or a copy step has no object
			continue
		}
		seen[s.Name] = true
		if h, ok := pl.held[s.Name]; ok && reject == nil {
			// This compile has the object already (the autotuner's
			// untuned build): use it without counting a second lookup.
			if !defined[s.Name] && !slices.ContainsFunc(h.members, func(m string) bool { return defined[m] }) {
				for _, m := range h.members {
					defined[m], hit[m] = true, h.hit
				}
				out = append(out, h.obj)
			}
			if defined[s.Name] {
				continue
			}
		}
		distinct = append(distinct, s)
		keys = append(keys, pl.objectKey(s))
	}
	// Stores still running from an earlier call hold claims this call may
	// ask for (the link-failure retry asks for the same keys).
	pl.waitStores()
	found, release := tier.GetOrClaim(ctx, keys)
	releaseHere := true
	defer func() {
		if releaseHere {
			release()
		}
	}()
	for n, s := range distinct {
		data, ok := found[n]
		if ok && reject != nil {
			tier.Reject(keys[n], reject)
			continue
		}
		if !ok || defined[s.Name] {
			continue
		}
		members, obj, err := decodeBatch(data)
		if err == nil && !slices.Contains(members, s.Name) {
			err = errors.New("the batch does not hold the kernel")
		}
		if err != nil {
			pl.warnOnce("kernel-entry", "ignoring unusable kernel-tier entry; compiling the kernel", "tier", subKernels, "kernel", s.Name, "err", err)
			continue
		}
		if slices.ContainsFunc(members, func(m string) bool { return defined[m] }) {
			pl.log.Debug("kernel-tier entry overlaps another batch; compiling the kernel", "kernel", s.Name)
			continue
		}
		for _, m := range members {
			defined[m], hit[m] = true, true
		}
		o := cc.Object{Name: s.Name, Data: obj}
		out = append(out, o)
		pl.hold(s.Name, heldObject{obj: o, members: members, hit: true})
	}
	var missing []cc.Source
	for _, s := range distinct {
		if !defined[s.Name] {
			missing = append(missing, s)
		}
	}
	for i, s := range srcs {
		infos[i].ObjectHit = hit[s.Name]
	}
	if len(missing) == 0 {
		return out, nil
	}
	if !quiet {
		pl.progress("compile", 0, len(missing))
	}
	batches, err := planBatches(missing, jobs, cmp.Or(pl.b.batchLimit, maxBatchKernels))
	if err != nil {
		return nil, err
	}
	units := make([]cc.Source, len(batches))
	for i, b := range batches {
		units[i] = b.src
	}
	start := time.Now()
	objs, err := pl.cc.Compile(ctx, units, jobs)
	if err != nil {
		return nil, batchError(err, batches)
	}
	per := time.Since(start) / time.Duration(len(missing))
	var stores []func()
	for i, b := range batches {
		payload := encodeBatch(b.members, objs[i].Data)
		for _, m := range b.members {
			stores = append(stores, func() {
				key := pl.objectKey(sourceOf(missing, m))
				if err := tier.Put(ctx, key, payload, per); err != nil {
					pl.log.Debug("storing a compiled kernel failed", "kernel", m, "err", err) // the cache logs it once
				}
			})
		}
		o := cc.Object{Name: b.src.Name, Data: objs[i].Data}
		out = append(out, o)
		for _, m := range b.members {
			pl.hold(m, heldObject{obj: o, members: b.members})
		}
	}
	releaseHere = false
	pl.storeBehind(stores, release)
	if !quiet {
		pl.progress("compile", len(missing), len(missing))
	}
	return out, nil
}

// maxStoreWorkers bounds the goroutines storing kernel-tier entries:
// with the link beside them, 2 did best of 1, 2 and 4 (the transformer
// example's untuned compile at 2 CPUs, four interleaved rounds).
const maxStoreWorkers = 2

// storeBehind runs stores (the kernel-tier Puts of a compile's new
// objects), a few at once, and then release (their claims), while the
// compile goes on to link and load: the transformer example's 16 entries
// took 14-18 ms one after another on the development VM's disk (8 ms on
// tmpfs: each Put writes a file, links it and updates the size ledger
// under its lock), about what the link takes. Its untuned compile at 2
// CPUs went 146-153 -> 127-139 ms. run waits for them before
// it returns (waitStores), so a compile still returns with its entries
// stored and their claims released, and so does any call that may claim
// the same keys.
func (pl *pipeline) storeBehind(stores []func(), release func()) {
	done := make(chan struct{})
	pl.storeMu.Lock()
	pl.storing = append(pl.storing, done)
	pl.storeMu.Unlock()
	go func() {
		defer close(done)
		defer release()
		work := make(chan func())
		var wg sync.WaitGroup
		for range min(maxStoreWorkers, len(stores)) {
			wg.Go(func() {
				for f := range work {
					f()
				}
			})
		}
		for _, f := range stores {
			work <- f
		}
		close(work)
		wg.Wait()
	}()
}

// waitStores waits for every storeBehind of this compile so far.
func (pl *pipeline) waitStores() {
	pl.storeMu.Lock()
	storing := pl.storing
	pl.storing = nil
	pl.storeMu.Unlock()
	for _, done := range storing {
		<-done
	}
}

// heldObject is a kernel's object as compileObjects obtained it: the
// object of its batch, the batch's members, and whether it came from the
// kernel tier.
type heldObject struct {
	obj     cc.Object
	members []string
	hit     bool
}

// hold remembers the object of kernel name for the rest of this compile.
func (pl *pipeline) hold(name string, h heldObject) {
	if pl.held == nil {
		pl.held = map[string]heldObject{}
	}
	pl.held[name] = h
}

// batchError names the kernels of the batches a compile error names, so
// that the message says which kernels the compiler rejected.
func batchError(err error, batches []batch) error {
	var ce *cc.CompileError
	if !errors.As(err, &ce) {
		return err
	}
	var names []string
	for _, u := range ce.Kernels {
		for _, b := range batches {
			if b.src.Name == u {
				names = append(names, b.members...)
			}
		}
	}
	if len(names) == 0 {
		return err
	}
	return &cc.CompileError{Kernels: names, Err: ce.Err}
}

// sourceOf is the source named name among srcs.
func sourceOf(srcs []cc.Source, name string) cc.Source {
	for _, s := range srcs {
		if s.Name == name {
			return s
		}
	}
	return cc.Source{Name: name}
}

func (b *Backend) jobs() int {
	if b.Jobs < 1 {
		return 1
	}
	return b.Jobs
}

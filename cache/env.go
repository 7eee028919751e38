package cache

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/xlacache/xlacache/config"
)

// ContentAddressedKernels is an optional interface for a Backend. A backend
// whose compiled kernels are named by their content (the cpu backend) has
// no name clashes between its kernel cache and loaded executables, so when
// the user did not choose subcaches (Options.SubcachesExplicit false) it
// gets every subcache, not just JAX's autotune-only default.
type ContentAddressedKernels interface {
	KernelsContentAddressed() bool
}

// Env is what a backend sees during one Compile or Load: its own subcache
// tiers, XLA-style raw subcache paths with this process's mode, and a place
// to report phase timings and subcache hits. Methods are safe for
// concurrent use and nil-safe.
type Env struct {
	c            *Cache
	backend      string
	allSubcaches bool
	logger       *slog.Logger

	mu     sync.Mutex
	report *Report
	rawUse bool // SubcacheDir handed out a path in update mode
	// saved adds up the compile times recorded in the subcache entries this
	// compile hit: the work it would have done without them.
	saved time.Duration
}

// ForBackend returns an Env for backend name outside of Compile (for
// example to warm subcaches). contentAddressedKernels widens the default
// subcaches as described at ContentAddressedKernels.
func (c *Cache) ForBackend(name string, contentAddressedKernels bool) *Env {
	e := &Env{c: c, backend: SanitizeModule(name), report: newReport()}
	if c != nil {
		e.logger = c.logger.With("backend", name)
		e.allSubcaches = contentAddressedKernels && !c.opts.SubcachesExplicit
	}
	return e
}

// subcacheOn reports whether sub is enabled for this backend.
func (e *Env) subcacheOn(sub config.Subcache) bool {
	if e == nil || e.c == nil {
		return false
	}
	if e.allSubcaches {
		return sub == config.SubcacheAutotune || sub == config.SubcacheKernels
	}
	return e.c.opts.HasSubcache(sub)
}

// TierName returns the name of the backend's tier for sub:
// "<backend>/autotune" or "<backend>/kernels".
func (e *Env) TierName(sub config.Subcache) string {
	if e == nil {
		return ""
	}
	return e.backend + "/" + sub.Alias()
}

// Tier returns the backend's own tier for sub, or nil when that subcache is
// off (a nil *Tier misses and ignores puts). Lookups through it are
// recorded in this compile's Report automatically; do not also call
// TierResult for them.
func (e *Env) Tier(sub config.Subcache) *Tier {
	if !e.subcacheOn(sub) {
		return nil
	}
	return e.c.Tier(e.TierName(sub)).withEnv(e)
}

// SubcacheDir returns the XLA-style raw path for sub (a directory for the
// autotune subcache, a file path for the kernel cache), whether this
// process should update it (writer) or only read it, and whether the
// subcache is on at all. The path for the kernel cache is not created.
func (e *Env) SubcacheDir(sub config.Subcache) (path string, update bool, ok bool) {
	if !e.subcacheOn(sub) || e.c.dir == "" {
		return "", false, false
	}
	c := e.c
	path = filepath.Join(c.dir, string(sub))
	update = c.writer
	if update && sub == config.SubcacheAutotune {
		if err := os.MkdirAll(path, c.opts.EffectiveDirMode()); err != nil {
			c.failure(e.TierName(sub), "creating the autotune subcache", path, err)
			update = false
		}
	}
	if update {
		e.mu.Lock()
		e.rawUse = true
		e.mu.Unlock()
	}
	return path, update, true
}

// Phase records how long a named phase of this compile took.
func (e *Env) Phase(name string, d time.Duration) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.report.Phases = append(e.report.Phases, Phase{Name: name, Duration: d})
	e.mu.Unlock()
}

// TierResult records a lookup the cache could not see itself, such as a
// hit in an XLA-style raw subcache. Lookups through Env.Tier are recorded
// already.
func (e *Env) TierResult(sub config.Subcache, hit bool) {
	if e == nil {
		return
	}
	name := e.TierName(sub)
	e.recordTier(name, hit)
	if e.c != nil {
		if hit {
			e.c.stats.hit(name, 0, 0, false)
		} else {
			e.c.stats.miss(name)
		}
	}
}

// savedTime returns the compile work that subcache hits spared so far.
func (e *Env) savedTime() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.saved
}

// recordSaved notes that a subcache hit spared compile work d.
func (e *Env) recordSaved(d time.Duration) {
	e.mu.Lock()
	e.saved += d
	e.mu.Unlock()
}

func (e *Env) recordTier(name string, hit bool) {
	e.mu.Lock()
	r := e.report.Tiers[name]
	if hit {
		r.Hits++
	} else {
		r.Misses++
	}
	e.report.Tiers[name] = r
	e.mu.Unlock()
}

// Logger returns the logger backends should use.
func (e *Env) Logger() *slog.Logger {
	if e == nil || e.logger == nil {
		return slog.Default()
	}
	return e.logger
}

// Report returns a copy of what has been recorded so far.
func (e *Env) Report() *Report {
	if e == nil {
		return newReport()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report.clone()
}

// Report describes one Compile.
type Report struct {
	// Key is the key text, "" when the backend could not supply key parts.
	Key string
	// Hit is true when the executable came from the cache.
	Hit bool
	// Source is where a hit came from: "local" or "shared".
	Source string `json:",omitempty"`
	// Stored is true when this compile's result was written to the cache.
	Stored bool
	// Tiers counts lookups per tier name during this compile.
	Tiers map[string]TierResult
	// Phases are timings in the order recorded: "key", "lookup", "load",
	// "wait", "compile" (the whole backend compile), "store", and the
	// backend's own phases.
	Phases []Phase
	// CompileTime is the backend compile time (zero on a hit).
	CompileTime time.Duration
	// Explain says, for a miss with ExplainMisses on, which key component
	// differs from the closest stored entry of the same module.
	Explain string `json:",omitempty"`
}

func newReport() *Report { return &Report{Tiers: map[string]TierResult{}} }

func (r *Report) clone() *Report {
	cp := *r
	cp.Tiers = make(map[string]TierResult, len(r.Tiers))
	for k, v := range r.Tiers {
		cp.Tiers[k] = v
	}
	cp.Phases = append([]Phase(nil), r.Phases...)
	return &cp
}

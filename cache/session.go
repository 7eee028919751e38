package cache

import (
	"log/slog"
	"sync"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
)

// ContentAddressedKernels is an optional interface for a Backend. A backend
// whose compiled kernels are named by their content (the cpu backend) has
// no name clashes between its kernel cache and loaded executables, so when
// the user did not choose subcaches (Options.SubcachesExplicit false) it
// gets every subcache, not just JAX's autotune-only default.
type ContentAddressedKernels interface {
	KernelsContentAddressed() bool
}

// Session is what a backend sees during one Compile or Load: its own subcache
// tiers and a place to report phase timings and subcache hits. Methods are safe for
// concurrent use and nil-safe.
type Session struct {
	c            *Cache
	backend      string
	allSubcaches bool
	logger       *slog.Logger

	mu     sync.Mutex
	report *Report
	// saved adds up the compile times recorded in the subcache entries this
	// compile hit: the work it would have done without them.
	saved time.Duration
	// missWhy says why the executables tier's entry could not serve this
	// compile, as its lookups found (require-hit reasons, requirehit.go).
	missWhy []string
}

// ForBackend returns a Session for backend name outside of Compile (for
// example to warm subcaches). contentAddressedKernels widens the default
// subcaches as described at ContentAddressedKernels.
func (c *Cache) ForBackend(name string, contentAddressedKernels bool) *Session {
	e := &Session{c: c, backend: SanitizeModule(name), report: newReport()}
	if c != nil {
		e.logger = c.logger.With("backend", name)
		e.allSubcaches = contentAddressedKernels && !c.opts.SubcachesExplicit
	}
	return e
}

// subcacheOn reports whether sub is enabled for this backend.
func (e *Session) subcacheOn(sub config.Subcache) bool {
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
func (e *Session) TierName(sub config.Subcache) string {
	if e == nil {
		return ""
	}
	if sub == config.SubcacheKernels {
		return e.backend + "/" + layout.KernelsSub
	}
	return e.backend + "/" + layout.AutotuneSub
}

// Tier returns the backend's own tier for sub, or nil when that subcache is
// off (a nil *Tier misses and ignores puts). Lookups through it are
// recorded in this compile's Report automatically; do not also call
// TierResult for them.
func (e *Session) Tier(sub config.Subcache) *Tier {
	if !e.subcacheOn(sub) {
		return nil
	}
	return e.c.Tier(e.TierName(sub)).withSession(e)
}

// Phase records how long a named phase of this compile took.
func (e *Session) Phase(name string, d time.Duration) {
	if e == nil {
		return
	}
	e.mu.Lock()
	e.report.Phases = append(e.report.Phases, Phase{Name: name, Duration: d})
	e.mu.Unlock()
}

// TierResult records a lookup the cache could not see itself, such as a
// hit in an XLA-style raw subcache. Lookups through Session.Tier are recorded
// already.
func (e *Session) TierResult(sub config.Subcache, hit bool) {
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
func (e *Session) savedTime() time.Duration {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.saved
}

// recordSaved notes that a subcache hit spared compile work d.
func (e *Session) recordSaved(d time.Duration) {
	e.mu.Lock()
	e.saved += d
	e.mu.Unlock()
}

func (e *Session) recordTier(name string, hit bool) {
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
func (e *Session) Logger() *slog.Logger {
	if e == nil || e.logger == nil {
		return slog.Default()
	}
	return e.logger
}

// Report returns a copy of what has been recorded so far.
func (e *Session) Report() *Report {
	if e == nil {
		return newReport()
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.report.clone()
}

package cache

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/xlacache/xlacache/config"
)

// Require-hit mode (XLACACHE_REQUIRE_HIT, config.Options.RequireHit) is
// for golden caches: CI fills a cache, and the jobs that read it want a
// program the cache cannot serve caught, not silently recompiled. Compile
// decides at the last moment before a backend compile, once every way to
// a hit has been tried: the local entry, the shared tier, and a wait on
// another process's single-flight claim that ended with its entry (a hit,
// not a miss). An entry that fails verification or that the backend
// cannot load is a miss, with that as its reason. Under RequireHitWarn
// the compile goes ahead and one line names the program, why it missed
// and what the backend's subcaches missed while compiling (a program
// whose autotune results are gone re-tunes: that is part of the compile
// reported). Under RequireHitFail Compile returns a *MissError instead of
// compiling, and nothing is stored.

// ErrHitRequired is what every *MissError is (errors.Is): a compile that
// XLACACHE_REQUIRE_HIT=fail refused because the cache could not serve
// the program.
var ErrHitRequired = errors.New("the cache could not serve the program and " + config.EnvRequireHit + "=fail forbids compiling it")

// MissError is the error of a compile refused under RequireHitFail. It
// names the program and says why the cache could not serve it.
type MissError struct {
	// Module is the program's module name; Key its key text ("" when the
	// backend could not derive one); Backend the backend's name.
	Module, Key, Backend string
	// Reason says why the cache could not serve the program: the entry's
	// fate (failed verification, could not load), an unreachable shared
	// tier, or how the nearest stored entry of the module differs.
	Reason string
}

// Error names the program, its key and the reason.
func (e *MissError) Error() string {
	key := e.Key
	if key == "" {
		key = "none"
	}
	return fmt.Sprintf("program %s (key %s, backend %s) missed the cache and %s=fail forbids compiling it: %s",
		e.Module, key, e.Backend, config.EnvRequireHit, e.Reason)
}

// Is makes errors.Is(err, ErrHitRequired) true.
func (e *MissError) Is(target error) bool { return target == ErrHitRequired }

// Reasons a lookup noted (Tier.noteMiss) or Compile found.
const (
	whyUnverified = "stored entry failed verification"
	whyOtherKey   = "stored entry signed with another key"
	whyLoad       = "stored entry could not be loaded by the backend"
	whyRead       = "reading the stored entry failed"
	whySharedDown = "shared tier unreachable"
	whySharedBig  = "shared entry larger than the size bound"
	whySharedBad  = "shared entry failed verification"
	whySharedKey  = "shared entry signed with another key"
	whyCacheOff   = "caching is off (no cache directory or shared tier)"
	whyNoKey      = "the backend could not derive a cache key"
	whyNoEntry    = "no entry for this program"
)

// noteMiss records, for a lookup of the executables tier made by a
// Compile, why the entry found could not serve it. Other tiers and
// lookups outside a Compile are not explained.
func (t *Tier) noteMiss(why string, err error) {
	if t == nil || t.session == nil || t.name != ExecutablesTier {
		return
	}
	if err != nil {
		why += ": " + err.Error()
	}
	e := t.session
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, w := range e.missWhy {
		if w == why {
			return
		}
	}
	e.missWhy = append(e.missWhy, why)
}

// damagedWhy is the require-hit reason of an entry damaged() was given.
func damagedWhy(cause error) string {
	switch {
	case errors.Is(cause, errLoad):
		return whyLoad
	case keyMismatch(cause):
		return whyOtherKey
	}
	return whyUnverified
}

// sharedDecodeWhy is the require-hit reason of a shared object that did
// not decode.
func sharedDecodeWhy(err error) string {
	if keyMismatch(err) {
		return whySharedKey
	}
	return whySharedBad
}

// missReason says why key missed: what the lookups noted, else how the
// stored entries of the module compare (explain, when Compile computed it
// already, is that comparison).
func (c *Cache) missReason(ctx context.Context, env *Session, key Key, explain string) string {
	env.mu.Lock()
	noted := append([]string(nil), env.missWhy...)
	env.mu.Unlock()
	if len(noted) > 0 {
		return strings.Join(noted, "; ")
	}
	if explain == "" {
		x, err := c.Explain(ctx, key)
		if err != nil {
			// No local directory to compare with (a shared tier alone):
			// the shared tier answered, and had nothing.
			return whyNoEntry
		}
		explain = x.String()
	}
	if strings.HasPrefix(explain, "no stored entry") {
		return whyNoEntry + " (" + explain + ")"
	}
	return explain
}

// requireHit applies c's RequireHit to a compile that is about to happen
// for want of a hit: nil to go ahead (off, warn), a *MissError (fail).
// Under warn the line is logged by warnCompiled, after the compile, so
// that it can say what the subcaches missed too.
func (c *Cache) requireHit(backend, module, key, reason string) error {
	if c == nil || c.opts.RequireHit != config.RequireHitFail {
		return nil
	}
	c.stats.requireHitMiss(backend, true)
	return &MissError{Module: module, Key: key, Backend: backend, Reason: reason}
}

// warnCompiled logs, under RequireHitWarn, the one line of a compile the
// cache could not spare: the program, why it missed, what the backend's
// subcaches missed, and how the compile ended.
func (c *Cache) warnCompiled(env *Session, module, key, reason string, compileErr error) {
	if c == nil || c.opts.RequireHit != config.RequireHitWarn {
		return
	}
	c.stats.requireHitMiss(env.backend, false)
	if key == "" {
		key = "none"
	}
	args := []any{"module", module, "key", key, "backend", env.backend, "reason", reason}
	if sub := subcacheMisses(env.Report()); sub != "" {
		args = append(args, "subcaches", sub)
	}
	if compileErr != nil {
		args = append(args, "compile_err", compileErr)
	}
	c.logger.Warn("compiled without a cache hit ("+config.EnvRequireHit+"=warn)", args...)
}

// subcacheMisses summarizes the lookups of the backend's own tiers in r
// that missed: "cpu/autotune 3 of 3 missed, cpu/kernels 11 of 11 missed".
func subcacheMisses(r *Report) string {
	var out []string
	for name, tr := range r.Tiers {
		if name == ExecutablesTier || isAliasTier(name) || tr.Misses == 0 {
			continue
		}
		out = append(out, fmt.Sprintf("%s %d of %d missed", name, tr.Misses, tr.Hits+tr.Misses))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

// requireHitMiss counts one compile under require-hit: warned (compiled)
// or failed (refused).
func (s *counters) requireHitMiss(backend string, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.compiles[backend]
	if failed {
		b.RequireHitFailed++
	} else {
		b.RequireHitWarned++
	}
	s.compiles[backend] = b
}

package cache

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/logonce"
)

// Prepare starts, in the background, what a process's first cache hit
// would otherwise wait for: the entry decoder's tables
// (entry.PrepareDecode). A caller with other work before its first
// Compile, such as GoMLX building its first graph, calls it first, beside
// its backend's own preparation (cpu.Backend.Prepare).
func Prepare() { go entry.PrepareDecode() }

// Compile compiles p with b through the cache c (which may be nil or
// disabled). On a hit in the executables tier the entry is loaded with
// b.Load; a load failure quarantines the entry and compiles. On a miss, a
// single-flight claim (when available) lets one process compile while the
// others wait for its entry. A writer stores the result subject to the
// thresholds. Cache failures are logged and never returned: the only
// errors are the backend's own compile error, ctx's, and under
// XLACACHE_REQUIRE_HIT=fail a *MissError (errors.Is ErrHitRequired) in
// place of a compile the cache could not spare (requirehit.go).
func Compile(ctx context.Context, c *Cache, b Backend, p Program) (Executable, *Report, error) {
	ca := false
	if x, ok := b.(ContentAddressedKernels); ok {
		ca = x.KernelsContentAddressed()
	}
	env := c.ForBackend(b.Name(), ca)
	if !c.enabled() {
		return c.compileUncached(ctx, b, p, env, whyCacheOff)
	}

	// A warm start by the program's exact text skips KeyParts (alias.go).
	exe, fk, ok := c.loadByAlias(ctx, b, p, env)
	if ok {
		return exe, env.Report(), nil
	}
	if ctx.Err() != nil {
		return nil, env.Report(), ctx.Err()
	}

	start := time.Now()
	parts, err := b.KeyParts(ctx, p)
	env.Phase("key", time.Since(start))
	if err != nil {
		exe, r, cerr := c.compileUncached(ctx, b, p, env, whyNoKey+": "+err.Error())
		if cerr == nil {
			// Only worth a line when the program compiles: otherwise the
			// compile error says what is wrong, once.
			c.logOnce("keyparts:"+b.Name(), "backend could not derive a cache key; compiled without the cache", "module", p.Name, "err", err)
		}
		return exe, r, cerr
	}
	key := NewKey(p.Name, parts)
	env.mu.Lock()
	env.report.Key = key.String()
	env.mu.Unlock()
	tier := c.Tier(ExecutablesTier).withSession(env)

	if exe, ok := tryLoad(ctx, c, b, tier, key, env); ok {
		c.writeAlias(ctx, b, fk, key, env)
		return exe, env.Report(), nil
	}
	if ctx.Err() != nil {
		return nil, env.Report(), ctx.Err()
	}
	var explain string
	if c.opts.ExplainMisses {
		explain = c.explainMiss(ctx, key)
		c.logger.Info("cache miss", "key", key.String(), "explain", explain)
	}

	var release func()
	if c.flight != nil {
		wstart := time.Now()
		// Ready means a new file appeared: one we already found damaged
		// (and, as a reader, had to leave in place) does not count.
		seen := tier.stat(key)
		ready := func() bool {
			// Forced: a reader that started before the directory
			// existed opens it as soon as the writer it waits for has
			// made it (view.go).
			st := tier.statView(tier.localView(true), key)
			return st != nil && (seen == nil || !os.SameFile(seen, st))
		}
		release, err = c.flight.Acquire(ctx, ExecutablesTier+"/"+key.String(), ready)
		env.Phase("wait", time.Since(wstart))
		if err != nil {
			return nil, env.Report(), fmt.Errorf("waiting for another process compiling %s: %w", key, err)
		}
		// A reader never holds a claim (its release is a no-op): whatever
		// ended its wait, the entry may be there now.
		if release == nil || (!c.writer && ready()) {
			// Another process published it while we waited.
			if exe, ok := tryLoad(ctx, c, b, tier, key, env); ok {
				if release != nil {
					release()
				}
				c.writeAlias(ctx, b, fk, key, env)
				return exe, env.Report(), nil
			}
		}
		if release != nil {
			defer release()
		}
	}

	// Every way to a hit is spent (the wait above ended without an entry
	// this process could load): under XLACACHE_REQUIRE_HIT this is the
	// miss it reports or refuses.
	var why string
	if c.opts.RequireHit != config.RequireHitOff {
		why = c.missReason(ctx, env, key, explain)
		if err := c.requireHit(b.Name(), p.Name, key.String(), why); err != nil {
			return nil, env.Report(), err
		}
	}
	var compileTime time.Duration
	exe, compileTime, err = timedCompile(ctx, b, p, env)
	env.mu.Lock()
	env.report.Explain = explain
	env.mu.Unlock()
	c.warnCompiled(env, p.Name, key.String(), why, err)
	if err != nil {
		return nil, env.Report(), err
	}
	if c.writer {
		// The storing threshold and the recorded compile time count the
		// work subcache hits spared this compile: a program recompiled
		// quickly from its tuned, compiled kernels (after its executable
		// was evicted) is as worth storing as it was the first time.
		sstart := time.Now()
		if data, err := exe.Serialize(); err != nil {
			c.countError(ExecutablesTier, "serialize")
			c.logOnce("serialize:"+b.Name(), "backend could not serialize the executable; not caching it", "key", key.String(), "err", err)
		} else if err := tier.Put(ctx, key, data, compileTime+env.savedTime()); err != nil {
			// Put logged local failures (once per kind, under this key
			// too); a failed publish to the shared tier is logged here,
			// once per kind.
			c.logOnce(logonce.FailureKey(err), "storing a cache entry failed; compiling normally", "key", key.String(), "err", err)
		} else if tier.exists(key) {
			env.mu.Lock()
			env.report.Stored = true
			env.mu.Unlock()
			c.writeAlias(ctx, b, fk, key, env)
		} else {
			env.mu.Lock()
			env.report.NotStored = c.notStoredReason(compileTime+env.saved, len(data))
			env.mu.Unlock()
		}
		env.Phase("store", time.Since(sstart))
		c.maybeFlushStats()
	} else {
		env.mu.Lock()
		env.report.NotStored = readerNotStored
		if c.opts.VerifyOnly() {
			env.report.NotStored = verifyOnlyNotStored
		}
		env.mu.Unlock()
	}
	return exe, env.Report(), nil
}

// compileUncached compiles p without the executables tier (why says why
// it is not used), subject to require-hit as a miss would be.
func (c *Cache) compileUncached(ctx context.Context, b Backend, p Program, env *Session, why string) (Executable, *Report, error) {
	if err := c.requireHit(b.Name(), p.Name, "", why); err != nil {
		return nil, env.Report(), err
	}
	exe, _, err := timedCompile(ctx, b, p, env)
	c.warnCompiled(env, p.Name, "", why, err)
	return exe, env.Report(), err
}

// timedCompile compiles p and records how long it took in env's phases and
// report, failed or not.
func timedCompile(ctx context.Context, b Backend, p Program, env *Session) (Executable, time.Duration, error) {
	start := time.Now()
	exe, err := b.Compile(ctx, p, env)
	d := time.Since(start)
	env.countCompile(d)
	env.Phase("compile", d)
	env.mu.Lock()
	env.report.CompileTime = d
	env.mu.Unlock()
	return exe, d, err
}

// tryLoad looks key up and loads it. An entry that verifies but that the
// backend cannot load is a miss (not a hit, and no compile time saved, in
// the counters, the report and the persisted stats), counted as a "load"
// error and quarantined (writers), so that the compile that follows can
// store a good entry in its place.
func tryLoad(ctx context.Context, c *Cache, b Backend, tier *Tier, key Key, env *Session) (Executable, bool) {
	lstart := time.Now()
	e, src, n, ok := tier.find(ctx, key)
	env.Phase("lookup", time.Since(lstart))
	if !ok {
		tier.countMiss()
		return nil, false
	}
	return loadFound(ctx, c, b, tier, key, env, e, src, n)
}

// loadFound is tryLoad once key's entry e was found in src (n stored
// bytes): it loads e and counts the hit, or the miss and the damage.
func loadFound(ctx context.Context, c *Cache, b Backend, tier *Tier, key Key, env *Session, e *entry.Entry, src string, n int) (Executable, bool) {
	ldstart := time.Now()
	exe, err := b.Load(ctx, e.Payload, env)
	env.Phase("load", time.Since(ldstart))
	if err != nil {
		tier.countMiss()
		cause := fmt.Errorf("%w (backend %s): %v", errLoad, b.Name(), err)
		if st := tier.stat(key); st != nil {
			// Counts the "load" error and logs one line for the entry.
			c.damaged(tier, tier.path(key), st, cause)
		} else {
			// A shared hit a reader (or a host without a usable local
			// directory) could not keep: nothing local to quarantine.
			c.countError(tier.name, "load")
			tier.noteMiss(whyLoad, err)
			c.logOnce("load:"+src+":"+key.String(), "backend could not load a cached entry; compiling normally", "key", key.String(), "source", src, "err", cause)
		}
		return nil, false
	}
	tier.countHit(e, src, n)
	env.mu.Lock()
	env.report.Hit = true
	env.report.Source = src
	env.mu.Unlock()
	return exe, true
}

package jobrun

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/xla"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// What JAX did under exec, and require-hit.
//
// JAX reports neither its cache hits nor its misses to anyone but its own
// log. exec sees them in the directory: the host's leader records the JAX
// entries before the command starts (after the fill, so the fill's files
// are not the run's) and compares after it exits. A new "-cache" file is
// a compile JAX stored; an entry whose access time moved is one JAX
// loaded (xla/jaxcache, "Whether JAX loaded an entry"); new XLA autotune
// or kernel files are compiles too. JAX stores only compiles slower than
// JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS whose entries are at least
// JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES, so with XLACACHE_REQUIRE_HIT
// on, exec sets both to 0 for the command: neither is part of JAX's key
// (jax/_src/cache_key.py), and every compile is then observed.
//
// JAX writes entries from its process 0 only, so a job's compiles are
// seen on that process's host. With XLACACHE_REQUIRE_HIT=fail the command
// still runs to its end and keeps its output: killing a training or
// evaluation job mid-step over a cache miss loses more than the miss
// costs. exec's own exit status is then RequireHitExitCode (when the
// command's was 0), with one error line naming every program compiled.

// RequireHitExitCode is exec's exit status when the command succeeded but
// XLACACHE_REQUIRE_HIT=fail and exec saw it compile.
const RequireHitExitCode = 1

// JAXActivity is what the command did in JAX's directory, as the host's
// leader saw it.
type JAXActivity struct {
	jaxcache.RunActivity
	// Runtime names the runtime the entries are for, as exec learned it
	// for the scoped fill (origin.go); empty when none of it is known.
	Runtime string `json:"runtime,omitempty"`
	// Rejected are the modules whose entries JAX read and XLA's loader
	// refused, so that JAX compiled them again (jaxstderr.go; watched
	// under XLACACHE_REQUIRE_HIT only). Loaded does not count them.
	Rejected []string `json:"rejected,omitempty"`
}

// Compiles names what the run compiled: the entries and XLA files it
// wrote, and the modules whose entries XLA rejected.
func (a JAXActivity) Compiles() []string {
	out := a.RunActivity.Compiles()
	for _, m := range a.Rejected {
		out = append(out, "JAX module "+m+" (its entry was read, refused by XLA's loader and compiled again)")
	}
	return out
}

// Summary is the report's line: "this run: JAX wrote N entries, loaded M
// (of K present at start)".
func (a JAXActivity) Summary() string {
	loaded := fmt.Sprint(a.Loaded)
	if !a.LoadsKnown() {
		loaded = fmt.Sprintf("an unknown number (filesystem access times: %s)", a.AtimeMode)
	}
	s := fmt.Sprintf("this run: JAX wrote %d entries, loaded %s (of %d present at start)", len(a.Written), loaded, a.Present)
	if a.Unobserved > 0 {
		s += fmt.Sprintf("; %d of them another user's, whose loads cannot be seen", a.Unobserved)
	}
	if len(a.Rejected) > 0 {
		s += fmt.Sprintf("; XLA's loader refused %d entries JAX read, which it compiled again", len(a.Rejected))
	}
	if len(a.XLAFiles) > 0 {
		s += fmt.Sprintf("; XLA wrote %d autotune or kernel cache files", len(a.XLAFiles))
	}
	return s
}

// WarmMiss reports whether a warm run (entries present) loaded none of
// them and compiled: a cache that never hits.
func (a JAXActivity) WarmMiss() bool {
	compiled := len(a.Written) > 0 || len(a.Rejected) > 0
	return a.Present > 0 && a.LoadsKnown() && a.Loaded == 0 && a.Unobserved == 0 && compiled
}

// watchesJAX reports whether this process watches JAX's directory: the
// host's leader, with the directory usable and JAX among the targets.
func (r *run) watchesJAX() bool {
	return r.root != nil && !r.plain && r.rep.Leader && (r.j.Target == xla.TargetJAX || r.j.Target == xla.TargetAll)
}

// beginJAX records JAX's directory before the command starts.
func (r *run) beginJAX(ctx context.Context) {
	if !r.watchesJAX() {
		return
	}
	s, err := jaxcache.BeginRun(ctx, r.opts.Dir, time.Now())
	if err != nil {
		r.warn(errJAXWatch, "recording JAX's entries failed, so its loads and compiles are not reported", err)
		return
	}
	r.jaxStart = s
}

// endJAX compares JAX's directory with what beginJAX recorded, reports it
// (one line, and a warning for a warm run that loaded nothing and
// compiled) and, under XLACACHE_REQUIRE_HIT, names each compile.
func (r *run) endJAX(ctx context.Context) {
	if r.jaxStart == nil {
		return
	}
	a, err := r.jaxStart.End(ctx)
	if err != nil {
		r.warn(errJAXWatch, "scanning JAX's entries failed, so its loads and compiles are not reported", err)
		return
	}
	act := &JAXActivity{RunActivity: a}
	if !r.rep.Runtime.IsZero() {
		act.Runtime = r.rep.Runtime.String()
	}
	if r.rejects != nil {
		r.rejects.flush()
		act.Rejected = r.rejects.Rejected()
		// Each refused entry was read, and counted as loaded.
		act.Loaded = max(0, act.Loaded-len(act.Rejected))
	}
	r.rep.JAX = act
	r.j.live.set(r.rep)
	r.log.Info("xlacache exec: "+act.Summary(), "written", len(a.Written), "loaded", act.Loaded, "present", a.Present,
		"never_loaded", a.NeverLoaded, "atime", a.AtimeMode)
	if len(act.Rejected) > 0 {
		r.log.Warn(fmt.Sprintf("xlacache exec: XLA's loader refused the cached entries of %d JAX modules, which JAX compiled again (jax-ml/jax#38445; the command's log says why): %s",
			len(act.Rejected), strings.Join(act.Rejected, ", ")))
	}
	if act.WarmMiss() {
		r.log.Warn(fmt.Sprintf("xlacache exec: a warm run loaded none of the %d JAX entries present and compiled %d: "+
			"JAX's loader may be rejecting them (look for \"Error reading persistent compilation cache entry\" in the command's log; "+
			"jax-ml/jax#38445), or its key changed (xlacache jax explain)", a.Present, len(a.Written)))
	}
	if r.opts.RequireHit == config.RequireHitOff {
		return
	}
	for _, c := range act.Compiles() {
		r.log.Warn("xlacache exec: XLACACHE_REQUIRE_HIT: compiled " + c + ": not in the cache before the run (a new program, or a key that changed: xlacache jax explain)")
	}
}

// requireHit fails the run when XLACACHE_REQUIRE_HIT=fail and the command,
// which succeeded, compiled: the exit status becomes RequireHitExitCode
// and one error line names the programs.
func (r *run) requireHit() {
	if r.opts.RequireHit != config.RequireHitFail || r.rep.JAX == nil || r.rep.ExitCode != 0 {
		return
	}
	c := r.rep.JAX.Compiles()
	if len(c) == 0 {
		return
	}
	r.rep.RequireHitFailed = c
	r.rep.ExitCode = RequireHitExitCode
	r.log.Error(fmt.Sprintf("xlacache exec: XLACACHE_REQUIRE_HIT=fail: the command compiled %d programs the cache did not hold: %s",
		len(c), strings.Join(c, "; ")))
}

// scanStderr returns the command's standard error w, read on its way
// through for JAX's rejected-load warnings (jaxstderr.go) when this
// process watches JAX's directory under XLACACHE_REQUIRE_HIT; otherwise w
// itself, so that the command's standard error stays the file it was.
func (r *run) scanStderr(w io.Writer) io.Writer {
	if r.jaxStart == nil || r.opts.RequireHit == config.RequireHitOff {
		return w
	}
	r.rejects = &rejectScanner{w: w}
	return r.rejects
}

// observeAllCompiles returns l with JAX told to store every compile
// (JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS and
// JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES 0) when XLACACHE_REQUIRE_HIT
// is on, so that exec sees each one.
func (r *run) observeAllCompiles(l xla.Launch) xla.Launch {
	if r.opts.RequireHit == config.RequireHitOff {
		return l
	}
	for i, v := range l.Vars {
		if (v.Name == xla.EnvJAXMinCompileTime || v.Name == xla.EnvJAXMinEntrySize) && v.Value != "0" {
			l.Vars[i].Value = "0"
			l.Vars[i].Comment = "XLACACHE_REQUIRE_HIT: every compile is stored, so that exec sees it (not part of JAX's key)"
		}
	}
	return l
}

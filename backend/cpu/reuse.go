package cpu

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
)

// A tuned cold compile used to compile each tuned kernel twice at -O3:
// once among its candidates (tuneUnit), to time them, and again, the
// winner alone, in a batch of final kernels (compileObjects), about 30%
// of the whole compile. The compile that builds the candidates' library
// now keeps the object the library is linked from (cc.BuildObjectShared),
// and the final library takes the winner's code from that object instead
// of compiling it again: a copy of the object with the
// winner's symbols renamed to the final kernel's (k_<hash>, <sym>_par,
// <sym>_parts) and the other candidates' symbols made local (cc.Rename),
// so that they are neither exported nor able to clash with another
// object's. The final library thus runs the very machine code that was
// timed, at the flags it was timed with (tuned kernels are -O3, as their
// candidates are); the other candidates' code rides along unused (a few
// KB per tuned kernel).
//
// The copy is a complete object of the final kernel, so the kernel tier
// stores it under the kernel's own key (objectKey) as a one-kernel batch
// (encodeBatch), exactly as a batch compiled from the final source would
// be: a later program sharing the kernel, or the same program with its
// executable gone, takes it from the tier like any other kernel object.
// The key stays that of the final source: the entry's code is that
// source's kernel compiled by the same compiler at the same level, only
// in a different translation unit (the candidates' rather than a batch
// of final kernels), which a batch entry already varies by.
//
// Only candidates compiled in this compile are reused; candidates taken
// from the kernel tier are shared libraries without an object, and their
// winners are compiled as before. Any failure (no objcopy, an object the
// rename cannot read) leaves the kernel to compileObjects, with one log
// line.

// candidateObject is a tuned kernel's candidate unit and its object as
// compiled in this compile.
type candidateObject struct {
	unit tuneUnit
	obj  cc.Object
}

// keepCandidates remembers k's candidate object for reuseCandidates.
func (pl *pipeline) keepCandidates(k *kernel, u tuneUnit, obj cc.Object) {
	pl.candMu.Lock()
	defer pl.candMu.Unlock()
	if pl.candObjs == nil {
		pl.candObjs = map[*kernel]candidateObject{}
	}
	pl.candObjs[k] = candidateObject{unit: u, obj: obj}
}

// reuseCandidates makes the final object of each kernel of ks (tuned in
// this compile, in configuration configs[i]) from its candidate object
// (see winnerObject), holds it for compileObjects (pl.held) and stores it
// in the kernel tier. autotune calls it before it stores the kernels'
// autotune records and releases their claims: another process waiting
// for a record then finds the final object in the kernel tier too,
// rather than compiling it. It adds how many final objects it made to
// pl.reused.
func (pl *pipeline) reuseCandidates(ctx context.Context, ks []*kernel, configs []Config) error {
	if pl.b.NoTune || pl.b.noReuse || len(pl.candObjs) == 0 {
		return nil
	}
	type job struct {
		k   *kernel
		src cc.Source
		co  candidateObject
		n   int // the winner's position in co.unit
		obj cc.Object
		err error
		dur time.Duration
	}
	var jobs []*job
	seen := map[string]bool{}
	for i, k := range ks {
		co, ok := pl.candObjs[k]
		if !ok || configs[i].Name == "" || configs[i].Name == routineConfig {
			continue // candidates not built here, left out by the budget, or no code
		}
		s, err := finalSource(k, configs[i], false)
		if err != nil {
			return err
		}
		if s.Opt != "" || seen[s.Name] {
			continue // tuned kernels are -O3, the level of their candidates
		}
		if _, held := pl.held[s.Name]; held {
			continue
		}
		n := -1
		for m, c := range co.unit.cands {
			if k.cands[c].String() == configs[i].String() {
				n = m
			}
		}
		if n < 0 {
			continue // a configuration not among those built (none should be)
		}
		seen[s.Name] = true
		jobs = append(jobs, &job{k: k, src: s, co: co, n: n})
	}
	if len(jobs) == 0 {
		return nil
	}
	// Each rename is an objcopy process of a few milliseconds; the jobs
	// setting bounds them like compiler processes.
	next := make(chan *job)
	var wg sync.WaitGroup
	for range min(pl.b.jobs(), len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				start := time.Now()
				j.obj, j.err = pl.winnerObject(ctx, j.co, j.n, j.src.Name)
				j.dur = time.Since(start)
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	tier := pl.env.Tier(subKernels)
	for _, j := range jobs {
		if j.err != nil {
			pl.warnOnce("candidate-object", "reusing a tuned kernel's candidate object failed; compiling the kernel", "kernel", j.k.desc, "err", j.err)
			continue
		}
		members := []string{j.src.Name}
		pl.hold(j.src.Name, heldObject{obj: j.obj, members: members})
		if err := tier.Put(ctx, pl.objectKey(j.src), encodeBatch(members, j.obj.Data), j.dur); err != nil {
			pl.log.Debug("storing a compiled kernel failed", "kernel", j.src.Name, "err", err) // the cache logs it once
		}
		pl.reused++
	}
	return nil
}

// winnerObject is the final object of the kernel named name, made from
// co's object: candidate n's global symbols (its entry point, and the
// parallel entry point and parts count of a parallel candidate) renamed
// to name's, every other candidate's made local.
func (pl *pipeline) winnerObject(ctx context.Context, co candidateObject, n int, name string) (cc.Object, error) {
	globals, err := cc.GlobalSymbols(co.obj.Data)
	if err != nil {
		return cc.Object{}, err
	}
	rename := map[string]string{}
	var local []string
	for _, g := range globals {
		for m, sym := range co.unit.syms {
			// sym + "_": the candidate's other entry points; a_<hash>_c1
			// is no prefix of a_<hash>_c10's suffixed names, since the
			// suffixes start with "_".
			if g != sym && !strings.HasPrefix(g, sym+"_") {
				continue
			}
			if m == n {
				rename[g] = name + g[len(sym):]
			} else {
				local = append(local, g)
			}
		}
	}
	if _, ok := rename[co.unit.syms[n]]; !ok {
		return cc.Object{}, fmt.Errorf("candidate object %s does not define %s", co.unit.src.Name, co.unit.syms[n])
	}
	return pl.cc.Rename(ctx, cc.Object{Name: name, Data: co.obj.Data}, rename, local)
}

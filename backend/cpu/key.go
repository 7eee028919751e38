package cpu

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/backend/cpu/internal/rt"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

// This file holds every part of every key the cpu backend contributes.
//
// The executable key (KeyParts; the core adds cache.KeyVersion and the
// module name, cache/key.go) is made of:
//   - program: the canonical program text (programKey); FastKeyParts,
//     the key of the cache's alias of a program text (cache/alias.go),
//     has the exact text in its place and the same other parts;
//   - options: the settings that change generated code (optionsKey);
//   - backend: formatVersion, codegenFingerprint, rt.Version (the
//     runtime routines, internal/rt) and the compiler
//     identity (cc.Compiler.Identity, internal/cc/cc.go: compiler path,
//     version, target, flags and the CPU model and features, since
//     kernels are built with -march=native);
//   - topology.
//
// The subcache keys are tuneKey (autotune tier), objectKey (final
// kernels, each entry its batch's object) and candidateKey (autotune
// candidate libraries), both in the kernel tier; they name kernels by their C source and the compiler
// identity (objectKey also by the optimization level, kernelOpt in
// batch.go), so they need no version of their own.
//
// Which knob to bump when:
//   - the C of an existing op changes through the Go code generator
//     (emit.go, the family files, ops.go), or the plan encoding or the
//     kernel ABI changes (plan.go, exec.go, thread.go): formatVersion;
//   - the StableHLO parser reads a text differently (package stablehlo):
//     formatVersion, since an alias of that text (keyed by its bytes,
//     not by what it parses to) would still name the old executable;
//   - a prelude changes (prelude.go, chlo.go, complexc.go, fft.go):
//     nothing, codegenFingerprint follows the text (list any new prelude
//     in it);
//   - a runtime routine changes (internal/rt): nothing, rt.Version
//     follows its C text (list any new file in it); a change to how a
//     plan calls one (runtime.go) is a code generator change:
//     formatVersion;
//   - a new op or option: nothing for the op (no cached program used
//     it); an option that changes generated code goes into optionsKey;
//   - the meaning of a key part or how keys are derived:
//     cache.KeyVersion (cache/key.go), for every backend;
//   - the on-disk entry framing around an executable: entry.Version
//     (internal/entry/entry.go), owned by the core.
// The executable key includes the compiler identity, so a new compiler
// or CPU needs no bump either.

// formatVersion changes whenever the plan encoding, the kernel ABI or the
// code generator changes in a way that makes old executables wrong.
// Version 2 added control steps (copy, jump, branch) for while, if and case;
// version 3 the libraries' allocation-failure counter (xk_alloc_failures),
// which the runtime requires; version 4 top_k's total order over NaNs and
// triangular_solve's f32/f64 algorithm (XLA's expander), which change the
// results of programs an older executable computed differently; version 5
// the plan's binary encoding (plancodec.go) in place of JSON.
const formatVersion = 5

// codegenFingerprint identifies the C the generated kernels are built
// from: the preludes every kernel or some kernels include. It is part of
// the executable key, so that a change to any of them (a more accurate
// complex log, say) can never leave an executable built from the old text
// in use, even where nobody remembered to bump formatVersion. Changes to
// the Go side of the code generator still need formatVersion.
// It is computed on first use, not at start-up: most processes that link
// the package never key a cpu executable.
var codegenFingerprint = sync.OnceValue(func() string {
	h := sha256.New()
	for _, s := range []string{prelude, chloPrelude, complexPrelude, fftPrelude} {
		fmt.Fprintf(h, "%d\n%s", len(s), s)
	}
	return hex.EncodeToString(h.Sum(nil)[:8])
})

// KeyParts implements cache.Backend: the canonical program, the options
// that change generated code, and the compiler/CPU identity (kernels are
// built with -march=native).
func (b *Backend) KeyParts(ctx context.Context, p cache.Program) ([]cache.KeyPart, error) {
	if b.threadsErr != nil {
		return nil, fmt.Errorf("cpu: %w", b.threadsErr)
	}
	m, err := b.parse(p)
	if err != nil {
		return nil, err
	}
	return b.keyParts(ctx, p, cache.KeyPart{Name: "program", Data: programKey(m, p.Text)})
}

// FastKeyParts implements cache.FastKeyer: KeyParts' parts with the
// program's exact text in place of its canonical form, without parsing
// it, so that a warm start by the same text skips the parse (the cache's
// alias, cache/alias.go).
func (b *Backend) FastKeyParts(ctx context.Context, p cache.Program) ([]cache.KeyPart, error) {
	if b.threadsErr != nil {
		return nil, fmt.Errorf("cpu: %w", b.threadsErr)
	}
	return b.keyParts(ctx, p, cache.KeyPart{Name: cache.ProgramTextPart, Data: p.Text})
}

// keyParts is the executable key's parts with program as the program's:
// the one list both KeyParts and FastKeyParts build, so that they can
// never disagree on the others.
func (b *Backend) keyParts(ctx context.Context, p cache.Program, program cache.KeyPart) ([]cache.KeyPart, error) {
	c, err := cc.Find(ctx)
	if err != nil {
		return nil, err
	}
	return []cache.KeyPart{
		program,
		{Name: "options", Data: []byte(b.optionsKey(p))},
		{Name: "backend", Data: []byte(fmt.Sprintf("cpu format=%d codegen=%s rt=%s\n%s", formatVersion, codegenFingerprint(), rt.Version, c.Identity()))},
		{Name: "topology", Data: []byte("host cpu x1")},
	}, nil
}

// optionsKey is the "options" key component: the backend settings that
// change the code (NoTune, BudgetTune, the thread bound the autotuner times on) and
// the program's own options.
func (b *Backend) optionsKey(p cache.Program) string {
	budget := ""
	if b.BudgetTune && !b.NoTune {
		// Only when set, so that the default's keys stay as they were.
		budget = "\ntune=budget"
	}
	return fmt.Sprintf("notune=%v%s\nthreads=%d\noptions=%s", b.NoTune, budget, b.threads(), p.Options)
}

// objectKey is the kernel-tier key of a final kernel: its source, the
// compiler and the optimization level it is compiled at (s.Opt). The entry holds the object of the batch the kernel was
// compiled in (batch.go, encodeBatch); the artifact part keeps it apart
// from the single-kernel objects earlier versions stored.
func (pl *pipeline) objectKey(s cc.Source) cache.Key {
	return cache.NewKey(s.Name, []cache.KeyPart{
		{Name: "source", Data: s.Code},
		{Name: "compiler", Data: []byte(pl.cc.Identity())},
		// The compiler's flags say -O3; a cheaper level replaces it
		// (kernelOpt), so the level is part of the key.
		{Name: "opt", Data: []byte(cmp.Or(s.Opt, "-O3"))},
		{Name: "artifact", Data: []byte("kernel batch object")},
	})
}

// programKey is the "program" key component: the canonical text, which
// leaves out locations and SSA names.
func programKey(m *stablehlo.Module, _ []byte) []byte {
	return stablehlo.Canonical(m)
}

// tuneKey is the autotune tier key of a kernel: its default-configuration
// source (which fixes ops, shapes and layout), the candidate list, and
// where the timings are valid (CPU model and features, compiler, and the
// number of threads parallel candidates were timed on); a candidate list
// with the runtime routine names its version.
func tuneKey(c *cc.Compiler, k *kernel, def string, threads int) cache.Key {
	names := make([]string, len(k.cands))
	for i, cfg := range k.cands {
		names[i] = cfg.String()
		if cfg.Name == routineConfig {
			// Its timing is the routine's, which may change.
			names[i] += " " + rt.Version
		}
	}
	return cache.NewKey("tune_"+k.kind, []cache.KeyPart{
		{Name: "kernel", Data: []byte(def)},
		{Name: "candidates", Data: []byte(strings.Join(names, "\n"))},
		{Name: "cpu", Data: []byte(c.CPU.Key())},
		{Name: "compiler", Data: []byte(c.Identity())},
		{Name: "threads", Data: []byte(fmt.Sprintf("threads=%d", threads))},
	})
}

// candidateKey is the kernel-tier key of an autotune candidate library
// (see tuneUnit): its source, named by a hash of its content, and the
// compiler that builds it.
func candidateKey(c *cc.Compiler, s cc.Source) cache.Key {
	return cache.NewKey(s.Name, []cache.KeyPart{
		{Name: "source", Data: s.Code},
		{Name: "compiler", Data: []byte(c.Identity())},
		{Name: "artifact", Data: []byte("autotune candidates, shared object")},
	})
}

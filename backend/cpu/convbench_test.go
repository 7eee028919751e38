package cpu

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
)

// convRounds is how many interleaved rounds BenchmarkConvCandidates
// times: each candidate's fastest run is its time (see bestOfEach), and a
// few percent between the register-blocked candidates needs many rounds
// to resolve on a shared machine.
const convRounds = 9

// BenchmarkConvCandidates times every candidate of resnetblock's
// convolution (convBenchProgram, 7.4 GFLOP) on one thread, interleaved
// in one process (so load on a shared machine hits them alike),
// and logs each one's GFLOP/s beside the core's estimated FMA peak (the
// direct product's 2·M·N·9·K operations over the time, so a Winograd
// candidate, which does fewer, can exceed the peak). It
// is how a change to genConvGemm is measured; run it with
// -benchtime=1x -v. XLACACHE_CONV_DUMP=dir writes each candidate's C
// there to read or to compile to assembly; XLACACHE_CONV_PROGRAM=file
// times the first kernel of that program instead (a convolution's).
func BenchmarkConvCandidates(b *testing.B) {
	comp, err := cc.Find(context.Background())
	if err != nil {
		b.Skip(err)
	}
	be := New()
	be.Threads = 1
	pl := &pipeline{b: be, cc: comp, log: slog.Default()}
	src := convBenchProgram
	if p := os.Getenv("XLACACHE_CONV_PROGRAM"); p != "" {
		text, err := os.ReadFile(p)
		if err != nil {
			b.Fatal(err)
		}
		src = string(text)
	}
	l := lowerText(b, src, "conv.mlir")
	k, err := newKernel(l, l.roots[0], 1)
	if err != nil {
		b.Fatal(err)
	}
	if k.kind != "convgemm" {
		b.Fatalf("kernel kind %q, want convgemm", k.kind)
	}
	all := make([]int, len(k.cands))
	for c := range all {
		all[c] = c
	}
	if dir := os.Getenv("XLACACHE_CONV_DUMP"); dir != "" {
		for _, c := range k.cands {
			body, err := k.body(c, "kernel")
			if err != nil {
				b.Fatal(err)
			}
			if err := os.WriteFile(dir+"/"+c.String()+".c", []byte(prelude+body), 0o644); err != nil {
				b.Fatal(err)
			}
		}
	}
	u, lib, h, done := openCandidates(b, pl, k, all)
	defer done()
	fns := make([]*kernelFn, len(u.syms))
	var ref [][]byte
	for n, sym := range u.syms {
		fn, err := resolveKernel(lib, sym)
		if err != nil {
			b.Fatal(err)
		}
		h.clearOutputs()
		fn.run(h.ptrs, 1)
		if n == 0 {
			ref = h.outputs()
		} else if !closeEnough(k, ref, h.outputs()) {
			b.Fatalf("%s disagrees with the default %s", k.cands[n], k.cands[0])
		}
		fns[n] = &fn
	}
	m, n, taps, kI := convGemmDims(l.roots[0])
	flops := 2 * float64(m*n*taps*kI)
	cpu := cc.DetectCPU()
	ghz := cpu.MHz / 1000
	if ghz <= 0 {
		ghz = 3
	}
	runs := make([]func(), len(fns))
	for c, fn := range fns {
		runs[c] = func() { fn.run(h.ptrs, 1) }
	}
	for i := 0; i < b.N; i++ {
		for c, t := range bestOfEach(convRounds, runs...) {
			b.Logf("%-40s %8.2f ms %6.1f GFLOP/s", k.cands[c], float64(t.Microseconds())/1000, flops/t.Seconds()/1e9)
		}
	}
	b.Logf("single-core f32 FMA peak estimate %.0f GFLOP/s at %.2f GHz (%s)", cpu.PeakGFLOPS(ghz), ghz, cpu.Summary())
}

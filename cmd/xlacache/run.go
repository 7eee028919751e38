package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/backend/cpu"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/examples/mlp"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/internal/progress"
	"github.com/xlacache/xlacache/internal/sysmem"
	"github.com/xlacache/xlacache/npy"
	"github.com/xlacache/xlacache/stablehlo"
)

// runCmd is `xlacache run`: compile a StableHLO program through the cache
// and run it once, reporting what the cache did.
var runCmd = &cobra.Command{
	Use:   "run PROGRAM.mlir",
	Short: "Compile a StableHLO program through the cache and run it",
	Long: `Compile PROGRAM.mlir with the cpu backend through the cache (or evaluate it
with the reference interpreter, --backend interp) and run it once.

Inputs: --inputs random (default: deterministic random values, see --seed),
an .npz archive (arrays matched to arguments by name, else by order), a
comma-separated list of .npy files in argument order, or a directory holding
one <name>.npy (or arg<N>.npy) per argument.
--output FILE.npz writes the results as out0, out1, ...

Prints the cache key, which tiers hit or missed, the time of every phase
(parse, fuse, codegen, autotune, compile, link, load, run), and with
-v (--verbose, global) each kernel and its chosen configuration, and the
cache's info-level logs (XLACACHE_EXPLAIN_MISSES=1 explains each miss).`,
	Args: cli.UsageArgs(cobra.ExactArgs(1)),
	RunE: runRun,
}

func init() {
	f := runCmd.Flags()
	f.String("inputs", "random", "argument values: random, FILE.npz, A.npy,B.npy,... (argument order), or a directory of <name>.npy files")
	f.String("output", "", "write the results to this .npz file")
	f.String("backend", "cpu", "cpu (compile through the cache) or interp (reference interpreter)")
	f.Uint64("seed", 1, "seed for --inputs random")
	f.String("report-json", "", "also write the cache report as JSON to this file (used by demo)")
	f.MarkHidden("report-json")
	rootCmd.AddCommand(runCmd)
}

func runRun(cmd *cobra.Command, args []string) error {
	ctx := cmd.Context()
	out := cmd.OutOrStdout()
	path := args[0]
	inputs, _ := cmd.Flags().GetString("inputs")
	output, _ := cmd.Flags().GetString("output")
	backend, _ := cmd.Flags().GetString("backend")
	verbose, _ := cmd.Flags().GetCount("verbose")
	seed, _ := cmd.Flags().GetUint64("seed")
	reportJSON, _ := cmd.Flags().GetString("report-json")
	if backend != "cpu" && backend != "interp" {
		return cli.Usagef("--backend %q: want cpu or interp", backend)
	}
	src, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading program: %w", err)
	}
	start := time.Now()
	m, err := stablehlo.Parse(src, path) // Parse verifies
	if err != nil {
		return err
	}
	parseTime := time.Since(start)
	fn := m.Main()
	if fn == nil {
		return fmt.Errorf("%s: no main function", path)
	}
	// Before any tensor exists: Go cannot recover from a failed
	// allocation, so a program too big for this machine must be refused
	// while refusing is still possible.
	restore, err := checkMemory(m, fn, path, backend, output != "")
	if err != nil {
		return err
	}
	defer restore()
	argv, err := npy.LoadInputs(inputs, fn, seed)
	if err != nil {
		return fmt.Errorf("--inputs: %w", err)
	}
	name := stablehlo.ProgramName(m, path)
	fmt.Fprintf(out, "program   %s (module %s, backend %s)\n", path, name, backend)

	var results []*stablehlo.Tensor
	if backend == "interp" {
		fmt.Fprintf(out, "phase     parse %s\n", cli.FormatDuration(parseTime))
		start = time.Now()
		results, err = stablehlo.EvalContext(ctx, m, "", argv)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "phase     run %s\n", cli.FormatDuration(time.Since(start)))
	} else {
		opts, err := loadOptions(cmd)
		if err != nil {
			return err
		}
		c, err := xlacache.Open(ctx, opts, slog.Default()) // -v: info
		if err != nil {
			return err
		}
		defer c.Close()
		bar := progress.NewStages(cmd.ErrOrStderr())
		ce, rep, err := cpu.CompileParsed(ctx, c, cache.Program{Name: name, Text: src}, m, bar.Update) // parsed and verified above: once
		bar.Finish()
		if errors.Is(err, cache.ErrHitRequired) {
			// Exit status 3 (cli.ExitMiss), naming the file too.
			return fmt.Errorf("%s: %w", path, err)
		}
		if err != nil {
			return err
		}
		defer ce.Close()
		start = time.Now()
		results, err = ce.Run(ctx, argv)
		if err != nil {
			return err
		}
		runTime := time.Since(start)
		printReport(out, opts.Dir, c.NoKeyReason(opts.Dir), rep, runTime)
		if reportJSON != "" {
			if err := mlp.WriteRunReport(reportJSON, rep, runTime); err != nil {
				return err
			}
		}
		if verbose > 0 {
			for _, k := range ce.Kernels() {
				how := "default"
				switch {
				case rep.Hit:
					fmt.Fprintf(out, "kernel    %s  %-40s %s (from the stored executable)\n", k.Name, k.Desc, k.Config)
					continue
				case k.TuneHit:
					how = "tuned (autotune tier hit)"
				case k.Tuned:
					how = "tuned now"
				}
				obj := "compiled"
				switch {
				case k.Runtime():
					obj = "built into xlacache"
				case k.Copy():
					obj = "no code"
				case k.ObjectHit:
					obj = "kernel tier hit"
				}
				fmt.Fprintf(out, "kernel    %s  %-40s %-45s %s, %s\n", k.Name, k.Desc, k.Config, how, obj)
			}
		}
	}
	for i, r := range results {
		fmt.Fprintf(out, "output %d  %s %s\n", i, r.Type, r.Summary())
	}
	if output != "" {
		if err := npy.WriteTensorsNPZ(output, results); err != nil {
			return err
		}
		fmt.Fprintf(out, "wrote     %s\n", output)
	}
	return nil
}

// availableMemory reports how much more memory the process can allocate;
// tests replace it to describe a small machine without needing one.
var availableMemory = sysmem.Available

// checkMemory fails when fn of m needs more memory than is available
// (stablehlo.Module.Fit), counting the cpu executable's buffers for the
// inputs and --output's buffer when they apply.
func checkMemory(m *stablehlo.Module, fn *stablehlo.Func, path, backend string, writeOutput bool) (restore func(), err error) {
	return m.Fit(fn.Name, path, availableMemory, func(need stablehlo.Need) (extras []stablehlo.Extra) {
		if backend == "cpu" {
			// The cpu executable's arena has a slot for every argument
			// besides the caller's tensor.
			extras = append(extras, stablehlo.Extra{What: "cpu buffers for the inputs", Bytes: need.Inputs})
		}
		if writeOutput {
			// The .npz is assembled in a buffer that may grow to twice
			// the results before it is written.
			extras = append(extras, stablehlo.Extra{What: "--output buffer", Bytes: 2 * min(need.Outputs, math.MaxInt64/2)})
		}
		return extras
	})
}

func printReport(w io.Writer, dir, noKey string, rep *cache.Report, runTime time.Duration) {
	if rep == nil {
		return
	}
	if rep.Key != "" {
		fmt.Fprintf(w, "key       %s\n", rep.Key)
	} else {
		fmt.Fprintf(w, "key       (%s)\n", noKey)
	}
	if dir != "" {
		fmt.Fprintf(w, "cache     %s\n", dir)
	}
	switch {
	case rep.Hit:
		fmt.Fprintf(w, "executable hit (%s): loaded without compiling\n", rep.Source)
	case rep.Stored:
		fmt.Fprintf(w, "executable miss: compiled in %s, stored\n", cli.FormatDuration(rep.CompileTime))
	case rep.NotStored != "":
		fmt.Fprintf(w, "executable miss: compiled in %s, not stored: %s\n", cli.FormatDuration(rep.CompileTime), rep.NotStored)
	default:
		fmt.Fprintf(w, "executable miss: compiled in %s, not stored\n", cli.FormatDuration(rep.CompileTime))
	}
	if rep.Explain != "" {
		fmt.Fprintf(w, "explain   %s\n", rep.Explain)
	}
	for _, n := range slices.Sorted(maps.Keys(rep.Tiers)) {
		t := rep.Tiers[n]
		fmt.Fprintf(w, "tier      %-14s %d hit, %d miss\n", n, t.Hits, t.Misses)
	}
	var parts []string
	for _, p := range rep.PhaseTotals() {
		parts = append(parts, p.Name+" "+cli.FormatDuration(p.Duration))
	}
	parts = append(parts, "run "+cli.FormatDuration(runTime))
	fmt.Fprintf(w, "phases    %s\n", strings.Join(parts, ", "))
}

// cpuConformanceRunner returns the runner `conformance --backend cpu` uses:
// the cpu backend compiling through the cache configured for cmd, so that
// reruns reuse tuned and compiled kernels, instead of the cache-less runner
// the cpu package registers with stablehlo.
func cpuConformanceRunner(cmd *cobra.Command) (stablehlo.RunFunc, func() error, error) {
	opts, err := loadOptions(cmd)
	if err != nil {
		return nil, nil, err
	}
	c, err := xlacache.Open(cmd.Context(), opts, slog.Default())
	if err != nil {
		return nil, nil, err
	}
	return cpu.ConformanceRunner(c), c.Close, nil
}

// The cpu backend computes key parts for `explain --backend cpu`.
func init() { explainBackends["cpu"] = func() cache.Backend { return cpu.New() } }

package main

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/stablehlo"
)

// conformanceCmd runs a directory of StableHLO test programs (such as the
// JAX-generated stablehlo testdata) through a backend.
var conformanceCmd = &cobra.Command{
	Use:   "conformance DIR",
	Short: "Run every .mlir StableHLO test program in DIR through a backend",
	Long: `Run every .mlir file in DIR (StableHLO programs whose main function checks
its own results with check.expect_eq / expect_close / expect_almost_eq custom
calls) through the chosen backend. Prints one line per file (pass, fail with
the first mismatch, unsupported with the reason) and a summary line
"N passed, N failed" (plus ", N skipped"). Exits non-zero when any file fails.`,
	Args: cli.UsageArgs(cobra.ExactArgs(1)),
	RunE: func(cmd *cobra.Command, args []string) error {
		// Arguments are valid by now; errors below are about the run,
		// where repeating the usage text only hides the message.
		cmd.SilenceUsage = true
		backend, err := cmd.Flags().GetString("backend")
		if err != nil {
			return err
		}
		run, names := stablehlo.Runner(backend)
		if run == nil {
			return cli.Usagef("--backend %q: unknown backend (available: %s)", backend, strings.Join(names, ", "))
		}
		if backend == "cpu" {
			// Through the configured cache, so reruns reuse tuned and
			// compiled kernels like any other compile.
			cpuRun, closeCache, err := cpuConformanceRunner(cmd)
			if err != nil {
				return err
			}
			defer closeCache()
			run = cpuRun
		}
		_, failed, _, err := stablehlo.RunConformance(cmd.Context(), args[0], run, cmd.OutOrStdout())
		if err != nil {
			return err
		}
		if failed > 0 {
			return fmt.Errorf("%d conformance program(s) failed", failed)
		}
		return nil
	},
}

func init() {
	conformanceCmd.Flags().String("backend", "interp", "backend to run the programs on: interp (reference interpreter) or cpu")
	rootCmd.AddCommand(conformanceCmd)
}

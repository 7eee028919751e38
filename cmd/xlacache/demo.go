package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache/examples/mlp"
	"github.com/xlacache/xlacache/internal/cli"
)

// demoCmd is the README's main command: it runs the MLP example twice, each
// time in a new process, against a fresh cache directory. The first run is
// honestly cold (the directory is new, so every tier misses: it compiles
// every kernel and stores the executable; its products are big enough to
// run on the gemm routine built into xlacache, so nothing is autotuned);
// the second is a warm start that loads the stored executable without
// compiling.
var demoCmd = &cobra.Command{
	Use:   "demo",
	Short: "Run the MLP example cold, then warm in a new process, and compare",
	Long: `Run examples/mlp (batch 64, 784→512→512→10, tanh, softmax) through the cpu
backend twice, each in a new xlacache process, with a fresh cache directory
created under the cache directory (XLACACHE_DIR, default
<user cache dir>/xlacache) and removed afterwards unless --keep is given.
The first process compiles cold (C compilation and linking; its matrix
products run on the gemm built into xlacache, so none is autotuned); the
second loads the executable from the cache. Both reports are shown, with
the wall-clock time of each process and the ratio.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runDemo,
}

func init() {
	demoCmd.Flags().Bool("keep", false, "keep the demo cache directory")
	rootCmd.AddCommand(demoCmd)
}

func runDemo(cmd *cobra.Command, _ []string) error {
	keep, _ := cmd.Flags().GetBool("keep")
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("demo: finding this program to re-run it: %w", err)
	}
	return mlp.Demo(cmd.Context(), mlp.DemoOptions{Root: opts.Dir, Keep: keep, Self: self, Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr()})
}

package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/cli"
)

var clearCmd = &cobra.Command{
	Use:   "clear",
	Short: "Remove every tier, XLA's subcaches and xlacache's state from the directory",
	Long: `Remove everything xlacache keeps in the cache directory: executables/, every
backend tier (<backend>/autotune, <backend>/kernels, <backend>/aliases), XLA's
xla_gpu_per_fusion_autotune_cache_dir and xla_gpu_kernel_cache_file, the
quarantine, and the state and lock directories. Files xlacache does not know
are left alone, so a mistyped --dir cannot wipe an unrelated directory.

Exit code 1 if something could not be removed.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		opts, err := loadExistingDir(cmd)
		if err != nil {
			return err
		}
		n, err := cache.Clear(cmd.Context(), opts.Dir)
		fmt.Fprintf(cmd.OutOrStdout(), "%s: removed %d item(s)\n", opts.Dir, n)
		return err
	},
}

func init() { rootCmd.AddCommand(clearCmd) }

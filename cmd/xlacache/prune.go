package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/jaxcache"
)

var pruneCmd = &cobra.Command{
	Use:   "prune",
	Short: "Remove least-recently-used files until the cache fits --max-size",
	Long: `Remove least-recently-used files (entries of every tier, XLA's subcache
files, quarantined files) until the directory holds at most --max-size bytes
(default: XLACACHE_MAX_SIZE), and remove temporary files left by writers that
died mid-write. Sizes take units: 500MB, 10GiB. --dry-run only reports.

When JAX entries share the directory, the bound covers the whole of it:
xlacache's files (tiers, XLA's subcaches, quarantine) and JAX's entries
with their atime files, XLA's subcaches counted once. Files are evicted
least recently used first across both: xlacache's by modification time
(refreshed by hits), JAX's by their atime files. JAX's part is pruned under
JAX's .lockfile and skips files being written or modified in the last 5
minutes; if that keeps the total over the bound, more of xlacache's oldest
files go.

Exit code 1 on failure (for example when another process is trimming), 2
when no size is given.`,
	Args: usageArgs(cobra.NoArgs),
	RunE: runPrune,
}

func init() {
	pruneCmd.Flags().String("max-size", "", "bound in bytes or with a unit (500MB, 10GiB); default XLACACHE_MAX_SIZE")
	pruneCmd.Flags().Bool("dry-run", false, "report what would be removed without removing it")
	rootCmd.AddCommand(pruneCmd)
}

func runPrune(cmd *cobra.Command, _ []string) error {
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	maxSize := opts.MaxSize
	if s, _ := cmd.Flags().GetString("max-size"); s != "" {
		maxSize, err = config.ParseSize(s)
		if err != nil {
			return usagef("--max-size: %v", err)
		}
	} else if maxSize <= 0 {
		return usagef("prune needs --max-size (or XLACACHE_MAX_SIZE)")
	}
	dryRun, _ := cmd.Flags().GetBool("dry-run")
	if err := existingDir(opts.Dir); err != nil {
		return err
	}
	ctx := cmd.Context()
	lay, err := jaxcache.Inspect(ctx, opts.Dir)
	if err != nil {
		return err
	}
	if !lay.Own {
		// JAX's entries and XLA's subcaches alone: xlacache has nothing
		// here, so nothing else counts against the bound.
		_, err := jaxPrune(ctx, cmd.OutOrStdout(), opts.Dir, jaxcache.PruneOptions{MaxSize: maxSize, DryRun: dryRun})
		return err
	}
	c, _, err := openAdmin(cmd, true)
	if err != nil {
		return err
	}
	defer c.Close()
	if lay.JAX {
		return pruneShared(ctx, cmd.OutOrStdout(), c, opts.Dir, maxSize, dryRun)
	}
	res, err := c.Prune(ctx, maxSize, dryRun)
	if err != nil {
		return err
	}
	verb := "removed"
	if dryRun {
		verb = "would remove"
	}
	fmt.Fprintf(cmd.OutOrStdout(), "%s: %d files, %s; %s %d files (%s) and %d stale temporary files; %s left (max %s)\n",
		opts.Dir, res.Files, fmtBytes(res.Bytes), verb, res.Removed, fmtBytes(res.RemovedBytes), res.StaleTemps,
		fmtBytes(res.Bytes-res.RemovedBytes), fmtBytes(maxSize))
	return nil
}

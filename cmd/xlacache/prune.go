package main

import (
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/retention"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/shareddir"
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
files go. XLA's own files (its kernel cache file, autotune results and their
temporary files) get the same protections wherever they are: kept while
modified in the last 5 minutes or open for writing by a process on this
host, and looked at again just before removal; temporary files XLA's
crashed writers left go once older than that.

With --shared, the bucket (XLACACHE_SHARED_URL) is pruned instead of the
directory: xlacache's entries ("executables/<key>", "<backend>/<sub>/<key>")
not used for --older-than (30d, 12h) go, then least recently used ones
until the rest fit --max-size (which then has no default; entries published
or used within the last hour never go for size). An entry's last
use is the later of its upload and its usage marker ("used/<object>"),
which writers refresh at most once a day when they hit it. Nothing else in
the bucket is touched (XLA's mirrored files, leases) but exec's packs
("hostfill/v1/"), which --older-than removes by publication age; see
docs/retention.md for a bucket lifecycle rule to pair with it.

Exit code 1 on failure (for example when another process is trimming), 2
when no size is given.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runPrune,
}

func init() {
	pruneCmd.Flags().String("max-size", "", "bound in bytes or with a unit (500MB, 10GiB); default XLACACHE_MAX_SIZE")
	pruneCmd.Flags().Bool("dry-run", false, "report what would be removed without removing it")
	pruneCmd.Flags().Bool("shared", false, "prune the shared tier's bucket (XLACACHE_SHARED_URL) instead of the directory")
	pruneCmd.Flags().String("older-than", "", "with --shared: remove entries not used for this long (30d, 36h)")
	rootCmd.AddCommand(pruneCmd)
}

func runPrune(cmd *cobra.Command, _ []string) error {
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	if shared, _ := cmd.Flags().GetBool("shared"); shared {
		return runPruneShared(cmd, opts)
	}
	if s, _ := cmd.Flags().GetString("older-than"); s != "" {
		return cli.Usagef("--older-than applies to the bucket: use it with --shared")
	}
	maxSize := opts.MaxSize
	if s, _ := cmd.Flags().GetString("max-size"); s != "" {
		binarySizes = config.IsBinarySize(s)
		maxSize, err = config.ParseSize(s)
		if err != nil {
			return cli.Usagef("--max-size: %v", err)
		}
	} else if maxSize <= 0 {
		return cli.Usagef("prune needs --max-size (or XLACACHE_MAX_SIZE)")
	}
	dryRun, _ := cmd.Flags().GetBool("dry-run")
	if err := cli.ExistingDir(opts.Dir); err != nil {
		return err
	}
	ctx := cmd.Context()
	lay, err := shareddir.Inspect(ctx, opts.Dir)
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
		fmtBytes(res.Left()), fmtBytes(maxSize))
	return nil
}

// runPruneShared is `prune --shared`: bucket retention (package
// retention).
func runPruneShared(cmd *cobra.Command, opts config.Options) error {
	var ro retention.Options
	if s, _ := cmd.Flags().GetString("older-than"); s != "" {
		d, err := config.ParseAge(s)
		if err != nil {
			return cli.Usagef("--older-than: %v", err)
		}
		ro.OlderThan = d
	}
	if s, _ := cmd.Flags().GetString("max-size"); s != "" {
		binarySizes = config.IsBinarySize(s)
		n, err := config.ParseSize(s)
		if err != nil || n <= 0 {
			return cli.Usagef("--max-size: want a positive size (500MB, 10GiB): %q", s)
		}
		ro.MaxSize = n
	}
	if ro.OlderThan <= 0 && ro.MaxSize <= 0 {
		return cli.Usagef("prune --shared needs --older-than, --max-size or both (XLACACHE_MAX_SIZE bounds the local directory, not the bucket)")
	}
	if opts.SharedURL == "" {
		return cli.Usagef("prune --shared: no shared tier (set XLACACHE_SHARED_URL)")
	}
	ro.DryRun, _ = cmd.Flags().GetBool("dry-run")
	ro.Logger = slog.Default()
	store, err := xlacache.OpenShared(opts.SharedURL, ro.Logger)
	if err != nil {
		return fmt.Errorf("shared tier: %w", err)
	}
	defer store.Close()
	res, err := retention.Prune(cmd.Context(), store, ro)
	if err != nil {
		return err
	}
	writeRetention(cmd.OutOrStdout(), opts.SharedURL, res, ro)
	if ro.OlderThan > 0 {
		// exec's packs (hostfill/v1/): by publication age (docs/retention.md).
		pr, err := hostfill.PrunePacks(cmd.Context(), store, hostfill.PruneOptions{OlderThan: ro.OlderThan, DryRun: ro.DryRun, Logger: ro.Logger})
		if err != nil {
			return err
		}
		writePackRetention(cmd.OutOrStdout(), pr, ro)
	}
	return nil
}

// writePackRetention prints what pruning exec's packs did.
func writePackRetention(w io.Writer, r hostfill.PruneResult, o retention.Options) {
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	fmt.Fprintf(w, "%s: %d packs, %s; %s %d packs published over %s ago (%s) and %d halves of packs\n",
		hostfill.Prefix, r.Packs, fmtBytes(r.Bytes), verb, len(r.Removed), fmtAge(o.OlderThan), fmtBytes(r.RemovedBytes), r.Orphans)
	for _, k := range r.Kept {
		fmt.Fprintf(w, "  kept %s: %s\n", k.Name, k.Reason)
	}
}

// writeRetention prints what a bucket prune did.
func writeRetention(w io.Writer, url string, r retention.Result, o retention.Options) {
	verb := "removed"
	if o.DryRun {
		verb = "would remove"
	}
	var rules []string
	if o.OlderThan > 0 {
		rules = append(rules, "not used for "+fmtAge(o.OlderThan))
	}
	if o.MaxSize > 0 {
		rules = append(rules, "max "+fmtBytes(o.MaxSize))
	}
	fmt.Fprintf(w, "%s: %d entries, %s; %s %d entries (%s) and %d usage markers; %s left (%s)\n",
		url, r.Objects, fmtBytes(r.Bytes), verb, len(r.Removed), fmtBytes(r.RemovedBytes), r.Markers, fmtBytes(r.After), strings.Join(rules, ", "))
	for _, k := range r.Kept {
		fmt.Fprintf(w, "  kept %s: %s\n", k.Name, k.Reason)
	}
	if r.Short {
		fmt.Fprintf(w, "  over the size bound: the rest was published or used within the last %v, which the size rule never removes\n", retention.SizeGrace)
	}
}

// fmtAge prints an age in days when it is whole days.
func fmtAge(d time.Duration) string {
	if d%(24*time.Hour) == 0 {
		return strconv.FormatInt(int64(d/(24*time.Hour)), 10) + "d"
	}
	return d.String()
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/metrics"
	"github.com/xlacache/xlacache/xla/shareddir"
)

var statsCmd = &cobra.Command{
	Use:   "stats",
	Short: "Show entries and bytes per tier, hits, misses and compile time saved",
	Long: `Show what the cache directory holds (files and bytes per tier, XLA's
subcaches included) and the cumulative counters that writer processes
persisted: hits, misses, bytes read and written, compile time saved, errors
by kind. Reader processes never write, so their lookups are not counted here.

When JAX entries share the directory (xlacache env points JAX there), a
JAX section follows, and the directory total counts XLA's subcaches once.

With --json, print one JSON object (--format json is an alias). With --format
prometheus, print the persisted counters and the directory's contents in
the Prometheus text exposition format (xlacache_hits_total{tier,backend,
role="writer"}, ..., xlacache_stored_bytes{area}; see docs/metrics.md),
for example for the node exporter's textfile collector. Processes report
their own counters, readers included, through XLACACHE_METRICS_FILE.

Exit code 1 if the directory cannot be read.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runStats,
}

func init() {
	statsCmd.Flags().String("format", "text", "output format: text, json or prometheus")
	rootCmd.AddCommand(statsCmd)
}

// statsFormat returns the output format --format and --json ask for.
func statsFormat(cmd *cobra.Command) (string, error) {
	f, _ := cmd.Flags().GetString("format")
	switch f {
	case "text", "json", "prometheus":
	default:
		return "", cli.Usagef("--format %q: want text, json or prometheus", f)
	}
	if jsonOutput(cmd) {
		if cmd.Flags().Changed("format") && f != "json" {
			return "", cli.Usagef("--json and --format %s disagree", f)
		}
		return "json", nil
	}
	return f, nil
}

func runStats(cmd *cobra.Command, _ []string) error {
	format, err := statsFormat(cmd)
	if err != nil {
		return err
	}
	opts, lay, err := inspectDir(cmd)
	if err != nil {
		return err
	}
	if format == "prometheus" {
		return metrics.WriteDirStats(cmd.Context(), cmd.OutOrStdout(), opts.Dir, opts.MaxSize)
	}
	if !lay.Own {
		if format == "json" {
			return cli.Usagef("--format json is not supported for a JAX-only cache directory (%s)", opts.Dir)
		}
		return jaxOnly(cmd, opts.Dir, jaxStats)
	}
	r, jd, err := shareddir.ReadStats(cmd.Context(), opts.Dir, opts.MaxSize, lay.JAX)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if format == "json" {
		return writeJSON(out, r)
	}
	if err := writeStatsText(out, r); err != nil {
		return err
	}
	if jd == nil {
		return nil
	}
	fmt.Fprintln(out)
	if err := writeJAXStats(out, jd); err != nil {
		return err
	}
	if err := writeJAXRuntimeLoads(out, jd, jaxLoadsByRuntime(cmd.Context(), opts.Dir, jd)); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "\ndirectory total %s: xlacache %s and JAX entries %s (XLA subcaches counted once, as xlacache's)\n",
		fmtBytes(r.Total), fmtBytes(r.Bytes), fmtBytes(r.Total-r.Bytes))
	return err
}

func writeStatsText(w io.Writer, r shareddir.Stats) error {
	bound := "unbounded"
	if r.MaxSize > 0 {
		bound = fmtBytes(r.MaxSize)
	}
	fmt.Fprintf(w, "cache %s: %d files, %s (max size %s)\n\n", r.Dir, r.Files, fmtBytes(r.Bytes), bound)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tENTRIES\tBYTES\tHITS\tMISSES")
	names := slices.AppendSeq(slices.Collect(maps.Keys(r.Areas)), maps.Keys(r.Counters.Tiers))
	slices.Sort(names)
	for _, n := range slices.Compact(names) {
		a, c := r.Areas[n], r.Counters.Tiers[n]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\n", n, a.Entries, fmtBytes(a.Bytes), c.Hits, c.Misses)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := r.Counters
	fmt.Fprintf(w, "\nhits %d (shared %d), misses %d, read %s, written %s (uploaded %s), compile time saved %s, spent %s in %d compiles\n",
		c.Hits, c.SharedHits, c.Misses, fmtBytes(c.BytesRead), fmtBytes(c.BytesWritten), fmtBytes(c.SharedBytesWritten), c.CompileTimeSaved.Round(time.Millisecond),
		c.CompileTime.Round(time.Millisecond), c.Compiles)
	if len(c.Errors) > 0 {
		fmt.Fprint(w, "errors:")
		for _, k := range slices.Sorted(maps.Keys(c.Errors)) {
			fmt.Fprintf(w, " %s=%d", k, c.Errors[k])
		}
		fmt.Fprintln(w)
	}
	return nil
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// binarySizes is whether the user wrote sizes in binary units (loadOptions
// and prune's --max-size set it): fmtBytes then prints binary units too.
var binarySizes bool

// fmtBytes formats a byte count as every size the CLI prints: in the unit
// family the user wrote sizes in, decimal by default (config.FormatSize).
func fmtBytes(n int64) string { return config.FormatSize(n, binarySizes) }

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/jaxcache"
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

With --json, print one JSON object. Exit code 1 if the directory cannot be
read.`,
	Args: usageArgs(cobra.NoArgs),
	RunE: runStats,
}

func init() { rootCmd.AddCommand(statsCmd) }

// statsReport is the --json form of `xlacache stats`.
type statsReport struct {
	Dir     string
	MaxSize int64
	Files   int64
	Bytes   int64
	Areas   map[string]cache.TierStats
	// Counters are the persisted cumulative counters.
	Counters cache.Stats
	// JAX sums the JAX entries sharing the directory (nil when none); its
	// Subcaches are the same files as the XLA areas above.
	JAX *jaxcache.Stats `json:",omitempty"`
	// Total is the whole directory: xlacache's bytes plus JAX's entries
	// and atime files (XLA's subcaches counted once).
	Total int64
}

func runStats(cmd *cobra.Command, _ []string) error {
	opts, lay, err := inspectDir(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if !lay.own {
		if jsonOutput(cmd) {
			return usagef("--json is not supported for a JAX-only cache directory (%s)", opts.Dir)
		}
		return jaxStats(ctx, cmd.OutOrStdout(), opts.Dir)
	}
	u, err := cache.Scan(ctx, opts.Dir)
	if err != nil {
		return err
	}
	counters, err := cache.ReadPersistedStats(opts.Dir)
	if err != nil {
		return err
	}
	r := statsReport{Dir: opts.Dir, MaxSize: opts.MaxSize, Files: u.Files, Bytes: u.Bytes, Areas: u.Areas, Counters: counters, Total: u.Bytes}
	var jd *jaxcache.Dir
	if lay.jax {
		if jd, err = jaxcache.Scan(ctx, opts.Dir); err != nil {
			return err
		}
		s := jd.Stats()
		r.JAX = &s
		r.Total += jaxOwnBytes(s)
	}
	out := cmd.OutOrStdout()
	if jsonOutput(cmd) {
		return writeJSON(out, r)
	}
	if err := writeStatsText(out, r); err != nil {
		return err
	}
	if jd == nil {
		return nil
	}
	fmt.Fprintln(out)
	if err := jaxcache.WriteStats(out, jd); err != nil {
		return err
	}
	_, err = fmt.Fprintf(out, "\ndirectory total %s: xlacache %s and JAX entries %s (XLA subcaches counted once, as xlacache's)\n",
		fmtBytes(r.Total), fmtBytes(r.Bytes), fmtBytes(r.Total-r.Bytes))
	return err
}

func writeStatsText(w io.Writer, r statsReport) error {
	bound := "unbounded"
	if r.MaxSize > 0 {
		bound = fmtBytes(r.MaxSize)
	}
	fmt.Fprintf(w, "cache %s: %d files, %s (max size %s)\n\n", r.Dir, r.Files, fmtBytes(r.Bytes), bound)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tENTRIES\tBYTES\tHITS\tMISSES")
	names := map[string]bool{}
	for n := range r.Areas {
		names[n] = true
	}
	for n := range r.Counters.Tiers {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	sort.Strings(sorted)
	for _, n := range sorted {
		a, c := r.Areas[n], r.Counters.Tiers[n]
		fmt.Fprintf(tw, "%s\t%d\t%s\t%d\t%d\n", n, a.Entries, fmtBytes(a.Bytes), c.Hits, c.Misses)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	c := r.Counters
	fmt.Fprintf(w, "\nhits %d (shared %d), misses %d, read %s, written %s, compile time saved %s\n",
		c.Hits, c.SharedHits, c.Misses, fmtBytes(c.BytesRead), fmtBytes(c.BytesWritten), c.CompileTimeSaved.Round(time.Millisecond))
	if len(c.Errors) > 0 {
		kinds := make([]string, 0, len(c.Errors))
		for k := range c.Errors {
			kinds = append(kinds, k)
		}
		sort.Strings(kinds)
		fmt.Fprint(w, "errors:")
		for _, k := range kinds {
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

// fmtBytes formats a byte count with a binary unit.
func fmtBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 4; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTP"[exp])
}

package main

import (
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"slices"
	"text/tabwriter"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/metrics"
	"github.com/xlacache/xlacache/xla/jaxcache"
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

With --json (or --format json), print one JSON object. With --format
prometheus, print the persisted counters and the directory's contents in
the Prometheus text exposition format (xlacache_hits_total{tier,backend,
role="writer"}, ..., xlacache_stored_bytes{area}; see docs/metrics.md),
for example for the node exporter's textfile collector. Processes report
their own counters, readers included, through XLACACHE_METRICS_FILE.

Exit code 1 if the directory cannot be read.`,
	Args: usageArgs(cobra.NoArgs),
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
		return "", usagef("--format %q: want text, json or prometheus", f)
	}
	if jsonOutput(cmd) {
		if cmd.Flags().Changed("format") && f != "json" {
			return "", usagef("--json and --format %s disagree", f)
		}
		return "json", nil
	}
	return f, nil
}

// statsReport is the --json form of `xlacache stats`.
type statsReport struct {
	Dir     string                     `json:"dir"`
	MaxSize int64                      `json:"max_size"`
	Files   int64                      `json:"files"`
	Bytes   int64                      `json:"bytes"`
	Areas   map[string]cache.TierStats `json:"areas"`
	// Counters are the persisted cumulative counters.
	Counters cache.Stats `json:"counters"`
	// JAX sums the JAX entries sharing the directory (nil when none); its
	// Subcaches are the same files as the XLA areas above.
	JAX *jaxcache.Stats `json:"jax,omitempty"`
	// Total is the whole directory: xlacache's bytes plus JAX's entries
	// and atime files (XLA's subcaches counted once).
	Total int64 `json:"total"`
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
		return writeStatsPrometheus(cmd, opts.Dir, opts.MaxSize)
	}
	if !lay.Own {
		if format == "json" {
			return usagef("--format json is not supported for a JAX-only cache directory (%s)", opts.Dir)
		}
		return jaxOnly(cmd, opts.Dir, jaxStats)
	}
	ctx := cmd.Context()
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
	if lay.JAX {
		if jd, err = jaxcache.Scan(ctx, opts.Dir); err != nil {
			return err
		}
		s := jd.Stats()
		r.JAX = &s
		r.Total += s.OwnBytes()
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
	_, err = fmt.Fprintf(out, "\ndirectory total %s: xlacache %s and JAX entries %s (XLA subcaches counted once, as xlacache's)\n",
		fmtBytes(r.Total), fmtBytes(r.Bytes), fmtBytes(r.Total-r.Bytes))
	return err
}

// writeStatsPrometheus prints the counters persisted in dir (labelled
// role="writer": only writers persist) and what dir holds, in the
// Prometheus text format. A directory without xlacache's own layout (only
// JAX's entries) prints zero xlacache series, not an error: a textfile
// collector job runs before the first compile too.
func writeStatsPrometheus(cmd *cobra.Command, dir string, maxSize int64) error {
	u, err := cache.Scan(cmd.Context(), dir)
	if err != nil {
		return err
	}
	counters, err := cache.ReadPersistedStats(dir)
	if err != nil {
		return err
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(metrics.StatsCollector(counters, metrics.RoleWriter)); err != nil {
		return fmt.Errorf("registering the persisted counters: %w", err)
	}
	if err := reg.Register(metrics.UsageCollector(u, maxSize)); err != nil {
		return fmt.Errorf("registering the directory's usage: %w", err)
	}
	return metrics.Write(cmd.OutOrStdout(), reg)
}

func writeStatsText(w io.Writer, r statsReport) error {
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

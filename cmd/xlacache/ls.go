package main

import (
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/xla/jaxcache"
	"github.com/xlacache/xlacache/xla/shareddir"
)

var lsCmd = &cobra.Command{
	Use:   "ls",
	Short: "List the entries of every tier",
	Long: `List every xlacache entry (executables and each backend's autotune,
kernel and alias tiers) with its size, recorded compile time and last use. Only entry
headers are read; use verify to check contents. XLA's raw subcache files
are counted by stats, not listed. JAX entries sharing the directory are
listed in a section of their own (in --json, as entries of tier "jax").

With --json, print a JSON array. Exit code 1 if the directory cannot be read.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runLs,
}

func init() { rootCmd.AddCommand(lsCmd) }

func runLs(cmd *cobra.Command, _ []string) error {
	opts, lay, err := inspectDir(cmd)
	if err != nil {
		return err
	}
	if !lay.Own {
		return jaxOnly(cmd, opts.Dir, jaxLs)
	}
	ctx := cmd.Context()
	entries, err := cache.List(ctx, opts.Dir)
	if err != nil {
		return err
	}
	var jax []jaxcache.Listing
	if lay.JAX {
		if jax, err = shareddir.ListJAX(ctx, opts.Dir); err != nil {
			return err
		}
	}
	out := cmd.OutOrStdout()
	if jsonOutput(cmd) {
		all := append([]cache.EntryInfo{}, entries...)
		return writeJSON(out, append(all, shareddir.EntryInfos(jax)...))
	}
	if err := writeLsText(out, entries); err != nil {
		return err
	}
	if !lay.JAX {
		return nil
	}
	fmt.Fprintf(out, "\nJAX cache entries (%d):\n", len(jax))
	return writeJAXList(out, jax)
}

func writeLsText(w io.Writer, entries []cache.EntryInfo) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TIER\tKEY\tSIZE\tCOMPILE\tLAST USED\tNOTE")
	for _, e := range entries {
		note := e.Codec
		if e.Signed {
			note += ",signed"
		}
		if e.Err != "" {
			note = "DAMAGED: " + e.Err
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Tier, e.Key, fmtBytes(e.Size), e.CompileTime.Round(time.Millisecond), e.LastUsed.Format(time.DateTime), note)
	}
	return tw.Flush()
}

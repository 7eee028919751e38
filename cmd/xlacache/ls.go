package main

import (
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
)

var lsCmd = &cobra.Command{
	Use:   "ls",
	Short: "List the entries of every tier",
	Long: `List every xlacache entry (executables and each backend's autotune and
kernel tiers) with its size, recorded compile time and last use. Only entry
headers are read; use verify to check contents. XLA's raw subcache files
are counted by stats, not listed.

With --json, print a JSON array. Exit code 1 if the directory cannot be read.`,
	Args: usageArgs(cobra.NoArgs),
	RunE: runLs,
}

func init() { rootCmd.AddCommand(lsCmd) }

func runLs(cmd *cobra.Command, _ []string) error {
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	if err := existingDir(opts.Dir); err != nil {
		return err
	}
	ctx := cmd.Context()
	if h := foreignHandler(opts.Dir); h != nil {
		if jsonOutput(cmd) {
			return usagef("--json is not supported for a %s cache directory (%s)", h.Name, opts.Dir)
		}
		return h.Ls(ctx, cmd.OutOrStdout(), opts.Dir)
	}
	entries, err := cache.List(ctx, opts.Dir)
	if err != nil {
		return err
	}
	if jsonOutput(cmd) {
		if entries == nil {
			entries = []cache.EntryInfo{}
		}
		return writeJSON(cmd.OutOrStdout(), entries)
	}
	tw := tabwriter.NewWriter(cmd.OutOrStdout(), 2, 4, 2, ' ', 0)
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

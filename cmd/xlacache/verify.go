package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
)

var verifyCmd = &cobra.Command{
	Use:   "verify",
	Short: "Check every entry's checksum (and signature); --repair quarantines bad ones",
	Long: `Read and fully check every xlacache entry: checksum, header, key matching the
file name, decompression, and the HMAC signature when XLACACHE_SIGNING_KEY
(or XLACACHE_SIGNING_KEY_FILE) is set. With --repair, damaged entries are
moved to <dir>/quarantine/ so the next compile replaces them.

With --json, print one JSON object. Exit code 1 when any damaged entry was
found (even if repaired, so scripts notice), 0 when all are good.`,
	Args: usageArgs(cobra.NoArgs),
	RunE: runVerify,
}

func init() {
	verifyCmd.Flags().Bool("repair", false, "move damaged entries to the quarantine directory")
	rootCmd.AddCommand(verifyCmd)
}

// verifyReport is the --json form of `xlacache verify`.
type verifyReport struct {
	Dir     string
	Checked int
	Bad     []cache.BadEntry
}

func runVerify(cmd *cobra.Command, _ []string) error {
	repair, _ := cmd.Flags().GetBool("repair")
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	if err := existingDir(opts.Dir); err != nil {
		return err
	}
	if h := foreignHandler(opts.Dir); h != nil {
		if jsonOutput(cmd) || repair {
			return usagef("--json and --repair are not supported for a %s cache directory (%s)", h.Name, opts.Dir)
		}
		return h.Verify(cmd.Context(), cmd.OutOrStdout(), opts.Dir)
	}
	c, _, err := openAdmin(cmd, repair)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Verify(cmd.Context(), repair)
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if jsonOutput(cmd) {
		if res.Bad == nil {
			res.Bad = []cache.BadEntry{}
		}
		if err := writeJSON(out, verifyReport{Dir: opts.Dir, Checked: res.Checked, Bad: res.Bad}); err != nil {
			return err
		}
	} else {
		for _, b := range res.Bad {
			fmt.Fprintf(out, "BAD %s %s: %s\n", b.Tier, b.Path, b.Err)
			if b.Quarantined != "" {
				fmt.Fprintf(out, "    moved to %s\n", b.Quarantined)
			}
		}
		fmt.Fprintf(out, "%d entries checked, %d damaged\n", res.Checked, len(res.Bad))
	}
	if len(res.Bad) > 0 {
		return fmt.Errorf("%d damaged entr%s in %s", len(res.Bad), plural(len(res.Bad), "y", "ies"), opts.Dir)
	}
	return nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

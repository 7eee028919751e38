package main

import (
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/cli"
)

// restoreReport is the --json form of `xlacache verify --restore`.
type restoreReport struct {
	Dir string `json:"dir"`
	cache.RestoreResult
}

// runRestore is `xlacache verify --restore`: quarantined entries that
// verify with this key go back to their tiers (cache.Cache.Restore).
func runRestore(cmd *cobra.Command) error {
	if repair, _ := cmd.Flags().GetBool("repair"); repair {
		return cli.Usagef("--restore and --repair cannot be combined: restore first, then verify")
	}
	c, opts, err := openAdmin(cmd, true)
	if err != nil {
		return err
	}
	defer c.Close()
	res, err := c.Restore(cmd.Context())
	if err != nil {
		return err
	}
	out := cmd.OutOrStdout()
	if jsonOutput(cmd) {
		if res.Restored == nil {
			res.Restored = []cache.RestoredEntry{}
		}
		if res.Kept == nil {
			res.Kept = []cache.KeptEntry{}
		}
		return writeJSON(out, restoreReport{Dir: opts.Dir, RestoreResult: res})
	}
	for _, r := range res.Restored {
		fmt.Fprintf(out, "RESTORED %s %s\n    from %s\n", r.Tier, r.To, r.From)
	}
	for _, k := range res.Kept {
		fmt.Fprintf(out, "KEPT %s: %s\n", k.Path, k.Reason)
	}
	fmt.Fprintf(out, "%d quarantined file(s) checked, %d restored, %d kept in quarantine\n", res.Checked, len(res.Restored), len(res.Kept))
	return nil
}

package main

import (
	"fmt"
	"io"
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/dirsync"
	"github.com/xlacache/xlacache/internal/cli"
)

var syncCmd = &cobra.Command{
	Use:   "sync pull|push",
	Short: "Copy a cache directory from or to the shared object-store tier",
	Long: `Synchronize the cache directory with the shared tier (XLACACHE_SHARED_URL or
--url, s3://bucket/prefix; endpoint and credentials as for the library, see
docs/multihost.md).

  pull  copies every entry the shared tier has and the directory lacks
        (executables and backend subcache tiers, verified and, with
        XLACACHE_SIGNING_KEY, signature-checked before they are written),
        and XLA's autotune files and kernel cache parts (merged into
        xla_gpu_kernel_cache_file);
  push  publishes every local entry the shared tier lacks (first writer
        wins; damaged or wrongly signed local entries are skipped), and
        XLA's autotune files and kernel cache file.

Exit code 1 if anything could not be copied.`,
	Args:      cli.UsageArgs(cobra.ExactArgs(1)),
	ValidArgs: []string{"pull", "push"},
	RunE: func(cmd *cobra.Command, args []string) error {
		dirn := args[0]
		if dirn != "pull" && dirn != "push" {
			return cli.Usagef("sync %q: want pull or push", dirn)
		}
		opts, err := loadOptions(cmd)
		if err != nil {
			return err
		}
		if u, _ := cmd.Flags().GetString("url"); u != "" {
			opts.SharedURL = u
		}
		if opts.SharedURL == "" {
			return cli.Usagef("sync: no shared tier: set XLACACHE_SHARED_URL or --url s3://bucket/prefix (or gs://bucket/prefix)")
		}
		if err := xlacache.CheckSharedURL(opts.SharedURL); err != nil {
			return cli.Usage(err)
		}
		// The CLI acts for the user on both sides: it writes the local
		// directory (pull) or the shared tier (push).
		opts.Role = config.RoleWriter
		c, err := xlacache.Open(cmd.Context(), opts, slog.Default())
		if err != nil {
			return cli.Usage(err)
		}
		defer c.Close()
		if c.Shared() == nil {
			return fmt.Errorf("sync: the shared tier %s could not be opened (see the log line above)", opts.SharedURL)
		}
		sync := dirsync.Push
		if dirn == "pull" {
			sync = dirsync.Pull
		}
		res, err := sync(cmd.Context(), c, c.Shared())
		printSync(cmd.OutOrStdout(), res, dirn, c.Options().Dir, opts.SharedURL)
		return err
	},
}

func init() {
	syncCmd.Flags().String("url", "", "shared tier URL (default: $XLACACHE_SHARED_URL)")
	rootCmd.AddCommand(syncCmd)
}

// printSync prints the one-line summary of a sync.
func printSync(w io.Writer, r dirsync.Result, dirn, dir, url string) {
	from, to := url, dir
	if dirn == "push" {
		from, to = dir, url
	}
	fmt.Fprintf(w, "%s %s -> %s: %d entries copied, %d already there, %d refused, %d damaged ones replaced; XLA subcache files: %d copied, %d refused; in packs (JAX's entries and the rest): %d files copied, %d refused\n",
		dirn, from, to, r.Entries, r.Skipped, r.Refused, r.Replaced+r.Raw.Replaced, r.Raw.Pulled+r.Raw.Pushed, r.Raw.Refused,
		r.Filled.Files+r.Published.Files, r.Filled.Refused)
}

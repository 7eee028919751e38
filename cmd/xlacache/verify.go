package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/xla/shareddir"
)

var verifyCmd = &cobra.Command{
	Use:   "verify",
	Short: "Check every entry's checksum (and signature); --repair quarantines bad ones, --restore brings back good ones",
	Long: `Read and fully check every xlacache entry: checksum, header, key matching the
file name, decompression, and the HMAC signature when XLACACHE_SIGNING_KEY
(or XLACACHE_SIGNING_KEY_FILE) is set. With --repair, damaged entries are
moved to <dir>/quarantine/ so the next compile replaces them, and stale
temporary files (left by writers killed mid-write) are removed. A FIFO,
socket, device or symbolic link at an entry's path is damaged too.

An entry whose checksum holds but whose signature does not verify was
signed with another key: it is reported, never quarantined. When every
entry fails that way the key is wrong: verify says so, changes nothing and
exits 1. --restore moves quarantined entries that verify with this key back
into their tiers (an entry whose place a fresh compile took stays in the
quarantine).

JAX entries and XLA subcache files sharing the directory are checked too
(decompression, atime files, file formats) and reported in a JAX section;
--repair does not move them (JAX recompiles over a damaged entry). A JAX
file modified in the last 5 minutes may still be being written: it is
reported but does not fail the command.

With --json, print one JSON object. Exit code 1 when any damaged entry was
found in either part (even if repaired, so scripts notice), 0 when all are
good.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runVerify,
}

func init() {
	verifyCmd.Flags().Bool("repair", false, "move damaged entries to the quarantine directory")
	verifyCmd.Flags().Bool("restore", false, "move quarantined entries that verify back into their tiers")
	rootCmd.AddCommand(verifyCmd)
}

// verifyReport is the --json form of `xlacache verify`.
type verifyReport struct {
	Dir string `json:"dir"`
	cache.VerifyResult
	// JAX is the check of JAX's entries and XLA's subcache files sharing
	// the directory (nil when there are none).
	JAX *shareddir.JAXVerifyReport `json:"jax,omitempty"`
}

func runVerify(cmd *cobra.Command, _ []string) error {
	if restore, _ := cmd.Flags().GetBool("restore"); restore {
		return runRestore(cmd)
	}
	repair, _ := cmd.Flags().GetBool("repair")
	opts, lay, err := inspectDir(cmd)
	if err != nil {
		return err
	}
	if !lay.Own {
		if jsonOutput(cmd) || repair {
			return cli.Usagef("--json and --repair are not supported for a JAX-only cache directory (%s)", opts.Dir)
		}
		_, bad, err := jaxVerify(cmd.Context(), cmd.OutOrStdout(), opts.Dir)
		if err == nil && bad > 0 {
			err = fmt.Errorf("%d damaged file(s) in JAX cache %s", bad, opts.Dir)
		}
		return err
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
	var jaxRep *shareddir.JAXVerifyReport
	var jaxText bytes.Buffer
	jaxBad := 0
	if lay.JAX {
		r, bad, err := jaxVerify(cmd.Context(), &jaxText, opts.Dir)
		if err != nil {
			return err
		}
		jaxRep, jaxBad = &r, bad
	}
	if jsonOutput(cmd) {
		if res.Bad == nil {
			res.Bad = []cache.BadEntry{}
		}
		if err := writeJSON(out, verifyReport{Dir: opts.Dir, VerifyResult: res, JAX: jaxRep}); err != nil {
			return err
		}
	} else {
		for _, b := range res.Bad {
			fmt.Fprintf(out, "BAD %s %s: %s\n", b.Tier, b.Path, b.Err)
			if b.Quarantined != "" {
				fmt.Fprintf(out, "    moved to %s\n", b.Quarantined)
			}
		}
		fmt.Fprintf(out, "%d entries checked, %d damaged\n", res.Checked, len(res.Bad)-res.KeyMismatches)
		if res.KeyMismatches > 0 {
			fmt.Fprintf(out, "%d entr%s signed with another key (left in place): check %s\n", res.KeyMismatches, cli.Plural(res.KeyMismatches, "y", "ies"), signingVars(opts))
		}
		printSigners(out, opts, res.Signers)
		if res.StaleTemps > 0 {
			fmt.Fprintf(out, "%d stale temporary file(s) removed\n", res.StaleTemps)
		}
		if lay.JAX {
			fmt.Fprintf(out, "\nJAX cache:\n%s", jaxText.String())
		}
	}
	errs := []error{res.Err(opts.Dir)}
	if jaxBad > 0 {
		errs = append(errs, fmt.Errorf("%d damaged JAX cache file(s) in %s", jaxBad, opts.Dir))
	}
	return errors.Join(errs...)
}

// signingVars names the variables to check when entries are signed with
// another key: those of the scheme this process uses.
func signingVars(opts config.Options) string {
	if opts.SigningKey.Scheme() == sign.Ed25519 {
		return config.EnvVerifyKeys + " (or " + config.EnvVerifyKeysFile + ")"
	}
	return config.EnvSigningKey
}

// printSigners reports the keys this process accepts and, for Ed25519,
// how many entries each key id signed: during a rotation, whether the
// old key still vouches for anything.
func printSigners(out io.Writer, opts config.Options, signers map[string]int) {
	if !opts.SigningKey.Enabled() {
		return
	}
	fmt.Fprintf(out, "keys: %s\n", opts.SigningKey)
	ids := make([]string, 0, len(signers))
	for id := range signers {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fmt.Fprintf(out, "  %d entr%s signed by key id %s\n", signers[id], cli.Plural(signers[id], "y", "ies"), id)
	}
}

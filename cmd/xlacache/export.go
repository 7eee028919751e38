package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache/archive"
	"github.com/xlacache/xlacache/internal/cli"
)

var exportCmd = &cobra.Command{
	Use:   "export FILE",
	Short: "Pack the cache (all tiers) into one tar+zstd archive",
	Long: `Pack every tier of the cache directory into FILE ("-" for standard output):
executables, each backend's autotune and kernel tiers, XLA's autotune files
and kernel cache file. Entries that fail verification are left out (and
counted). The archive starts with a manifest listing the SHA-256 of XLA's
raw files; with XLACACHE_SIGNING_KEY the manifest is signed, so that
import can check raw files as it checks entries. Ship a warm cache in a
container image with export, then import at build time.`,
	Args: cli.UsageArgs(cobra.ExactArgs(1)),
	RunE: func(cmd *cobra.Command, args []string) error {
		opts, err := loadExistingDir(cmd)
		if err != nil {
			return err
		}
		var st archive.ExportStats
		if args[0] == "-" {
			st, err = archive.Export(cmd.Context(), opts.Dir, cmd.OutOrStdout(), archive.OptionsFor(opts))
		} else {
			st, err = archive.ExportFile(cmd.Context(), opts.Dir, args[0], archive.OptionsFor(opts))
		}
		if err != nil {
			return fmt.Errorf("export %s: %w", args[0], err)
		}
		fmt.Fprintf(cmd.ErrOrStderr(), "exported %d files (%s) from %s; %d damaged entries left out\n", st.Files, fmtBytes(st.Bytes), opts.Dir, st.Skipped)
		return nil
	},
}

var importCmd = &cobra.Command{
	Use:   "import FILE",
	Short: "Unpack an archive made by export into the cache directory",
	Long: `Unpack FILE ("-" for standard input) into the cache directory. Every member is
checked before anything is written: names must be plain relative paths
inside a known tier (no "..", no absolute paths), only regular files are
accepted (no symlinks, hard links or devices), entries are verified
(checksum, key, and the signature when XLACACHE_SIGNING_KEY is set) and XLA's
raw files must match the archive's manifest (signed, when a key is set).
Existing entries are kept; XLA's kernel cache file is merged.

Exit code 1 if any member was refused (the others are still imported).`,
	Args: cli.UsageArgs(cobra.ExactArgs(1)),
	RunE: func(cmd *cobra.Command, args []string) error {
		opts, err := loadOptions(cmd)
		if err != nil {
			return err
		}
		var r io.Reader = cmd.InOrStdin()
		if args[0] != "-" {
			f, err := os.Open(args[0])
			if err != nil {
				return fmt.Errorf("import: %w", err)
			}
			defer f.Close()
			r = f
		}
		st, err := archive.Import(cmd.Context(), r, opts.Dir, archive.OptionsFor(opts))
		fmt.Fprintf(cmd.ErrOrStderr(), "imported %d files into %s; %d already present; %d refused\n", st.Files, opts.Dir, st.Skipped, len(st.Refused))
		for _, ref := range st.Refused {
			fmt.Fprintf(cmd.ErrOrStderr(), "  refused %s\n", ref)
		}
		if err != nil {
			return fmt.Errorf("import %s: %w", args[0], err)
		}
		if len(st.Refused) > 0 {
			return fmt.Errorf("import %s: %d member(s) refused", args[0], len(st.Refused))
		}
		return nil
	},
}

func init() {
	rootCmd.AddCommand(exportCmd, importCmd)
}

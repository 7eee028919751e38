package main

import (
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/internal/buildinfo"
	"github.com/xlacache/xlacache/internal/cli"
)

var versionCmd = &cobra.Command{
	Use:   "version",
	Short: "Print the module version, VCS revision, Go version and build settings",
	Args:  cli.UsageArgs(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error {
		in, ok := buildinfo.Read()
		if !ok {
			return errors.New("this binary carries no build information")
		}
		if jsonOutput(cmd) {
			return writeJSON(cmd.OutOrStdout(), in)
		}
		_, err := fmt.Fprint(cmd.OutOrStdout(), in.String())
		return err
	},
}

func init() {
	rootCmd.AddCommand(versionCmd)
	// --version prints one line, as go and docker do.
	if in, ok := buildinfo.Read(); ok {
		rootCmd.Version = in.Short()
	} else {
		rootCmd.Version = "unknown"
	}
	rootCmd.SetVersionTemplate("xlacache {{.Version}}\n")
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// execCLI runs the xlacache command line in-process and returns its
// stdout, stderr and error. Flags are reset first: cobra keeps their
// values between executions in one process.
func execCLI(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	var reset func(c *cobra.Command)
	reset = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if f.Changed {
					f.Value.Set(f.DefValue)
					f.Changed = false
				}
			})
		}
		for _, sub := range c.Commands() {
			reset(sub)
		}
	}
	reset(rootCmd)
	var out, errOut bytes.Buffer
	rootCmd.SetOut(&out)
	rootCmd.SetErr(&errOut)
	rootCmd.SetIn(strings.NewReader(""))
	rootCmd.SetArgs(args)
	err = rootCmd.ExecuteContext(context.Background())
	return out.String(), errOut.String(), err
}

// runCLI is execCLI for tests that only read stdout.
func runCLI(t *testing.T, args ...string) (string, error) {
	t.Helper()
	out, _, err := execCLI(t, args...)
	return out, err
}

package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
)

var explainCmd = &cobra.Command{
	Use:   "explain KEY|PROGRAM-FILE",
	Short: "Say which key component differs from the closest stored entry",
	Long: `Compare a key with the stored executables of the same module and name the
key components (program, options, backend, topology, ...) that differ from
the closest one.

The argument is either a key text "<module>-<64 hex>" (as printed by ls and
in logs) or a program file; for a file, --backend computes the key parts the
way a compile would (module name: --module, default the file name without
its extension).

With --json, print one JSON object. Exit code 1 on failure, 2 for an
unknown backend or a missing argument.`,
	Args: usageArgs(cobra.ExactArgs(1)),
	RunE: runExplain,
}

func init() {
	explainCmd.Flags().String("backend", "cpu", "backend that computes key parts for a program file")
	explainCmd.Flags().String("module", "", "module name for a program file (default: file name without extension)")
	rootCmd.AddCommand(explainCmd)
}

func runExplain(cmd *cobra.Command, args []string) error {
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	if err := existingDir(opts.Dir); err != nil {
		return err
	}
	ctx := cmd.Context()
	arg := args[0]
	if h := foreignHandler(opts.Dir); h != nil && h.Explain != nil {
		if jsonOutput(cmd) {
			return usagef("--json is not supported for a %s cache directory (%s)", h.Name, opts.Dir)
		}
		return h.Explain(ctx, cmd.OutOrStdout(), opts.Dir, arg)
	}
	var key cache.Key
	if m, d, perr := cache.ParseKey(arg); perr == nil {
		key = cache.Key{Module: m, Digest: d}
	} else {
		if _, serr := os.Stat(arg); serr != nil {
			return usagef("%q is neither a key (%v) nor a readable program file (%v)", arg, perr, serr)
		}
		key, err = keyForFile(cmd, arg)
		if err != nil {
			return err
		}
	}
	c, _, err := openAdmin(cmd, false)
	if err != nil {
		return err
	}
	defer c.Close()
	x, err := c.Explain(ctx, key)
	if err != nil {
		return err
	}
	if jsonOutput(cmd) {
		return writeJSON(cmd.OutOrStdout(), x)
	}
	_, err = fmt.Fprintln(cmd.OutOrStdout(), x.String())
	return err
}

// keyForFile computes the key a compile of the program file would use.
func keyForFile(cmd *cobra.Command, path string) (cache.Key, error) {
	name, _ := cmd.Flags().GetString("backend")
	mk, ok := explainBackends[name]
	if !ok {
		known := make([]string, 0, len(explainBackends))
		for n := range explainBackends {
			known = append(known, n)
		}
		sort.Strings(known)
		return cache.Key{}, usagef("--backend %q: no such backend for explain (available: %s)", name, strings.Join(known, ", "))
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return cache.Key{}, fmt.Errorf("reading program: %w", err)
	}
	module, _ := cmd.Flags().GetString("module")
	if module == "" {
		module = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	p := cache.Program{Name: module, Text: text}
	parts, err := mk().KeyParts(cmd.Context(), p)
	if err != nil {
		return cache.Key{}, fmt.Errorf("%s: computing key parts with backend %s: %w", path, name, err)
	}
	return cache.NewKey(module, parts), nil
}

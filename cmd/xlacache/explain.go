package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/stablehlo"
	"github.com/xlacache/xlacache/xla/shareddir"
)

var explainCmd = &cobra.Command{
	Use:   "explain KEY|PROGRAM-FILE",
	Short: "Say which key component differs from the closest stored entry",
	Long: `Compare a key with the stored executables of the same module and name the
key components (program, options, backend, topology, ...) that differ from
the closest one.

The argument is either a key text "<module>-<64 hex>" (as printed by ls and
in logs) or a program file; for a file, --backend computes the key parts the
way a compile would, with the module name run uses (--module, else the
module's @name, else the file name without its extension).

When JAX entries share the directory, JAX's part is explained too: for a
key, whether JAX has it and which other entries its module has; for a
file, the module's entries. JAX stores only a hash of its key components,
so it cannot say which one differs; but for entries that other hosts
published under 'xlacache exec', the runtime and settings they recorded
(jaxlib, JAX_PLATFORMS, XLA_FLAGS flag by flag, ...) are compared with
this host's latest exec, and each differing setting is named. In such a
directory the argument may also be a bare module name, explained against
JAX's entries.

With --json, print one JSON object. Exit code 1 on failure, 2 for an
unknown backend or a missing argument.`,
	Args: cli.UsageArgs(cobra.ExactArgs(1)),
	RunE: runExplain,
}

func init() {
	explainCmd.Flags().String("backend", "cpu", "backend that computes key parts for a program file")
	explainCmd.Flags().String("module", "", "module name for a program file (default: the module's @name, else the file name without extension)")
	rootCmd.AddCommand(explainCmd)
}

func runExplain(cmd *cobra.Command, args []string) error {
	opts, lay, err := inspectDir(cmd)
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	arg := args[0]
	out := cmd.OutOrStdout()
	if !lay.Own {
		return jaxOnly(cmd, opts.Dir, func(ctx context.Context, w io.Writer, dir string) error {
			if _, err := jaxExplain(ctx, w, dir, arg); err != nil {
				return err
			}
			_, err := explainPublished(ctx, w, dir, arg)
			return err
		})
	}
	var key cache.Key
	jaxQuery := arg
	if m, d, perr := cache.ParseKey(arg); perr == nil {
		key = cache.Key{Module: m, Digest: d}
	} else if _, serr := os.Stat(arg); serr == nil {
		if key, err = keyForFile(cmd, arg); err != nil {
			return err
		}
		jaxQuery = key.Module
	} else if !lay.JAX {
		return cli.Usagef("%q is neither a key (%v) nor a readable program file (%v)", arg, perr, serr)
	}
	// rep is the --json form: xlacache's explanation (absent for a bare
	// module name) with JAX's beside it.
	var rep struct {
		*cache.Explanation
		JAX *shareddir.JAXExplainReport `json:"jax,omitempty"`
		// JAXPublished are the module's entries other hosts published,
		// compared with this host (explain_origin.go).
		JAXPublished []jaxPublished `json:"jax_published,omitempty"`
	}
	if !key.IsZero() {
		c, _, err := openAdmin(cmd, false)
		if err != nil {
			return err
		}
		defer c.Close()
		x, err := c.Explain(ctx, key)
		if err != nil {
			return err
		}
		rep.Explanation = &x
	}
	var jaxText bytes.Buffer
	if lay.JAX {
		j, err := jaxExplain(ctx, &jaxText, opts.Dir, jaxQuery)
		if err != nil {
			return err
		}
		rep.JAX = &j
		if rep.JAXPublished, err = explainPublished(ctx, &jaxText, opts.Dir, jaxQuery); err != nil {
			return err
		}
	}
	if jsonOutput(cmd) {
		if rep.JAX == nil {
			return writeJSON(out, rep.Explanation)
		}
		return writeJSON(out, rep)
	}
	if rep.Explanation != nil {
		fmt.Fprintln(out, rep.Explanation.String())
	}
	if rep.JAX != nil {
		if rep.Explanation != nil {
			fmt.Fprintln(out, "JAX cache:")
		}
		out.Write(jaxText.Bytes())
	}
	return nil
}

// keyForFile computes the key a compile of the program file would use.
func keyForFile(cmd *cobra.Command, path string) (cache.Key, error) {
	name, _ := cmd.Flags().GetString("backend")
	mk, ok := explainBackends[name]
	if !ok {
		known := slices.Sorted(maps.Keys(explainBackends))
		return cache.Key{}, cli.Usagef("--backend %q: no such backend for explain (available: %s)", name, strings.Join(known, ", "))
	}
	text, err := os.ReadFile(path)
	if err != nil {
		return cache.Key{}, fmt.Errorf("reading program: %w", err)
	}
	module, _ := cmd.Flags().GetString("module")
	if module == "" {
		// A file that does not parse as StableHLO has no @name; its
		// backend (a test or plug-in one) may still take it.
		m, _ := stablehlo.Parse(text, path)
		module = stablehlo.ProgramName(m, path)
	}
	p := cache.Program{Name: module, Text: text}
	parts, err := mk().KeyParts(cmd.Context(), p)
	if err != nil {
		return cache.Key{}, fmt.Errorf("%s: computing key parts with backend %s: %w", path, name, err)
	}
	return cache.NewKey(module, parts), nil
}

package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/xla"
)

// envCmd is `xlacache env`: with no flags it shows the options in effect
// and where each came from; with --process-index (or --shell, --target)
// it prints the environment that turns the caches on for a JAX or GoMLX
// process, for eval in a job script.
var envCmd = &cobra.Command{
	Use:   "env",
	Short: "Show the options in effect, or print the environment for a JAX or Go process",
	Long: `With no flags, show every option in effect and where it came from.

With --process-index N (or --shell / --target), print the environment that
turns xlacache and XLA's own caches on for process N of a job, for
  eval "$(xlacache env --process-index $SLURM_PROCID)"
Process 0 is the writer (XLA's autotune cache in UPDATE mode), every other
process a reader (READ mode), unless XLACACHE_ROLE says otherwise. To also
fill a node-local directory from the shared tier before the program starts
and publish what it compiles, run it under "xlacache exec -- COMMAND".

--target all (default): XLACACHE_* for Go programs that call xla.Prepare,
  and JAX_COMPILATION_CACHE_DIR / JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES for
  JAX, which sets XLA's cache options itself. The JAX_* values are the same
  on every process of a job, readers included (kernel cache too): JAX hashes
  the kernel cache file into its key, and JAX itself gives it to every
  process. Only the autotune mode differs by role, and JAX picks it and
  leaves it out of its key. XLA_FLAGS is left alone: JAX sets the cache
  options itself, and the kernel-cache flags there would be hashed too.
--target jax: the same, for JAX only.
--target go: XLACACHE_* and XLA_FLAGS with XLA's cache flags, merged in
  front of the existing XLA_FLAGS (the user's flags win), for go-xla / GoMLX
  programs that do not call xla.Prepare. Only flags the target XLA knows are
  set: the plugin given by --xla-plugin (or found by --plugin-name on
  go-xla's search path) is read to find out; else --jaxlib-version; else
  jaxlib ` + xla.DefaultVersion.String() + `, the first release for which JAX itself enables them.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runEnv,
}

func init() {
	f := envCmd.Flags()
	f.Int("process-index", 0, "index of the launched process in its job (0 writes, others read)")
	f.String("shell", xla.ShellBash, "output syntax: bash (also sh, zsh), fish, or json (same as --json)")
	f.String("target", string(xla.TargetAll), "program kind: all, jax, or go")
	f.String("jaxlib-version", "", "jaxlib / PJRT plugin release of the XLA the launched program loads (e.g. 0.5.1)")
	f.String("xla-version", "", "same as --jaxlib-version: XLA ships in jaxlib and PJRT plugin releases")
	f.String("xla-plugin", "", "PJRT plugin file the launched program loads; read to learn which flags it knows")
	f.String("plugin-name", "", "go-xla plugin name (cuda, cpu) to look up on go-xla's plugin search path")
	rootCmd.AddCommand(envCmd)
}

func runEnv(cmd *cobra.Command, _ []string) error {
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	f := cmd.Flags()
	launch := false
	for _, name := range []string{"process-index", "shell", "target", "jaxlib-version", "xla-version", "xla-plugin", "plugin-name"} {
		launch = launch || f.Changed(name)
	}
	out := cmd.OutOrStdout()
	if !launch {
		return writeSettings(out, opts, jsonOutput(cmd))
	}
	if f.Changed("process-index") {
		idx, _ := f.GetInt("process-index")
		if idx < 0 {
			return cli.Usagef("--process-index %d: must be 0 or more", idx)
		}
		opts.ProcessIndex = idx
	}
	// The launched program may start in another directory.
	abs, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("cache directory %q: %w", opts.Dir, err)
	}
	opts.Dir = abs
	shell, _ := f.GetString("shell")
	if jsonOutput(cmd) {
		if f.Changed("shell") && shell != xla.ShellJSON {
			return cli.Usagef("--json and --shell %s disagree", shell)
		}
		shell = xla.ShellJSON
	}
	targetText, _ := f.GetString("target")
	target, err := xla.ParseTarget(targetText)
	if err != nil {
		return cli.Usagef("--target: %v", err)
	}
	version, _ := f.GetString("jaxlib-version")
	if v, _ := f.GetString("xla-version"); v != "" {
		if version != "" && version != v {
			return cli.Usagef("--xla-version %q and --jaxlib-version %q disagree", v, version)
		}
		version = v
	}
	plugin, _ := f.GetString("xla-plugin")
	pluginName, _ := f.GetString("plugin-name")
	var sup xla.Support
	if target == xla.TargetGo {
		sup, err = xla.ResolveSupport(cmd.Context(), plugin, pluginName, version, os.LookupEnv)
		if err != nil {
			return cli.Usage(err)
		}
	}
	l, err := xla.LaunchEnvFor(opts, target, sup, os.Getenv(xla.EnvXLAFlags))
	if err != nil {
		return err
	}
	role := "reader"
	if opts.Writer() {
		role = "writer"
	}
	header := []string{fmt.Sprintf("xlacache env: process %d (%s), target %s", opts.ProcessIndex, role, target)}
	if target == xla.TargetGo {
		header = append(header, "target XLA: "+sup.String())
	}
	text, err := xla.FormatLaunch(l, shell, header)
	if err != nil {
		return cli.Usagef("--shell: %v", err)
	}
	_, err = io.WriteString(out, text)
	return err
}

// writeSettings prints every variable of config.Docs as a shell comment
// with its value and source, so the output is safe to eval as well as to
// read; with --json, as a JSON array.
func writeSettings(w io.Writer, opts config.Options, js bool) error {
	settings := config.EnvSettings(opts, os.LookupEnv)
	if js {
		return writeJSON(w, settings)
	}
	for _, s := range settings {
		val := s.Value
		if val == "" {
			val = "''"
		}
		if _, err := fmt.Fprintf(w, "# %s=%s (%s): %s\n", s.Name, val, s.Source, s.Help); err != nil {
			return err
		}
	}
	role := "reader"
	if opts.Writer() {
		role = "writer"
	}
	_, err := fmt.Fprintf(w, "# this process: index %s, %s; XLA's caches for Go programs via xla.Prepare, for other programs via `xlacache env --process-index N`\n",
		strconv.Itoa(opts.ProcessIndex), role)
	return err
}

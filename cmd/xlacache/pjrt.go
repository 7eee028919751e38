package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	xlacache "github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/xla"
	"github.com/xlacache/xlacache/xla/pjrt"
)

// pjrtCmd groups the commands of the caching PJRT plugin (package
// xla/pjrt): `env` prints the environment that makes a PJRT host load the
// wrapper around a real plugin, `serve` runs the helper the wrapper asks.
var pjrtCmd = &cobra.Command{
	Use:   "pjrt",
	Short: "An executable cache for any PJRT client: a caching plugin around a real one",
	Long: `xlacache's PJRT plugin wraps a real PJRT plugin (an XLA CPU or GPU plugin)
and caches what it compiles in the cache directory, for any program that
loads PJRT plugins: go-xla and GoMLX (by name, through PJRT_PLUGIN_LIBRARY_PATH),
JAX (PJRT_NAMES_AND_LIBRARY_PATHS), C++ programs (by path).

  eval "$(xlacache pjrt env --plugin /path/to/pjrt_c_api_cpu_plugin.so)"

See docs/pjrt.md.`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
}

var pjrtEnvCmd = &cobra.Command{
	Use:   "env --plugin PATH",
	Short: "Build the caching wrapper for a PJRT plugin and print the environment that loads it",
	Long: `Build the caching wrapper (with cc, once per wrapper version and compiler)
and lay it out under the plugin's own file name and under go-xla's name
for it (pjrt_c_api_<name>_plugin.so), then print export lines:

  PJRT_PLUGIN_LIBRARY_PATH      where go-xla and GoMLX find plugins by name
  PJRT_NAMES_AND_LIBRARY_PATHS  the same for JAX (name:path)
  XLACACHE_PJRT_INNER           the real plugin the wrapper loads
  XLACACHE_PJRT_SOCKET          the helper's socket
  XLACACHE_PJRT_HELPER          this xlacache binary: the wrapper starts
                                "xlacache pjrt serve" on the socket when no
                                helper answers (--no-helper: it compiles
                                without the cache instead)
  XLACACHE_DIR                  the cache directory the helper serves`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runPJRTEnv,
}

var pjrtServeCmd = &cobra.Command{
	Use:   "serve",
	Short: "Serve the caching PJRT wrapper's requests on a unix socket",
	Long: `Run the helper that the caching PJRT wrapper asks for every compile. It opens
the cache (XLACACHE_* environment, --dir) as every xlacache program does:
verification, signing, size bound, role, single-flight and the shared tier
apply to the wrapper's entries. One helper per socket: a second one exits
at once. The wrapper starts one on demand (with --idle-exit 10m).`,
	Args: cli.UsageArgs(cobra.NoArgs),
	RunE: runPJRTServe,
}

func init() {
	f := pjrtEnvCmd.Flags()
	f.String("plugin", "", "the real PJRT plugin (.so) to wrap")
	f.String("name", "", "plugin name hosts ask for (default: from the file name, e.g. cpu)")
	f.String("build-dir", "", "where the wrapper is built and laid out (default: <user cache dir>/xlacache-pjrt)")
	f.String("socket", "", "the helper's unix socket (default: one per cache directory and role, in $XDG_RUNTIME_DIR or the temporary directory)")
	f.Bool("no-helper", false, "do not let the wrapper start a helper: without one it compiles without the cache")
	f.String("shell", "bash", "output syntax: bash (also sh, zsh) or json")
	s := pjrtServeCmd.Flags()
	s.String("socket", "", "unix socket to listen on (default: as pjrt env prints)")
	s.Duration("idle-exit", 0, "exit after this long without a request (0: never)")
	s.String("build-dir", "", "where pjrt env built the wrapper; plugin hashes are kept there (default: <user cache dir>/xlacache-pjrt)")
	pjrtCmd.AddCommand(pjrtEnvCmd, pjrtServeCmd)
	rootCmd.AddCommand(pjrtCmd)
}

func runPJRTEnv(cmd *cobra.Command, _ []string) error {
	f := cmd.Flags()
	plugin, _ := f.GetString("plugin")
	if plugin == "" {
		return cli.Usagef("--plugin: the PJRT plugin to wrap is required")
	}
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	dir, err := filepath.Abs(opts.Dir)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	buildDir, _ := f.GetString("build-dir")
	if buildDir == "" {
		if buildDir, err = pjrt.DefaultBuildDir(); err != nil {
			return cli.Usagef("no build directory: give --build-dir (%v)", err)
		}
	}
	socket, _ := f.GetString("socket")
	if socket == "" {
		socket = pjrt.RoleSocket(dir, opts.Writer())
	}
	helper := ""
	if noHelper, _ := f.GetBool("no-helper"); !noHelper {
		if helper, err = os.Executable(); err != nil {
			return fmt.Errorf("locating the xlacache binary for the helper: %w", err)
		}
	}
	name, _ := f.GetString("name")
	st, err := pjrt.Prepare(cmd.Context(), buildDir, plugin, name, socket, helper)
	if err != nil {
		return err
	}
	shell, _ := f.GetString("shell")
	err = st.WriteEnv(cmd.OutOrStdout(), shell, append(st.Env(), [2]string{"XLACACHE_DIR", dir}))
	if errors.As(err, new(pjrt.UnknownShellError)) {
		return cli.Usage(err)
	}
	return err
}

func runPJRTServe(cmd *cobra.Command, _ []string) error {
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	socket, _ := cmd.Flags().GetString("socket")
	if socket == "" {
		socket = pjrt.RoleSocket(opts.Dir, opts.Writer())
	}
	if socket == pjrt.RoleSocket(opts.Dir, false) {
		// Wrappers of reader processes connect here: whatever the role
		// this process's environment gives, their helper never writes.
		opts.Role = config.RoleReader
	}
	idle, _ := cmd.Flags().GetDuration("idle-exit")
	open := func(ctx context.Context) (*cache.Cache, error) { return xlacache.Open(ctx, opts, slog.Default()) }
	h := pjrt.Helper{Socket: socket, Dir: opts.Dir, Open: open, NormalizeOptions: xla.NormalizeCompileOptions, IdleExit: idle,
		RequireHit: opts.RequireHit}
	// Plugin hashes are kept where the in-process helper keeps them
	// (beside the wrapper's builds, as trusted as the wrapper), so that a
	// helper the wrapper starts does not hash the plugin again; the
	// plugin it wraps is in the environment it inherits.
	buildDir, _ := cmd.Flags().GetString("build-dir")
	if buildDir == "" {
		buildDir, _ = pjrt.DefaultBuildDir() // none: no memo, hashed per start
	}
	if buildDir != "" {
		h.HashMemo = filepath.Join(buildDir, pjrt.HashMemoDir)
	}
	if inner := os.Getenv(pjrt.EnvInner); filepath.IsAbs(inner) {
		h.Plugins = []string{inner}
	}
	return h.Run(cmd.Context())
}

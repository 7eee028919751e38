// Command xlacache inspects and maintains an xlacache cache directory, and
// runs programs through it.
//
// Exit codes: 0 success; 1 failure (including `verify` finding damaged
// entries); 2 usage error (unknown command or flag, bad argument or option
// value); 3 a compile that XLACACHE_REQUIRE_HIT=fail refused (`run`,
// `warm`).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/metrics"
	"github.com/xlacache/xlacache/xla/shareddir"
)

// rootCmd is the `xlacache` command. Other files add subcommands to it from
// their init functions.
var rootCmd = &cobra.Command{
	Use:   "xlacache",
	Short: "A persistent compilation cache for XLA-style ML compilers",
	Long: `xlacache keeps compiled programs, autotuning results and compiled kernels in
one directory (XLACACHE_DIR, or --dir), safe for many processes and bounded
in size. These commands inspect and maintain that directory.

Exit codes: 0 ok; 1 failure, or verify found damaged entries; 2 usage error;
3 a program missed the cache under XLACACHE_REQUIRE_HIT=fail (run, warm);
130 interrupted (Ctrl-C; 128 + the signal's number).`,
	SilenceUsage:  true,
	SilenceErrors: true,
	// Args and RunE make the root runnable, so that cobra checks its
	// arguments with unknownCommand; without arguments it shows the help,
	// as cobra does for a command that does not run.
	Args:                       cli.UnknownCommand,
	RunE:                       func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	SuggestionsMinimumDistance: 2,
	PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
		verbose, _ := cmd.Flags().GetCount("verbose")
		slog.SetDefault(cli.NewLogger(cmd.ErrOrStderr(), verbose))
		if jsonOutput(cmd) && !jsonCommands[cmd.Name()] {
			return cli.Usagef("%s: --json is not supported (JSON output: %s)", cmd.CommandPath(), strings.Join(slices.Sorted(maps.Keys(jsonCommands)), ", "))
		}
		return nil
	},
}

// jsonCommands are the commands that print JSON for --json; every other
// command refuses the flag rather than ignore it.
var jsonCommands = map[string]bool{"stats": true, "ls": true, "verify": true, "explain": true, "warm": true, "env": true, "version": true, "keygen": true}

func init() {
	pf := rootCmd.PersistentFlags()
	pf.String("dir", "", "cache directory (default: $XLACACHE_DIR, else the user cache directory's xlacache)")
	pf.Bool("json", false, "machine-readable JSON output (stats, ls, verify, explain, warm, env, version; keys in the README)")
	pf.CountP("verbose", "v", "log more (-v info, -vv debug)")
	// Every error cobra's flag parsing returns (unknown flag, bad value)
	// is the user's.
	rootCmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return cli.Usage(err) })
}

// loadOptions returns the options for a command: the XLACACHE_*
// environment, with --dir overriding XLACACHE_DIR; when neither names a
// directory, the CLI uses <user cache dir>/xlacache (the library itself has
// no default: no directory means no caching).
func loadOptions(cmd *cobra.Command) (config.Options, error) {
	opts, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		return config.Options{}, cli.Usage(err)
	}
	if f := cmd.Flags().Lookup("dir"); f != nil && f.Changed {
		if f.Value.String() == "" {
			return config.Options{}, cli.Usagef("--dir: empty directory")
		}
		opts.Dir = f.Value.String()
		opts.Sources[config.EnvDir] = config.SourceFlag
	}
	if opts.Dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return config.Options{}, cli.Usagef("no cache directory: set XLACACHE_DIR or --dir (%v)", err)
		}
		opts.Dir = filepath.Join(base, "xlacache")
	}
	binarySizes = opts.BinarySizes
	return opts, nil
}

// jsonOutput reports whether --json was given.
func jsonOutput(cmd *cobra.Command) bool {
	v, _ := cmd.Flags().GetBool("json")
	return v
}

// openAdmin opens the cache for an administrative command: never the shared
// tier (these commands act on the local directory), and as a writer only
// when the command modifies the directory.
func openAdmin(cmd *cobra.Command, write bool) (*cache.Cache, config.Options, error) {
	opts, err := loadOptions(cmd)
	if err != nil {
		return nil, opts, err
	}
	c, err := cache.OpenAdmin(cmd.Context(), opts, write, slog.Default())
	if err != nil {
		return nil, opts, cli.Usage(err)
	}
	return c, c.Options(), nil
}

// loadExistingDir is loadOptions for a command that reads or changes a
// cache directory and must not create one: it fails unless the directory
// exists.
func loadExistingDir(cmd *cobra.Command) (config.Options, error) {
	opts, err := loadOptions(cmd)
	if err != nil {
		return opts, err
	}
	return opts, cli.ExistingDir(opts.Dir)
}

// explainBackends maps a backend name to a constructor, so that
// `xlacache explain program.mlir --backend NAME` can compute key parts.
// Backends register from their own files' init functions.
var explainBackends = map[string]func() cache.Backend{}

func main() {
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the command line args (cli.Run: until it ends or a signal
// stops it) and returns the exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	rootCmd.SetArgs(args)
	rootCmd.SetOut(stdout)
	rootCmd.SetErr(stderr)
	return cli.Run(ctx, "xlacache", stderr, rootCmd.ExecuteContext)
}

// An absent cache directory is an empty cache: before the first compile
// (or from cron, before the first job) the admin commands that only look
// report nothing with exit 0 instead of failing. Their run functions are
// wrapped here, once, rather than each checking for itself.
func init() {
	for _, c := range []*cobra.Command{statsCmd, lsCmd, verifyCmd, clearCmd, pruneCmd} {
		c.RunE = emptyIfAbsent(c.RunE)
	}
}

// emptyIfAbsent returns run, or the empty cache's report when the cache
// directory does not exist. Actions on something else than the local
// directory (prune --shared, verify --restore) always go to run.
func emptyIfAbsent(run func(*cobra.Command, []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		for _, other := range []string{"shared", "restore"} {
			if f := cmd.Flags().Lookup(other); f != nil && f.Changed {
				return run(cmd, args)
			}
		}
		opts, err := loadOptions(cmd)
		if err != nil {
			return err
		}
		if _, err := os.Lstat(opts.Dir); !errors.Is(err, fs.ErrNotExist) {
			return run(cmd, args)
		}
		out, js := cmd.OutOrStdout(), jsonOutput(cmd)
		switch cmd {
		case statsCmd:
			format, err := statsFormat(cmd)
			if err != nil {
				return err
			}
			if format == "prometheus" {
				return metrics.WriteDirStats(cmd.Context(), out, opts.Dir, opts.MaxSize)
			}
			r := shareddir.Stats{Dir: opts.Dir, MaxSize: opts.MaxSize, Areas: map[string]shareddir.Area{},
				Counters: cache.Stats{Errors: map[string]int64{}, Tiers: map[string]cache.TierStats{}}}
			if format == "json" {
				return writeJSON(out, r)
			}
			return writeStatsText(out, r)
		case lsCmd:
			if js {
				return writeJSON(out, []cache.EntryInfo{})
			}
			return writeLsText(out, nil)
		case verifyCmd:
			if js {
				return writeJSON(out, verifyReport{Dir: opts.Dir, VerifyResult: cache.VerifyResult{Bad: []cache.BadEntry{}}})
			}
			_, err := fmt.Fprintf(out, "0 entries checked, 0 damaged (%s does not exist yet)\n", opts.Dir)
			return err
		case clearCmd:
			_, err := fmt.Fprintf(out, "%s: removed 0 item(s) (it does not exist)\n", opts.Dir)
			return err
		}
		_, err = fmt.Fprintf(out, "%s does not exist yet: nothing to prune\n", opts.Dir)
		return err
	}
}

// Command xlacache inspects and maintains an xlacache cache directory, and
// runs programs through it.
//
// Exit codes: 0 success; 1 failure (including `verify` finding damaged
// entries); 2 usage error (unknown command or flag, bad argument or option
// value).
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
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/metrics"
	"github.com/xlacache/xlacache/xla/shareddir"
)

// Exit codes.
const (
	exitOK      = 0
	exitFailure = 1
	exitUsage   = 2
)

// usageError marks an error as the user's mistake in invoking the command
// (exit code 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// usagef returns a usage error.
func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// usageArgs wraps a cobra argument validator so its errors exit with 2.
func usageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// rootCmd is the `xlacache` command. Other files add subcommands to it from
// their init functions.
var rootCmd = &cobra.Command{
	Use:   "xlacache",
	Short: "A persistent compilation cache for XLA-style ML compilers",
	Long: `xlacache keeps compiled programs, autotuning results and compiled kernels in
one directory (XLACACHE_DIR, or --dir), safe for many processes and bounded
in size. These commands inspect and maintain that directory.

Exit codes: 0 ok; 1 failure, or verify found damaged entries; 2 usage error;
130 interrupted (Ctrl-C; 128 + the signal's number).`,
	SilenceUsage:  true,
	SilenceErrors: true,
	// Args and RunE make the root runnable, so that cobra checks its
	// arguments with unknownCommand; without arguments it shows the help,
	// as cobra does for a command that does not run.
	Args:                       unknownCommand,
	RunE:                       func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	SuggestionsMinimumDistance: 2,
	PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
		verbose, _ := cmd.Flags().GetCount("verbose")
		level := slog.LevelWarn
		switch {
		case verbose == 1:
			level = slog.LevelInfo
		case verbose >= 2:
			level = slog.LevelDebug
		}
		redact := config.NewRedactor(os.LookupEnv)
		slog.SetDefault(slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), &slog.HandlerOptions{Level: level,
			// No log line shows the signing key or a URL's credentials.
			ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
				if v := a.Value.Resolve(); v.Kind() == slog.KindString || v.Kind() == slog.KindAny {
					if s := v.String(); s != redact(s) {
						a.Value = slog.StringValue(redact(s))
					}
				}
				return a
			}})))
		if jsonOutput(cmd) && !jsonCommands[cmd.Name()] {
			return usagef("%s: --json is not supported (JSON output: %s)", cmd.CommandPath(), strings.Join(slices.Sorted(maps.Keys(jsonCommands)), ", "))
		}
		return nil
	},
}

// jsonCommands are the commands that print JSON for --json; every other
// command refuses the flag rather than ignore it.
var jsonCommands = map[string]bool{"stats": true, "ls": true, "verify": true, "explain": true, "warm": true, "env": true, "version": true}

func init() {
	pf := rootCmd.PersistentFlags()
	pf.String("dir", "", "cache directory (default: $XLACACHE_DIR, else the user cache directory's xlacache)")
	pf.Bool("json", false, "machine-readable JSON output (stats, ls, verify, explain, warm, env, version; keys in the README)")
	pf.CountP("verbose", "v", "log more (-v info, -vv debug)")
	// Every error cobra's flag parsing returns (unknown flag, bad value)
	// is the user's.
	rootCmd.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error { return usageError{err} })
}

// loadOptions returns the options for a command: the XLACACHE_*
// environment, with --dir overriding XLACACHE_DIR; when neither names a
// directory, the CLI uses <user cache dir>/xlacache (the library itself has
// no default: no directory means no caching).
func loadOptions(cmd *cobra.Command) (config.Options, error) {
	opts, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		return config.Options{}, usageError{err}
	}
	if f := cmd.Flags().Lookup("dir"); f != nil && f.Changed {
		if f.Value.String() == "" {
			return config.Options{}, usagef("--dir: empty directory")
		}
		opts.Dir = f.Value.String()
		opts.Sources[config.EnvDir] = config.SourceFlag
	}
	if opts.Dir == "" {
		base, err := os.UserCacheDir()
		if err != nil {
			return config.Options{}, usagef("no cache directory: set XLACACHE_DIR or --dir (%v)", err)
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
	opts.SharedURL = ""
	if write {
		opts.Role = config.RoleWriter
	} else {
		opts.Role = config.RoleReader
	}
	c, err := cache.Open(cmd.Context(), opts, slog.Default())
	if err != nil {
		return nil, opts, usageError{err}
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
	return opts, existingDir(opts.Dir)
}

// existingDir fails unless dir exists and is a directory.
func existingDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("cache directory %s is not a directory", dir)
	}
	return nil
}

// explainBackends maps a backend name to a constructor, so that
// `xlacache explain program.mlir --backend NAME` can compute key parts.
// Backends register from their own files' init functions.
var explainBackends = map[string]func() cache.Backend{}

func main() {
	os.Exit(execute(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// execute runs the command line args until it ends or a SIGINT or SIGTERM
// arrives, and returns the exit code. An interrupted command exits with
// 128 + the signal's number (130 for Ctrl-C), as a shell reports it and as
// exec does, after one line: what was stored stays, so the next run
// resumes from there.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var got atomic.Value
	go func() {
		select {
		case s := <-sigs:
			got.Store(s)
			cancel()
		case <-ctx.Done():
		}
	}()
	rootCmd.SetArgs(args)
	rootCmd.SetOut(stdout)
	rootCmd.SetErr(stderr)
	err := rootCmd.ExecuteContext(ctx)
	if s, ok := got.Load().(os.Signal); ok {
		return interrupted(s, stderr)
	}
	return exitCode(err, stderr)
}

// interrupted prints the one line of a command stopped by signal s and
// returns 128 + its number.
func interrupted(s os.Signal, stderr io.Writer) int {
	n := 2 // SIGINT
	if ss, ok := s.(syscall.Signal); ok {
		n = int(ss)
	}
	fmt.Fprintf(stderr, "xlacache: interrupted (%v); what was stored is kept, run again to resume\n", s)
	return 128 + n
}

// exitCode prints err (if any) and maps it to the documented exit code.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	fmt.Fprintln(stderr, "xlacache:", config.Redact(err.Error(), os.LookupEnv))
	var ue usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailure
}

// unknownCommand is the root command's argument check. Cobra's own check
// for an unknown subcommand runs only when a command has no Args; it
// returns a plain error, so the root checks its arguments itself to make
// the error a usage error. The message is cobra's.
func unknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return usageError{errors.New(msg)}
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
				return writeJSON(out, verifyReport{Dir: opts.Dir, Bad: []cache.BadEntry{}})
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

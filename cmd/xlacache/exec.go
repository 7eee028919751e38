package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/cli"
	"github.com/xlacache/xlacache/jobrun"
	"github.com/xlacache/xlacache/xla"
	"github.com/xlacache/xlacache/xla/shareddir"
)

// execCmd is `xlacache exec -- CMD ARGS...`: one command in front of each
// process of a job (srun, torchrun, mpirun, a Kubernetes pod), doing for
// every host what JAX's persistent cache does for one.
var execCmd = &cobra.Command{
	Use:   "exec [flags] -- COMMAND [ARGS...]",
	Short: "Run a job's command with the caches set up, the local directory filled from the shared tier and new files published",
	Long: `Run COMMAND as one process of a job, in front of it:

Before it starts: work out the process index and role (XLACACHE_PROCESS_INDEX,
else the launcher's rank variables, as "xlacache env" does) and the host's
leader (SLURM_LOCALID, OMPI_COMM_WORLD_LOCAL_RANK, LOCAL_RANK or
MPI_LOCALRANKID = 0, else whichever process holds the host lock first); set
the environment "xlacache env" prints (JAX's variables, XLACACHE_*, XLA_FLAGS
for --target go); and, once per host, fill the local directory from the
shared tier (XLACACHE_SHARED_URL) with everything it lacks: JAX entries, XLA
autotune files and kernel cache, xlacache entries, each verified (and, with
XLACACHE_SIGNING_KEY, signature-checked) before it is written. The host's
other processes wait for that fill (at most XLACACHE_WAIT_SECS).

While it runs, on the job's writer (process 0) that leads its host: publish
new complete files to the shared tier in packs, first writer wins.

At exit: a final publish, a prune of the local directory to
XLACACHE_MAX_SIZE (on the host's leader), and COMMAND's exit status as
exec's own (128+n when signal n ended it; 127 when COMMAND is not found,
126 when it is not executable). SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1
and SIGUSR2 are passed on to COMMAND.

Only one process per host runs XLA's autotune cache in UPDATE mode, so
several independent JAX processes on one host no longer race on it; JAX's
keys stay identical across them (docs/xla.md, "JAX on a cluster").

A failure of the cache (shared tier down or slow, disk full, bad objects,
a bad XLACACHE_* value or plugin path) never stops COMMAND: one log line per
kind of failure, and with a configuration it cannot use, exec runs COMMAND
unchanged.`,
	Args: cli.UsageArgs(cobra.MinimumNArgs(1)),
	RunE: runExec,
}

// exitProcess ends the process with the command's status; a seam for
// tests.
var exitProcess = os.Exit

func init() {
	f := execCmd.Flags()
	// Everything after COMMAND is COMMAND's, flags included.
	f.SetInterspersed(false)
	f.Int("process-index", 0, "index of the process in its job (default: XLACACHE_PROCESS_INDEX, else the launcher's rank)")
	f.String("target", string(xla.TargetAll), "program kind: all, jax, or go")
	f.String("jaxlib-version", "", "jaxlib / PJRT plugin release of the XLA the command loads (e.g. 0.5.1)")
	f.String("xla-plugin", "", "PJRT plugin file the command loads; read to learn which flags it knows")
	f.String("plugin-name", "", "go-xla plugin name (cuda, cpu) to look up on go-xla's plugin search path")
	f.Duration("poll", 0, "interval of full scans for new files to publish (default 10s, 2s without inotify)")
	rootCmd.AddCommand(execCmd)
}

func runExec(cmd *cobra.Command, args []string) error {
	started := time.Now()
	f := cmd.Flags()
	opts, err := loadOptions(cmd)
	if err != nil {
		// A bad XLACACHE_* value is the cache's problem, not the job's:
		// say which, then run the command as if exec were not there.
		return runPlain(cmd, args, started, err)
	}
	if f.Changed("process-index") {
		idx, _ := f.GetInt("process-index")
		if idx < 0 {
			return cli.Usagef("--process-index %d: must be 0 or more", idx)
		}
		opts.ProcessIndex = idx
	}
	targetText, _ := f.GetString("target")
	target, err := xla.ParseTarget(targetText)
	if err != nil {
		return cli.Usagef("--target: %v", err)
	}
	version, _ := f.GetString("jaxlib-version")
	plugin, _ := f.GetString("xla-plugin")
	pluginName, _ := f.GetString("plugin-name")
	if code, err := jobrun.LookCommand(args[0]); err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "xlacache exec: %v\n", err)
		exitProcess(code)
		return nil
	}
	sup, err := xla.ResolveSupport(cmd.Context(), plugin, pluginName, version, os.LookupEnv)
	if err != nil {
		return runPlain(cmd, args, started, err)
	}
	logger := slog.Default()
	var store blob.Store
	if opts.SharedURL != "" {
		s, err := xlacache.OpenShared(opts.SharedURL, logger)
		if err != nil {
			logger.Warn("xlacache exec: shared tier unusable; the command runs with the local directory only", "err", err)
		} else {
			store = s
			defer s.Close()
		}
	}
	poll, _ := f.GetDuration("poll")
	job := &jobrun.Job{
		Opts: opts, Target: target, Support: sup, Args: args,
		Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		Store: store, Logger: logger, Poll: poll, Started: started,
		JAXLibVersion: version, PluginPath: plugin,
		Prune: func(ctx context.Context, dir string, maxSize int64) error {
			o := opts
			o.Dir, o.MaxSize = dir, maxSize
			_, err := shareddir.PruneDir(ctx, nil, o, logger)
			return err
		},
	}
	stopMetrics := job.StartMetrics()
	rep, err := job.Run(cmd.Context())
	// Before exitProcess, which runs no deferred calls.
	stopMetrics()
	return finishExec(cmd, rep, err)
}

// runPlain runs the command without any cache work, its environment
// unchanged, after one log line naming the configuration problem: exec
// must never be the reason a job does not run.
func runPlain(cmd *cobra.Command, args []string, started time.Time, cause error) error {
	slog.Error("xlacache exec: unusable cache configuration; running the command without the cache", "err", cause)
	// jobrun.Job.Run reports a missing (127) or non-executable (126) command
	// itself, so there is no need to look it up first here.
	job := &jobrun.Job{
		Plain: true, Args: args, Started: started, Logger: slog.Default(),
		Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
	}
	rep, err := job.Run(cmd.Context())
	return finishExec(cmd, rep, err)
}

// finishExec reports a run's error and ends the process with the
// command's exit status.
func finishExec(cmd *cobra.Command, rep jobrun.Report, err error) error {
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "xlacache exec: %v\n", err)
	}
	if errors.Is(err, exec.ErrNotFound) || rep.ExitCode != 0 {
		exitProcess(rep.ExitCode)
	}
	return nil
}

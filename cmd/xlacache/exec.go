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
	"github.com/xlacache/xlacache/backend/xla"
	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/jaxcache"
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
exec's own (128+n when signal n ended it). SIGINT, SIGTERM and SIGHUP are
passed on to COMMAND.

Only one process per host runs XLA's autotune cache in UPDATE mode, so
several independent JAX processes on one host no longer race on it; JAX's
keys stay identical across them (docs/xla.md, "JAX on a cluster").

A failure of the cache (shared tier down or slow, disk full, bad objects)
never stops COMMAND: one log line per kind of failure.`,
	Args: usageArgs(cobra.MinimumNArgs(1)),
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
	opts, err := loadOptions(cmd)
	if err != nil {
		return err
	}
	f := cmd.Flags()
	if f.Changed("process-index") {
		idx, _ := f.GetInt("process-index")
		if idx < 0 {
			return usagef("--process-index %d: must be 0 or more", idx)
		}
		opts.ProcessIndex = idx
	}
	targetText, _ := f.GetString("target")
	target, err := xla.ParseTarget(targetText)
	if err != nil {
		return usagef("--target: %v", err)
	}
	version, _ := f.GetString("jaxlib-version")
	plugin, _ := f.GetString("xla-plugin")
	pluginName, _ := f.GetString("plugin-name")
	sup, err := xla.ResolveSupport(cmd.Context(), plugin, pluginName, version, os.LookupEnv)
	if err != nil {
		return usageError{err}
	}
	if _, err := exec.LookPath(args[0]); err != nil {
		// As a shell does: 127, before any cache work.
		fmt.Fprintf(cmd.ErrOrStderr(), "xlacache exec: %v\n", err)
		exitProcess(127)
		return nil
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
	job := &hostfill.Job{
		Opts: opts, Target: target, Support: sup, Args: args,
		Stdin: cmd.InOrStdin(), Stdout: cmd.OutOrStdout(), Stderr: cmd.ErrOrStderr(),
		Store: store, Logger: logger, Poll: poll, Started: started,
		Prune: func(ctx context.Context, dir string, maxSize int64) error {
			o := opts
			o.Dir, o.MaxSize = dir, maxSize
			_, err := jaxcache.PruneDir(ctx, nil, o, logger)
			return err
		},
	}
	stopMetrics := func() {}
	if opts.MetricsFile != "" {
		// exec's file is the job step's; the command's own xlacache, if
		// it has one, writes beside it rather than over it.
		job.Env = withCommandMetricsFile(os.Environ(), opts.MetricsFile)
		stopMetrics = execMetricsWriter(job, opts, 0, logger)
	}
	rep, err := job.Run(cmd.Context())
	// Before exitProcess, which runs no deferred calls.
	stopMetrics()
	if err != nil {
		fmt.Fprintf(cmd.ErrOrStderr(), "xlacache exec: %v\n", err)
	}
	if errors.Is(err, exec.ErrNotFound) || rep.ExitCode != 0 {
		exitProcess(rep.ExitCode)
	}
	return nil
}

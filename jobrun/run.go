// Package jobrun is the job runner `xlacache exec` is: it runs one
// process of a job (srun, torchrun, mpirun, a Kubernetes pod) in front of
// its cache directory. Before the command starts, one process per host
// fills the directory from the shared tier (package hostfill); the
// command gets the environment `xlacache env` prints, with one XLA
// autotune writer per host; while it runs, the job's writer publishes new
// complete files; at exit it publishes once more and bounds the
// directory. Signals are passed on to the command and its exit status
// comes back as exec's own. A failure of the cache never stops the
// command: it is logged once per kind and counted in the Report.
package jobrun

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/internal/logonce"
	"github.com/xlacache/xlacache/xla"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// forwardedSignals are the signals exec passes on to the command. Besides
// the ones that end a job, SIGQUIT, SIGUSR1 and SIGUSR2: by default they
// would end exec itself (Slurm's --signal=USR1@120 preemption warning is
// meant for the command's checkpoint handler), leaving the command
// without its parent and the launcher reporting the step failed.
var forwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

// Job is one command run under exec.
type Job struct {
	// Opts are the process's options (process index and role already
	// worked out, as `xlacache env` does); Opts.Dir is made absolute.
	Opts config.Options
	// Target and Support are as for `xlacache env`.
	Target  xla.Target
	Support xla.Support
	// Args is the command and its arguments.
	Args []string
	// Env is the command's base environment (KEY=VALUE); nil means
	// os.Environ(). Getenv reads launcher variables; nil means
	// os.LookupEnv.
	Env    []string
	Getenv func(string) (string, bool)
	// Stdin, Stdout and Stderr are the command's; nil means the
	// process's own.
	Stdin          io.Reader
	Stdout, Stderr io.Writer
	// Store is the shared tier, nil for none.
	Store blob.Store
	// Logger receives one line per kind of failure; nil: slog.Default.
	Logger *slog.Logger
	// Poll is the watcher's full-scan interval (hostfill.WatchOptions.Poll).
	Poll time.Duration
	// FinalTimeout bounds the final publish; 0 means 60 s.
	FinalTimeout time.Duration
	// Prune bounds the directory to Opts.MaxSize at exit (on the host's
	// leader); nil skips it.
	Prune func(ctx context.Context, dir string, maxSize int64) error
	// Started is when the process began (for the fill marker); zero means
	// now.
	Started time.Time
	// JAXLibVersion and PluginPath are exec's --jaxlib-version and
	// --xla-plugin: the runtime recorded in the packs published and
	// scoping fills (origin.go); "" lets exec find out what it can.
	JAXLibVersion, PluginPath string
	// Plain runs the command with no cache work at all and its
	// environment unchanged, still forwarding signals and passing its exit
	// status through: what exec does when its own configuration is
	// unusable, since a cache problem must never stop the job.
	Plain bool

	live liveReport
}

// Report says what a run did.
type Report struct {
	// Leader, AutotuneWriter and Publisher are this process's roles on
	// its host: leader of the host, XLA autotune writer (UPDATE), and
	// publisher to the shared tier.
	Leader, AutotuneWriter, Publisher bool
	// LeaderWhy says how leadership was decided, for the log.
	LeaderWhy string
	// Fill is what the host's fill did, as this process saw it.
	Fill hostfill.FillResult
	// Publish is what this process's publishes did (the publisher only).
	Publish hostfill.PublishStats
	// ExitCode is the command's exit status; 128+n when a signal n ended
	// it.
	ExitCode int
	// Requests counts the requests made to the shared tier.
	Requests int64
	// Runtime is this host's runtime as exec learned it (origin.go):
	// fills skipped packs of conflicting runtimes (Fill.Stats.Skipped).
	Runtime hostfill.Runtime
	// JAXMismatches are the modules JAX compiled here that another host
	// had published, with the recorded settings that differ (the
	// leader's report only).
	JAXMismatches []JAXMismatch
	// Errors counts the cache failures by step ("dir", "autotune_dir",
	// "fill", "xla_flags", "env", "list", "publish", "prune", "jax_link",
	// "jax_watch"), each logged once and degraded to running the command
	// without that step.
	Errors map[string]int
	// JAX is what the command did in JAX's directory (jaxactivity.go);
	// nil when this process did not watch it (not the host's leader, no
	// JAX target, or the directory unusable).
	JAX *JAXActivity
	// RequireHitFailed names the programs compiled under
	// XLACACHE_REQUIRE_HIT=fail; ExitCode is then RequireHitExitCode.
	RequireHitFailed []string
}

// Run prepares the directory, runs the command and finishes up, in five
// steps: prepare (the directory, the host's leader and this process's
// roles), fill (once per host, from the shared tier), launch (the
// command, with the cache's environment and the signals passed on),
// publish loop (new files while the command runs) and finish (the final
// publish and the prune at exit). Every failure of the cache is logged
// (once per kind) and leaves the command running normally; the error is
// returned only when the command itself could not be started (then
// ExitCode is 127, as a shell reports it).
func (j *Job) Run(ctx context.Context) (rep Report, runErr error) {
	r := j.prepare()
	defer func() {
		r.close()
		j.live.finish(&rep)
	}()
	if early, ok := r.fill(ctx).(syscall.Signal); ok {
		// A signal before the command started ends the run as it would
		// have ended the command.
		r.rep.ExitCode = 128 + int(early)
		return r.rep, nil
	}
	r.beginJAX(ctx)
	l, err := r.launch()
	if err != nil {
		return r.rep, err
	}
	r.publishLoop(ctx, l)
	r.endJAX(ctx)
	r.finish(ctx)
	r.requireHit()
	return r.rep, nil
}

// run is one Job.Run on its way through the steps.
type run struct {
	j    *Job
	opts config.Options // j.Opts with Dir made absolute
	log  *slog.Logger
	logs *logonce.Logger
	// started is j.Started, or when the run began.
	started time.Time
	// getenv and env are j.Getenv and j.Env, or the process's own.
	getenv func(string) (string, bool)
	env    []string
	// store is j.Store with its requests counted, nil for none.
	store blob.Store
	// sigs receives the forwarded signals from the start of the run.
	sigs chan os.Signal
	// root, o and leader are the directory's; root is nil when the
	// directory is unusable (or the run is Plain).
	root   *os.Root
	o      hostfill.Options
	leader *hostfill.Leader
	pub    *hostfill.Publisher // nil unless this process publishes
	// plain is j.Plain, or set when the directory was refused: the
	// command runs with its environment unchanged and no cache work.
	plain bool
	// shared is set when others can write the directory (accepted for a
	// signing key): it is filled and used, never published from.
	shared bool
	// view is the link JAX is given for the directory (jaxview.go); nil
	// when JAX gets the directory's own path.
	view *jaxView
	// jaxStart is JAX's directory before the command started, nil when
	// this process does not watch it (jaxactivity.go).
	jaxStart *jaxcache.RunStart
	// rejects reads the command's standard error for loads XLA refused
	// (jaxstderr.go), nil when it is not read.
	rejects *rejectScanner
	rep     Report
}

// warn counts a cache failure of kind and logs it once per kind.
func (r *run) warn(kind, what string, err error) {
	r.j.live.addError(kind)
	if errors.Is(err, blob.ErrUnavailable) {
		return // the store's Guard logged it, once per outage
	}
	r.logs.Warn(what+":"+logonce.FailureKey(err), "xlacache exec: "+what+"; the command runs without it", "err", err)
}

// prepare is the first step: the run's defaults, the signals caught from
// now on, the directory, the host's leader and this process's roles.
func (j *Job) prepare() *run {
	r := &run{j: j, opts: j.Opts, log: j.Logger, started: j.Started, getenv: j.Getenv, env: j.Env}
	r.store = j.live.start(j.Store)
	if r.started.IsZero() {
		r.started = time.Now()
	}
	if r.log == nil {
		r.log = slog.Default()
	}
	if r.getenv == nil {
		r.getenv = os.LookupEnv
	}
	if r.env == nil {
		r.env = os.Environ()
	}
	r.logs = logonce.New(r.log)
	if abs, err := filepath.Abs(r.opts.Dir); err == nil {
		r.opts.Dir = abs
	}

	// Signals are caught from the start: one that comes before the command
	// starts cuts the fill short and ends the run as it would have ended
	// the command.
	r.sigs = make(chan os.Signal, 8)
	signal.Notify(r.sigs, forwardedSignals...)

	// The directory: every cache step needs it; the command does not.
	opts := r.opts
	r.plain = j.Plain
	if !r.plain {
		// The same checks as `xlacache run`: a directory another user owns
		// or others can write may hold their executables, which JAX would
		// load and a publisher would sign and ship to every host.
		root, trust, err := cache.CheckDir(opts.Dir, opts)
		switch {
		case errors.Is(err, cache.ErrUntrustedDir):
			r.j.live.addError(errDir)
			r.log.Warn("xlacache exec: refusing the cache directory; running the command without the cache", "err", err)
			r.plain = true
		case err != nil:
			r.warn(errDir, "cache directory unusable", err)
		default:
			r.root, r.shared = root, trust.Shared
			if trust.Shared {
				r.log.Warn("xlacache exec: others can write the cache directory; nothing from it is published", "reason", trust.Why)
			}
		}
	}
	if r.store != nil && !r.plain && !opts.SigningKey.Enabled() {
		r.log.Warn("xlacache exec: "+cache.UnsignedSharedTierWarning, "url", opts.SharedURL)
	}
	if r.root != nil {
		r.o = hostfill.Options{Root: r.root, SigningKey: opts.SigningKey, DirMode: opts.EffectiveDirMode(), FileMode: opts.EffectiveFileMode(),
			MaxObjectSize: opts.EffectiveSharedMaxObjectSize(), Kernels: opts.HasSubcache(config.SubcacheKernels), Logger: r.log}
		r.leader = hostfill.ElectLeader(r.o, r.getenv)
		r.rep.Leader, r.rep.LeaderWhy = r.leader.Is, r.leader.Why
	}
	r.rep.AutotuneWriter = r.rep.Leader && opts.Writer()
	// Never publish from a directory others can write, key or not: the
	// publisher would seal what they planted with this job's key.
	r.rep.Publisher = r.rep.AutotuneWriter && r.store != nil && !r.shared
	r.log.Debug("xlacache exec: roles", "leader", r.rep.Leader, "why", r.rep.LeaderWhy, "autotune_writer", r.rep.AutotuneWriter, "publisher", r.rep.Publisher)
	j.live.set(r.rep)
	if r.rep.AutotuneWriter && opts.HasSubcache(config.SubcacheAutotune) {
		// XLA would create tmp/ 0755 itself; the configured modes keep a
		// shared directory usable by its other users.
		if err := xla.CreateAutotuneDir(opts.Dir, opts.EffectiveDirMode()); err != nil {
			r.warn(errAutotuneDir, "creating the autotune directory failed", err)
		}
	}
	if r.root != nil && (j.Target == xla.TargetJAX || j.Target == xla.TargetAll) {
		v, err := openJAXView(opts.Dir, opts.SharedURL)
		if err != nil {
			r.warn(errJAXLink, "JAX gets the directory's own path, so its keys may differ from other hosts'", err)
		}
		r.view = v
	}
	return r
}

// close releases what prepare took, in the reverse order.
func (r *run) close() {
	r.view.Close()
	if r.leader != nil {
		r.leader.Release()
	}
	if r.root != nil {
		r.root.Close()
	}
	signal.Stop(r.sigs)
}

// fill is the second step: once per host, the directory is filled from
// the shared tier. It returns the signal that came before the command
// could start, if any, which cuts the fill short.
func (r *run) fill(ctx context.Context) (early os.Signal) {
	r.scope(ctx)
	if r.root != nil && r.store != nil {
		fillCtx, cancelFill := context.WithCancel(ctx)
		fillDone := make(chan struct{})
		caught := make(chan os.Signal, 1)
		go func() {
			select {
			case s := <-r.sigs:
				caught <- s
				cancelFill()
			case <-fillDone:
				caught <- nil
			}
		}()
		fr, err := hostfill.CoordinatedFill(fillCtx, r.store, r.o, r.started, r.opts.WaitTimeout)
		close(fillDone)
		early = <-caught
		cancelFill()
		r.rep.Fill = fr
		r.j.live.set(r.rep)
		if err != nil {
			r.warn(errFill, "filling the local directory from the shared tier failed", err)
		}
		if fr.Filled {
			r.log.Info("xlacache exec: filled the local directory", "files", fr.Stats.Files, "bytes", fr.Stats.Bytes,
				"packs", fr.Stats.PacksFetched, "present", fr.Stats.Present, "refused", fr.Stats.Refused)
			r.reportSkipped(fr.Stats)
		}
	}
	if early == nil && ctx.Err() != nil {
		// The caller's context ended by a signal it caught itself.
		select {
		case early = <-r.sigs:
		default:
		}
	}
	return early
}

// launched is the command while it runs, with the goroutines that serve
// it (passing signals on, watching for files to publish).
type launched struct {
	cmd  *exec.Cmd
	done chan struct{} // closed once the command has exited
	wg   sync.WaitGroup
}

// launch is the third step: the command starts with the cache's
// environment, and the signals exec catches are passed on to it.
func (r *run) launch() (*launched, error) {
	j := r.j
	cmdEnv := r.commandEnv()
	if len(j.Args) == 0 {
		return nil, errors.New("no command")
	}
	r.recordSettings(cmdEnv)
	cmd := exec.Command(j.Args[0], j.Args[1:]...)
	cmd.Env = cmdEnv
	// Once the command has exited, exec waits at most this long for the
	// copying of its standard streams (when they are not files) to end: a
	// background process the command left behind may hold them open for
	// ever.
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin, cmd.Stdout, cmd.Stderr = orStd(j.Stdin, os.Stdin), orStdW(j.Stdout, os.Stdout), r.scanStderr(orStdW(j.Stderr, os.Stderr))
	if err := cmd.Start(); err != nil {
		// As a shell reports it: 126 for a command found but not
		// executable, 127 otherwise.
		r.rep.ExitCode = 127
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			r.rep.ExitCode = 126
		}
		return nil, fmt.Errorf("starting %s: %w", j.Args[0], err)
	}
	l := &launched{cmd: cmd, done: make(chan struct{})}
	fg := inForeground()
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		for {
			select {
			case s := <-r.sigs:
				if (s == syscall.SIGINT || s == syscall.SIGQUIT) && fg && inOurGroup(cmd.Process.Pid) {
					continue // the terminal sent it to the command too
				}
				_ = cmd.Process.Signal(s)
			case <-l.done:
				return
			}
		}
	}()
	return l, nil
}

// commandEnv is the command's environment: the caller's, with what
// `xlacache env` sets for this process (unchanged when Plain, or when
// that cannot be worked out).
func (r *run) commandEnv() []string {
	j, env := r.j, r.env
	existing, _ := r.getenv(xla.EnvXLAFlags)
	if j.Target == xla.TargetGo {
		// XLA_FLAGS may name a file of flags: merge with its content.
		if inl, err := xla.InlineFlags(existing); err != nil {
			r.warn(errXLAFlags, "reading the XLA_FLAGS file failed", err)
		} else {
			existing = inl
		}
	}
	if r.plain {
		return env // the environment stays the caller's
	}
	jaxDir := r.opts.Dir
	if r.view != nil {
		jaxDir = r.view.Path
	}
	l, err := launchFor(r.opts, jaxDir, j.Target, j.Support, existing, r.rep.AutotuneWriter)
	if err != nil {
		r.warn(errEnv, "working out the cache environment failed", err)
		return env
	}
	return environ(env, r.observeAllCompiles(l))
}

// publishLoop is the fourth step: on the publisher, new complete files go
// to the shared tier while the command runs. It returns once the command
// has exited and every goroutine serving it has ended.
func (r *run) publishLoop(ctx context.Context, l *launched) {
	wctx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	if r.rep.Publisher {
		pub, err := hostfill.PublisherAfterFill(context.WithoutCancel(ctx), r.store, r.o, r.rep.Fill, r.opts.WaitTimeout)
		if err != nil {
			r.warn(errList, "listing the shared tier failed", err)
		}
		r.pub = pub
		r.j.live.setPublisher(pub)
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			hostfill.Watch(wctx, pub, hostfill.WatchOptions{Dir: r.opts.Dir, Poll: r.j.Poll,
				OnError: func(err error) { r.warn(errPublish, "publishing to the shared tier failed", err) }})
		}()
	}
	werr := l.cmd.Wait()
	r.rep.ExitCode = exitStatus(l.cmd.ProcessState, werr)
	stopWatch()
	close(l.done)
	l.wg.Wait()
}

// finish is the last step, once the command has exited: the final
// publish and, on the host's leader, the prune of the directory, each
// within FinalTimeout. A signal now (the user or the launcher giving up
// on a slow final publish) cuts them short; the command's status stands.
func (r *run) finish(ctx context.Context) {
	final := r.j.FinalTimeout
	if final <= 0 {
		final = 60 * time.Second
	}
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-r.sigs:
			stop()
		case <-finished:
		}
	}()
	if r.pub != nil {
		fctx, cancel := context.WithTimeout(sctx, final)
		err := r.pub.Publish(fctx, true)
		cancel()
		if err != nil {
			r.warn(errPublish, "publishing to the shared tier failed", err)
		}
		r.rep.Publish = r.pub.Stats()
		if r.rep.Publish.Incomplete > 0 {
			r.log.Info("xlacache exec: files left unpublished: incomplete or not of their kind", "count", r.rep.Publish.Incomplete)
		}
	}
	r.explainJAX(sctx)
	if r.rep.Leader && r.opts.MaxSize > 0 && r.j.Prune != nil {
		// A budget of its own: a slow store that used up the publish's
		// must not leave the local directory unbounded.
		pctx, cancel := context.WithTimeout(sctx, final)
		defer cancel()
		if err := r.j.Prune(pctx, r.opts.Dir, r.opts.MaxSize); err != nil {
			r.warn(errPrune, "pruning the local directory failed", err)
		}
	}
}

func orStd(r io.Reader, d *os.File) io.Reader {
	if r != nil {
		return r
	}
	return d
}

func orStdW(w io.Writer, d *os.File) io.Writer {
	if w != nil {
		return w
	}
	return d
}

// inForeground reports whether exec runs in the foreground process group
// of the terminal on its standard input. A Ctrl-C there reaches every
// process of the group, the command included, so exec does not pass that
// SIGINT on as well (the command would see it twice).
func inForeground() bool {
	pg, err := unix.IoctlGetInt(int(os.Stdin.Fd()), unix.TIOCGPGRP)
	return err == nil && pg == unix.Getpgrp()
}

// inOurGroup reports whether process pid is in exec's process group, so
// that a terminal's Ctrl-C reaches it without exec. A command that moved
// itself to a group of its own (setsid, setpgid) gets it from exec only.
func inOurGroup(pid int) bool {
	pg, err := unix.Getpgid(pid)
	return err == nil && pg == unix.Getpgrp()
}

// exitStatus is the status a shell reports for the command: its exit
// code, or 128+n when signal n ended it.
func exitStatus(ps *os.ProcessState, err error) int {
	if ps == nil {
		if err != nil {
			return 1
		}
		return 0
	}
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

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

	"github.com/xlacache/xlacache/backend/xla"
	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/logonce"
)

// ForwardedSignals are the signals exec passes on to the command. Besides
// the ones that end a job, SIGQUIT, SIGUSR1 and SIGUSR2: by default they
// would end exec itself (Slurm's --signal=USR1@120 preemption warning is
// meant for the command's checkpoint handler), leaving the command
// without its parent and the launcher reporting the step failed.
var ForwardedSignals = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2}

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
	// Poll is the watcher's full-scan interval (WatchOptions.Poll).
	Poll time.Duration
	// FinalTimeout bounds the final publish; 0 means 60 s.
	FinalTimeout time.Duration
	// Prune bounds the directory to Opts.MaxSize at exit (on the host's
	// leader); nil skips it.
	Prune func(ctx context.Context, dir string, maxSize int64) error
	// Started is when the process began (for the fill marker); zero means
	// now.
	Started time.Time
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
	LeaderWhy                         string
	Fill                              FillResult
	Publish                           PublishStats
	// ExitCode is the command's exit status; 128+n when a signal n ended
	// it.
	ExitCode int
	// Requests counts the requests made to the shared tier.
	Requests int64
	// Errors counts the cache failures by step (the Err* kinds), each
	// logged once and degraded to running the command without that step.
	Errors map[string]int
}

// Run prepares the directory, runs the command and finishes up. Every
// failure of the cache is logged (once per kind) and leaves the command
// running normally; the error is returned only when the command itself
// could not be started (then ExitCode is 127, as a shell reports it).
func (j *Job) Run(ctx context.Context) (rep Report, runErr error) {
	store := j.live.start(j.Store)
	defer func() { j.live.finish(&rep) }()
	started := j.Started
	if started.IsZero() {
		started = time.Now()
	}
	log := j.Logger
	if log == nil {
		log = slog.Default()
	}
	logs := logonce.New(log)
	warn := func(kind, what string, err error) {
		j.live.addError(kind)
		if errors.Is(err, blob.ErrUnavailable) {
			return // the store's Guard logged it, once per outage
		}
		logs.Warn(what+":"+logonce.FailureKey(err), "xlacache exec: "+what+"; the command runs without it", "err", err)
	}
	getenv := j.Getenv
	if getenv == nil {
		getenv = os.LookupEnv
	}
	env := j.Env
	if env == nil {
		env = os.Environ()
	}
	opts := j.Opts
	if abs, err := filepath.Abs(opts.Dir); err == nil {
		opts.Dir = abs
	}

	// Signals are caught from the start: one that comes before the command
	// starts cuts the fill short and ends the run as it would have ended
	// the command.
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, ForwardedSignals...)
	defer signal.Stop(sigs)

	// The directory: every cache step needs it; the command does not.
	var o Options
	var root *os.Root
	var leader *Leader
	if j.Plain {
		// No directory, so no leader, fill, publish or prune.
	} else if err := os.MkdirAll(opts.Dir, opts.EffectiveDirMode()); err != nil {
		warn(ErrDir, "cache directory unusable", err)
	} else if root, err = os.OpenRoot(opts.Dir); err != nil {
		warn(ErrDir, "cache directory unusable", err)
	}
	if root != nil {
		defer root.Close()
		o = Options{Root: root, SigningKey: opts.SigningKey, DirMode: opts.EffectiveDirMode(), FileMode: opts.EffectiveFileMode(),
			MaxObjectSize: opts.EffectiveSharedMaxObjectSize(), Kernels: opts.HasSubcache(config.SubcacheKernels), Logger: log}
		leader = ElectLeader(o, getenv)
		defer leader.Release()
		rep.Leader, rep.LeaderWhy = leader.Is, leader.Why
	}
	rep.AutotuneWriter = rep.Leader && opts.Writer()
	rep.Publisher = rep.AutotuneWriter && store != nil
	log.Debug("xlacache exec: roles", "leader", rep.Leader, "why", rep.LeaderWhy, "autotune_writer", rep.AutotuneWriter, "publisher", rep.Publisher)
	j.live.set(rep)
	if rep.AutotuneWriter && opts.HasSubcache(config.SubcacheAutotune) {
		// XLA would create tmp/ 0755 itself; the configured modes keep a
		// shared directory usable by its other users.
		if err := xla.CreateAutotuneDir(opts.Dir, opts.EffectiveDirMode()); err != nil {
			warn(ErrAutotuneDir, "creating the autotune directory failed", err)
		}
	}
	var early os.Signal
	if root != nil && store != nil {
		fillCtx, cancelFill := context.WithCancel(ctx)
		fillDone := make(chan struct{})
		caught := make(chan os.Signal, 1)
		go func() {
			select {
			case s := <-sigs:
				caught <- s
				cancelFill()
			case <-fillDone:
				caught <- nil
			}
		}()
		fr, err := CoordinatedFill(fillCtx, store, o, started, opts.WaitTimeout)
		close(fillDone)
		early = <-caught
		cancelFill()
		rep.Fill = fr
		j.live.set(rep)
		if err != nil {
			warn(ErrFill, "filling the local directory from the shared tier failed", err)
		}
		if fr.Filled {
			log.Info("xlacache exec: filled the local directory", "files", fr.Stats.Files, "bytes", fr.Stats.Bytes,
				"packs", fr.Stats.PacksFetched, "present", fr.Stats.Present, "refused", fr.Stats.Refused)
		}
	}

	if early == nil && ctx.Err() != nil {
		// The caller's context ended by a signal it caught itself.
		select {
		case early = <-sigs:
		default:
		}
	}
	if ws, ok := early.(syscall.Signal); ok {
		rep.ExitCode = 128 + int(ws)
		return rep, nil
	}

	existing, _ := getenv(xla.EnvXLAFlags)
	if j.Target == xla.TargetGo {
		// XLA_FLAGS may name a file of flags: merge with its content.
		if inl, err := xla.InlineFlags(existing); err != nil {
			warn(ErrXLAFlags, "reading the XLA_FLAGS file failed", err)
		} else {
			existing = inl
		}
	}
	cmdEnv := env
	if j.Plain {
		// The environment stays the caller's.
	} else if l, err := LaunchFor(opts, j.Target, j.Support, existing, rep.AutotuneWriter); err != nil {
		warn(ErrEnv, "working out the cache environment failed", err)
	} else {
		cmdEnv = Environ(env, l)
	}

	if len(j.Args) == 0 {
		return rep, errors.New("no command")
	}
	cmd := exec.Command(j.Args[0], j.Args[1:]...)
	cmd.Env = cmdEnv
	// Once the command has exited, exec waits at most this long for the
	// copying of its standard streams (when they are not files) to end: a
	// background process the command left behind may hold them open for
	// ever.
	cmd.WaitDelay = 2 * time.Second
	cmd.Stdin, cmd.Stdout, cmd.Stderr = orStd(j.Stdin, os.Stdin), orStdW(j.Stdout, os.Stdout), orStdW(j.Stderr, os.Stderr)
	if err := cmd.Start(); err != nil {
		// As a shell reports it: 126 for a command found but not
		// executable, 127 otherwise.
		rep.ExitCode = 127
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC) {
			rep.ExitCode = 126
		}
		return rep, fmt.Errorf("starting %s: %w", j.Args[0], err)
	}
	done := make(chan struct{})
	fg := inForeground()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case s := <-sigs:
				if (s == syscall.SIGINT || s == syscall.SIGQUIT) && fg && inOurGroup(cmd.Process.Pid) {
					continue // the terminal sent it to the command too
				}
				_ = cmd.Process.Signal(s)
			case <-done:
				return
			}
		}
	}()
	var pub *Publisher
	wctx, stopWatch := context.WithCancel(context.WithoutCancel(ctx))
	if rep.Publisher {
		remote := rep.Fill.Stats.Remote
		if !rep.Fill.Filled {
			// Another process on the host filled: learn what the store
			// has from the indexes (kept locally by that fill), so as not
			// to publish the filled files again.
			lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), fillBound(opts.WaitTimeout))
			var err error
			remote, err = RemoteNames(lctx, store, o)
			cancel()
			if err != nil {
				warn(ErrList, "listing the shared tier failed", err)
			}
		}
		pub = NewPublisher(store, o, remote)
		j.live.setPublisher(pub)
		wg.Add(1)
		go func() {
			defer wg.Done()
			Watch(wctx, pub, WatchOptions{Dir: opts.Dir, Poll: j.Poll, OnError: func(err error) { warn(ErrPublish, "publishing to the shared tier failed", err) }})
		}()
	}
	werr := cmd.Wait()
	rep.ExitCode = exitStatus(cmd.ProcessState, werr)
	stopWatch()
	close(done)
	wg.Wait()

	final := j.FinalTimeout
	if final <= 0 {
		final = 60 * time.Second
	}
	// A signal now (the user or the launcher giving up on a slow final
	// publish) cuts the final steps short; the command's status stands.
	sctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	finished := make(chan struct{})
	defer close(finished)
	go func() {
		select {
		case <-sigs:
			stop()
		case <-finished:
		}
	}()
	if pub != nil {
		fctx, cancel := context.WithTimeout(sctx, final)
		err := pub.Publish(fctx, true)
		cancel()
		if err != nil {
			warn(ErrPublish, "publishing to the shared tier failed", err)
		}
		rep.Publish = pub.Stats()
		if rep.Publish.Incomplete > 0 {
			log.Info("xlacache exec: files left unpublished: incomplete or not of their kind", "count", rep.Publish.Incomplete)
		}
	}
	if rep.Leader && opts.MaxSize > 0 && j.Prune != nil {
		// A budget of its own: a slow store that used up the publish's
		// must not leave the local directory unbounded.
		pctx, cancel := context.WithTimeout(sctx, final)
		defer cancel()
		if err := j.Prune(pctx, opts.Dir, opts.MaxSize); err != nil {
			warn(ErrPrune, "pruning the local directory failed", err)
		}
	}
	return rep, nil
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

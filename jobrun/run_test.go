package jobrun

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/xla"
)

// envRunChild makes the test binary the command a Job runs: "usr1" waits
// for SIGUSR1 and exits 42; "write" writes an autotune file into the
// cache directory and exits 0; "orphan" starts a background sleep that
// keeps its standard output, prints its pid and exits 0; "printdir"
// prints the XLACACHE_DIR it was given and exits 0; "fakejax" stands in
// for a JAX process (scope_test.go).
const envRunChild = "HOSTFILL_TEST_RUN_CHILD"

func TestMain(m *testing.M) {
	switch os.Getenv(envRunChild) {
	case "":
		os.Exit(m.Run())
	case "usr1":
		c := make(chan os.Signal, 1)
		signal.Notify(c, syscall.SIGUSR1)
		fmt.Println("ready")
		<-c
		os.Exit(42)
	case "write":
		dir := filepath.Join(os.Getenv("XLACACHE_DIR"), filepath.FromSlash(autotuneName(0)))
		if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
			os.Exit(3)
		}
		if err := os.WriteFile(dir, []byte("results { child: 1 }\n"), 0o600); err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	case "fakejax":
		os.Exit(fakeJAX())
	case "printdir":
		// What exec pointed the command at: nothing when it ran it plain.
		d, set := os.LookupEnv("XLACACHE_DIR")
		fmt.Printf("XLACACHE_DIR=%q set=%v\n", d, set)
		os.Exit(0)
	case "orphan":
		bg := exec.Command("sleep", "300")
		bg.Stdout = os.Stdout
		if err := bg.Start(); err != nil {
			os.Exit(6)
		}
		fmt.Println(bg.Process.Pid)
		os.Exit(0)
	}
	os.Exit(5)
}

// noLauncher is the environment of a process no launcher started.
func noLauncher(string) (string, bool) { return "", false }

// autotuneName is the name of XLA autotune file i, as hostfill's tests
// make them.
func autotuneName(i int) string {
	return fmt.Sprintf("xla_gpu_per_fusion_autotune_cache_dir/%s.textproto", hex.EncodeToString([]byte(fmt.Sprintf("file%06d", i))))
}

func testJob(t *testing.T, child string) *Job {
	t.Helper()
	opts := config.Defaults()
	opts.Dir = t.TempDir()
	return &Job{
		Opts: opts, Target: xla.TargetGo, Support: xla.SupportForVersion(xla.DefaultVersion, xla.SourceDefault),
		Args:   []string{os.Args[0]},
		Env:    append(os.Environ(), envRunChild+"="+child),
		Getenv: noLauncher,
		Stdin:  eofReader{},
	}
}

type eofReader struct{}

func (eofReader) Read([]byte) (int, error) { return 0, io.EOF }

// TestRunForwardsUSR1: a SIGUSR1 that reaches exec (Slurm's preemption
// warning) is passed to the command, which handles it, and does not end
// exec itself; the command's own status comes back.
func TestRunForwardsUSR1(t *testing.T) {
	j := testJob(t, "usr1")
	pr, pw := io.Pipe()
	j.Stdout = pw
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(pr).ReadString('\n')
		if err == nil && line != "ready\n" {
			err = fmt.Errorf("child said %q", line)
		}
		ready <- err
		_, _ = io.Copy(io.Discard, pr)
	}()
	type result struct {
		rep Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := j.Run(context.Background())
		pw.Close()
		done <- result{rep, err}
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case r := <-done:
		t.Fatalf("run ended before the command was ready: %+v %v", r.rep, r.err)
	}
	// The command runs, so exec's handler is in place.
	if err := syscall.Kill(os.Getpid(), syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.err != nil || r.rep.ExitCode != 42 {
		t.Fatalf("exit %d, %v; want the command's 42", r.rep.ExitCode, r.err)
	}
}

// finalHangStore accepts reads but completes no write until its context
// ends, as a store that has gone slow does; it says when a write with a
// deadline (the final publish's; the watcher's have none) begins.
type finalHangStore struct {
	blob.Store
	entered chan struct{}
}

func (s *finalHangStore) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	if _, ok := ctx.Deadline(); ok {
		select {
		case s.entered <- struct{}{}:
		default:
		}
	}
	<-ctx.Done()
	return ctx.Err()
}

// TestRunSignalCutsFinalPublishShort: a signal while the final publish
// waits on a slow store ends it at once (rather than after
// FinalTimeout); the command's status stands.
func TestRunSignalCutsFinalPublishShort(t *testing.T) {
	j := testJob(t, "write")
	store := &finalHangStore{Store: memblob.New(memblob.Options{}), entered: make(chan struct{}, 1)}
	j.Store = store
	j.FinalTimeout = time.Hour
	j.Poll = time.Hour
	j.Stdout, j.Stderr = io.Discard, io.Discard
	done := make(chan Report, 1)
	go func() {
		rep, err := j.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	select {
	case <-store.entered:
	case rep := <-done:
		t.Fatalf("no final publish: %+v", rep)
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case rep := <-done:
		if rep.ExitCode != 0 || !rep.Publisher {
			t.Errorf("exit %d, publisher %v; want 0 and true", rep.ExitCode, rep.Publisher)
		}
	case <-time.After(time.Minute):
		t.Fatal("the final publish went on after a signal")
	}
}

// TestRunNotExecutable: a command that exists but cannot be executed ends
// the run as a shell does, with 126 (127 is for one not found).
func TestRunNotExecutable(t *testing.T) {
	j := testJob(t, "write")
	p := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(p, []byte("#!/bin/sh\nexit 0\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	j.Args = []string{p}
	rep, err := j.Run(context.Background())
	if err == nil || rep.ExitCode != 126 {
		t.Errorf("exit %d, %v; want 126 and an error", rep.ExitCode, err)
	}
	j.Args = []string{filepath.Join(t.TempDir(), "missing")}
	rep, err = j.Run(context.Background())
	if err == nil || rep.ExitCode != 127 {
		t.Errorf("missing command: exit %d, %v; want 127 and an error", rep.ExitCode, err)
	}
}

// TestRunPruneHasItsOwnBudget: a store slow enough to use up the final
// publish's time does not leave the prune at exit without any.
func TestRunPruneHasItsOwnBudget(t *testing.T) {
	j := testJob(t, "write")
	j.Store = &finalHangStore{Store: memblob.New(memblob.Options{}), entered: make(chan struct{}, 1)}
	j.FinalTimeout = 2 * time.Second
	j.Poll = time.Hour
	j.Opts.MaxSize = 1 << 30
	j.Stdout, j.Stderr = io.Discard, io.Discard
	var pruneErr error
	pruned := false
	j.Prune = func(ctx context.Context, dir string, maxSize int64) error {
		pruned, pruneErr = true, ctx.Err()
		return nil
	}
	rep, err := j.Run(context.Background())
	if err != nil || rep.ExitCode != 0 {
		t.Fatalf("exit %d, %v", rep.ExitCode, err)
	}
	if !pruned || pruneErr != nil {
		t.Errorf("prune ran %v with its context already done (%v)", pruned, pruneErr)
	}
}

// TestRunLeavesNothingBehind: a run with a fill, a watcher and a final
// publish closes every file it opened and ends every goroutine it started.
func TestRunLeavesNothingBehind(t *testing.T) {
	fds := func() int {
		ents, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Skip("no /proc/self/fd")
		}
		return len(ents)
	}
	run := func() {
		j := testJob(t, "write")
		j.Store = memblob.New(memblob.Options{})
		j.Stdout, j.Stderr = io.Discard, io.Discard
		j.Opts.MaxSize = 1 << 30
		j.Prune = func(context.Context, string, int64) error { return nil }
		rep, err := j.Run(context.Background())
		if err != nil || rep.ExitCode != 0 || !rep.Publisher || rep.Publish.Files != 1 {
			t.Fatalf("%+v %v", rep, err)
		}
	}
	run() // first use starts what lives for the process (signal handling)
	g0, f0 := runtime.NumGoroutine(), fds()
	run()
	if f := fds(); f != f0 {
		t.Errorf("%d open files after a run, %d before", f, f0)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > g0 {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after a run, %d before:\n%s", runtime.NumGoroutine(), g0, buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(10 * time.Millisecond) // goroutines that were told to end are ending
	}
}

// TestRunCommandLeavesBackgroundProcess: a command that exits leaving a
// background process holding its output open does not keep the run (and
// the job step) from ending; the command's status comes back.
func TestRunCommandLeavesBackgroundProcess(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1)")
	}
	j := testJob(t, "orphan")
	var out lockedBuffer
	j.Stdout = &out
	done := make(chan Report, 1)
	go func() {
		rep, err := j.Run(context.Background())
		if err != nil {
			t.Error(err)
		}
		done <- rep
	}()
	select {
	case rep := <-done:
		if rep.ExitCode != 0 {
			t.Errorf("exit %d, want 0", rep.ExitCode)
		}
	case <-time.After(time.Minute):
		t.Error("the run waited for the command's background process")
	}
	var pid int
	if _, err := fmt.Sscanf(out.String(), "%d", &pid); err == nil && pid > 0 {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestInOurGroup: a command in exec's process group gets a terminal's
// Ctrl-C itself; one that has a group of its own does not, so exec must
// pass it on.
func TestInOurGroup(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("no sleep(1)")
	}
	for _, own := range []bool{false, true} {
		c := exec.Command("sleep", "60")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: own}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		got := inOurGroup(c.Process.Pid)
		_ = c.Process.Kill()
		_ = c.Wait()
		if got == own {
			t.Errorf("own group %v: inOurGroup %v", own, got)
		}
	}
}

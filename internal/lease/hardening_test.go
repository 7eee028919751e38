package lease

// Regression tests for issue 10 (items 3, 9, 10 and 11 for leases): clock
// skew, wrong-type and garbage leases, FIFOs, and one log line per failure
// kind per process. They use only what the package had before the fix, so
// that they can be run against the old code to see them fail.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testsupport/hangtest"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

// logBuf collects a manager's log lines; safe for the heartbeat goroutines.
type logBuf struct{ logtest.Buffer }

// lines returns the lines logged at Info or above.
func (b *logBuf) lines() []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if l != "" && !strings.Contains(l, "level=DEBUG") {
			out = append(out, l)
		}
	}
	return out
}

// wantLines fails unless exactly n lines at Info or above were logged, each
// containing want.
func (b *logBuf) wantLines(t *testing.T, n int, want string) {
	t.Helper()
	got := b.lines()
	if len(got) != n {
		t.Fatalf("%d log lines, want %d:\n%s", len(got), n, strings.Join(got, "\n"))
	}
	for _, l := range got {
		if !strings.Contains(l, want) {
			t.Fatalf("log line %q does not mention %q", l, want)
		}
	}
}

// loggedManager is newManager with its log captured (Debug included, so
// that repeats demoted to Debug are seen but not counted).
func loggedManager(t *testing.T, dir string, mod func(*Options)) (*Manager, *logBuf) {
	t.Helper()
	lb := &logBuf{}
	m := newManager(t, dir, func(o *Options) {
		o.Logger = slog.New(slog.NewTextHandler(lb, &slog.HandlerOptions{Level: slog.LevelDebug}))
		if mod != nil {
			mod(o)
		}
	})
	return m, lb
}

// acquireWithin runs Acquire and fails the test if it has not returned
// within bound: a process blocked in open(2) on a FIFO never returns, and
// the test must report that rather than hang.
func acquireWithin(t *testing.T, m *Manager, name string, bound time.Duration) (release func(), took time.Duration) {
	t.Helper()
	type result struct {
		release func()
		err     error
	}
	done := make(chan result, 1)
	start := time.Now()
	go func() {
		r, err := m.Acquire(context.Background(), name, func() bool { return false })
		done <- result{r, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatalf("Acquire(%q): %v", name, r.err)
		}
		if r.release == nil {
			t.Fatalf("Acquire(%q): nil release although the entry is not ready", name)
		}
		return r.release, time.Since(start)
	case <-time.After(bound):
		t.Fatalf("Acquire(%q) still blocked after %v", name, bound)
		return nil, 0
	}
}

// skewedHolder plays a live holder on another host whose clock is off by
// skew: it writes its lease and refreshes the mtime with its own (wrong)
// time every heartbeat until stop is closed.
func skewedHolder(t *testing.T, m *Manager, name string, skew time.Duration, stop <-chan struct{}) (token string, done <-chan struct{}) {
	t.Helper()
	token = "skewed-holder"
	writeForeignLease(t, m, name, Holder{Host: "far", HostID: "far", PID: 1, Token: token, Name: name}, time.Now().Add(skew))
	return token, heartbeat(m.Path(name), m.opts.Stale/4, skew, stop)
}

// heartbeat plays a holder's heartbeat on path: every interval until stop
// is closed it sets the file's mtime to the time of a clock off by skew.
// The returned channel is closed once it has stopped.
func heartbeat(path string, every, skew time.Duration, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
				at := time.Now().Add(skew)
				os.Chtimes(path, at, at)
			}
		}
	}()
	return done
}

// Item 9: a live lease of a host whose clock is behind (or ahead) is never
// taken over, however old its mtime looks by this host's clock.
func TestSkewedClockLiveLeaseNotTakenOver(t *testing.T) {
	for _, skew := range []time.Duration{-6 * time.Minute, -48 * time.Hour, time.Hour} {
		t.Run(fmt.Sprint("skew=", skew), func(t *testing.T) {
			m, logs := loggedManager(t, t.TempDir(), func(o *Options) {
				o.NoPIDCheck = true
				o.Wait = 3 * o.Stale
			})
			stop := make(chan struct{})
			token, done := skewedHolder(t, m, "k", skew, stop)
			defer func() { close(stop); <-done }()
			release, took := acquireWithin(t, m, "k", 30*time.Second)
			release()
			h, _, err := readLease(m.Path("k"))
			if err != nil || h.Token != token {
				t.Fatalf("live lease of a skewed-clock holder taken over after %v: %+v %v", took, h, err)
			}
			if took < m.opts.Wait {
				t.Fatalf("gave up after %v, before the wait bound %v", took, m.opts.Wait)
			}
			logs.wantLines(t, 1, "waited too long")
		})
	}
}

// Item 9: a dead holder whose mtime looks ancient by this host's clock is
// taken over only once this process has watched its heartbeat stand still
// for the stale interval, never at first sight.
func TestSkewedClockDeadLeaseTakenOverAfterStale(t *testing.T) {
	m, logs := loggedManager(t, t.TempDir(), func(o *Options) { o.NoPIDCheck = true })
	writeForeignLease(t, m, "k", Holder{Host: "far", HostID: "far", PID: 1, Token: "dead", Name: "k"}, time.Now().Add(-48*time.Hour))
	release, took := acquireWithin(t, m, "k", 30*time.Second)
	h, _, err := readLease(m.Path("k"))
	if err != nil || h.PID != os.Getpid() || h.Token == "dead" {
		t.Fatalf("stale lease not taken over: %+v %v", h, err)
	}
	release()
	if took < m.opts.Stale {
		t.Fatalf("took over after %v, before watching the heartbeat for the stale interval %v", took, m.opts.Stale)
	}
	logs.wantLines(t, 1, "took over a stale lease")
}

// plant puts something that is not a regular lease file at path.
type plant struct {
	name string
	make func(t *testing.T, path string)
	// check verifies afterwards that the planted thing was left alone.
	check func(t *testing.T, path string)
}

func wrongTypePlants(outside string) []plant {
	isType := func(mode os.FileMode) func(t *testing.T, path string) {
		return func(t *testing.T, path string) {
			t.Helper()
			st, err := os.Lstat(path)
			if err != nil || st.Mode().Type() != mode {
				t.Fatalf("planted file changed: %v %v", st, err)
			}
		}
	}
	return []plant{
		{"empty directory", func(t *testing.T, p string) { mustDo(t, os.Mkdir(p, 0o700)) }, isType(os.ModeDir)},
		{"directory with a file", func(t *testing.T, p string) {
			mustDo(t, os.Mkdir(p, 0o700))
			mustDo(t, os.WriteFile(filepath.Join(p, "x"), nil, 0o600))
		}, isType(os.ModeDir)},
		{"FIFO", func(t *testing.T, p string) { mustDo(t, syscall.Mkfifo(p, 0o600)) }, isType(os.ModeNamedPipe)},
		{"socket", func(t *testing.T, p string) { mustDo(t, syscall.Mknod(p, syscall.S_IFSOCK|0o600, 0)) }, isType(os.ModeSocket)},
		{"symlink to a valid lease elsewhere", func(t *testing.T, p string) {
			target := filepath.Join(outside, "target")
			rec, _ := json.Marshal(Holder{Host: "h", HostID: "far", PID: 1, Token: "elsewhere", Name: "k"})
			mustDo(t, os.WriteFile(target, rec, 0o600))
			old := time.Now().Add(-time.Hour)
			mustDo(t, os.Chtimes(target, old, old))
			mustDo(t, os.Symlink(target, p))
		}, func(t *testing.T, p string) {
			t.Helper()
			isType(os.ModeSymlink)(t, p)
			st, err := os.Stat(filepath.Join(outside, "target"))
			if err != nil || time.Since(st.ModTime()) < 30*time.Minute {
				t.Fatalf("symlink target touched: %v %v", st, err)
			}
		}},
		{"dangling symlink", func(t *testing.T, p string) { mustDo(t, os.Symlink(filepath.Join(outside, "nothing"), p)) }, func(t *testing.T, p string) {
			t.Helper()
			isType(os.ModeSymlink)(t, p)
			if _, err := os.Lstat(filepath.Join(outside, "nothing")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("a file was created through a dangling symlink: %v", err)
			}
		}},
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// Items 3 and 10: anything but a regular file at the lease path means
// "claims impossible for this name": compile without single-flight at
// once, leave the thing alone, log one line. A FIFO must not block (the
// test bounds the call instead of hanging).
func TestWrongTypeLeasePathCompilesAtOnce(t *testing.T) {
	for _, role := range []string{"writer", "reader"} {
		for _, p := range wrongTypePlants("") {
			t.Run(role+"/"+p.name, func(t *testing.T) {
				dir := t.TempDir()
				outside := t.TempDir()
				p := wrongTypePlants(outside)[indexOfPlant(p.name)]
				m, logs := loggedManager(t, dir, func(o *Options) {
					o.Stale = 10 * time.Second
					o.Wait = 60 * time.Second
					o.NoClaim = role == "reader"
				})
				mustDo(t, os.MkdirAll(m.dir, 0o700))
				p.make(t, m.Path("k"))
				release, took := acquireWithin(t, m, "k", 5*time.Second)
				release()
				if took > 2*time.Second {
					t.Fatalf("took %v to give up on a %s at the lease path", took, p.name)
				}
				p.check(t, m.Path("k"))
				logs.wantLines(t, 1, "not a regular file")
			})
		}
	}
}

func indexOfPlant(name string) int {
	for i, p := range wrongTypePlants("") {
		if p.name == name {
			return i
		}
	}
	panic("no plant " + name)
}

// Item 11: many names, all with a wrong-type lease path, still give one
// log line for this process.
func TestWrongTypeLoggedOncePerProcess(t *testing.T) {
	m, logs := loggedManager(t, t.TempDir(), func(o *Options) { o.Stale = 10 * time.Second })
	mustDo(t, os.MkdirAll(m.dir, 0o700))
	for i := range 4 {
		name := fmt.Sprint("k", i)
		if i%2 == 0 {
			mustDo(t, os.Mkdir(m.Path(name), 0o700))
		} else {
			mustDo(t, syscall.Mkfifo(m.Path(name), 0o600))
		}
		release, _ := acquireWithin(t, m, name, 5*time.Second)
		release()
	}
	logs.wantLines(t, 1, "not a regular file")
}

// Item 3: a FIFO at the takeover lock of a stale lease does not hang the
// taker, and does not cost the wait bound.
func TestFIFOAtTakeoverLock(t *testing.T) {
	m, logs := loggedManager(t, t.TempDir(), func(o *Options) {
		o.Stale = 10 * time.Second
		o.Wait = 60 * time.Second
	})
	// A same-host holder whose pid is gone: stale at once.
	writeForeignLease(t, m, "k", Holder{HostID: m.hostID, PID: deadPID(t), Token: "dead", Name: "k"}, time.Now())
	mustDo(t, syscall.Mkfifo(m.Path("k")+".takeover", 0o600))
	release, took := acquireWithin(t, m, "k", 5*time.Second)
	release()
	if took > 2*time.Second {
		t.Fatalf("took %v with a FIFO at the takeover lock", took)
	}
	logs.wantLines(t, 1, "not a regular file")
}

// Item 3: a holder whose lease is replaced by a FIFO notices the loss at
// its next heartbeat instead of blocking in open(2), and Release returns.
func TestHolderLeaseReplacedByFIFO(t *testing.T) {
	m, logs := loggedManager(t, t.TempDir(), nil)
	l, err := m.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	fifo := m.Path("k") + ".fifo"
	mustDo(t, syscall.Mkfifo(fifo, 0o600))
	mustDo(t, os.Rename(fifo, m.Path("k")))
	hangtest.NoHang(t, m.Path("k"), 10*time.Second, "holder blocked on a FIFO at its lease path", func() {
		for !l.Lost() {
			time.Sleep(m.opts.Heartbeat / 4)
		}
		l.Release()
	})
	if st, err := os.Lstat(m.Path("k")); err != nil || st.Mode().Type() != os.ModeNamedPipe {
		t.Fatalf("FIFO at the lease path changed: %v %v", st, err)
	}
	logs.wantLines(t, 1, "lease lost")
}

// Item 10: an empty or unparseable lease file is taken over after a short
// grace (not the stale interval), with one log line per process.
func TestGarbageLeaseTakenOverQuickly(t *testing.T) {
	garbage := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"cut short", []byte(`{"host":"h","pid":`)},
		{"binary", []byte{0, 1, 2, 0xff, 0xfe}},
		{"no token", []byte(`{"host":"h","pid":1}`)},
		{"too long", []byte(`{"token":"` + strings.Repeat("x", 8192) + `"}`)},
	}
	for _, role := range []string{"writer", "reader"} {
		t.Run(role, func(t *testing.T) {
			m, logs := loggedManager(t, t.TempDir(), func(o *Options) {
				o.Stale = 5 * time.Second
				o.Wait = 60 * time.Second
				o.NoPIDCheck = true
				o.NoClaim = role == "reader"
			})
			mustDo(t, os.MkdirAll(m.dir, 0o700))
			for _, g := range garbage {
				name := "k-" + g.name
				mustDo(t, os.WriteFile(m.Path(name), g.data, 0o600))
				release, took := acquireWithin(t, m, name, 30*time.Second)
				if took >= m.opts.Stale/2 {
					t.Fatalf("%s lease: took %v, want well under the stale interval %v", g.name, took, m.opts.Stale)
				}
				h, _, err := readLease(m.Path(name))
				if role == "writer" {
					if err != nil || h.PID != os.Getpid() || h.Token == "" {
						t.Fatalf("%s lease not taken over: %+v %v", g.name, h, err)
					}
				} else if st, err := os.Stat(m.Path(name)); err != nil || st.Size() != int64(len(g.data)) {
					t.Fatalf("a reader changed the %s lease: %v %v", g.name, st, err)
				}
				release()
			}
			logs.wantLines(t, 1, "unparseable")
		})
	}
}

// A creator writes its record right after the exclusive create; a waiter
// that sees the file still empty must not take it over from a creator
// that goes on to write its record and heartbeat.
func TestEmptyLeaseFilledByCreatorIsNotTakenOver(t *testing.T) {
	m, _ := loggedManager(t, t.TempDir(), func(o *Options) {
		o.Stale = 2 * time.Second
		o.NoPIDCheck = true
		o.Wait = 3 * time.Second
	})
	mustDo(t, os.MkdirAll(m.dir, 0o700))
	path := m.Path("k")
	mustDo(t, os.WriteFile(path, nil, 0o600))
	stop := make(chan struct{})
	// The creator heartbeats from the start, as a real one does once it
	// has written its record.
	done := heartbeat(path, m.opts.Stale/4, 0, stop)
	// ready runs at the top of each of the waiter's polls: the creator
	// writes its record once the waiter has seen the file empty (second
	// poll), well within the garbage grace.
	polls := 0
	ready := func() bool {
		polls++
		if polls == 2 {
			rec, _ := json.Marshal(Holder{Host: "h", HostID: "far", PID: 1, Token: "creator", Name: "k"})
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				t.Error(err)
				return false
			}
			f.Write(rec)
			f.Close()
		}
		return false
	}
	release, err := m.Acquire(context.Background(), "k", ready)
	close(stop)
	<-done
	if err != nil || release == nil {
		t.Fatalf("Acquire: release nil=%v err=%v", release == nil, err)
	}
	release()
	if h, _, err := readLease(path); err != nil || h.Token != "creator" {
		t.Fatalf("the creator's lease was taken over: %+v %v", h, err)
	}
}

// Item 11: waits that time out on several live leases log one line.
func TestWaitTimeoutLoggedOncePerProcess(t *testing.T) {
	dir := t.TempDir()
	m, logs := loggedManager(t, dir, func(o *Options) { o.Wait = 50 * time.Millisecond })
	other := newManager(t, dir, nil)
	for i := range 3 {
		name := fmt.Sprint("k", i)
		l, err := other.TryClaim(name)
		if err != nil {
			t.Fatal(err)
		}
		release, _ := acquireWithin(t, m, name, 10*time.Second)
		release()
		l.Release()
	}
	logs.wantLines(t, 1, "waited too long")
}

// Item 11: stale takeovers of several names log one line per process.
func TestTakeoverLoggedOncePerProcess(t *testing.T) {
	m, logs := loggedManager(t, t.TempDir(), nil)
	for i := range 3 {
		name := fmt.Sprint("k", i)
		writeForeignLease(t, m, name, Holder{HostID: m.hostID, PID: deadPID(t), Token: "dead", Name: name}, time.Now())
		release, _ := acquireWithin(t, m, name, 10*time.Second)
		release()
	}
	logs.wantLines(t, 1, "took over a stale lease")
}

// A symlink planted at locks/ would send every lease file outside the
// cache directory: claims are refused instead, with one log line.
func TestSymlinkedLocksDirNotWrittenThrough(t *testing.T) {
	dir := t.TempDir()
	outside := t.TempDir()
	mustDo(t, os.Symlink(outside, filepath.Join(dir, LocksDir)))
	m, logs := loggedManager(t, dir, func(o *Options) { o.ReaderGrace = 20 * time.Millisecond })
	for i := range 3 {
		release, _ := acquireWithin(t, m, fmt.Sprint("k", i), 10*time.Second)
		release()
	}
	if ents, err := os.ReadDir(outside); err != nil || len(ents) != 0 {
		t.Fatalf("lease files written through a symlinked locks dir: %v %v", ents, err)
	}
	logs.wantLines(t, 1, "cannot create leases")
}

// Item 9: a takeover lock left behind by a taker that died (possibly on a
// host with a skewed clock) is removed only after this process has seen it
// unchanged for the stale interval, never by comparing its mtime with this
// host's clock, and then the stale lease is taken over.
func TestLeftoverTakeoverLockJudgedByOwnClock(t *testing.T) {
	for _, skew := range []time.Duration{-time.Hour, time.Hour} {
		t.Run(fmt.Sprint("skew=", skew), func(t *testing.T) {
			m, logs := loggedManager(t, t.TempDir(), func(o *Options) { o.Wait = 20 * time.Second })
			writeForeignLease(t, m, "k", Holder{HostID: m.hostID, PID: deadPID(t), Token: "dead", Name: "k"}, time.Now())
			lock := m.Path("k") + ".takeover"
			mustDo(t, os.WriteFile(lock, nil, 0o600))
			at := time.Now().Add(skew)
			mustDo(t, os.Chtimes(lock, at, at))
			release, took := acquireWithin(t, m, "k", 30*time.Second)
			h, _, err := readLease(m.Path("k"))
			if err != nil || h.PID != os.Getpid() || h.Token == "dead" {
				t.Fatalf("stale lease not taken over: %+v %v", h, err)
			}
			release()
			if took < m.opts.Stale || took >= m.opts.Wait/2 {
				t.Fatalf("took over after %v; want at least the stale interval %v and well under the wait %v", took, m.opts.Stale, m.opts.Wait)
			}
			if _, err := os.Lstat(lock); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("takeover lock left behind: %v", err)
			}
			logs.wantLines(t, 1, "took over a stale lease")
		})
	}
}

// A takeover lock that never goes away (a taker stuck on a hung
// filesystem, or one planted and kept fresh) must not keep a waiter past
// its wait bound.
func TestStuckTakeoverLockHonoursWait(t *testing.T) {
	m, logs := loggedManager(t, t.TempDir(), func(o *Options) { o.Wait = time.Second })
	writeForeignLease(t, m, "k", Holder{HostID: m.hostID, PID: deadPID(t), Token: "dead", Name: "k"}, time.Now())
	lock := m.Path("k") + ".takeover"
	mustDo(t, os.WriteFile(lock, nil, 0o600))
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(m.opts.Stale / 8)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
				os.WriteFile(lock, []byte(fmt.Sprint(i)), 0o600) // keeps changing
			}
		}
	}()
	defer func() { close(stop); <-done }()
	release, took := acquireWithin(t, m, "k", 10*time.Second)
	release()
	if took < m.opts.Wait {
		t.Fatalf("gave up after %v, before the wait bound %v", took, m.opts.Wait)
	}
	if h, _, err := readLease(m.Path("k")); err != nil || h.Token != "dead" {
		t.Fatalf("lease taken over despite the takeover lock: %+v %v", h, err)
	}
	logs.wantLines(t, 1, "waited too long")
}

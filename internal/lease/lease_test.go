package lease

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/pollwait"
	"github.com/xlacache/xlacache/internal/testsupport/hangtest"
)

func newManager(t *testing.T, dir string, mod func(*Options)) *Manager {
	t.Helper()
	o := Options{Dir: dir, Stale: 400 * time.Millisecond, Wait: 20 * time.Second, PollMax: 20 * time.Millisecond}
	if mod != nil {
		mod(&o)
	}
	m, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// staleCheck is judge reduced to "is there a lease, and is it stale".
func (m *Manager) staleCheck(path string, obs *observation) (h Holder, exists, stale bool) {
	h, v, _ := m.judge(path, obs)
	return h, v == vLive || v == vStale || v == vGarbage, v == vStale || v == vGarbage
}

func TestNewValidates(t *testing.T) {
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"empty dir", Options{}, "empty directory"},
		{"heartbeat not shorter than stale", Options{Dir: "x", Stale: time.Second, Heartbeat: time.Second}, "must be shorter"},
		{"defaults", Options{Dir: "x"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := New(tt.opts)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("New(%+v) error = %v, want %q", tt.opts, err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if m.opts.Stale != pollwait.DefaultStale || m.opts.Heartbeat != pollwait.DefaultStale/4 || m.opts.Wait != pollwait.DefaultWait {
				t.Fatalf("defaults not applied: %+v", m.opts)
			}
		})
	}
}

func TestPathStaysInLocksDir(t *testing.T) {
	m := newManager(t, t.TempDir(), nil)
	for _, name := range []string{"", "../../etc/passwd", "/abs", "a/b/../../..", "executables/x-" + strings.Repeat("f", 64), "\x00"} {
		p := m.Path(name)
		if filepath.Dir(p) != m.dir || !strings.HasSuffix(p, ".lease") {
			t.Errorf("Path(%q) = %q escapes %q", name, p, m.dir)
		}
	}
	if m.Path("a") == m.Path("b") {
		t.Error("different names share a lease")
	}
	// Processes of different xlacache versions share a directory, so the
	// lease file name is a format: the first 16 bytes of the name's
	// SHA-256 in hex, then ".lease", in <dir>/locks.
	sum := sha256.Sum256([]byte("executables/k"))
	if want := filepath.Join(m.opts.Dir, "locks", fmt.Sprintf("%x.lease", sum[:16])); m.Path("executables/k") != want {
		t.Errorf("Path = %q, want %q", m.Path("executables/k"), want)
	}
}

func TestClaimHeldRelease(t *testing.T) {
	dir := t.TempDir()
	a := newManager(t, dir, nil)
	b := newManager(t, dir, nil)
	l, err := a.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	if st, err := os.Stat(a.Path("k")); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("lease file: %v, %v", st, err)
	}
	if st, err := os.Stat(a.dir); err != nil || st.Mode().Perm() != 0o700 {
		t.Fatalf("locks dir: %v, %v", st, err)
	}
	if _, err := b.TryClaim("k"); !errors.Is(err, ErrHeld) {
		t.Fatalf("second claim: %v, want ErrHeld", err)
	}
	if _, err := b.TryClaim("other"); err != nil {
		t.Fatalf("claim of another name: %v", err)
	}
	l.Release()
	l.Release() // idempotent
	if _, err := os.Stat(a.Path("k")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("lease remains after release: %v", err)
	}
	l2, err := b.TryClaim("k")
	if err != nil {
		t.Fatalf("claim after release: %v", err)
	}
	l2.Release()
}

func TestReleaseRemovesOnlyOwnLease(t *testing.T) {
	dir := t.TempDir()
	a := newManager(t, dir, nil)
	l, err := a.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	// Simulate a takeover: another holder's lease replaces ours.
	other := Holder{Host: "elsewhere", PID: 1, Token: "other-token", Name: "k"}
	data, _ := json.Marshal(other)
	if err := os.WriteFile(a.Path("k"), data, 0o600); err != nil {
		t.Fatal(err)
	}
	l.Release()
	h, _, err := readLease(a.Path("k"))
	if err != nil || h.Token != "other-token" {
		t.Fatalf("release removed or changed another holder's lease: %+v, %v", h, err)
	}
}

func TestHeartbeatKeepsLeaseAlive(t *testing.T) {
	dir := t.TempDir()
	a := newManager(t, dir, func(o *Options) { o.NoPIDCheck = true })
	l, err := a.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	b := newManager(t, dir, func(o *Options) { o.NoPIDCheck = true })
	var obs observation
	// Watch for three stale periods: a live holder must never look stale.
	deadline := time.Now().Add(3 * b.opts.Stale)
	for time.Now().Before(deadline) {
		if _, exists, stale := b.staleCheck(a.Path("k"), &obs); !exists || stale {
			t.Fatalf("live lease: exists=%v stale=%v", exists, stale)
		}
		if err := sleepCtx(context.Background(), 10*time.Millisecond); err != nil {
			t.Fatal(err)
		}
	}
	if l.Lost() {
		t.Fatal("lease reported lost")
	}
}

// writeForeignLease plants a lease as a process on another host would,
// which then stops refreshing it.
func writeForeignLease(t *testing.T, m *Manager, name string, h Holder, mtime time.Time) {
	t.Helper()
	if err := os.MkdirAll(m.dir, 0o700); err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(h)
	p := m.Path(name)
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(p, mtime, mtime); err != nil {
		t.Fatal(err)
	}
}

func deadPID(t *testing.T) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

func TestStaleDetection(t *testing.T) {
	now := time.Now()
	tests := []struct {
		name      string
		holder    func(m *Manager) Holder
		mtime     time.Time
		pidCheck  bool
		wantStale bool // at first sight
	}{
		{"fresh foreign lease", func(m *Manager) Holder { return Holder{HostID: "other", PID: 1, Token: "t"} }, now, true, false},
		// An old mtime says nothing: the holder's clock may be behind.
		{"mtime long ago", func(m *Manager) Holder { return Holder{HostID: "other", PID: 1, Token: "t"} }, now.Add(-time.Hour), true, false},
		{"mtime in the future", func(m *Manager) Holder { return Holder{HostID: "other", PID: 1, Token: "t"} }, now.Add(time.Hour), true, false},
		{"same host dead pid", func(m *Manager) Holder { return Holder{HostID: m.hostID, PID: deadPID(t), Token: "t"} }, now, true, true},
		{"same host dead pid, pid check off", func(m *Manager) Holder { return Holder{HostID: m.hostID, PID: deadPID(t), Token: "t"} }, now, false, false},
		{"same host live pid", func(m *Manager) Holder { return Holder{HostID: m.hostID, PID: os.Getpid(), Token: "t"} }, now, true, false},
		{"garbage record", func(m *Manager) Holder { return Holder{} }, now, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, t.TempDir(), func(o *Options) { o.NoPIDCheck = !tt.pidCheck })
			writeForeignLease(t, m, "k", tt.holder(m), tt.mtime)
			var obs observation
			_, exists, stale := m.staleCheck(m.Path("k"), &obs)
			if !exists || stale != tt.wantStale {
				t.Fatalf("exists=%v stale=%v, want stale=%v", exists, stale, tt.wantStale)
			}
		})
	}
}

func TestTakeoverAfterHeartbeatStops(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir, func(o *Options) { o.NoPIDCheck = true })
	writeForeignLease(t, m, "k", Holder{Host: "gone", HostID: "gone", PID: 42, Token: "dead"}, time.Now())
	start := time.Now()
	release, err := m.Acquire(context.Background(), "k", func() bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	waited := time.Since(start)
	h, _, err := readLease(m.Path("k"))
	if err != nil || h.Token == "dead" || h.PID != os.Getpid() {
		t.Fatalf("lease not taken over: %+v %v", h, err)
	}
	release()
	if waited < m.opts.Stale {
		t.Fatalf("took over after %v, before the stale timeout %v", waited, m.opts.Stale)
	}
}

func TestTakeoverRestoresLiveLease(t *testing.T) {
	m := newManager(t, t.TempDir(), nil)
	l, err := m.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	// A taker that observed an older, stale lease must not remove the
	// live one that replaced it.
	if got, err := m.takeOver(m.Path("k"), "k", Holder{Token: "old"}, observation{token: "old", mtime: time.Unix(1, 0)}, false); got != nil || err != nil {
		t.Fatal("took over a live lease")
	}
	h, _, err := readLease(m.Path("k"))
	if err != nil || h.Token != l.holder.Token {
		t.Fatalf("live lease removed by a stale takeover: %+v %v", h, err)
	}
}

func TestConcurrentTakeoversOneWinner(t *testing.T) {
	dir := t.TempDir()
	const takers = 8
	for round := 0; round < 20; round++ {
		name := fmt.Sprintf("k%d", round)
		var ms []*Manager
		for i := 0; i < takers; i++ {
			ms = append(ms, newManager(t, dir, nil))
		}
		// A same-host holder whose pid is gone is stale at first sight.
		writeForeignLease(t, ms[0], name, Holder{HostID: ms[0].hostID, PID: deadPID(t), Token: "dead"}, time.Now())
		var wg sync.WaitGroup
		var winners atomic.Int32
		leases := make([]*Lease, takers)
		for i := range ms {
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				for try := 0; try < 3; try++ {
					l, err := ms[i].TryClaim(name)
					if err == nil {
						winners.Add(1)
						leases[i] = l
						return
					}
					var obs observation
					if h, exists, stale := ms[i].staleCheck(ms[i].Path(name), &obs); exists && stale {
						if l, _ := ms[i].takeOver(ms[i].Path(name), name, h, obs, false); l != nil {
							winners.Add(1)
							leases[i] = l
							return
						}
					}
				}
			}(i)
		}
		wg.Wait()
		if got := winners.Load(); got != 1 {
			t.Fatalf("round %d: %d takers won, want exactly 1", round, got)
		}
		for _, l := range leases {
			if l != nil {
				l.Release()
			}
		}
	}
}

func TestAcquire(t *testing.T) {
	tests := []struct {
		name        string
		mod         func(*Options)
		setup       func(t *testing.T, m *Manager) func()
		ready       func() func() bool
		wantRelease bool // a real claim (release non-nil and lease held)
		wantNil     bool // ready: release nil
	}{
		{
			name:    "entry already present",
			ready:   func() func() bool { return func() bool { return true } },
			wantNil: true,
		},
		{
			name:        "free: claim",
			ready:       func() func() bool { return func() bool { return false } },
			wantRelease: true,
		},
		{
			name: "reader never claims, gives up after grace when nobody works on it",
			mod:  func(o *Options) { o.NoClaim = true; o.ReaderGrace = 50 * time.Millisecond },
			ready: func() func() bool {
				return func() bool { return false }
			},
		},
		{
			name: "held by a live holder: wait times out, compile here",
			mod:  func(o *Options) { o.Wait = 100 * time.Millisecond },
			setup: func(t *testing.T, m *Manager) func() {
				other := newManager(t, m.opts.Dir, nil)
				l, err := other.TryClaim("k")
				if err != nil {
					t.Fatal(err)
				}
				return l.Release
			},
			ready: func() func() bool { return func() bool { return false } },
		},
		{
			name: "held, entry appears: load it",
			// A stale interval far above any scheduling pause on a loaded
			// machine: the holder's heartbeat must not look stopped.
			mod: func(o *Options) { o.Stale = 10 * time.Second },
			setup: func(t *testing.T, m *Manager) func() {
				other := newManager(t, m.opts.Dir, func(o *Options) { o.Stale = 10 * time.Second })
				l, err := other.TryClaim("k")
				if err != nil {
					t.Fatal(err)
				}
				return l.Release
			},
			ready: func() func() bool {
				var n atomic.Int32
				return func() bool { return n.Add(1) > 3 }
			},
			wantNil: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newManager(t, t.TempDir(), tt.mod)
			if tt.setup != nil {
				defer tt.setup(t, m)()
			}
			release, err := m.Acquire(context.Background(), "k", tt.ready())
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantNil {
				if release != nil {
					t.Fatal("release non-nil although the entry is ready")
				}
				return
			}
			if release == nil {
				t.Fatal("release nil although the entry is not ready")
			}
			h, _, lerr := readLease(m.Path("k"))
			held := lerr == nil && h.PID == os.Getpid() && h.Token != "" && h.Name == "k"
			if tt.wantRelease && !held {
				t.Fatalf("no lease held after a claim: %+v %v", h, lerr)
			}
			release()
			if tt.wantRelease {
				if _, err := os.Stat(m.Path("k")); !errors.Is(err, os.ErrNotExist) {
					t.Fatal("lease left after release")
				}
			}
			if tt.mod != nil {
				var o Options
				tt.mod(&o)
				if o.NoClaim {
					if _, err := os.Stat(m.dir); !errors.Is(err, os.ErrNotExist) {
						t.Fatal("a reader created the locks directory")
					}
				}
			}
		})
	}
}

// A holder that releases without publishing (its compile failed, or the
// result was below the storing thresholds) must not hand the claim on: the
// waiters compile at once instead of one after another.
func TestAcquireHolderReleasedWithoutPublishing(t *testing.T) {
	dir := t.TempDir()
	holder := newManager(t, dir, nil)
	l, err := holder.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	m := newManager(t, dir, nil)
	polls := 0
	release, err := m.Acquire(context.Background(), "k", func() bool {
		polls++
		if polls == 3 {
			l.Release()
		}
		return false
	})
	if err != nil || release == nil {
		t.Fatalf("Acquire: release nil=%v err=%v", release == nil, err)
	}
	if _, err := os.Stat(m.Path("k")); !errors.Is(err, os.ErrNotExist) {
		t.Fatal("the waiter claimed a lease after the holder released without publishing")
	}
	release()
}

func TestAcquireReadOnlyDirWaitsWithoutClaiming(t *testing.T) {
	if os.Geteuid() == 0 {
		// root ignores permission bits; simulate with NoClaim semantics
		// through a locks path that is a regular file instead.
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, LocksDir), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		m := newManager(t, dir, func(o *Options) { o.ReaderGrace = 30 * time.Millisecond })
		release, err := m.Acquire(context.Background(), "k", func() bool { return false })
		if err != nil || release == nil {
			t.Fatalf("Acquire: release nil=%v, err=%v", release == nil, err)
		}
		release()
		return
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o500); err != nil {
		t.Fatal(err)
	}
	defer os.Chmod(dir, 0o700)
	m := newManager(t, dir, func(o *Options) { o.ReaderGrace = 30 * time.Millisecond })
	release, err := m.Acquire(context.Background(), "k", func() bool { return false })
	if err != nil || release == nil {
		t.Fatalf("Acquire: release nil=%v, err=%v", release == nil, err)
	}
	release()
	if !m.claimDisabled() {
		t.Fatal("claims not disabled on a read-only directory")
	}
}

func TestAcquireHonoursContext(t *testing.T) {
	m := newManager(t, t.TempDir(), func(o *Options) { o.Wait = time.Hour })
	other := newManager(t, m.opts.Dir, nil)
	l, err := other.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	_, err = m.Acquire(ctx, "k", func() bool {
		calls++
		if calls == 3 {
			cancel()
		}
		return false
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire after cancel: %v", err)
	}
}

func TestParseHolder(t *testing.T) {
	tests := []struct {
		in      string
		wantErr bool
		want    Holder
	}{
		{"", true, Holder{}},
		{"{", true, Holder{}},
		{`{"pid":-3}`, true, Holder{}},
		{`{"host":"h","pid":7,"token":"abc","name":"executables/k"}`, false, Holder{Host: "h", PID: 7, Token: "abc", Name: "executables/k"}},
	}
	for _, tt := range tests {
		got, err := ParseHolder([]byte(tt.in))
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseHolder(%q) = %+v, %v", tt.in, got, err)
		}
	}
}

func FuzzParseHolder(f *testing.F) {
	f.Add([]byte(`{"host":"h","host_id":"x","pid":7,"start":"2026-01-01T00:00:00Z","token":"abc","name":"n"}`))
	f.Add([]byte(""))
	f.Add([]byte(`{"pid":1e99}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := ParseHolder(data)
		if err == nil && h.PID < 0 {
			t.Fatalf("negative pid accepted: %d", h.PID)
		}
	})
}

// --- real processes -------------------------------------------------------

const childEnv = "LEASE_TEST_CHILD"

// TestMain lets the test binary act as a child process: the parent re-execs
// it with LEASE_TEST_CHILD set to a role.
func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(child(role))
	}
	os.Exit(m.Run())
}

// work is real CPU work standing for a compile: a SHA-256 chain.
func work(n int) [32]byte {
	sum := sha256.Sum256([]byte("seed"))
	for i := 0; i < n; i++ {
		sum = sha256.Sum256(sum[:])
	}
	return sum
}

func child(role string) int {
	dir := os.Getenv("LEASE_TEST_DIR")
	stale, _ := time.ParseDuration(os.Getenv("LEASE_TEST_STALE"))
	m, err := New(Options{Dir: dir, Stale: stale, Wait: 60 * time.Second, NoPIDCheck: os.Getenv("LEASE_TEST_NOPID") == "1", PollMax: 20 * time.Millisecond})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	result := filepath.Join(dir, "result")
	ready := func() bool { _, err := os.Stat(result); return err == nil }
	release, err := m.Acquire(context.Background(), "executables/prog", ready)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if release != nil {
		// Record the claim so the parent can count compiles.
		marker := filepath.Join(dir, "compiles", strconv.Itoa(os.Getpid()))
		if err := os.WriteFile(marker, nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if role == "hang" {
			// The holder that the parent kills: it holds the lease until
			// SIGKILL arrives (stdin is never closed by the parent).
			buf := make([]byte, 1)
			os.Stdin.Read(buf)
			return 3
		}
		sum := work(300000)
		tmp := result + "." + strconv.Itoa(os.Getpid())
		if err := os.WriteFile(tmp, fmt.Appendf(nil, "%x", sum), 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		if err := os.Rename(tmp, result); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
		release()
	}
	data, err := os.ReadFile(result)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Print(string(data))
	return 0
}

func childCmd(t *testing.T, dir, role string, stale time.Duration, noPID bool) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role, "LEASE_TEST_DIR="+dir, "LEASE_TEST_STALE="+stale.String())
	if noPID {
		cmd.Env = append(cmd.Env, "LEASE_TEST_NOPID=1")
	}
	cmd.Stderr = os.Stderr
	return cmd
}

func countFiles(t *testing.T, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func TestProcessesSingleFlight(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "compiles"), 0o700); err != nil {
		t.Fatal(err)
	}
	const n = 8
	outs := make([]string, n)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			out, err := childCmd(t, dir, "work", 5*time.Second, false).Output()
			if err != nil {
				errs <- fmt.Errorf("child %d: %w", i, err)
			}
			outs[i] = string(out)
		}(i)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got := countFiles(t, filepath.Join(dir, "compiles")); got != 1 {
		t.Fatalf("%d processes compiled, want exactly 1", got)
	}
	want := fmt.Sprintf("%x", work(300000))
	for i, o := range outs {
		if o != want {
			t.Fatalf("child %d got %q, want %q", i, o, want)
		}
	}
}

func TestProcessKilledHolderTakenOver(t *testing.T) {
	for _, noPID := range []bool{true, false} {
		t.Run(fmt.Sprintf("heartbeat-only=%v", noPID), func(t *testing.T) {
			dir := t.TempDir()
			if err := os.Mkdir(filepath.Join(dir, "compiles"), 0o700); err != nil {
				t.Fatal(err)
			}
			stale := 600 * time.Millisecond
			holder := childCmd(t, dir, "hang", stale, noPID)
			// The holder's claim marker appears only once the lease is held.
			claimed := func() bool { return countFiles(t, filepath.Join(dir, "compiles")) > 0 }
			stdin := hangtest.StartHolder(t, holder, 30*time.Second, claimed, "holder never claimed the lease")
			defer stdin.Close()
			waiters := make([]*exec.Cmd, 3)
			outs := make([][]byte, len(waiters))
			var wg sync.WaitGroup
			for i := range waiters {
				waiters[i] = childCmd(t, dir, "work", stale, noPID)
				wg.Add(1)
				go func(i int) {
					defer wg.Done()
					outs[i], _ = waiters[i].Output()
				}(i)
			}
			if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			holder.Wait()
			done := make(chan struct{})
			go func() { wg.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(60 * time.Second):
				for _, w := range waiters {
					w.Process.Kill()
				}
				t.Fatal("waiters hung after the holder was killed")
			}
			// The killed holder plus exactly one successor compiled.
			if got := countFiles(t, filepath.Join(dir, "compiles")); got != 2 {
				t.Fatalf("%d claims, want 2 (killed holder + one successor)", got)
			}
			want := fmt.Sprintf("%x", work(300000))
			for i, o := range outs {
				if string(o) != want {
					t.Fatalf("waiter %d got %q", i, o)
				}
			}
		})
	}
}

func TestHolderNoticesLostLease(t *testing.T) {
	m := newManager(t, t.TempDir(), nil)
	l, err := m.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	// Another process took the lease over (its heartbeat looked stale).
	other := Holder{Host: "elsewhere", PID: 1, Token: "successor", Name: "k"}
	data, _ := json.Marshal(other)
	if err := os.WriteFile(m.Path("k")+".x", data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(m.Path("k")+".x", m.Path("k")); err != nil {
		t.Fatal(err)
	}
	guard := time.Now().Add(20 * m.opts.Heartbeat)
	for !l.Lost() {
		if time.Now().After(guard) {
			t.Fatal("the holder never noticed it lost the lease")
		}
		time.Sleep(m.opts.Heartbeat / 4)
	}
	st, _ := os.Stat(m.Path("k"))
	l.Release()
	// The successor's lease is untouched: not removed, not refreshed.
	h, _, err := readLease(m.Path("k"))
	if err != nil || h.Token != "successor" {
		t.Fatalf("successor's lease changed: %+v %v", h, err)
	}
	if st2, _ := os.Stat(m.Path("k")); !st2.ModTime().Equal(st.ModTime()) {
		t.Fatal("the lost holder kept refreshing the successor's lease")
	}
}

// A reader stops waiting out grace periods once they keep expiring with
// nobody claiming (the writer is not compiling what it compiles), and
// starts again when it sees another process's lease.
func TestReaderGraceAdapts(t *testing.T) {
	dir := t.TempDir()
	m := newManager(t, dir, func(o *Options) { o.NoClaim = true; o.ReaderGrace = 40 * time.Millisecond })
	never := func() bool { return false }
	for i := 0; i < pollwait.FruitlessGraces; i++ {
		if g := m.readerGrace(); g != 40*time.Millisecond {
			t.Fatalf("grace before %d fruitless waits = %v, want 40ms", i, g)
		}
		release, err := m.Acquire(context.Background(), "nobody-compiles-this", never)
		if err != nil || release == nil {
			t.Fatalf("Acquire: release nil=%v, err=%v", release == nil, err)
		}
	}
	if g := m.readerGrace(); g != 0 {
		t.Fatalf("grace after %d fruitless waits = %v, want 0", pollwait.FruitlessGraces, g)
	}
	// Another process compiles a key this reader needs: waiting is useful
	// again.
	other := newManager(t, dir, nil)
	l, err := other.TryClaim("k")
	if err != nil {
		t.Fatal(err)
	}
	var published atomic.Bool
	done := make(chan struct{})
	go func() {
		defer close(done)
		time.Sleep(50 * time.Millisecond) // stands in for the other process's compile
		published.Store(true)
		l.Release()
	}()
	// Acquire returns once the result is published, which can be before
	// the other side's Release has finished writing in the locks
	// directory: the test waits for it, or the temporary directory's
	// removal races with it ("directory not empty").
	defer func() { <-done }()
	release, err := m.Acquire(context.Background(), "k", published.Load)
	if err != nil {
		t.Fatal(err)
	}
	_ = release
	if g := m.readerGrace(); g != 40*time.Millisecond {
		t.Fatalf("grace after seeing a live lease = %v, want 40ms again", g)
	}
}

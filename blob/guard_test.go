package blob

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

// fakeStore fails, answers or blocks as a test tells it, and counts the
// calls that reach it.
type fakeStore struct {
	mu      sync.Mutex
	err     error         // returned by every call when set
	block   chan struct{} // when set, calls wait for it (or ctx)
	entered chan struct{} // when set, receives one value per blocking call
	calls   int
	closed  bool
}

func (f *fakeStore) do(ctx context.Context) error {
	f.mu.Lock()
	f.calls++
	err, block, entered := f.err, f.block, f.entered
	f.mu.Unlock()
	if block != nil {
		if entered != nil {
			entered <- struct{}{}
		}
		select {
		case <-block:
		case <-ctx.Done():
			return fmt.Errorf("fake: %w", ctx.Err())
		}
	}
	return err
}

func (f *fakeStore) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// setBlock makes later calls wait for block (nil: answer at once),
// announcing each on entered when not nil.
func (f *fakeStore) setBlock(block, entered chan struct{}) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.block, f.entered = block, entered
}

func (f *fakeStore) n() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func (f *fakeStore) Get(ctx context.Context, name string) ([]byte, error) {
	if err := f.do(ctx); err != nil {
		return nil, err
	}
	return []byte("data of " + name), nil
}
func (f *fakeStore) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	return f.do(ctx)
}
func (f *fakeStore) Open(ctx context.Context, name string) (io.ReadCloser, Info, error) {
	if err := f.do(ctx); err != nil {
		return nil, Info{}, err
	}
	data := "data of " + name
	return io.NopCloser(strings.NewReader(data)), Info{Name: name, Size: int64(len(data))}, nil
}
func (f *fakeStore) ReplaceIfMatch(ctx context.Context, name, etag string, data []byte) (string, error) {
	return "new-etag", f.do(ctx)
}
func (f *fakeStore) Stat(ctx context.Context, name string) (Info, error) {
	if err := f.do(ctx); err != nil {
		return Info{}, err
	}
	return Info{Name: name, Size: 1}, nil
}
func (f *fakeStore) List(ctx context.Context, prefix string) ([]Info, error) {
	if err := f.do(ctx); err != nil {
		return nil, err
	}
	return []Info{{Name: prefix + "x"}}, nil
}
func (f *fakeStore) Delete(ctx context.Context, name string) error { return f.do(ctx) }
func (f *fakeStore) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.closed = true
	return nil
}
func (f *fakeStore) String() string { return "fake://store" }

// clock is a settable time for stepping through a cool-down.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newGuard(t *testing.T, f *fakeStore, o GuardOptions) (*guard, *logtest.Recorder, *clock) {
	t.Helper()
	rec := &logtest.Recorder{}
	o.Logger = slog.New(rec)
	g := Guard(f, o).(*guard)
	clk := &clock{t: time.Unix(1_000_000, 0)}
	g.now = clk.now
	return g, rec, clk
}

func TestGuardOpensOnceProbesAndRecovers(t *testing.T) {
	ctx := context.Background()
	down := errors.New("connection refused")
	f := &fakeStore{err: down}
	g, rec, clk := newGuard(t, f, GuardOptions{Cooldown: time.Minute})
	if g.String() != "fake://store" {
		t.Fatalf("name %q, want the store's String", g.String())
	}
	_, err := g.Get(ctx, "executables/k")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, down) || !strings.Contains(err.Error(), "fake://store") {
		t.Fatalf("first failing Get: %v", err)
	}
	// While open, calls fail fast without reaching the store.
	for i := range 3 {
		if _, err := g.Get(ctx, "executables/k"); !errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), "last error") {
			t.Fatalf("Get %d while open: %v", i, err)
		}
		if err := g.PutIfAbsent(ctx, "executables/k", nil); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("PutIfAbsent %d while open: %v", i, err)
		}
		if _, err := g.Stat(ctx, "executables/k"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Stat %d while open: %v", i, err)
		}
		if _, err := g.List(ctx, ""); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("List %d while open: %v", i, err)
		}
		if err := g.Delete(ctx, "executables/k"); !errors.Is(err, ErrUnavailable) {
			t.Fatalf("Delete %d while open: %v", i, err)
		}
	}
	if f.n() != 1 {
		t.Fatalf("%d calls reached the store, want 1", f.n())
	}
	// After the cool-down one call probes; still down, so it opens again
	// without a second Warn line.
	clk.advance(time.Minute + time.Second)
	if _, err := g.Get(ctx, "executables/k"); !errors.Is(err, ErrUnavailable) || f.n() != 2 {
		t.Fatalf("probe: %v, %d calls", err, f.n())
	}
	if _, err := g.Get(ctx, "executables/k"); !errors.Is(err, ErrUnavailable) || f.n() != 2 {
		t.Fatalf("after a failed probe: %v, %d calls", err, f.n())
	}
	if n := rec.Count("WARN"); n != 1 {
		t.Fatalf("%d warnings, want exactly one: %q", n, rec.Lines())
	}
	// The store comes back: the next probe succeeds and says so once.
	f.set(nil)
	clk.advance(time.Minute + time.Second)
	if got, err := g.Get(ctx, "executables/k"); err != nil || string(got) != "data of executables/k" {
		t.Fatalf("probe after recovery = %q, %v", got, err)
	}
	for range 3 {
		if _, err := g.Get(ctx, "executables/k"); err != nil {
			t.Fatalf("Get after recovery: %v", err)
		}
	}
	if n := rec.Count("INFO xlacache: shared store reachable again"); n != 1 {
		t.Fatalf("%d recovery lines, want 1: %q", n, rec.Lines())
	}
	// A new outage is a new Warn line.
	f.set(down)
	g.Get(ctx, "executables/k")
	if n := rec.Count("WARN"); n != 2 {
		t.Fatalf("%d warnings after a second outage, want 2: %q", n, rec.Lines())
	}
}

func TestGuardAnswersAreSuccess(t *testing.T) {
	ctx := context.Background()
	for _, answer := range []error{ErrNotExist, ErrExist, ErrTooLarge} {
		f := &fakeStore{err: fmt.Errorf("get x: %w", answer)}
		g, rec, _ := newGuard(t, f, GuardOptions{})
		for range 3 {
			if _, err := g.Get(ctx, "x"); !errors.Is(err, answer) || errors.Is(err, ErrUnavailable) {
				t.Fatalf("Get: %v, want only %v", err, answer)
			}
		}
		if f.n() != 3 || len(rec.Lines()) != 0 {
			t.Fatalf("%v opened the guard: %d calls, logs %q", answer, f.n(), rec.Lines())
		}
	}
}

func TestGuardTimeout(t *testing.T) {
	f := &fakeStore{block: make(chan struct{})}
	defer close(f.block)
	g, rec, _ := newGuard(t, f, GuardOptions{Timeout: 50 * time.Millisecond})
	_, err := g.Get(context.Background(), "x")
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no answer within 50ms") {
		t.Fatalf("Get from a silent store: %v", err)
	}
	if err := g.PutIfAbsent(context.Background(), "x", nil); !errors.Is(err, ErrUnavailable) || f.n() != 1 {
		t.Fatalf("Put after a timeout: %v, %d calls", err, f.n())
	}
	if rec.Count("WARN") != 1 {
		t.Fatalf("logs %q", rec.Lines())
	}
}

func TestGuardCallerCancelSaysNothing(t *testing.T) {
	f := &fakeStore{}
	g, rec, clk := newGuard(t, f, GuardOptions{Cooldown: time.Minute})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := g.Get(ctx, "x"); !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) || f.n() != 0 {
		t.Fatalf("Get with a cancelled context: %v, %d calls", err, f.n())
	}
	// Cancelled while the store is working on it.
	block := make(chan struct{})
	f.setBlock(block, make(chan struct{}))
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := g.Get(ctx, "x")
		done <- err
	}()
	<-f.entered
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) || errors.Is(err, ErrUnavailable) {
		t.Fatalf("Get cancelled mid-call: %v", err)
	}
	close(block)
	f.setBlock(nil, nil)
	if _, err := g.Get(context.Background(), "x"); err != nil {
		t.Fatalf("the caller's cancel opened the guard: %v", err)
	}
	// A cancelled probe lets the next call probe.
	f.set(errors.New("down"))
	g.Get(context.Background(), "x")
	f.set(nil)
	clk.advance(2 * time.Minute)
	f.setBlock(make(chan struct{}), make(chan struct{}))
	ctx, cancel = context.WithCancel(context.Background())
	go func() {
		_, err := g.Get(ctx, "x")
		done <- err
	}()
	<-f.entered
	// While the probe runs, other calls fail fast.
	calls := f.n()
	if _, err := g.Get(context.Background(), "x"); !errors.Is(err, ErrUnavailable) || f.n() != calls {
		t.Fatalf("Get during a probe: %v (%d calls, was %d)", err, f.n(), calls)
	}
	cancel()
	<-done
	f.setBlock(nil, nil)
	if _, err := g.Get(context.Background(), "x"); err != nil {
		t.Fatalf("probe after a cancelled probe: %v", err)
	}
	if rec.Count("WARN") != 1 || rec.Count("INFO") != 1 {
		t.Fatalf("logs %q", rec.Lines())
	}
}

func TestGuardRefusesInvalidNames(t *testing.T) {
	f := &fakeStore{}
	g, rec, _ := newGuard(t, f, GuardOptions{Name: "named"})
	ctx := context.Background()
	for _, bad := range []string{"", "../x", "/abs", "a//b"} {
		if _, err := g.Get(ctx, bad); err == nil || errors.Is(err, ErrUnavailable) {
			t.Errorf("Get(%q) = %v", bad, err)
		}
		if err := g.PutIfAbsent(ctx, bad, nil); err == nil {
			t.Errorf("PutIfAbsent(%q) accepted", bad)
		}
		if _, err := g.Stat(ctx, bad); err == nil {
			t.Errorf("Stat(%q) accepted", bad)
		}
		if err := g.Delete(ctx, bad); err == nil {
			t.Errorf("Delete(%q) accepted", bad)
		}
	}
	if _, err := g.List(ctx, "../"); err == nil {
		t.Error("List(../) accepted")
	}
	if infos, err := g.List(ctx, "a/"); err != nil || len(infos) != 1 {
		t.Errorf("List(a/) = %v, %v", infos, err)
	}
	if f.n() != 1 || len(rec.Lines()) != 0 || g.String() != "named" {
		t.Fatalf("%d calls, logs %q, name %q", f.n(), rec.Lines(), g.String())
	}
	g.Close()
	if !f.closed {
		t.Fatal("Close did not reach the store")
	}
}

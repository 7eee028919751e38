package cache

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/lease"
)

// gatedBackend is fakeBackend whose compiles start by saying so and wait
// for leave to be closed.
type gatedBackend struct {
	*fakeBackend
	started chan struct{}
	leave   chan struct{}
	once    sync.Once
}

func (b *gatedBackend) Compile(ctx context.Context, p Program, env *Session) (Executable, error) {
	b.once.Do(func() { close(b.started) })
	select {
	case <-b.leave:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return b.fakeBackend.Compile(ctx, p, env)
}

// enteredFlight is a Flight that says when a wait begins.
type enteredFlight struct {
	Flight
	entered chan struct{}
	once    sync.Once
}

func (f *enteredFlight) Acquire(ctx context.Context, name string, ready func() bool) (func(), error) {
	f.once.Do(func() { close(f.entered) })
	return f.Flight.Acquire(ctx, name, ready)
}

// Issue 20, item 18: a reader that opens before any writer has created
// the directory is not blind for its life. It waits on the writer's
// lease, and when the wait ends it reads the entry the writer stored
// instead of compiling it again.
func TestReaderOpenedBeforeDirExists(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	ro := testOptions(dir)
	ro.Role = config.RoleReader
	ro.WaitTimeout = time.Minute // the wait ends when the writer is done, not by a timeout
	logger := newTestLogger(&logBuffer{})
	m, err := lease.New(lease.OptionsFor(ro, logger))
	if err != nil {
		t.Fatal(err)
	}
	rflight := &enteredFlight{Flight: m, entered: make(chan struct{})}
	reader := mustOpen(t, ro, nil, WithFlight(rflight))
	if reader.Dir() == "" {
		t.Fatal("reader of a missing directory has no directory at all")
	}

	wo := testOptions(dir)
	wo.WaitTimeout = time.Minute
	writer := mustOpen(t, wo, nil)
	fb := &fakeBackend{}
	wb := &gatedBackend{fakeBackend: fb, started: make(chan struct{}), leave: make(chan struct{})}
	p := Program{Name: "late", Text: []byte("reader first, writer second")}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	werr := make(chan error, 1)
	go func() {
		_, rep, err := Compile(ctx, writer, wb, p)
		if err == nil && !rep.Stored {
			t.Errorf("writer did not store: %+v", rep)
		}
		werr <- err
	}()
	<-wb.started // the writer holds the lease and compiles

	type result struct {
		rep *Report
		err error
	}
	rres := make(chan result, 1)
	go func() {
		_, rep, err := Compile(ctx, reader, fb, p)
		rres <- result{rep, err}
	}()
	select {
	case <-rflight.entered: // the reader missed and waits on the writer's lease
	case r := <-rres:
		t.Fatalf("reader finished without waiting: %+v %v", r.rep, r.err)
	}
	close(wb.leave)
	if err := <-werr; err != nil {
		t.Fatal(err)
	}
	r := <-rres
	if r.err != nil {
		t.Fatal(r.err)
	}
	if !r.rep.Hit || fb.compiles.Load() != 1 {
		t.Fatalf("reader: hit=%v, %d compiles in all (want a hit and the writer's one compile)", r.rep.Hit, fb.compiles.Load())
	}
	// And later lookups of the reader see the directory too.
	if _, rep := compileOK(t, reader, fb, p); !rep.Hit || rep.Source != "local" {
		t.Fatalf("second reader lookup: %+v", rep)
	}
}

package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

// ErrPrecondition is an answer (another writer acted first), like ErrExist:
// it must not open the breaker.
func TestGuardPreconditionIsAnAnswer(t *testing.T) {
	f := &fakeStore{err: fmt.Errorf("fake: %w", ErrPrecondition)}
	g, rec, _ := newGuard(t, f, GuardOptions{})
	for i := range 3 {
		if _, err := g.ReplaceIfMatch(context.Background(), "executables/k", "etag", nil); !errors.Is(err, ErrPrecondition) || errors.Is(err, ErrUnavailable) {
			t.Fatalf("ReplaceIfMatch %d: %v, want ErrPrecondition", i, err)
		}
	}
	if f.n() != 3 || len(rec.Lines()) != 0 {
		t.Fatalf("%d calls reached the store, logs %q: the breaker opened", f.n(), rec.Lines())
	}
	if _, err := g.ReplaceIfMatch(context.Background(), "../x", "etag", nil); err == nil || f.n() != 3 {
		t.Fatalf("an invalid name reached the store: %v", err)
	}
}

// stallingStore's objects send their first bytes, then stall until the
// call's context ends.
type stallingStore struct{ fakeStore }

type stallingReader struct {
	ctx  context.Context
	head io.Reader
}

func (r *stallingReader) Read(p []byte) (int, error) {
	if n, _ := r.head.Read(p); n > 0 {
		return n, nil
	}
	<-r.ctx.Done()
	return 0, fmt.Errorf("reading body: %w", r.ctx.Err())
}

func (s *stallingStore) Open(ctx context.Context, name string) (io.ReadCloser, Info, error) {
	if err := s.do(ctx); err != nil {
		return nil, Info{}, err
	}
	return io.NopCloser(&stallingReader{ctx: ctx, head: bytes.NewReader([]byte("head"))}), Info{Name: name, Size: 1 << 30}, nil
}

// The per-call timeout covers reading an opened object, and a body that
// stalls counts as a failure of the store: it opens the breaker like any
// other call that gets no answer.
func TestGuardOpenTimeoutCoversBody(t *testing.T) {
	s := &stallingStore{}
	rec := &logtest.Recorder{}
	g := Guard(s, GuardOptions{Timeout: 100 * time.Millisecond, Cooldown: time.Hour, Logger: slog.New(rec)})
	rc, info, err := g.Open(context.Background(), "executables/k")
	if err != nil || info.Size != 1<<30 {
		t.Fatalf("Open = %+v, %v", info, err)
	}
	start := time.Now()
	_, err = io.ReadAll(rc)
	rc.Close()
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("reading a stalled body: %v, want ErrUnavailable and the deadline", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("reading a stalled body took %v with a 100ms timeout", d)
	}
	calls := s.n()
	if _, _, err := g.Open(context.Background(), "executables/k"); !errors.Is(err, ErrUnavailable) || s.n() != calls {
		t.Fatalf("Open after a stalled body: %v (%d calls reached the store)", err, s.n()-calls)
	}
	if n := rec.Count("WARN"); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
}

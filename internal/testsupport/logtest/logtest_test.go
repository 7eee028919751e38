package logtest

import (
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestBufferConcurrentAndLimit(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() { fmt.Fprintf(&b, "line %d\n", i) })
	}
	wg.Wait()
	if n := strings.Count(b.String(), "\n"); n != 8 {
		t.Fatalf("%d lines, want 8:\n%s", n, b.String())
	}

	l := Buffer{Limit: 4}
	for range 3 {
		if n, err := l.Write([]byte("abc")); n != 3 || err != nil {
			t.Fatalf("Write = %d, %v; a dropped write must still report success", n, err)
		}
	}
	// Writes stop once the buffer holds more than Limit bytes.
	if got := l.String(); got != "abcabc" {
		t.Fatalf("limited buffer holds %q, want %q", got, "abcabc")
	}
}

func TestRecorderCounts(t *testing.T) {
	var r Recorder
	log := slog.New(&r).With("k", "v").WithGroup("g")
	log.Warn("store down", "err", "x")
	log.Info("store back")
	log.Warn("store down")
	log.Debug("detail")
	if n := r.Count("WARN"); n != 2 {
		t.Errorf("%d warnings, want 2: %q", n, r.Lines())
	}
	if n := r.Count("INFO store back"); n != 1 {
		t.Errorf("%d recovery lines, want 1: %q", n, r.Lines())
	}
	if n := len(r.Lines()); n != 4 {
		t.Errorf("%d lines, want 4 (every level recorded): %q", n, r.Lines())
	}
}

package logonce

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"
)

func TestOncePerKey(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelInfo})))
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			l.Warn("disk-full", "storing failed", "err", "no space")
			l.Warn("permission", "storing failed", "err", "denied")
		})
	}
	wg.Wait()
	if n := strings.Count(buf.String(), "level=WARN"); n != 2 {
		t.Fatalf("%d WARN lines for 2 kinds of failure:\n%s", n, buf.String())
	}
	l.Forget("disk-full")
	l.Warn("disk-full", "storing failed again")
	if n := strings.Count(buf.String(), "level=WARN"); n != 3 {
		t.Fatalf("a forgotten key was not logged again:\n%s", buf.String())
	}
	var nilLogger *Logger
	nilLogger.Warn("x", "y") // must not panic
	if nilLogger.First("x") {
		t.Fatal("nil Logger reports a first sighting")
	}
}

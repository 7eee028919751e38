package logonce

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"syscall"
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

func TestFailureKind(t *testing.T) {
	for _, tc := range []struct {
		err  error
		kind string
	}{
		{nil, ""},
		{&fs.PathError{Op: "write", Path: "x", Err: syscall.ENOSPC}, "nospace"},
		{fmt.Errorf("wrapped: %w", syscall.EDQUOT), "nospace"},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}, "readonly"},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}, "permission"},
		{syscall.EPERM, "permission"},
		{fs.ErrNotExist, "notexist"},
		{errors.New("other"), "io"},
	} {
		if got := Kind(tc.err); got != tc.kind {
			t.Errorf("Kind(%v) = %q, want %q", tc.err, got, tc.kind)
		}
	}
	if FailureKey(syscall.ENOSPC) != "failure:nospace" {
		t.Error(FailureKey(syscall.ENOSPC))
	}
}

// TestSlogCarriesFilter: a *slog.Logger made by Slog, and loggers derived
// from it, hand From the same filter; any other logger gets a new one.
func TestSlogCarriesFilter(t *testing.T) {
	var buf bytes.Buffer
	l := New(slog.New(slog.NewTextHandler(&buf, nil)))
	for _, tc := range []struct {
		name string
		log  *slog.Logger
		same bool
	}{
		{"slog", l.Slog(), true},
		{"with", l.Slog().With("component", "x"), true},
		{"group", l.Slog().WithGroup("g"), true},
		{"plain", slog.New(slog.NewTextHandler(&buf, nil)), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := From(tc.log); (got == l) != tc.same {
				t.Fatalf("From shares the filter: %v, want %v", got == l, tc.same)
			}
		})
	}
	l.Slog().With("a", 1).Info("through the carrier")
	if !strings.Contains(buf.String(), "through the carrier") || !strings.Contains(buf.String(), "a=1") {
		t.Fatalf("the carrier did not log through the logger: %q", buf.String())
	}
	if (*Logger)(nil).Slog() != nil {
		t.Fatal("a nil filter made a logger")
	}
}

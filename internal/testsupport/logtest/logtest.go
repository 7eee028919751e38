// Package logtest captures log output for tests that assert on what was
// logged: the cache promises one clear line per condition (one warning per
// outage, one line per kind of failure), and tests count those lines while
// other goroutines may still be logging.
package logtest

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
)

// Buffer is an io.Writer that goroutines may write while a test reads it:
// the sink of a slog.TextHandler, or a child process's output.
type Buffer struct {
	// Limit, when positive, bounds what Buffer keeps: once it holds more
	// than Limit bytes, later writes are dropped (and reported as
	// written), so a chatty process cannot grow a test's memory without
	// bound.
	Limit int

	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p, unless the Limit has been passed.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit > 0 && b.b.Len() > b.Limit {
		return len(p), nil
	}
	return b.b.Write(p)
}

// String returns everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// Recorder is a slog.Handler that keeps each record as one line
// "LEVEL message" (attributes and groups are dropped), for tests that count
// lines by level or by message.
type Recorder struct {
	mu    sync.Mutex
	lines []string
}

// Enabled reports true for every level: a test sees everything.
func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }

// Handle records rec as "LEVEL message".
func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.lines = append(r.lines, rec.Level.String()+" "+rec.Message)
	return nil
}

// WithAttrs returns r: attributes are not recorded.
func (r *Recorder) WithAttrs([]slog.Attr) slog.Handler { return r }

// WithGroup returns r: groups are not recorded.
func (r *Recorder) WithGroup(string) slog.Handler { return r }

// Lines returns a copy of the lines recorded so far.
func (r *Recorder) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.lines...)
}

// Count returns how many recorded lines start with prefix: "WARN" counts
// warnings, "INFO some message" one message at one level.
func (r *Recorder) Count(prefix string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, l := range r.lines {
		if strings.HasPrefix(l, prefix) {
			n++
		}
	}
	return n
}

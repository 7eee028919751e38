// Package logonce keeps a failure that repeats from flooding the log: the
// first report of each kind of failure is logged at its level, later ones
// of the same kind at Debug. "One clear log line per failure kind" is a
// promise of xlacache's (a full disk is one problem, not one per kernel),
// and this type is the one place that keeps it.
package logonce

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"sync"
	"syscall"
)

// Logger logs each key once. The zero value is not usable; use New. A nil
// *Logger discards everything. Safe for concurrent use.
type Logger struct {
	log  *slog.Logger
	seen sync.Map // key -> struct{}
}

// New returns a Logger writing to log (slog.Default() when nil).
func New(log *slog.Logger) *Logger {
	if log == nil {
		log = slog.Default()
	}
	return &Logger{log: log}
}

// First reports whether key has not been seen before, and marks it seen.
func (l *Logger) First(key string) bool {
	if l == nil {
		return false
	}
	_, seen := l.seen.LoadOrStore(key, struct{}{})
	return !seen
}

// Warn logs msg at Warn the first time key is seen and at Debug after.
func (l *Logger) Warn(key, msg string, args ...any) { l.logAt(slog.LevelWarn, key, msg, args...) }

// Info logs msg at Info the first time key is seen and at Debug after.
func (l *Logger) Info(key, msg string, args ...any) { l.logAt(slog.LevelInfo, key, msg, args...) }

func (l *Logger) logAt(level slog.Level, key, msg string, args ...any) {
	if l == nil {
		return
	}
	if !l.First(key) {
		level = slog.LevelDebug
	}
	l.log.Log(context.Background(), level, msg, args...)
}

// Forget makes key loggable again, for a condition that ended (a store
// that is reachable again) so that its next occurrence is reported.
func (l *Logger) Forget(key string) {
	if l != nil {
		l.seen.Delete(key)
	}
}

// FailureKey returns the key under which a failure to use the cache
// directory (or another local resource) is logged: "failure:" and its
// kind (Kind). Components of one process that share a Logger and log
// their I/O failures under this key report a full disk, a read-only
// mount or a permission problem once, whichever of them hits it first.
func FailureKey(err error) string { return "failure:" + Kind(err) }

// Kind classifies an I/O failure: "nospace" (ENOSPC, EDQUOT), "readonly"
// (EROFS), "permission" (EACCES, EPERM), "notexist", or "io" for anything
// else; "" for nil.
func Kind(err error) string {
	switch {
	case err == nil:
		return ""
	case errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT):
		return "nospace"
	case errors.Is(err, syscall.EROFS):
		return "readonly"
	case errors.Is(err, fs.ErrPermission):
		return "permission"
	case errors.Is(err, fs.ErrNotExist):
		return "notexist"
	}
	return "io"
}

// Slog returns a *slog.Logger that logs as l's logger does and carries l's
// filter, so that a package whose API takes a plain *slog.Logger (such as
// cache.WithLogs) can share the filter through From without exporting
// this package's type.
func (l *Logger) Slog() *slog.Logger {
	if l == nil {
		return nil
	}
	return slog.New(carrier{Handler: l.log.Handler(), once: l})
}

// From returns the filter log carries (log came from Logger.Slog), or a
// new filter over log. A nil log means slog.Default().
func From(log *slog.Logger) *Logger {
	if log != nil {
		if c, ok := log.Handler().(carrier); ok {
			return c.once
		}
	}
	return New(log)
}

// carrier is a slog.Handler that passes records to its Handler and carries
// a filter; loggers derived from it (With, WithGroup) carry the same one.
type carrier struct {
	slog.Handler
	once *Logger
}

// WithAttrs implements slog.Handler, keeping the filter.
func (c carrier) WithAttrs(attrs []slog.Attr) slog.Handler {
	return carrier{Handler: c.Handler.WithAttrs(attrs), once: c.once}
}

// WithGroup implements slog.Handler, keeping the filter.
func (c carrier) WithGroup(name string) slog.Handler {
	return carrier{Handler: c.Handler.WithGroup(name), once: c.once}
}

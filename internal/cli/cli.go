// Package cli holds what xlacache's command-line programs share besides
// their flags and their output: the usage-error convention and the exit
// codes it maps to, running a command until SIGINT or SIGTERM stops it,
// and a logger whose lines never show a secret.
package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

// Exit codes of every command.
const (
	// ExitOK is success.
	ExitOK = 0
	// ExitFailure is any failure that is not a usage error.
	ExitFailure = 1
	// ExitUsage is the user's mistake in invoking the command (unknown
	// command or flag, bad argument or option value).
	ExitUsage = 2
	// ExitMiss is a compile that XLACACHE_REQUIRE_HIT=fail refused: the
	// cache could not serve a program (cache.ErrHitRequired). A CI job
	// checking a golden cache tells it from a broken program by it.
	ExitMiss = 3
)

// UsageError marks an error as the user's mistake in invoking the command
// (exit code ExitUsage).
type UsageError struct{ Err error }

// Error is the wrapped error's message.
func (e UsageError) Error() string { return e.Err.Error() }

// Unwrap returns the wrapped error.
func (e UsageError) Unwrap() error { return e.Err }

// Usage marks err as a usage error.
func Usage(err error) error { return UsageError{err} }

// Usagef returns a usage error formatted as fmt.Errorf does.
func Usagef(format string, args ...any) error { return UsageError{fmt.Errorf(format, args...)} }

// UsageArgs wraps a cobra argument validator so its errors are usage errors.
func UsageArgs(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := v(cmd, args); err != nil {
			return UsageError{err}
		}
		return nil
	}
}

// UnknownCommand is a root command's argument check. Cobra's own check
// for an unknown subcommand runs only when a command has no Args; it
// returns a plain error, so the root checks its arguments itself to make
// the error a usage error. The message is cobra's.
func UnknownCommand(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "\n\nDid you mean this?\n\t" + strings.Join(s, "\n\t") + "\n"
	}
	return UsageError{errors.New(msg)}
}

// Run runs run until it ends or a SIGINT or SIGTERM arrives, and returns
// the exit code of program name. An interrupted command exits with 128 +
// the signal's number (130 for Ctrl-C), as a shell reports it and as exec
// does, after one line: what was stored stays, so the next run resumes
// from there.
func Run(ctx context.Context, name string, stderr io.Writer, run func(context.Context) error) int {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sigs)
	var got atomic.Value
	go func() {
		select {
		case s := <-sigs:
			got.Store(s)
			cancel()
		case <-ctx.Done():
		}
	}()
	err := run(ctx)
	if s, ok := got.Load().(os.Signal); ok {
		return Interrupted(name, s, stderr)
	}
	return ExitCode(name, err, stderr)
}

// Interrupted prints the one line of program name stopped by signal s and
// returns 128 + its number.
func Interrupted(name string, s os.Signal, stderr io.Writer) int {
	n := 2 // SIGINT
	if ss, ok := s.(syscall.Signal); ok {
		n = int(ss)
	}
	fmt.Fprintf(stderr, "%s: interrupted (%v); what was stored is kept, run again to resume\n", name, s)
	return 128 + n
}

// ExitCode prints err (if any, redacted), prefixed with the program's
// name, and maps it to the documented exit code.
func ExitCode(name string, err error, stderr io.Writer) int {
	if err == nil {
		return ExitOK
	}
	fmt.Fprintln(stderr, name+":", config.Redact(err.Error(), os.LookupEnv))
	var ue UsageError
	if errors.As(err, &ue) {
		return ExitUsage
	}
	if errors.Is(err, cache.ErrHitRequired) {
		return ExitMiss
	}
	return ExitFailure
}

// NewLogger returns the text logger to w of a command run with -v given
// verbose times: warnings by default, info with one, debug with two or
// more. No line it writes shows the signing key or a URL's credentials.
func NewLogger(w io.Writer, verbose int) *slog.Logger {
	level := slog.LevelWarn
	switch {
	case verbose == 1:
		level = slog.LevelInfo
	case verbose >= 2:
		level = slog.LevelDebug
	}
	redact := config.NewRedactor(os.LookupEnv)
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: level,
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if v := a.Value.Resolve(); v.Kind() == slog.KindString || v.Kind() == slog.KindAny {
				if s := v.String(); s != redact(s) {
					a.Value = slog.StringValue(redact(s))
				}
			}
			return a
		}}))
}

// FormatDuration formats a duration as every time the CLIs print: seconds
// with two decimals from one second, else milliseconds with one, else
// whole microseconds.
func FormatDuration(d time.Duration) string {
	switch {
	case d >= time.Second:
		return fmt.Sprintf("%.2fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/1e6)
	}
	return fmt.Sprintf("%.0fµs", float64(d)/1e3)
}

// ExistingDir fails unless the cache directory dir exists and is a
// directory: for the commands that read or change one and must not
// create it.
func ExistingDir(dir string) error {
	st, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("cache directory: %w", err)
	}
	if !st.IsDir() {
		return fmt.Errorf("cache directory %s is not a directory", dir)
	}
	return nil
}

// Plural is one when n is 1, else many.
func Plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
)

// TestExitCode: nil is 0 and prints nothing; a usage error, also wrapped,
// is 2; a compile refused under XLACACHE_REQUIRE_HIT=fail, also
// wrapped, is 3; anything else is 1; the line names the program.
func TestExitCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		code int
		line string
	}{
		{nil, ExitOK, ""},
		{errors.New("boom"), ExitFailure, "prog: boom\n"},
		{Usagef("--x %d: bad", 3), ExitUsage, "prog: --x 3: bad\n"},
		{fmt.Errorf("ctx: %w", Usage(errors.New("bad"))), ExitUsage, "prog: ctx: bad\n"},
		{fmt.Errorf("p.mlir: %w", &cache.MissError{Module: "p", Key: "p-1", Backend: "cpu", Reason: "no entry for this program"}), ExitMiss,
			"prog: p.mlir: program p (key p-1, backend cpu) missed the cache and XLACACHE_REQUIRE_HIT=fail forbids compiling it: no entry for this program\n"},
	} {
		var b bytes.Buffer
		if got := ExitCode("prog", tc.err, &b); got != tc.code || b.String() != tc.line {
			t.Errorf("ExitCode(%v) = %d, %q; want %d, %q", tc.err, got, b.String(), tc.code, tc.line)
		}
	}
}

// TestInterrupted: 128 + the signal's number, after one line.
func TestInterrupted(t *testing.T) {
	var b bytes.Buffer
	if got := Interrupted("prog", syscall.SIGTERM, &b); got != 128+int(syscall.SIGTERM) || strings.Count(b.String(), "\n") != 1 || !strings.HasPrefix(b.String(), "prog: interrupted") {
		t.Errorf("Interrupted = %d, %q", got, b.String())
	}
}

// TestFormatDuration: the three ranges.
func TestFormatDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		1500 * time.Millisecond: "1.50s", 2500 * time.Microsecond: "2.5ms", 42 * time.Microsecond: "42µs",
	} {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestExistingDir: a directory passes; a missing path and a file fail.
func TestExistingDir(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := ExistingDir(dir); err != nil {
		t.Errorf("ExistingDir(dir) = %v", err)
	}
	if err := ExistingDir(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ExistingDir(missing) = %v, want not exist", err)
	}
	if err := ExistingDir(file); err == nil || !strings.Contains(err.Error(), "is not a directory") {
		t.Errorf("ExistingDir(file) = %v", err)
	}
}

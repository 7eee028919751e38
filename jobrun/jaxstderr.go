package jobrun

import (
	"bytes"
	"io"
	"strings"
	"sync"
)

// A load XLA rejects leaves no trace in the directory: JAX reads the
// entry (its access time moves, as for a load), XLA refuses the
// executable (jax-ml/jax#38445: a CPU-feature check), JAX warns
// "Error reading persistent compilation cache entry for '<module>': ...",
// compiles, and its put skips the key that exists. So under
// XLACACHE_REQUIRE_HIT, where a silent recompile is what must be caught,
// exec reads the command's standard error on its way through for that
// warning (jax/_src/compiler.py _cache_read, 0.4.36 and 0.12).

// rejectedPrefix starts JAX's warning about an entry it could not load;
// the module name follows in single quotes.
const rejectedPrefix = "Error reading persistent compilation cache entry for '"

// maxScannedLine bounds the part of a line the scanner keeps: JAX's
// warning starts within it, and a command that writes megabytes without
// a newline must not grow exec's memory.
const maxScannedLine = 64 << 10

// rejectScanner passes everything written to it on to w and collects the
// modules of JAX's rejected-load warnings. Safe for one writer (os/exec
// copies a pipe from one goroutine, which may outlive the command when a
// process it left behind holds the pipe) and concurrent calls of Rejected
// and flush.
type rejectScanner struct {
	w io.Writer

	mu   sync.Mutex
	line []byte
	// long is set while the rest of an over-long line is skipped.
	long     bool
	rejected []string
}

// Write implements io.Writer: the bytes go to the command's real standard
// error first, so a slow scan never holds its output.
func (s *rejectScanner) Write(p []byte) (int, error) {
	n, err := s.w.Write(p)
	s.mu.Lock()
	s.scan(p[:n])
	s.mu.Unlock()
	return n, err
}

func (s *rejectScanner) scan(p []byte) {
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		part := p
		if i >= 0 {
			part = p[:i]
		}
		if !s.long {
			if room := maxScannedLine - len(s.line); len(part) > room {
				s.line = append(s.line, part[:room]...)
				s.long = true
			} else {
				s.line = append(s.line, part...)
			}
		}
		if i < 0 {
			return
		}
		s.endLine()
		p = p[i+1:]
	}
}

// endLine looks at the line collected and starts the next (s.mu held).
func (s *rejectScanner) endLine() {
	line := string(s.line)
	s.line, s.long = s.line[:0], false
	_, rest, ok := strings.Cut(line, rejectedPrefix)
	if !ok {
		return
	}
	module, _, ok := strings.Cut(rest, "'")
	if !ok || module == "" {
		return
	}
	s.rejected = append(s.rejected, module)
}

// Rejected returns the modules whose cached entries JAX could not load,
// in the order it said so.
func (s *rejectScanner) Rejected() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.rejected...)
}

// flush counts a last line that ended without a newline; call it once the
// command's output has been copied.
func (s *rejectScanner) flush() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.line) > 0 {
		s.endLine()
	}
}

package progress

import (
	"bytes"
	"strings"
	"testing"
)

// TestNoTerminalNoBar: output that is not a terminal gets no bar, so a
// log or pipe sees only the report.
func TestNoTerminalNoBar(t *testing.T) {
	var buf bytes.Buffer
	if IsTerminal(&buf) {
		t.Fatal("a buffer is a terminal")
	}
	s := NewStages(&buf)
	s.Update("autotune", 1, 3)
	s.Update("compile", 2, 2)
	s.Finish()
	c := NewCounter(&buf, "warming", 3, false)
	c.Done()
	c.Finish()
	if buf.Len() != 0 {
		t.Fatalf("drew on a non-terminal: %q", buf.String())
	}
}

// TestCounterDraws: a counter asked to show draws its description, and
// Finish returns once its redraws have stopped.
func TestCounterDraws(t *testing.T) {
	var buf bytes.Buffer
	c := NewCounter(&buf, "warming", 2, true)
	c.Done()
	c.Done()
	c.Finish()
	if !strings.Contains(buf.String(), "warming") {
		t.Fatalf("no bar drawn: %q", buf.String())
	}
}

package jaxtest_test

import (
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
)

// TestFlagsReadAtClientCreation: XLA reads XLA_FLAGS when a client is
// created, not when its library is loaded. A flag no XLA knows, put in
// XLA_FLAGS after `import jax` (which loads XLA's library) and before the
// first backend, aborts the process when the backend is created. This is
// what xla.Prepare relies on when a Go program calls it after loading a
// PJRT plugin's library but before creating its client (docs/xla.md).
func TestFlagsReadAtClientCreation(t *testing.T) {
	for _, jl := range jaxlibs {
		t.Run(jl.version, func(t *testing.T) {
			t.Parallel()
			py := testneed.PeerPython(t, jl.list)
			r := runCmd(t, cleanEnv(), py, testdata(t, "lateflags.py"))
			switch {
			case !strings.Contains(r.stdout, "IMPORTED"):
				t.Fatalf("import jax failed: exit %d\n%s", r.exitCode, tail(r.stderr, 2000))
			case strings.Contains(r.stdout, "DEVICES") || r.exitCode == 0:
				t.Fatalf("the backend came up with an unknown flag set after import: XLA read XLA_FLAGS earlier\n%s", tail(r.stderr, 2000))
			case !strings.Contains(r.stderr, "Unknown flag"):
				t.Fatalf("the backend failed, but not on the flag: exit %d\n%s", r.exitCode, tail(r.stderr, 2000))
			}
		})
	}
}

package testneed

import (
	"strings"
	"testing"
)

// A shared data set that is not there skips the test with one line naming
// it (where a public clone's conformance tests used to fail), fails it
// under CI=true, and an existing one is returned as is.
func TestSharedData(t *testing.T) {
	// The run's own skip summary must not count this test's pretend needs.
	t.Setenv(EnvSkipLog, "")
	for _, ci := range []string{"", "true"} {
		t.Setenv(EnvCI, ci)
		t.Setenv("XLACACHE_TEST_DATA", "")
		r := &recorder{TB: t}
		SharedData(r, "XLACACHE_TEST_DATA", "conformance/no-such-set")
		msg := r.skipped + r.fatal
		if (r.skipped != "") != (ci == "") || (r.fatal != "") != (ci == "true") {
			t.Fatalf("CI=%q: skipped %q, fatal %q", ci, r.skipped, r.fatal)
		}
		for _, want := range []string{"shared/conformance/no-such-set", "../shared", "$XLACACHE_TEST_DATA"} {
			if !strings.Contains(msg, want) {
				t.Errorf("CI=%q: %q does not name %q", ci, msg, want)
			}
		}
		if strings.Contains(msg, "\n") {
			t.Errorf("CI=%q: more than one line: %q", ci, msg)
		}
	}
	dir := t.TempDir()
	t.Setenv("XLACACHE_TEST_DATA", dir)
	r := &recorder{TB: t}
	if got := SharedData(r, "XLACACHE_TEST_DATA", "conformance/x"); got != dir || r.skipped != "" || r.fatal != "" {
		t.Fatalf("existing directory: got %q, skipped %q, fatal %q", got, r.skipped, r.fatal)
	}
}

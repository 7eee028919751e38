package lease_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/flighttest"
	"github.com/xlacache/xlacache/internal/lease"
)

// The lease files pass the single-flight conformance suite: every flight
// is a Manager (a process) on one cache directory.
func TestConformance(t *testing.T) {
	flighttest.Run(t, func(t *testing.T) flighttest.Medium {
		dir := t.TempDir()
		return flighttest.Medium{
			New: func(t *testing.T, o flighttest.Options) flighttest.Flight {
				return newManager(t, dir, o)
			},
			Abandon: func(t *testing.T, name string) {
				m := newManager(t, dir, flighttest.Options{})
				if err := os.MkdirAll(filepath.Dir(m.Path(name)), 0o700); err != nil {
					t.Fatal(err)
				}
				// A holder on another host (no pid check applies) that
				// never refreshes its lease.
				rec := `{"host":"gone","host_id":"elsewhere","pid":1,"token":"dead","name":"` + name + `"}` + "\n"
				if err := os.WriteFile(m.Path(name), []byte(rec), 0o600); err != nil {
					t.Fatal(err)
				}
			},
		}
	})
}

// newManager is a flight of the conformance suite on dir.
func newManager(t *testing.T, dir string, o flighttest.Options) *lease.Manager {
	t.Helper()
	m, err := lease.New(lease.Options{Dir: dir, Stale: o.Stale, Wait: o.Wait, ReaderGrace: o.ReaderGrace,
		NoClaim: o.Reader, PollMax: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

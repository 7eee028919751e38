package lease

import (
	"os"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/pollwait"
)

func TestOptionsFor(t *testing.T) {
	base := config.Defaults()
	base.Dir = t.TempDir()
	base.Role = config.RoleWriter

	lo := OptionsFor(base, nil)
	if lo.Dir != base.Dir || lo.Wait != base.WaitTimeout || lo.NoClaim || lo.Stale != 0 || lo.NoPIDCheck {
		t.Fatalf("writer options %+v", lo)
	}
	m, err := New(lo)
	if err != nil {
		t.Fatal(err)
	}
	if got := m.Options(); got.Stale != pollwait.DefaultStale {
		t.Fatalf("default stale %v, want %v", got.Stale, pollwait.DefaultStale)
	}

	o := base
	o.LeaseStale = 1500 * time.Millisecond
	o.LeaseNoPIDCheck = true
	o.WaitTimeout = 0
	o.Role = config.RoleReader
	lo = OptionsFor(o, nil)
	if lo.Stale != 1500*time.Millisecond || !lo.NoPIDCheck || !lo.NoClaim || lo.Wait >= 0 {
		t.Fatalf("options %+v: want stale 1.5s, no pid check, no claim, no wait", lo)
	}

	// A writer is present once its state directory exists.
	if lo.WriterPresent() {
		t.Fatal("writer present before any writer opened the directory")
	}
	if err := os.MkdirAll(layout.Dir(o.Dir).State(), 0o700); err != nil {
		t.Fatal(err)
	}
	if !lo.WriterPresent() {
		t.Fatal("writer not seen after its state directory appeared")
	}
}

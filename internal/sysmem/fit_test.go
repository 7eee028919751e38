package sysmem

import (
	"errors"
	"runtime/debug"
	"testing"
)

// TestFit: no bound means no check; a failed check is Fit's error and
// leaves the memory limit alone; work that fits gets the limit, which
// restore puts back.
func TestFit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	errBig := errors.New("too big")
	bound := func() (Limit, bool) { return Limit{Bytes: 1 << 40, Source: "test"}, true }
	for _, tc := range []struct {
		name      string
		avail     func() (Limit, bool)
		check     error
		wantCheck bool
		wantErr   error
		limited   bool
	}{
		{"no bound", func() (Limit, bool) { return Limit{}, false }, nil, false, nil, false},
		{"does not fit", bound, errBig, true, errBig, false},
		{"fits", bound, nil, true, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := debug.SetMemoryLimit(-1)
			checked := false
			restore, err := Fit(tc.avail, func(l Limit) error { checked = true; return tc.check })
			if !errors.Is(err, tc.wantErr) || checked != tc.wantCheck {
				t.Fatalf("Fit: err %v, checked %v; want %v, %v", err, checked, tc.wantErr, tc.wantCheck)
			}
			if got := debug.SetMemoryLimit(-1); (got != before) != tc.limited {
				t.Fatalf("memory limit %d (before %d): set %v, want %v", got, before, got != before, tc.limited)
			}
			restore()
			if got := debug.SetMemoryLimit(-1); got != before {
				t.Fatalf("restore left the memory limit at %d, want %d", got, before)
			}
		})
	}
}

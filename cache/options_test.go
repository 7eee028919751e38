package cache

import (
	"log/slog"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/lease"
)

// withLeases is the single-flight xlacache.Open gives a cache on o: the
// lease manager on o.Dir. This package's tests cannot call xlacache.Open,
// which imports this package.
func withLeases(t testing.TB, o config.Options, logger *slog.Logger) Option {
	t.Helper()
	if o.Dir == "" {
		return WithFlight(nil)
	}
	m, err := lease.New(lease.OptionsFor(o, logger))
	if err != nil {
		t.Fatalf("lease manager on %s: %v", o.Dir, err)
	}
	return WithFlight(m)
}

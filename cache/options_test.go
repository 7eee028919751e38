package cache

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
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

// TestWithPartsDecidesAtOpen: WithParts' connect is called once, with the
// options validated and the directory absolute, and with the role the
// process really has (a writer by configuration whose directory cannot be
// written is a reader); never for a disabled cache or invalid options. Its
// parts are the ones attached.
func TestWithPartsDecidesAtOpen(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string) config.Options
		calls   int
		writer  bool
		wantErr bool
	}{
		{"writer", func(t *testing.T, dir string) config.Options {
			o := testOptions(dir)
			o.Role = config.RoleWriter
			return o
		}, 1, true, false},
		{"reader", func(t *testing.T, dir string) config.Options {
			o := testOptions(dir)
			o.Role = config.RoleReader
			return o
		}, 1, false, false},
		{"writer over a damaged directory", func(t *testing.T, dir string) config.Options {
			if err := os.WriteFile(filepath.Join(dir, ExecutablesTier), []byte("not a directory"), 0o600); err != nil {
				t.Fatal(err)
			}
			o := testOptions(dir)
			o.Role = config.RoleWriter
			return o
		}, 1, false, false},
		{"relative directory", func(t *testing.T, dir string) config.Options {
			t.Chdir(dir)
			o := testOptions("rel")
			o.Role = config.RoleWriter
			return o
		}, 1, true, false},
		{"disabled", func(t *testing.T, dir string) config.Options { return testOptions("") }, 0, false, false},
		{"invalid", func(t *testing.T, dir string) config.Options {
			o := testOptions(dir)
			o.MinCompileTime = -1
			return o
		}, 0, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.setup(t, t.TempDir())
			calls := 0
			var got config.Options
			var gotWriter bool
			st := memblob.New(memblob.Options{})
			c, err := Open(context.Background(), o, slog.New(slog.DiscardHandler), WithParts(func(opts config.Options, writer bool) Parts {
				calls++
				got, gotWriter = opts, writer
				return Parts{Shared: st}
			}))
			if (err != nil) != tc.wantErr {
				t.Fatalf("Open: %v, want error %v", err, tc.wantErr)
			}
			if err == nil {
				defer c.Close()
			}
			if calls != tc.calls {
				t.Fatalf("connect called %d times, want %d", calls, tc.calls)
			}
			if calls == 0 {
				return
			}
			if !filepath.IsAbs(got.Dir) || got.Dir != c.Options().Dir {
				t.Errorf("connect got Dir %q, want the cache's absolute %q", got.Dir, c.Options().Dir)
			}
			if gotWriter != tc.writer || c.Writer() != tc.writer {
				t.Errorf("connect got writer %v, cache writer %v; want %v", gotWriter, c.Writer(), tc.writer)
			}
			if c.Shared() != st {
				t.Errorf("the shared tier connect returned is not attached: %v", c.Shared())
			}
		})
	}
}

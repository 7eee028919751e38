package cache

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/lease"
	"github.com/xlacache/xlacache/internal/logonce"
)

// Item 11 of the hardening issue, where no tmpfs can be mounted (the
// root package's TestOneLinePerFailure* use real faults): a full disk,
// injected through the write and temporary-file seams, is one WARN line
// over a whole run — Open with leases sharing the cache's log-once filter,
// compiles that store entries and subcache entries, Close.
func TestOneLinePerFailureInjected(t *testing.T) {
	for _, tc := range []struct {
		name  string
		errno syscall.Errno
		seam  string
	}{
		{"nospace-write", syscall.ENOSPC, "write"},
		{"nospace-create", syscall.ENOSPC, "create"},
		{"permission-create", syscall.EACCES, "create"},
		{"readonly-create", syscall.EROFS, "create"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t.TempDir())
			o.Subcaches, o.SubcachesExplicit = []config.Subcache{config.SubcacheAutotune}, true
			var logs logBuffer
			logger := newTestLogger(&logs)
			shared := logonce.New(logger.With("component", "xlacache"))
			lo := lease.OptionsFor(o, logger)
			lo.Logs = shared
			m, err := lease.New(lo)
			if err != nil {
				t.Fatal(err)
			}
			c, err := Open(context.Background(), o, logger, WithFlight(m), WithLogs(shared.Slog()))
			if err != nil {
				t.Fatal(err)
			}
			switch tc.seam {
			case "write":
				c.hooks.write = func(f *os.File, b []byte) (int, error) {
					return 0, &fs.PathError{Op: "write", Path: f.Name(), Err: tc.errno}
				}
			case "create":
				c.hooks.createTemp = func(dir, pattern string) (*os.File, error) {
					return nil, &fs.PathError{Op: "open", Path: dir, Err: tc.errno}
				}
			}
			b := &tolerantBackend{fakeBackend{size: 2000}}
			for round := 0; round < 2; round++ {
				for i := 0; i < 4; i++ {
					p := Program{Name: "f", Text: []byte(fmt.Sprint("p", i))}
					exe, r, err := Compile(context.Background(), c, b, p)
					if err != nil || !bytes.Equal(exe.(*fakeExe).payload, b.expected(p)) {
						t.Fatalf("compile: %v", err)
					}
					if r.Stored {
						t.Errorf("stored despite the fault: %+v", r)
					}
				}
			}
			c.Close()
			if n := countWarn(logs.String()); n != 1 {
				t.Errorf("%d WARN lines over a run, want 1:\n%s", n, logs.String())
			}
			if kind := kindOf(tc.errno); c.Stats().Errors[kind] < 16 {
				t.Errorf("errors %v, want every failed store counted as %s", c.Stats().Errors, kind)
			}
		})
	}
}

// tolerantBackend is fakeBackend storing a subcache entry on every compile
// and, as real backends must, carrying on when the store fails.
type tolerantBackend struct{ fakeBackend }

func (b *tolerantBackend) Compile(ctx context.Context, p Program, env *Session) (Executable, error) {
	t := env.Tier(config.SubcacheAutotune)
	k := NewKey("kernel", []KeyPart{{Name: "kernel", Data: p.Text}})
	if _, ok := t.Get(ctx, k); !ok {
		t.Put(ctx, k, []byte("kernel object"), 0) // informational error: logged by the cache
	}
	return b.fakeBackend.Compile(ctx, p, env)
}

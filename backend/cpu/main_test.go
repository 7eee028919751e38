package cpu

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

// disagreements counts autotune candidates that disagreed with their
// kernel's default anywhere in the package's tests. The autotuner only
// logs and skips such a candidate (a user gets the default's result), but
// in tests it is a code generator bug: TestMain fails the run.
var disagreements atomic.Int64

// disagreeWatch passes records to the default handler and counts the
// autotuner's disagreement warnings.
type disagreeWatch struct{ slog.Handler }

func (h disagreeWatch) Handle(ctx context.Context, r slog.Record) error {
	if strings.Contains(r.Message, "autotune candidate disagrees") {
		disagreements.Add(1)
	}
	return h.Handler.Handle(ctx, r)
}

func (h disagreeWatch) WithAttrs(a []slog.Attr) slog.Handler {
	return disagreeWatch{h.Handler.WithAttrs(a)}
}

func (h disagreeWatch) WithGroup(name string) slog.Handler {
	return disagreeWatch{h.Handler.WithGroup(name)}
}

// confCache is one cache shared by the conformance tests (and any test
// that only needs warm kernel and autotune tiers): the sets share many
// kernels, which are then compiled once per test binary.
var confCache struct {
	once sync.Once
	dir  string
	c    *cache.Cache
	err  error
}

// sharedCache returns the shared cache, opening it on first use.
func sharedCache(t testing.TB) *cache.Cache {
	t.Helper()
	confCache.once.Do(func() {
		confCache.dir, confCache.err = os.MkdirTemp("", "xlacache-cpu-test-")
		if confCache.err != nil {
			return
		}
		opts := config.Defaults()
		opts.Dir = confCache.dir
		opts.MinCompileTime = 0
		logger := slog.New(disagreeWatch{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})})
		confCache.c, confCache.err = xlacache.Open(context.Background(), opts, logger)
	})
	if confCache.err != nil {
		t.Fatalf("shared test cache: %v", confCache.err)
	}
	return confCache.c
}

func TestMain(m *testing.M) {
	// Not a wrapper of slog.Default's own handler: that one writes
	// through package log, which SetDefault points back at the new
	// handler.
	slog.SetDefault(slog.New(disagreeWatch{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo})}))
	code := m.Run()
	if confCache.c != nil {
		confCache.c.Close()
	}
	if confCache.dir != "" {
		os.RemoveAll(confCache.dir)
	}
	if n := disagreements.Load(); n > 0 && code == 0 {
		fmt.Fprintf(os.Stderr, "FAIL: %d autotune candidates disagreed with their kernel's default (see the warnings above)\n", n)
		code = 1
	}
	os.Exit(code)
}

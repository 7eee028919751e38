package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
)

// fakeBackend is the test double: it "compiles" a program into a payload
// derived from its text and options (so tests can check a loaded executable
// is the right one), counts calls, and normalizes options the way a real
// backend must: cache-path and dump options are dropped from the key.
type fakeBackend struct {
	name       string
	version    string
	topology   string
	compiles   atomic.Int64
	loads      atomic.Int64
	failLoad   atomic.Bool
	useTier    config.Subcache // when set, Compile looks up/stores a subcache entry
	contentKey bool
	kernelWork time.Duration // compile time recorded in the subcache entry
	size       int           // payload padding
	noise      bool          // pad with incompressible bytes instead of dots
}

type fakeExe struct{ payload []byte }

func (e *fakeExe) Serialize() ([]byte, error) { return e.payload, nil }

func (b *fakeBackend) Name() string {
	if b.name == "" {
		return "fake"
	}
	return b.name
}

func (b *fakeBackend) KernelsContentAddressed() bool { return b.contentKey }

// normalizeOptions drops cache-path and dump options, one per line.
func normalizeOptions(opts []byte) []byte {
	var keep []string
	for _, l := range strings.Split(string(opts), "\n") {
		if strings.HasPrefix(l, "cache_dir=") || strings.HasPrefix(l, "dump_to=") || l == "" {
			continue
		}
		keep = append(keep, l)
	}
	return []byte(strings.Join(keep, "\n"))
}

func (b *fakeBackend) KeyParts(ctx context.Context, p Program) ([]KeyPart, error) {
	if bytes.Contains(p.Text, []byte("unkeyable")) {
		return nil, errors.New("cannot key this program")
	}
	return []KeyPart{
		{Name: "program", Data: p.Text},
		{Name: "options", Data: normalizeOptions(p.Options)},
		{Name: "backend", Data: []byte(b.Name() + " " + b.version)},
		{Name: "topology", Data: []byte(b.topology)},
	}, nil
}

func (b *fakeBackend) expected(p Program) []byte {
	out := []byte(fmt.Sprintf("exe(%s|%s|%s)", p.Text, normalizeOptions(p.Options), b.version))
	if b.noise {
		return append(out, noiseBytes(string(out), b.size)...)
	}
	return append(out, bytes.Repeat([]byte{'.'}, b.size)...)
}

func (b *fakeBackend) Compile(ctx context.Context, p Program, env *Session) (Executable, error) {
	b.compiles.Add(1)
	if bytes.Contains(p.Text, []byte("syntax error")) {
		return nil, errors.New("fake: syntax error")
	}
	if b.useTier != "" {
		t := env.Tier(b.useTier)
		k := NewKey("kernel", []KeyPart{{Name: "kernel", Data: p.Text}})
		if _, ok := t.Get(ctx, k); !ok {
			if err := t.Put(ctx, k, []byte("kernel object"), b.kernelWork); err != nil {
				return nil, err
			}
		}
	}
	env.Phase("fake-codegen", 1)
	return &fakeExe{payload: b.expected(p)}, nil
}

func (b *fakeBackend) Load(ctx context.Context, data []byte, env *Session) (Executable, error) {
	b.loads.Add(1)
	if b.failLoad.Load() || !bytes.HasPrefix(data, []byte("exe(")) {
		return nil, errors.New("fake: cannot load")
	}
	return &fakeExe{payload: bytes.Clone(data)}, nil
}

// noiseBytes returns n incompressible bytes derived from seed.
func noiseBytes(seed string, n int) []byte {
	sum := sha256.Sum256([]byte(seed))
	out := make([]byte, 0, n+32)
	for len(out) < n {
		out = append(out, sum[:]...)
		sum = sha256.Sum256(sum[:])
	}
	return out[:n]
}

// logBuffer captures log output for assertions about "one clear line".
type logBuffer struct{ bytes.Buffer }

func newTestLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// testOptions returns options for a test cache in dir: every write stored.
func testOptions(dir string) config.Options {
	o := config.Defaults()
	o.Dir = dir
	o.MinCompileTime = 0
	// Unit tests do not exercise single-flight waits (the lease and
	// multi-host tests do); a reader would otherwise wait out the lease's
	// grace period on every miss.
	o.WaitTimeout = 0
	return o
}

func mustOpen(t testing.TB, o config.Options, w io.Writer, options ...Option) *Cache {
	t.Helper()
	if w == nil {
		w = io.Discard
	}
	logger := newTestLogger(w)
	// Single-flight on the directory, as xlacache.Open gives every cache;
	// options may replace it.
	options = append([]Option{withLeases(t, o, logger)}, options...)
	c, err := Open(context.Background(), o, logger, options...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func compileOK(t testing.TB, c *Cache, b *fakeBackend, p Program) (*fakeExe, *Report) {
	t.Helper()
	exe, rep, err := Compile(context.Background(), c, b, p)
	if err != nil {
		t.Fatalf("Compile(%s): %v", p.Name, err)
	}
	fe := exe.(*fakeExe)
	if want := b.expected(p); !bytes.Equal(fe.payload, want) {
		t.Fatalf("Compile(%s) returned the wrong executable: %.60q, want %.60q", p.Name, fe.payload, want)
	}
	return fe, rep
}

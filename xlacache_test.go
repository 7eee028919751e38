package xlacache

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

func TestOpenShared(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		wantNil bool
		wantErr string
	}{
		{"no shared tier", "", true, ""},
		{"bad scheme", "ftp://bucket/x", false, `scheme "ftp"`},
		{"no scheme", "bucket/x", false, `scheme ""`},
		{"gs credentials in URL", "gs://ak:sk@bucket/x", false, "credentials do not belong"},
		{"gs valid, not contacted at open", "gs://bucket/x?timeout=1s", false, ""},
		{"credentials in URL", "s3://ak:sk@bucket/x", false, "credentials do not belong"},
		{"valid, not contacted at open", "s3://bucket/x?endpoint=http://127.0.0.1:1", false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.url != "" {
				// CheckSharedURL (sync's usage check) agrees with OpenShared.
				if err := CheckSharedURL(tt.url); (err != nil) != (tt.wantErr != "") {
					t.Fatalf("CheckSharedURL(%q) = %v, want error %v", tt.url, err, tt.wantErr != "")
				}
			}
			s, err := OpenShared(tt.url, slog.New(slog.DiscardHandler))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), ":sk@") {
					t.Fatalf("OpenShared(%q) = %v, want %q", tt.url, err, tt.wantErr)
				}
				return
			}
			if err != nil || (s == nil) != tt.wantNil {
				t.Fatalf("OpenShared(%q) = %v, %v", tt.url, s, err)
			}
			if s != nil {
				s.Close()
			}
		})
	}
}

// The shared tier Open gives the cache is guarded: a store nobody answers
// for costs one failure and one log line, then fails fast.
func TestOpenGuardsSharedTier(t *testing.T) {
	o := config.Defaults()
	o.Dir = t.TempDir()
	o.SigningKey = sign.NewHMAC([]byte("k"))
	o.SharedURL = "s3://bucket/x?endpoint=http://127.0.0.1:1&timeout=2s&cooldown=1h"
	t.Setenv("AWS_ACCESS_KEY_ID", "a")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "b")
	var logs logtest.Buffer
	c, err := Open(context.Background(), o, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s := c.Shared()
	if s == nil {
		t.Fatal("no shared tier")
	}
	ctx := context.Background()
	for i := range 3 {
		if _, err := s.Get(ctx, "executables/k"); !errors.Is(err, blob.ErrUnavailable) {
			t.Fatalf("Get %d from an unreachable store: %v", i, err)
		}
	}
	if n := strings.Count(logs.String(), "shared store failed"); n != 1 {
		t.Fatalf("%d outage lines, want 1:\n%s", n, logs.String())
	}
}

// A shared URL that cannot be used is one log line, not an error: the
// cache works with its local directory.
func TestOpenUnusableSharedURL(t *testing.T) {
	o := config.Defaults()
	o.Dir = t.TempDir()
	o.SharedURL = "s3://ak:sk@bucket/x"
	var logs logtest.Buffer
	c, err := Open(context.Background(), o, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Shared() != nil || c.Dir() == "" {
		t.Fatalf("shared %v, dir %q", c.Shared(), c.Dir())
	}
	if !strings.Contains(logs.String(), "shared cache tier unusable") || strings.Contains(logs.String(), ":sk@") {
		t.Fatalf("logs:\n%s", logs.String())
	}
	if _, err := Open(context.Background(), config.Options{Dir: "a\x00b"}, nil); err == nil {
		t.Fatal("invalid options accepted")
	}
}

// slowBackend compiles by waiting until told, counting compiles.
type slowBackend struct {
	started  chan struct{}
	release  chan struct{}
	compiles atomic.Int32
}

type exe []byte

func (e exe) Serialize() ([]byte, error) { return e, nil }

func (b *slowBackend) Name() string { return "slow" }
func (b *slowBackend) KeyParts(ctx context.Context, p cache.Program) ([]cache.KeyPart, error) {
	return []cache.KeyPart{{Name: "program", Data: p.Text}}, nil
}
func (b *slowBackend) Compile(ctx context.Context, p cache.Program, env *cache.Session) (cache.Executable, error) {
	b.compiles.Add(1)
	b.started <- struct{}{}
	<-b.release
	return exe("compiled " + string(p.Text)), nil
}
func (b *slowBackend) Load(ctx context.Context, data []byte, env *cache.Session) (cache.Executable, error) {
	return exe(data), nil
}

// Open gives the cache single-flight compilation: of two caches on one
// directory missing the same program at once, one compiles.
func TestOpenSingleFlight(t *testing.T) {
	o := config.Defaults()
	o.Dir = t.TempDir()
	o.MinCompileTime = 0
	o.Role = config.RoleWriter
	open := func() *cache.Cache {
		c, err := Open(context.Background(), o, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	a, b := open(), open()
	be := &slowBackend{started: make(chan struct{}, 2), release: make(chan struct{})}
	p := cache.Program{Name: "p", Text: []byte("program")}
	type result struct {
		rep *cache.Report
		err error
	}
	results := make(chan result, 2)
	compile := func(c *cache.Cache) {
		_, rep, err := cache.Compile(context.Background(), c, be, p)
		results <- result{rep, err}
	}
	go compile(a)
	<-be.started // a holds the lease and compiles
	go compile(b)
	// b must wait for a's lease, not compile: a second compile starting
	// while a's runs is the failure (the window only bounds how long the
	// test looks for it).
	select {
	case <-be.started:
		t.Fatal("a second compile started while the first ran: no single-flight")
	case <-time.After(300 * time.Millisecond):
	}
	close(be.release)
	for range 2 {
		r := <-results
		if r.err != nil {
			t.Fatal(r.err)
		}
	}
	if n := be.compiles.Load(); n != 1 {
		t.Fatalf("%d compiles across two caches on one directory, want 1", n)
	}
}

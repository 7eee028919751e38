package gcsblob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/testsupport/blobtest"
	"github.com/xlacache/xlacache/internal/testsupport/gcstest"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

func TestParseURL(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		env     map[string]string
		want    Config
		wantErr string
	}{
		{name: "bucket and prefix", url: "gs://my-bucket/team/xla", want: Config{Bucket: "my-bucket", Prefix: "team/xla"}},
		{name: "bucket only, dotted", url: "gs://cache.example.com", want: Config{Bucket: "cache.example.com"}},
		{
			name: "emulator from the environment, durations from the query",
			url:  "gs://bkt/p?timeout=5s&cooldown=2m",
			env:  map[string]string{EnvEmulatorHost: "127.0.0.1:4443"},
			want: Config{Bucket: "bkt", Prefix: "p", Emulator: "127.0.0.1:4443", Timeout: 5 * time.Second, Cooldown: 2 * time.Minute},
		},
		{name: "emulator as a URL", url: "gs://bkt", env: map[string]string{EnvEmulatorHost: "http://localhost:9023"}, want: Config{Bucket: "bkt", Emulator: "http://localhost:9023"}},
		{name: "wrong scheme", url: "s3://bkt/p", wantErr: `scheme "s3"`},
		{name: "credentials in URL", url: "gs://ak:sk@bkt/p", wantErr: "credentials do not belong"},
		{name: "bad bucket", url: "gs://B_/p", wantErr: "not a valid bucket"},
		{name: "bucket with two dots", url: "gs://a..b/p", wantErr: "not a valid bucket"},
		{name: "escaping prefix", url: "gs://bkt/a/../b", wantErr: "prefix"},
		{name: "unknown parameter", url: "gs://bkt?endpoint=x", wantErr: `unknown parameter "endpoint"`},
		{name: "bad duration", url: "gs://bkt?timeout=-1s", wantErr: `timeout="-1s"`},
		{name: "emulator with a path", url: "gs://bkt", env: map[string]string{EnvEmulatorHost: "http://h:1/x"}, wantErr: EnvEmulatorHost},
		{name: "emulator with a bad scheme", url: "gs://bkt", env: map[string]string{EnvEmulatorHost: "ftp://h:1"}, wantErr: "http or https"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseURL(tt.url, env(tt.env))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParseURL(%q) error = %v, want %q", tt.url, err, tt.wantErr)
				}
				if strings.Contains(err.Error(), ":sk@") {
					t.Fatalf("error leaks the secret: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			if want.Timeout == 0 {
				want.Timeout = DefaultTimeout
			}
			if want.Cooldown == 0 {
				want.Cooldown = DefaultCooldown
			}
			want.DialTimeout = DefaultDialTimeout
			want.MaxObjectSize = DefaultMaxObjectSize
			if got != want {
				t.Fatalf("ParseURL(%q) =\n %+v\nwant\n %+v", tt.url, got, want)
			}
		})
	}
}

func FuzzParseURL(f *testing.F) {
	f.Add("gs://bkt/p?timeout=1s")
	f.Add("gs://a:b@bkt")
	f.Add("gs://bkt/../../x")
	f.Fuzz(func(t *testing.T, raw string) {
		cfg, err := ParseURL(raw, env(nil))
		if err != nil {
			return
		}
		if cfg.Prefix != "" && blob.ValidName(cfg.Prefix) != nil {
			t.Fatalf("accepted invalid prefix %q", cfg.Prefix)
		}
		if !bucketRE.MatchString(cfg.Bucket) {
			t.Fatalf("accepted %q with bucket %q", raw, cfg.Bucket)
		}
	})
}

// openTest opens a store on srv, and the store guarded as xlacache.Open
// does (the store's Timeout and Cooldown configure the guard).
func openTest(t *testing.T, srv *gcstest.Server, url string, mod func(*Config)) (*Store, blob.Store, *logtest.Recorder) {
	t.Helper()
	srv.Setenv(t)
	cfg, err := ParseURL(url, os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	if mod != nil {
		mod(&cfg)
	}
	s, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	rec := &logtest.Recorder{}
	g := blob.Guard(s, blob.GuardOptions{Timeout: cfg.Timeout, Cooldown: cfg.Cooldown, Logger: slog.New(rec)})
	return s, g, rec
}

// TestConformance runs the store conformance suite (the lease probe
// included) against fake-gcs-server through the official client.
func TestConformance(t *testing.T) {
	srv := gcstest.Start(t, "bkt")
	var n atomic.Int64
	newStore := func(t *testing.T, mod func(*Config)) *Store {
		s, _, _ := openTest(t, srv, fmt.Sprintf("gs://bkt/conformance-%d", n.Add(1)), mod)
		return s
	}
	blobtest.Run(t,
		func(t *testing.T) blob.Store { return newStore(t, nil) },
		blobtest.WithMaxObjectSize(func(t *testing.T, limit int64) blob.Store {
			return newStore(t, func(c *Config) { c.MaxObjectSize = limit })
		}),
		blobtest.WithOutage(func(t *testing.T) (blob.Store, func()) {
			// Its own server, so stopping it leaves the others running.
			own := gcstest.Start(t, "bkt")
			s, _, _ := openTest(t, own, "gs://bkt/outage", nil)
			return s, own.Stop
		}),
	)
}

// TestPrefixes: the store's prefix is where its objects live, and two
// prefixes do not see each other.
func TestPrefixes(t *testing.T) {
	srv := gcstest.Start(t, "bkt")
	s, _, _ := openTest(t, srv, "gs://bkt/team", nil)
	other, _, _ := openTest(t, srv, "gs://bkt/other", nil)
	root, _, _ := openTest(t, srv, "gs://bkt", nil)
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "executables/k1", []byte("1")); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "cpu/kernels/k2", nil); err != nil {
		t.Fatal(err)
	}
	if err := other.PutIfAbsent(ctx, "executables/k3", []byte("x")); err != nil {
		t.Fatal(err)
	}
	infos, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, in := range infos {
		names = append(names, in.Name)
	}
	if want := []string{"cpu/kernels/k2", "executables/k1"}; !slices.Equal(names, want) {
		t.Fatalf("List = %q, want %q (prefixes must not mix)", names, want)
	}
	if _, err := other.Get(ctx, "executables/k1"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("another prefix sees the object: %v", err)
	}
	if got, err := root.Get(ctx, "team/executables/k1"); err != nil || string(got) != "1" {
		t.Fatalf("the bucket root does not see team/executables/k1: %q, %v", got, err)
	}
}

// TestGuardServerStopped: with the server gone the guarded store fails
// fast with one log line, and comes back after the cool-down.
func TestGuardServerStopped(t *testing.T) {
	srv := gcstest.Start(t, "bkt")
	_, s, rec := openTest(t, srv, "gs://bkt?timeout=2s&cooldown=300ms", nil)
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	if _, err := s.Get(ctx, "a"); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("Get with the server down: %v", err)
	}
	for i := range 5 {
		if _, err := s.Get(ctx, "a"); !errors.Is(err, blob.ErrUnavailable) || !strings.Contains(err.Error(), "last error") {
			t.Fatalf("call %d while open: %v", i, err)
		}
	}
	if n := rec.Count("WARN"); n != 1 {
		t.Fatalf("%d warnings, want exactly one log line: %q", n, rec.Lines())
	}
	if err := srv.Restart(); err != nil {
		t.Fatal(err)
	}
	// After the cool-down one probe reaches the server (its memory is
	// empty after the restart: the answer is "absent") and the store is
	// back.
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := s.Get(ctx, "a")
		if errors.Is(err, blob.ErrNotExist) {
			break
		}
		if !errors.Is(err, blob.ErrUnavailable) || time.Now().After(deadline) {
			t.Fatalf("store did not recover: %v", err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if rec.Count("INFO xlacache: shared store reachable again") != 1 {
		t.Fatalf("no recovery log line: %q", rec.Lines())
	}
}

// TestGuardSlowServer: a server that accepts connections and never
// answers costs the timeout once, then calls fail fast.
func TestGuardSlowServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	defer func() {
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	}()
	cfg, err := ParseURL("gs://bkt?timeout=200ms", env(map[string]string{EnvEmulatorHost: l.Addr().String()}))
	if err != nil {
		t.Fatal(err)
	}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := &logtest.Recorder{}
	s := blob.Guard(st, blob.GuardOptions{Timeout: cfg.Timeout, Cooldown: cfg.Cooldown, Logger: slog.New(rec)})
	start := time.Now()
	if _, err := s.Get(context.Background(), "x"); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("Get from a silent server: %v", err)
	}
	if err := s.PutIfAbsent(context.Background(), "x", []byte("1")); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("Put to a silent server after a failure: %v", err)
	}
	if _, err := s.List(context.Background(), ""); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("List: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("three calls to a silent server took %v with a 200ms timeout", d)
	}
	if n := rec.Count("WARN"); n != 1 {
		t.Fatalf("%d warnings, want 1", n)
	}
}

// TestOversizeObjectNotRead: a planted huge object is refused from the
// size in the response headers, without reading its body, and an object
// within the bound is read into one buffer of its size.
func TestOversizeObjectNotRead(t *testing.T) {
	srv := gcstest.Start(t, "bkt")
	const bound = 16 << 20
	s, g, _ := openTest(t, srv, "gs://bkt/bound", func(c *Config) { c.MaxObjectSize = bound })
	ctx := context.Background()
	big := bytes.Repeat([]byte{0xAB}, 4*bound)
	if err := s.PutIfAbsent(ctx, "executables/planted", big); err != nil {
		t.Fatal(err)
	}
	fits := bytes.Repeat([]byte{0xCD}, bound)
	if err := s.PutIfAbsent(ctx, "executables/fits", fits); err != nil {
		t.Fatal(err)
	}
	big = nil
	for _, st := range []struct {
		name string
		s    blob.Store
	}{{"store", s}, {"guarded", g}} {
		var err error
		n := memtest.Allocated(func() { _, err = st.s.Get(ctx, "executables/planted") })
		if !errors.Is(err, blob.ErrTooLarge) {
			t.Fatalf("%s: Get of a %d-byte object with a %d-byte bound: %v, want ErrTooLarge", st.name, 4*bound, bound, err)
		}
		if n > 2<<20 {
			t.Errorf("%s: refusing the oversize object allocated %d bytes: it was read before being checked", st.name, n)
		}
		var got []byte
		n = memtest.Allocated(func() { got, err = st.s.Get(ctx, "executables/fits") })
		if err != nil || !bytes.Equal(got, fits) {
			t.Fatalf("%s: Get of an object at the bound: %d bytes, %v", st.name, len(got), err)
		}
		if n > bound+bound/4 {
			t.Errorf("%s: reading a %d-byte object allocated %d bytes, want about its size", st.name, bound, n)
		}
	}
}

// A List answered with an endless body costs an error after a bounded
// read, not memory until the timeout. The server here is a test double
// standing for a broken or hostile endpoint.
func TestListEndlessBodyBounded(t *testing.T) {
	chunk := []byte(strings.Repeat(`{"items":[`, 8192))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	s, err := Open(Config{Bucket: "bkt", Prefix: "p", Emulator: srv.URL, Timeout: time.Minute, MaxObjectSize: 1 << 30})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var lerr error
	start := time.Now()
	n := memtest.Allocated(func() { _, lerr = s.List(ctx, "executables/") })
	if lerr == nil || !strings.Contains(lerr.Error(), "body longer than") {
		t.Fatalf("List of an endless body: %v, want an error naming the bound", lerr)
	}
	if ctx.Err() != nil {
		t.Fatalf("List of an endless body ran into the context's deadline (%v) instead of the body bound", time.Since(start))
	}
	// The client retries (3 attempts): three bounded reads at most.
	if n > 8*blob.MaxControlBody {
		t.Errorf("List of an endless body allocated %d bytes, want a few times the %d-byte bound at most", n, blob.MaxControlBody)
	}
}

// TestNoCredentialsNoAnonymous: without an emulator and without any
// Google credentials the store refuses to work (an error, through the
// guard ErrUnavailable with one log line) instead of reading or writing
// anonymously.
func TestNoCredentialsNoAnonymous(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("GOOGLE_APPLICATION_CREDENTIALS", dir+"/absent.json")
	t.Setenv(EnvEmulatorHost, "")
	cfg, err := ParseURL("gs://bkt/p?timeout=10s", os.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	st, err := Open(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	rec := &logtest.Recorder{}
	g := blob.Guard(st, blob.GuardOptions{Timeout: cfg.Timeout, Logger: slog.New(rec)})
	_, err = g.Get(context.Background(), "executables/k")
	if !errors.Is(err, blob.ErrUnavailable) || !strings.Contains(err.Error(), "credentials") {
		t.Fatalf("Get without credentials: %v, want ErrUnavailable naming the credentials", err)
	}
	if n := rec.Count("WARN"); n != 1 {
		t.Fatalf("%d warnings, want 1: %q", n, rec.Lines())
	}
}

func TestCallerCancelDoesNotTripGuard(t *testing.T) {
	srv := gcstest.Start(t, "bkt")
	_, s, rec := openTest(t, srv, "gs://bkt", nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(ctx, "a"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get with a cancelled context: %v", err)
	}
	if _, err := s.Get(context.Background(), "a"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("guard opened by the caller's cancel: %v", err)
	}
	if len(rec.Lines()) != 0 {
		t.Fatalf("logs %q", rec.Lines())
	}
}

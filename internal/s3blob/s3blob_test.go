package s3blob

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/testsupport/blobtest"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
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
		{
			name: "bucket and prefix, AWS defaults",
			url:  "s3://my-bucket/team/xla",
			want: Config{Bucket: "my-bucket", Prefix: "team/xla", Endpoint: DefaultEndpoint, Secure: true},
		},
		{
			name: "endpoint from AWS_ENDPOINT_URL_S3 wins over AWS_ENDPOINT_URL",
			url:  "s3://bkt",
			env:  map[string]string{"AWS_ENDPOINT_URL_S3": "http://127.0.0.1:7070", "AWS_ENDPOINT_URL": "https://other:1", "AWS_REGION": "eu-west-1"},
			want: Config{Bucket: "bkt", Endpoint: "127.0.0.1:7070", Secure: false, Region: "eu-west-1"},
		},
		{
			name: "query wins over env",
			url:  "s3://bkt/p?endpoint=https://minio.local:9000&region=r1&path-style=true&timeout=5s&cooldown=2m",
			env:  map[string]string{"AWS_ENDPOINT_URL": "http://x:1", "AWS_DEFAULT_REGION": "r2"},
			want: Config{Bucket: "bkt", Prefix: "p", Endpoint: "minio.local:9000", Secure: true, Region: "r1", PathStyle: true, Timeout: 5 * time.Second, Cooldown: 2 * time.Minute},
		},
		{
			name: "bare host endpoint with insecure",
			url:  "s3://bkt?endpoint=host:9000&insecure=true",
			want: Config{Bucket: "bkt", Endpoint: "host:9000", Secure: false},
		},
		{name: "wrong scheme", url: "gs://bkt/p", wantErr: `scheme "gs"`},
		{name: "credentials in URL", url: "s3://ak:sk@bkt/p", wantErr: "credentials do not belong"},
		{name: "bad bucket", url: "s3://B_/p", wantErr: "not a valid bucket"},
		{name: "escaping prefix", url: "s3://bkt/a/../b", wantErr: "prefix"},
		{name: "unknown parameter", url: "s3://bkt?endpont=x", wantErr: `unknown parameter "endpont"`},
		{name: "bad bool", url: "s3://bkt?insecure=maybe", wantErr: `insecure="maybe"`},
		{name: "bad duration", url: "s3://bkt?timeout=-1s", wantErr: `timeout="-1s"`},
		{name: "endpoint with path", url: "s3://bkt?endpoint=http://h:1/path", wantErr: "no path"},
		{name: "endpoint bad scheme", url: "s3://bkt?endpoint=ftp://h:1", wantErr: "http or https"},
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
	f.Add("s3://bkt/p?endpoint=http://127.0.0.1:7070&insecure=true")
	f.Add("s3://a:b@bkt")
	f.Add("s3://bkt/../../x")
	f.Fuzz(func(t *testing.T, raw string) {
		cfg, err := ParseURL(raw, env(nil))
		if err != nil {
			return
		}
		if cfg.Prefix != "" && blob.ValidName(cfg.Prefix) != nil {
			t.Fatalf("accepted invalid prefix %q", cfg.Prefix)
		}
		if cfg.Bucket == "" || cfg.Endpoint == "" {
			t.Fatalf("accepted %q with empty bucket or endpoint: %+v", raw, cfg)
		}
	})
}

// openTest opens a store on srv, guarded when guard is set (the store's
// Timeout and Cooldown configure the guard, as xlacache.Open does).
func openTest(t *testing.T, srv *s3test.Server, url string, mod func(*Config)) (*Store, blob.Store, *logtest.Recorder) {
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

func TestConformance(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	var n atomic.Int64
	// Each store gets its own prefix on one server: a fresh namespace
	// without a server start per check.
	newStore := func(t *testing.T, mod func(*Config)) *Store {
		s, _, _ := openTest(t, srv, fmt.Sprintf("s3://bkt/conformance-%d", n.Add(1)), mod)
		return s
	}
	blobtest.Run(t,
		func(t *testing.T) blob.Store { return newStore(t, nil) },
		blobtest.WithMaxObjectSize(func(t *testing.T, limit int64) blob.Store {
			return newStore(t, func(c *Config) { c.MaxObjectSize = limit })
		}),
		blobtest.WithOutage(func(t *testing.T) (blob.Store, func()) {
			// Its own server, so stopping it leaves the others running.
			own := s3test.Start(t, "bkt")
			s, _, _ := openTest(t, own, "s3://bkt/outage", nil)
			return s, own.Stop
		}),
	)
}

// TestPrefixes checks what only a real bucket shows: the store's prefix is
// where its objects live, and two prefixes do not see each other.
func TestPrefixes(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	s, _, _ := openTest(t, srv, "s3://bkt/team", nil)
	other, _, _ := openTest(t, srv, "s3://bkt/other", nil)
	root, _, _ := openTest(t, srv, "s3://bkt", nil)
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
	// The object lives under the prefix in the bucket.
	if _, err := os.Stat(filepath.Join(srv.Root, "bkt", "team", "executables", "k1")); err != nil {
		t.Fatalf("object not where expected: %v", err)
	}
}

func TestGuardServerStopped(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	_, s, rec := openTest(t, srv, "s3://bkt?timeout=2s&cooldown=300ms", nil)
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "a", []byte("1")); err != nil {
		t.Fatal(err)
	}
	srv.Stop()
	_, err := s.Get(ctx, "a")
	if !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("Get with the server down: %v", err)
	}
	// While open, calls fail fast without touching the network.
	for i := 0; i < 5; i++ {
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
	// After the cool-down, one probe succeeds and the store is back.
	deadline := time.Now().Add(20 * time.Second)
	for {
		got, err := s.Get(ctx, "a")
		if err == nil {
			if string(got) != "1" {
				t.Fatalf("after restart got %q", got)
			}
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

func TestGuardSlowServer(t *testing.T) {
	// A server that accepts connections and never answers.
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
	cfg, err := ParseURL("s3://bkt?endpoint=http://"+l.Addr().String()+"&timeout=200ms", env(nil))
	if err != nil {
		t.Fatal(err)
	}
	cfg.AccessKey, cfg.SecretKey = "a", "b"
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

func TestCallerCancelDoesNotTripGuard(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	_, s, rec := openTest(t, srv, "s3://bkt", nil)
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

// Package gcstest runs a real GCS-API server (fake-gcs-server with its
// in-memory backend) on loopback for tests, so that the gs:// shared tier
// is tested through the official client against a server that speaks the
// JSON API, preconditions and generations included, rather than a fake of
// the store interface.
//
// The server binary is looked up on PATH and in $(go env GOPATH)/bin;
// scripts/test.sh installs it with InstallCommand. Tests skip with a clear
// message only when the binary is absent (fail under CI=true).
//
// What such a server does not show about real GCS (IAM, consistency
// under load, rate limits, 429/503 answers, resumable uploads) is in
// docs/multihost.md.
package gcstest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/testneed"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

// Version is the fake-gcs-server release the tests run.
const Version = "v1.56.1"

// InstallCommand installs the fake-gcs-server these tests run.
const InstallCommand = "go install github.com/fsouza/fake-gcs-server@" + Version

// EnvEmulatorHost is how clients are pointed at the server (the official
// clients' convention).
const EnvEmulatorHost = "STORAGE_EMULATOR_HOST"

// Server is a running fake-gcs-server.
type Server struct {
	// Addr is host:port on loopback.
	Addr string

	bin     string
	data    string // seed directory: one empty directory per bucket
	marker  string
	mu      sync.Mutex
	cmd     *exec.Cmd
	exited  chan struct{}
	logs    *logtest.Buffer
	buckets []string
}

// Binary returns the fake-gcs-server path, or "" when it is not installed.
func Binary() string {
	const name = "fake-gcs-server"
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		gopath += string(filepath.ListSeparator) + filepath.Join(home, "go")
	}
	for _, dir := range filepath.SplitList(gopath) {
		if dir == "" {
			continue
		}
		p := filepath.Join(dir, "bin", name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// Missing ends a test that needs fake-gcs-server where it is not
// installed.
func Missing(t testing.TB) {
	t.Helper()
	testneed.Missing(t, testneed.GroupServers, "fake-gcs-server (looked on PATH and in $(go env GOPATH)/bin)", InstallCommand)
}

// Start starts a server with one empty bucket per name in buckets and
// stops it when the test ends. When fake-gcs-server is not installed the
// test skips (fails under CI=true).
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		Missing(t)
	}
	// A marker bucket lets start tell its own server from another test
	// package's server that won a race for the same port.
	var rnd [6]byte
	rand.Read(rnd[:])
	s := &Server{bin: bin, data: t.TempDir(), marker: "gcstest-" + hex.EncodeToString(rnd[:]), buckets: buckets}
	// The server seeds its memory from the directory: an empty directory
	// is an empty bucket.
	for _, b := range append([]string{s.marker}, buckets...) {
		if err := os.Mkdir(filepath.Join(s.data, b), 0o700); err != nil {
			t.Fatalf("gcstest: bucket %q: %v", b, err)
		}
	}
	var err error
	for range 3 {
		// Always a fresh ephemeral port: go test runs packages in
		// parallel, and a test that stops its server to simulate an
		// outage must not find another package's server on its port.
		s.Addr = freeAddr(t)
		if err = s.start(); err == nil {
			break
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("gcstest: no free loopback port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

func (s *Server) start() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd != nil {
		return nil
	}
	host, port, err := net.SplitHostPort(s.Addr)
	if err != nil {
		return fmt.Errorf("gcstest: %w", err)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return fmt.Errorf("gcstest: port %q: %w", port, err)
	}
	cmd := exec.Command(s.bin, "-backend", "memory", "-scheme", "http", "-host", host, "-port", port,
		"-public-host", s.Addr, "-external-url", "http://"+s.Addr, "-data", s.data, "-log-level", "warn")
	// The exec package writes the output from its own goroutines while
	// tests may read it; a chatty server must not grow it without bound.
	s.logs = &logtest.Buffer{Limit: 1 << 20}
	cmd.Stdout = s.logs
	cmd.Stderr = s.logs
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("gcstest: starting %s: %w", s.bin, err)
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Ready is the marker bucket answering: the server listens, has
	// loaded its seed, and is ours, not another package's that took the
	// port meanwhile.
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		code, err := s.get(ctx, "/storage/v1/b/"+s.marker)
		if err == nil && code == http.StatusOK {
			break
		}
		// Anything else is a server not ready yet, or another package's
		// server on the port; ours then fails to bind it and exits.
		select {
		case <-exited:
			return fmt.Errorf("gcstest: fake-gcs-server exited at start: %s", s.logs.String())
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("gcstest: fake-gcs-server did not answer on %s within 30s: %s", s.Addr, s.logs.String())
		case <-tick.C:
		}
	}
	s.cmd, s.exited = cmd, exited
	return nil
}

// get sends one GET to the server and returns its status.
func (s *Server) get(ctx context.Context, path string) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+s.Addr+path, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	resp.Body.Close()
	return resp.StatusCode, nil
}

// Stop stops the server; its objects, kept in memory, are gone. It is
// safe to call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	<-exited
}

// Restart starts a stopped server again on the same address, with its
// buckets empty (the in-memory backend keeps nothing across a stop).
func (s *Server) Restart() error { return s.start() }

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Endpoint is the server's URL, the value of STORAGE_EMULATOR_HOST.
func (s *Server) Endpoint() string { return "http://" + s.Addr }

// SharedURL is an XLACACHE_SHARED_URL for bucket/prefix on this server.
func (s *Server) SharedURL(bucket, prefix string) string {
	u := "gs://" + bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return u
}

// Env is the environment a client process needs to reach this server.
func (s *Server) Env() []string {
	return []string{EnvEmulatorHost + "=" + s.Endpoint()}
}

// Setenv sets Env for the current test (t.Setenv restores it afterwards).
func (s *Server) Setenv(t testing.TB) {
	t.Helper()
	for _, kv := range s.Env() {
		k, v, _ := strings.Cut(kv, "=")
		t.Setenv(k, v)
	}
}

// Logs returns what the server printed, for failure messages.
func (s *Server) Logs() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.logs == nil {
		return ""
	}
	return s.logs.String()
}

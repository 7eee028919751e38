// Package s3test runs a real S3 server (versitygw with its posix backend) on
// loopback for tests, so that the shared tier is tested against a real
// object store rather than a fake.
//
// The server binary is looked up on PATH and in $(go env GOPATH)/bin; .ci/run
// installs it with
//
//	go install github.com/versity/versitygw/cmd/versitygw@v1.8.0
//
// Tests skip with a clear message only when the binary is absent.
package s3test

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
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"

	"github.com/xlacache/xlacache/internal/testneed"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

// Credentials of the server's root user; they only guard a loopback server
// that lives for one test.
const (
	AccessKey = "xlacachetest"
	SecretKey = "xlacachetest-secret-key"
	Region    = "us-east-1"
)

// Server is a running versitygw.
type Server struct {
	// Addr is host:port on loopback.
	Addr string
	// Root is the posix backend's directory: bucket directories live here.
	Root string

	bin    string
	marker string
	mu     sync.Mutex
	cmd    *exec.Cmd
	logs   *logtest.Buffer
}

// Binary returns the versitygw path, or "" when it is not installed.
func Binary() string {
	if p, err := exec.LookPath("versitygw"); err == nil {
		return p
	}
	gopath := os.Getenv("GOPATH")
	if gopath == "" {
		if out, err := exec.Command("go", "env", "GOPATH").Output(); err == nil {
			gopath = strings.TrimSpace(string(out))
		}
	}
	for _, dir := range filepath.SplitList(gopath) {
		p := filepath.Join(dir, "bin", "versitygw")
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() {
			return p
		}
	}
	if home, err := os.UserHomeDir(); err == nil {
		p := filepath.Join(home, "go", "bin", "versitygw")
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// Start starts a server with one bucket per name in buckets and stops it
// when the test ends. When versitygw is not installed the test skips
// (fails under CI=true: testneed.Missing).
func Start(t testing.TB, buckets ...string) *Server {
	t.Helper()
	bin := Binary()
	if bin == "" {
		Missing(t)
	}
	root := t.TempDir()
	for _, b := range buckets {
		// The posix backend treats each top-level directory as a bucket.
		if err := os.Mkdir(filepath.Join(root, b), 0o700); err != nil {
			t.Fatalf("s3test: creating bucket %q: %v", b, err)
		}
	}
	// A marker bucket lets start tell its own server from another test
	// package's server that won a race for the same port.
	var rnd [6]byte
	rand.Read(rnd[:])
	marker := "s3test-" + hex.EncodeToString(rnd[:])
	if err := os.Mkdir(filepath.Join(root, marker), 0o700); err != nil {
		t.Fatalf("s3test: %v", err)
	}
	s := &Server{Root: root, bin: bin, marker: marker}
	// Always a fresh ephemeral port, never a fixed one: go test runs
	// packages in parallel, and a test that stops its server to simulate
	// an outage must not find another package's server on the same port.
	addr := freeAddr(t)
	var err error
	for attempt := 0; attempt < 3; attempt++ {
		s.Addr = addr
		if err = s.start(); err == nil {
			break
		}
		addr = freeAddr(t)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// isOurs reports whether the server answering on addr serves our root,
// by looking for the marker bucket with a signed request.
func (s *Server) isOurs(ctx context.Context) bool {
	c, err := minio.New(s.Addr, &minio.Options{Creds: credentials.NewStaticV4(AccessKey, SecretKey, ""), Region: Region, MaxRetries: 1})
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	ok, err := c.BucketExists(ctx, s.marker)
	return err == nil && ok
}

func portFree(addr string) bool {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return false
	}
	l.Close()
	return true
}

func freeAddr(t testing.TB) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("s3test: no free loopback port: %v", err)
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
	cmd := exec.Command(s.bin, "--port", s.Addr, "--access", AccessKey, "--secret", SecretKey,
		"--region", Region, "--quiet", "posix", s.Root)
	// Drop ROOT_*/VGW_* variables a developer may have set: the flags above
	// must be the whole configuration.
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ROOT_") && !strings.HasPrefix(kv, "VGW_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	// The exec package writes the output from its own goroutines while
	// tests may read it; a chatty server must not grow it without bound.
	s.logs = &logtest.Buffer{Limit: 1 << 20}
	cmd.Stdout = s.logs
	cmd.Stderr = s.logs
	cmd.SysProcAttr = dieWithParent()
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("s3test: starting %s: %w", s.bin, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		if err := probe(ctx, s.Addr); err == nil {
			break
		}
		select {
		case err := <-exited:
			return fmt.Errorf("s3test: versitygw exited at start (%v): %s", err, s.logs.String())
		case <-ctx.Done():
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("s3test: versitygw did not answer on %s within 30s: %s", s.Addr, s.logs.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	if !s.isOurs(ctx) {
		cmd.Process.Kill()
		<-exited
		return fmt.Errorf("s3test: another server answers on %s: %s", s.Addr, s.logs.String())
	}
	s.cmd = cmd
	go func() {
		// Reap the process when it stops.
		<-exited
		s.mu.Lock()
		if s.cmd == cmd {
			s.cmd = nil
		}
		s.mu.Unlock()
	}()
	return nil
}

// probe reports whether an HTTP server answers on addr (any status counts:
// an unauthenticated request gets 403 from a live S3 server).
func probe(ctx context.Context, addr string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/", nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	resp.Body.Close()
	return nil
}

// Stop stops the server (the stored objects stay in Root). It is safe to
// call more than once.
func (s *Server) Stop() {
	s.mu.Lock()
	cmd := s.cmd
	s.cmd = nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Kill()
	// Wait until the port is released so that Restart can bind it again.
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && !portFree(s.Addr) {
		time.Sleep(10 * time.Millisecond)
	}
}

// Restart starts a stopped server again on the same address and data.
func (s *Server) Restart() error {
	return s.start()
}

// Running reports whether the server process is up.
func (s *Server) Running() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cmd != nil
}

// Endpoint is the server's URL.
func (s *Server) Endpoint() string { return "http://" + s.Addr }

// SharedURL is an XLACACHE_SHARED_URL for bucket/prefix on this server.
func (s *Server) SharedURL(bucket, prefix string) string {
	u := "s3://" + bucket
	if prefix != "" {
		u += "/" + prefix
	}
	return u
}

// Env is the environment a client process needs to reach this server the
// usual S3 way (endpoint and credentials).
func (s *Server) Env() []string {
	return []string{
		"AWS_ENDPOINT_URL_S3=" + s.Endpoint(),
		"AWS_ACCESS_KEY_ID=" + AccessKey,
		"AWS_SECRET_ACCESS_KEY=" + SecretKey,
		"AWS_REGION=" + Region,
	}
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

// InstallCommand installs the versitygw these tests run.
const InstallCommand = "go install github.com/versity/versitygw/cmd/versitygw@v1.8.0"

// Missing ends a test that needs versitygw where it is not installed.
func Missing(t testing.TB) {
	t.Helper()
	testneed.Missing(t, testneed.GroupServers, "versitygw (looked on PATH and in $(go env GOPATH)/bin)", InstallCommand)
}

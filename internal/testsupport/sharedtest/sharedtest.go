// Package sharedtest runs a shared-tier test on every kind of object
// store xlacache speaks to, each a real server on loopback: S3 (versitygw,
// s3test) and GCS (fake-gcs-server, gcstest). A test written once against
// Server runs as a subtest per kind ("s3", "gs"), so the lease, probe, pack
// and retention tests hold for gs:// as they do for s3://.
package sharedtest

import (
	"strings"
	"testing"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/gcsblob"
	"github.com/xlacache/xlacache/internal/s3blob"
	"github.com/xlacache/xlacache/internal/testsupport/gcstest"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

// Server is a running object-store server, whatever its kind.
type Server interface {
	// SharedURL is an XLACACHE_SHARED_URL for bucket/prefix on the server.
	SharedURL(bucket, prefix string) string
	// Env is the environment a client process needs to reach the server.
	Env() []string
	// Setenv sets Env for the current test.
	Setenv(t testing.TB)
	// Stop stops the server; Restart starts it again on the same address
	// (a GCS server's objects are gone then: it keeps them in memory).
	Stop()
	Restart() error
	// Logs returns what the server printed, for failure messages.
	Logs() string
}

// Kind is one kind of server.
type Kind struct {
	// Name is the URL scheme: "s3" or "gs".
	Name string
	// Start starts a server of this kind with the buckets, stopped when
	// the test ends; the test skips (fails under CI=true) when the
	// server's binary is missing.
	Start func(t testing.TB, buckets ...string) Server
}

// Kinds are the servers every shared-tier test runs on.
var Kinds = []Kind{
	{Name: "s3", Start: func(t testing.TB, buckets ...string) Server { return s3test.Start(t, buckets...) }},
	{Name: "gs", Start: func(t testing.TB, buckets ...string) Server { return gcstest.Start(t, buckets...) }},
}

// Run runs test as one subtest per kind of server.
func Run(t *testing.T, test func(t *testing.T, k Kind)) {
	for _, k := range Kinds {
		t.Run(k.Name, func(t *testing.T) { test(t, k) })
	}
}

// Open opens the store (unguarded) for bucket/prefix on srv, configured
// from srv's environment without touching the process's, and closes it
// when the test ends.
func Open(t testing.TB, srv Server, bucket, prefix string) blob.Store {
	t.Helper()
	env := map[string]string{}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	getenv := func(k string) string { return env[k] }
	url := srv.SharedURL(bucket, prefix)
	var (
		st  blob.Store
		err error
	)
	if strings.HasPrefix(url, "gs://") {
		var cfg gcsblob.Config
		if cfg, err = gcsblob.ParseURL(url, getenv); err == nil {
			st, err = gcsblob.Open(cfg)
		}
	} else {
		var cfg s3blob.Config
		if cfg, err = s3blob.ParseURL(url, getenv); err == nil {
			cfg.AccessKey, cfg.SecretKey = env["AWS_ACCESS_KEY_ID"], env["AWS_SECRET_ACCESS_KEY"]
			st, err = s3blob.Open(cfg)
		}
	}
	if err != nil {
		t.Fatalf("sharedtest: opening %s: %v", url, err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

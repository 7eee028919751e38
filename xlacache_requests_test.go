package xlacache

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/testsupport/sharedtest"
)

// countingProxy forwards every request to a server and counts them: what
// a store costs in requests, whatever its client library does inside.
type countingProxy struct {
	url string
	n   atomic.Int64
}

func startCountingProxy(t testing.TB, target string) *countingProxy {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	p := &countingProxy{}
	rp := httputil.NewSingleHostReverseProxy(u)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.n.Add(1)
		// The Host header stays the proxy's: an S3 request is signed
		// for the host the client sent it to.
		rp.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	p.url = srv.URL
	return p
}

// sharedThroughProxy opens bucket/prefix on srv, as a host does
// (OpenShared), with every request going through a counting proxy.
func sharedThroughProxy(t testing.TB, k sharedtest.Kind, srv sharedtest.Server, prefix string) (blob.Store, *countingProxy) {
	t.Helper()
	env := map[string]string{}
	for _, kv := range srv.Env() {
		key, v, _ := strings.Cut(kv, "=")
		env[key] = v
	}
	endpointVar := "AWS_ENDPOINT_URL_S3"
	if k.Name == "gs" {
		endpointVar = "STORAGE_EMULATOR_HOST"
	}
	px := startCountingProxy(t, env[endpointVar])
	env[endpointVar] = px.url
	for key, v := range env {
		t.Setenv(key, v)
	}
	st, err := OpenShared(srv.SharedURL("xlacache", prefix), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st, px
}

// requestCounts is what one run of the workload cost.
type requestCounts struct {
	publish, readerHit, writerHit float64
}

// sharedRequests runs the workload on one server kind: a writer publishes
// n entries to the shared tier, a reader (no local copy kept) hits each
// once, and a second writer on another host hits each once (copying it
// into its directory and refreshing its usage marker). It returns the
// requests per publish, per reader hit and per writer hit.
func sharedRequests(t testing.TB, k sharedtest.Kind, n int) requestCounts {
	srv := k.Start(t, "xlacache")
	st, px := sharedThroughProxy(t, k, srv, "requests")
	ctx := context.Background()
	open := func(role config.Role) *cache.Cache {
		o := config.Defaults()
		o.Dir, o.Role, o.MinCompileTime = t.TempDir(), role, 0
		o.Subcaches, o.SubcachesExplicit = nil, true
		c, err := cache.Open(ctx, o, slog.New(slog.DiscardHandler), cache.WithShared(nopCloseStore{st}))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	keys := make([]cache.Key, n)
	payload := func(i int) []byte { return bytes.Repeat([]byte{byte(i)}, 64<<10+i) }
	for i := range keys {
		keys[i] = cache.NewKey("requests", []cache.KeyPart{{Name: "program", Data: fmt.Append(nil, i)}})
	}
	var c requestCounts
	measure := func(dst *float64, role config.Role, each func(c *cache.Cache, i int)) {
		cc := open(role)
		before := px.n.Load()
		for i := range keys {
			each(cc, i)
		}
		cc.Close()
		*dst = float64(px.n.Load()-before) / float64(n)
	}
	measure(&c.publish, config.RoleWriter, func(cc *cache.Cache, i int) {
		if err := cc.Tier(cache.ExecutablesTier).Put(ctx, keys[i], payload(i), time.Second); err != nil {
			t.Fatal(err)
		}
	})
	hit := func(cc *cache.Cache, i int) {
		if got, ok := cc.Tier(cache.ExecutablesTier).Get(ctx, keys[i]); !ok || !bytes.Equal(got, payload(i)) {
			t.Fatalf("%s: entry %d: hit %v", k.Name, i, ok)
		}
	}
	measure(&c.readerHit, config.RoleReader, hit)
	measure(&c.writerHit, config.RoleWriter, hit)
	return c
}

// nopCloseStore leaves the store open when a cache closes.
type nopCloseStore struct{ blob.Store }

func (nopCloseStore) Close() error { return nil }

// TestSharedRequestsGSMatchesS3 pins what the gs:// tier costs in
// requests against the s3:// tier on the same workload: no more requests
// per publish or per hit (a store that needed a metadata request before
// each read, or a resumable session per upload, would double them).
func TestSharedRequestsGSMatchesS3(t *testing.T) {
	const n = 8
	counts := map[string]requestCounts{}
	sharedtest.Run(t, func(t *testing.T, k sharedtest.Kind) {
		counts[k.Name] = sharedRequests(t, k, n)
		t.Logf("%s: %.2f requests per publish, %.2f per reader hit, %.2f per writer hit", k.Name, counts[k.Name].publish, counts[k.Name].readerHit, counts[k.Name].writerHit)
	})
	s3, okS3 := counts["s3"]
	gs, okGS := counts["gs"]
	if !okS3 || !okGS || t.Failed() {
		return
	}
	if gs.publish > s3.publish || gs.readerHit > s3.readerHit || gs.writerHit > s3.writerHit {
		t.Errorf("gs:// costs more requests than s3://: %+v against %+v", gs, s3)
	}
	if gs.readerHit < 1 || gs.publish < 1 {
		t.Errorf("gs:// counted %+v: the proxy missed requests", gs)
	}
}

// BenchmarkSharedRequests reports requests per publish and per hit on
// each kind of server (the closing note of issue 24's GCS item):
//
//	go test -run '^$' -bench SharedRequests -benchtime 1x .
func BenchmarkSharedRequests(b *testing.B) {
	for _, k := range sharedtest.Kinds {
		b.Run(k.Name, func(b *testing.B) {
			var c requestCounts
			for range b.N {
				c = sharedRequests(b, k, 32)
			}
			b.ReportMetric(c.publish, "req/publish")
			b.ReportMetric(c.readerHit, "req/reader-hit")
			b.ReportMetric(c.writerHit, "req/writer-hit")
		})
	}
}

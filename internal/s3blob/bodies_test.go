package s3blob

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
)

// An S3 List answered with an endless body that is not XML costs an error
// after a bounded read, not memory until the timeout: before the bound,
// the client library buffered 4.2 GB in 30 s of such an answer. The
// server here is a test double standing for a broken or hostile endpoint.
func TestListEndlessBodyBounded(t *testing.T) {
	chunk := []byte(strings.Repeat("garbage ", 8192))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusOK)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer srv.Close()
	s, err := Open(Config{
		Endpoint: strings.TrimPrefix(srv.URL, "http://"), Bucket: "bkt", Prefix: "p",
		Region: "us-east-1", PathStyle: true, AccessKey: "a", SecretKey: "b",
		Timeout: time.Minute, DialTimeout: 5 * time.Second, MaxObjectSize: 1 << 30,
	})
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
	// The client library retries (MaxRetries 2): three bounded reads.
	if n > 8*blob.MaxControlBody {
		t.Errorf("List of an endless body allocated %d bytes, want a few times the %d-byte bound at most", n, blob.MaxControlBody)
	}
}

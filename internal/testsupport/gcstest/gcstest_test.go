package gcstest

import (
	"context"
	"net/http"
	"sync"
	"testing"
)

// TestConcurrentServersAreDistinct starts servers at once and checks that
// each serves its own buckets, and that Stop and Restart work.
func TestConcurrentServersAreDistinct(t *testing.T) {
	if Binary() == "" {
		// Start would skip in each goroutine and leave the servers nil.
		Missing(t)
	}
	const n = 3
	servers := make([]*Server, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { servers[i] = Start(t, "bkt") })
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	ctx := context.Background()
	seen := map[string]bool{}
	for i, s := range servers {
		if seen[s.Addr] {
			t.Fatalf("two servers share %s", s.Addr)
		}
		seen[s.Addr] = true
		for _, b := range []string{s.marker, "bkt"} {
			if code, err := s.get(ctx, "/storage/v1/b/"+b); err != nil || code != http.StatusOK {
				t.Fatalf("server %d: bucket %s: %d, %v", i, b, code, err)
			}
		}
		// Another server's marker bucket is not here.
		other := servers[(i+1)%n]
		if code, err := s.get(ctx, "/storage/v1/b/"+other.marker); err != nil || code != http.StatusNotFound {
			t.Fatalf("server %d answers for another server's bucket: %d, %v", i, code, err)
		}
	}
	s := servers[0]
	s.Stop()
	if s.Running() {
		t.Fatal("Running after Stop")
	}
	if _, err := s.get(ctx, "/storage/v1/b/bkt"); err == nil {
		t.Fatal("server still answers after Stop")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if code, err := s.get(ctx, "/storage/v1/b/bkt"); err != nil || code != http.StatusOK {
		t.Fatalf("restarted server: %d, %v", code, err)
	}
}

package s3test

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
)

// TestConcurrentServersAreDistinct starts servers at once (they all prefer
// the same port) and checks that each client talks to its own server.
func TestConcurrentServersAreDistinct(t *testing.T) {
	if Binary() == "" {
		// Start would skip in each goroutine and leave the servers nil.
		Missing(t)
	}
	const n = 3
	servers := make([]*Server, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			servers[i] = Start(t, "bkt")
		}(i)
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[string]bool{}
	for i, s := range servers {
		if s == nil {
			t.Fatalf("server %d did not start", i)
		}
		if seen[s.Addr] {
			t.Fatalf("two servers share %s", s.Addr)
		}
		seen[s.Addr] = true
		if !s.isOurs(context.Background()) {
			t.Fatalf("server %d at %s does not serve its own root", i, s.Addr)
		}
		if _, err := os.Stat(filepath.Join(s.Root, "bkt")); err != nil {
			t.Fatal(err)
		}
	}
	// Stop and restart keep the address and the data.
	s := servers[0]
	s.Stop()
	if s.Running() || s.isOurs(context.Background()) {
		t.Fatal("server still answers after Stop")
	}
	if err := s.Restart(); err != nil {
		t.Fatal(err)
	}
	if !s.isOurs(context.Background()) {
		t.Fatal("restarted server does not answer")
	}
}

package blobflight

import (
	"context"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/s3blob"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

// Issue 20, item 1: a filesystem-backed S3 server (versitygw's posix
// backend) keeps an object "a/b/c" as a file in directory a/b, creates
// that directory when an object is put into it and removes it again when
// the last object in it is deleted. A put whose directory a concurrent
// delete removes between the server's mkdir and its link of the new file
// fails with 409 "Existing Object is a directory" (versity/versitygw#1988):
// a lease claim of one host failed that way while another host deleted its
// probe's scratch object, and both hosts compiled. Here hosts claim and
// release leases while others probe, against a real server, and no store
// call may fail.
func TestLeaseObjectsSurviveSiblingDeletes(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	srv.Setenv(t)
	for _, prefix := range []string{"", "team", "team/cache/x"} {
		t.Run("prefix="+prefix, func(t *testing.T) {
			cfg, err := s3blob.ParseURL(srv.SharedURL("bkt", prefix), os.Getenv)
			if err != nil {
				t.Fatal(err)
			}
			st, err := s3blob.Open(cfg)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			f, err := New(Options{Store: st, NoProbe: true, Stale: 10 * time.Second})
			if err != nil {
				t.Fatal(err)
			}
			// Generous: on a loaded machine a round of requests can take
			// seconds; the bound only keeps a hung server from hanging
			// the test.
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			const rounds = 60
			var failures atomic.Int64
			var firstErr atomic.Value
			fail := func(err error) {
				if failures.Add(1) == 1 {
					firstErr.Store(err)
				}
			}
			var wg sync.WaitGroup
			// Probers: each probe creates and deletes scratch objects.
			for range 2 {
				wg.Go(func() {
					for range rounds {
						if err := Probe(ctx, st); err != nil {
							fail(fmt.Errorf("probe: %w", err))
						}
					}
				})
			}
			// Claimers, on names in two tiers: each claim is a conditional
			// create of the lease object, each release deletes it.
			for g := range 4 {
				tier := []string{"executables", "cpu/autotune"}[g%2]
				wg.Go(func() {
					for i := range rounds {
						w := waiter{f: f, ctx: ctx, name: fmt.Sprintf("%s/k%d-%d", tier, g, i)}
						w.lname = LeaseName(w.name)
						l, err := w.claim()
						if err != nil {
							fail(fmt.Errorf("claim %s: %w", w.lname, err))
							continue
						}
						if l == nil {
							fail(fmt.Errorf("claim %s: held by nobody, yet refused", w.lname))
							continue
						}
						l.Release()
					}
				})
			}
			wg.Wait()
			if n := failures.Load(); n > 0 {
				t.Fatalf("%d of %d store calls failed under concurrent sibling deletes; first: %v", n, 6*rounds, firstErr.Load())
			}
		})
	}
}

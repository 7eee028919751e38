package cache

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/config"
)

// Two caches on one directory (as two processes would open it) need
// overlapping kernel sets at once: each kernel is computed exactly once,
// and both end up with every entry.
func TestGetOrClaimSingleFlight(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(dir)
	o.Subcaches = config.AllSubcaches()
	o.WaitTimeout = time.Minute
	a := mustOpen(t, o, nil)
	b := mustOpen(t, o, nil)
	keys := make([]Key, 6)
	for i := range keys {
		keys[i] = NewKey("kernel", []KeyPart{{Name: "src", Data: []byte(fmt.Sprint(i))}})
	}
	// a needs 0..3, b needs 5..2 (reversed, overlapping on 2 and 3).
	need := map[*Cache][]Key{a: keys[:4], b: {keys[5], keys[4], keys[3], keys[2]}}
	var computed [6]atomic.Int32
	var wg sync.WaitGroup
	results := map[*Cache]map[int][]byte{}
	var mu sync.Mutex
	for c, ks := range need {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tier := c.Tier("cpu/kernels")
			found, release := tier.GetOrClaim(context.Background(), ks)
			defer release()
			got := map[int][]byte{}
			for i, k := range ks {
				if data, ok := found[i]; ok {
					got[i] = data
					continue
				}
				var idx int
				for j := range keys {
					if keys[j].String() == k.String() {
						idx = j
					}
				}
				computed[idx].Add(1)
				time.Sleep(20 * time.Millisecond) // stands in for a compile, so the other side waits
				data := []byte(fmt.Sprint("object ", idx))
				if err := tier.Put(context.Background(), k, data, time.Second); err != nil {
					t.Error(err)
				}
				got[i] = data
			}
			mu.Lock()
			results[c] = got
			mu.Unlock()
		}()
	}
	wg.Wait()
	for i := range computed {
		if n := computed[i].Load(); n != 1 {
			t.Errorf("kernel %d computed %d times, want exactly once", i, n)
		}
	}
	for c, ks := range need {
		for i, k := range ks {
			if string(results[c][i]) == "" {
				t.Errorf("no entry for %s", k)
			}
		}
	}
}

// Without a usable directory GetOrClaim neither claims nor waits.
func TestGetOrClaimDisabled(t *testing.T) {
	var tier *Tier
	found, release := tier.GetOrClaim(context.Background(), []Key{NewKey("k", nil)})
	if len(found) != 0 || release == nil {
		t.Fatalf("found %v, release nil=%v", found, release == nil)
	}
	release()
}

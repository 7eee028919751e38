package cache

import (
	"context"
	"os"
	"slices"
	"strings"
)

// GetOrClaim is single-flight for a backend's subcache entries, as Compile
// is for executables: when several processes need the same kernel at once
// (two programs sharing it, compiled side by side), one tunes or compiles
// it and the others wait for its entry.
//
// It looks every key up and returns the payloads it found, by index into
// keys. For each key still missing it either waits for another process
// that is computing it (and returns the entry that process published) or
// claims it for this process. The caller computes the missing entries,
// Puts them, and then calls release, also on failure; release is never
// nil. A key that was waited for counts one miss and then one hit.
//
// Claims are taken in key order, whatever the order of keys, so two
// processes that claim overlapping sets cannot wait for each other in a
// cycle. Waiting is bounded as in Compile (XLACACHE_WAIT_SECS); a reader
// never claims, it only waits; without a cache directory nothing is
// claimed and nothing waits.
func (t *Tier) GetOrClaim(ctx context.Context, keys []Key) (found map[int][]byte, release func()) {
	found = map[int][]byte{}
	var releases []func()
	release = func() {
		for _, r := range releases {
			r()
		}
	}
	order := make([]int, len(keys))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		return strings.Compare(keys[a].String(), keys[b].String())
	})
	claimed := map[string]bool{}
	for _, i := range order {
		key := keys[i]
		if data, ok := t.Get(ctx, key); ok {
			found[i] = data
			continue
		}
		if t == nil || t.c == nil || t.c.flight == nil || t.dir == "" || ctx.Err() != nil || claimed[key.String()] {
			continue
		}
		seen := t.stat(key)
		ready := func() bool {
			st := t.stat(key)
			return st != nil && (seen == nil || !os.SameFile(seen, st))
		}
		r, err := t.c.flight.Acquire(ctx, t.name+"/"+key.String(), ready)
		if err != nil {
			continue // ctx is done: the caller's compile will notice
		}
		if r == nil {
			// Another process published it while we waited.
			if data, ok := t.Get(ctx, key); ok {
				found[i] = data
			}
			continue
		}
		claimed[key.String()] = true
		releases = append(releases, r)
	}
	return found, release
}

package shareddir

import (
	"context"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// Stats is what a shared directory holds and what its writers counted:
// the --json form of `xlacache stats`.
type Stats struct {
	Dir     string `json:"dir"`
	MaxSize int64  `json:"max_size"`
	Files   int64  `json:"files"`
	Bytes   int64  `json:"bytes"`
	// Areas are what each area (tier, XLA subcache, quarantine) holds.
	// The hits and misses are per tier in Counters.Tiers: an area has no
	// counters of its own, and zeros beside the real numbers would lie.
	Areas map[string]Area `json:"areas"`
	// Counters are the persisted cumulative counters.
	Counters cache.Stats `json:"counters"`
	// JAX sums the JAX entries sharing the directory (nil when none); its
	// Subcaches are the same files as the XLA areas above.
	JAX *jaxcache.Stats `json:"jax,omitempty"`
	// Total is the whole directory: xlacache's bytes plus JAX's entries
	// and atime files (XLA's subcaches counted once).
	Total int64 `json:"total"`
}

// Area is what one area of the directory holds.
type Area struct {
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
}

// ReadStats scans dir, which holds xlacache's tiers and, when withJAX,
// JAX's entries too (see Inspect). maxSize is the bound it reports. The
// JAX scan is returned for a report that lists JAX's entries (nil without
// JAX).
func ReadStats(ctx context.Context, dir string, maxSize int64, withJAX bool) (Stats, *jaxcache.Dir, error) {
	u, err := cache.Scan(ctx, dir)
	if err != nil {
		return Stats{}, nil, err
	}
	counters, err := cache.ReadPersistedStats(dir)
	if err != nil {
		return Stats{}, nil, err
	}
	r := Stats{Dir: dir, MaxSize: maxSize, Files: u.Files, Bytes: u.Bytes, Areas: make(map[string]Area, len(u.Areas)), Counters: counters, Total: u.Bytes}
	for n, a := range u.Areas {
		r.Areas[n] = Area{Entries: a.Entries, Bytes: a.Bytes}
	}
	if !withJAX {
		return r, nil, nil
	}
	jd, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return Stats{}, nil, err
	}
	s := jd.Stats()
	r.JAX = &s
	r.Total += s.OwnBytes()
	return r, jd, nil
}

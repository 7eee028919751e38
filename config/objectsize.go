package config

import (
	"errors"

	"github.com/xlacache/xlacache/internal/sysmem"
)

// DefaultSharedMaxObjectSize is the bound on a shared-tier object read when
// SharedMaxObjectSize is zero: larger than any executable a single host
// compiles in practice, small enough that a planted object cannot exhaust
// a training host's memory.
const DefaultSharedMaxObjectSize = 4 << 30

// minSharedObjectLimit keeps the memory cap from refusing ordinary entries
// on a host that is briefly short of memory: below it the configured bound
// alone applies.
const minSharedObjectLimit = 64 << 20

// availableMemory is sysmem.Available; tests replace it to describe a
// machine.
var availableMemory = func() (int64, bool) {
	l, ok := sysmem.Available()
	return l.Bytes, ok
}

// EffectiveSharedMaxObjectSize returns the bound on a shared-tier object
// read now: SharedMaxObjectSize (DefaultSharedMaxObjectSize when zero),
// lowered to half the memory the process can still allocate (cgroup,
// MemAvailable and rlimits, as internal/sysmem reads them), since reading
// an object costs its size and decoding it about as much again. The
// memory cap never goes below 64 MiB (or the configured bound, if
// smaller). It reads /proc and /sys on each call: callers call it once per
// object read, which costs far more.
func (o Options) EffectiveSharedMaxObjectSize() int64 {
	limit := o.SharedMaxObjectSize
	if limit <= 0 {
		limit = DefaultSharedMaxObjectSize
	}
	if avail, ok := availableMemory(); ok {
		limit = min(limit, max(avail/2, minSharedObjectLimit))
	}
	return limit
}

// parseObjectSize parses an XLACACHE_SHARED_MAX_OBJECT_SIZE value: a size
// (ParseSize) of at least one byte.
func parseObjectSize(s string) (int64, error) {
	n, err := ParseSize(s)
	if err != nil {
		return 0, err
	}
	if n <= 0 {
		return 0, errors.New("want at least 1 byte")
	}
	return n, nil
}

package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/logonce"
)

// Stats are a cache's counters. From (*Cache).Stats they count this
// process; from ReadPersistedStats they are the cumulative totals that
// writer processes persisted in the cache directory.
type Stats struct {
	// Hits and Misses count lookups in every tier; SharedHits counts hits
	// served by the shared tier (included in Hits).
	Hits       int64 `json:"hits"`
	Misses     int64 `json:"misses"`
	SharedHits int64 `json:"shared_hits"`
	// BytesRead and BytesWritten count entry bytes (as stored).
	BytesRead    int64 `json:"bytes_read"`
	BytesWritten int64 `json:"bytes_written"`
	// CompileTimeSaved sums the recorded compile time of every hit.
	CompileTimeSaved time.Duration `json:"compile_time_saved_ns"`
	// Errors counts failures by kind: corrupt, foreign, version, signature,
	// load, io, permission, nospace, shared, encode; toolarge (a shared
	// object over the size bound) and replaced (a damaged shared object
	// this writer replaced).
	Errors map[string]int64 `json:"errors"`
	// Tiers breaks hits and misses down by tier name.
	Tiers map[string]TierStats `json:"tiers"`
}

// TierStats are one tier's counters. Entries and Bytes are filled only by
// a scan of the directory (Scan, the CLI).
type TierStats struct {
	Hits    int64 `json:"hits"`
	Misses  int64 `json:"misses"`
	Entries int64 `json:"entries,omitempty"`
	Bytes   int64 `json:"bytes,omitempty"`
}

// counters are the live, concurrency-safe form of Stats.
type counters struct {
	hits, misses, sharedHits, bytesRead, bytesWritten, saved atomic.Int64

	mu     sync.Mutex
	errors map[string]int64
	tiers  map[string]TierStats

	flushMu sync.Mutex
	flushed Stats // what has been persisted already (writers); under flushMu
}

func (s *counters) init() {
	s.errors = map[string]int64{}
	s.tiers = map[string]TierStats{}
}

func (s *counters) hit(tier string, n int, saved time.Duration, shared bool) {
	s.hits.Add(1)
	s.bytesRead.Add(int64(n))
	s.saved.Add(int64(saved))
	if shared {
		s.sharedHits.Add(1)
	}
	s.countTier(tier, true)
}

func (s *counters) miss(tier string) {
	s.misses.Add(1)
	s.countTier(tier, false)
}

// countTier adds a hit or a miss to tier's own counts.
func (s *counters) countTier(tier string, hit bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.tiers[tier]
	if hit {
		ts.Hits++
	} else {
		ts.Misses++
	}
	s.tiers[tier] = ts
}

func (s *counters) written(n int64) { s.bytesWritten.Add(n) }

func (s *counters) snapshot() Stats {
	st := Stats{
		Hits: s.hits.Load(), Misses: s.misses.Load(), SharedHits: s.sharedHits.Load(),
		BytesRead: s.bytesRead.Load(), BytesWritten: s.bytesWritten.Load(),
		CompileTimeSaved: time.Duration(s.saved.Load()),
		Errors:           map[string]int64{}, Tiers: map[string]TierStats{},
	}
	s.mu.Lock()
	for k, v := range s.errors {
		st.Errors[k] = v
	}
	for k, v := range s.tiers {
		st.Tiers[k] = v
	}
	s.mu.Unlock()
	return st
}

func (c *Cache) countError(kind string) {
	if c == nil || kind == "" {
		return
	}
	c.stats.mu.Lock()
	c.stats.errors[kind]++
	c.stats.mu.Unlock()
}

// Stats returns this process's counters.
func (c *Cache) Stats() Stats {
	if c == nil {
		return Stats{Errors: map[string]int64{}, Tiers: map[string]TierStats{}}
	}
	return c.stats.snapshot()
}

// flushInterval bounds how often a writer rewrites the stats file outside
// Close.
const flushInterval = 10 * time.Second

// maybeFlushStats persists counters when the last flush is old enough.
func (c *Cache) maybeFlushStats() {
	last := c.lastFlush.Load()
	if time.Since(time.Unix(0, last)) < flushInterval || !c.lastFlush.CompareAndSwap(last, time.Now().UnixNano()) {
		return
	}
	c.flushStats()
}

// flushStats adds what this process counted since its last flush to the
// stats file. Only writers persist: a reader never writes to the directory.
func (c *Cache) flushStats() {
	if c == nil || !c.writer || c.ledger == nil {
		return
	}
	// flushMu serializes flushes; the counters stay unlocked during I/O.
	c.stats.flushMu.Lock()
	defer c.stats.flushMu.Unlock()
	cur := c.stats.snapshot()
	delta := subStats(cur, c.stats.flushed)
	if delta.Hits == 0 && delta.Misses == 0 && delta.BytesWritten == 0 && len(delta.Errors) == 0 {
		return
	}
	// The stats file (layout's StatsFile) holds the cumulative counters of
	// every writer process.
	path := layout.Dir(c.dir).Stats()
	err := c.ledger.locked(func() error {
		total, err := readStatsIn(c.root, layout.StatsRel)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// A damaged stats file is not worth failing over: start again.
			c.logger.Debug("resetting unreadable stats file", "path", path, "err", err)
		}
		total = addStats(total, delta)
		b, err := json.MarshalIndent(total, "", "  ")
		if err != nil {
			return err
		}
		return atomicfile.Replace(layout.StatsRel, b, atomicfile.Options{Root: c.root})
	})
	if err != nil {
		// A full disk or a read-only mount was most likely reported
		// already by a put: one line per kind of failure.
		c.logOnce(logonce.FailureKey(err), "persisting cache statistics failed", "path", path, "err", err)
		return
	}
	c.stats.flushed = cur
}

// ReadPersistedStats returns the cumulative counters persisted in the
// cache directory dir (zero Stats when none were persisted yet).
func ReadPersistedStats(dir string) (Stats, error) {
	root, _, err := adminRoot(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			err = nil
		}
		return Stats{Errors: map[string]int64{}, Tiers: map[string]TierStats{}}, err
	}
	defer root.Close()
	st, err := readStatsIn(root, layout.StatsRel)
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	return st, err
}

// ReadPersistedStatsFile reads one stats file. Anything but a regular
// file there (a FIFO, a symbolic link) is refused without blocking.
func ReadPersistedStatsFile(path string) (Stats, error) {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return Stats{Errors: map[string]int64{}, Tiers: map[string]TierStats{}}, err
	}
	defer root.Close()
	return readStatsIn(root, filepath.Base(path))
}

// maxStatsFile bounds the stats file: it holds a few counters per tier.
const maxStatsFile = 16 << 20

// readStatsIn reads the stats file at path inside root.
func readStatsIn(root *os.Root, path string) (Stats, error) {
	st := Stats{Errors: map[string]int64{}, Tiers: map[string]TierStats{}}
	b, err := atomicfile.ReadRegular(root, path, maxStatsFile)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return Stats{Errors: map[string]int64{}, Tiers: map[string]TierStats{}}, fmt.Errorf("stats file %s: %w", path, err)
	}
	// Files written before the keys were snake_case used Go's field names.
	// json matches the one-word ones whatever their case; the others are
	// read here, so that an upgrade keeps the totals (the next flush
	// rewrites the file with the new keys).
	var legacy struct {
		SharedHits, BytesRead, BytesWritten int64
		CompileTimeSaved                    time.Duration
	}
	if json.Unmarshal(b, &legacy) == nil {
		st.SharedHits += legacy.SharedHits
		st.BytesRead += legacy.BytesRead
		st.BytesWritten += legacy.BytesWritten
		st.CompileTimeSaved += legacy.CompileTimeSaved
	}
	if st.Errors == nil {
		st.Errors = map[string]int64{}
	}
	if st.Tiers == nil {
		st.Tiers = map[string]TierStats{}
	}
	return st, nil
}

func addStats(a, b Stats) Stats {
	out := Stats{
		Hits: a.Hits + b.Hits, Misses: a.Misses + b.Misses, SharedHits: a.SharedHits + b.SharedHits,
		BytesRead: a.BytesRead + b.BytesRead, BytesWritten: a.BytesWritten + b.BytesWritten,
		CompileTimeSaved: a.CompileTimeSaved + b.CompileTimeSaved,
		Errors:           map[string]int64{}, Tiers: map[string]TierStats{},
	}
	for _, m := range []map[string]int64{a.Errors, b.Errors} {
		for k, v := range m {
			out.Errors[k] += v
		}
	}
	for _, m := range []map[string]TierStats{a.Tiers, b.Tiers} {
		for k, v := range m {
			t := out.Tiers[k]
			t.Hits += v.Hits
			t.Misses += v.Misses
			out.Tiers[k] = t
		}
	}
	return out
}

func subStats(a, b Stats) Stats {
	out := Stats{
		Hits: a.Hits - b.Hits, Misses: a.Misses - b.Misses, SharedHits: a.SharedHits - b.SharedHits,
		BytesRead: a.BytesRead - b.BytesRead, BytesWritten: a.BytesWritten - b.BytesWritten,
		CompileTimeSaved: a.CompileTimeSaved - b.CompileTimeSaved,
		Errors:           map[string]int64{}, Tiers: map[string]TierStats{},
	}
	for k, v := range a.Errors {
		if d := v - b.Errors[k]; d != 0 {
			out.Errors[k] = d
		}
	}
	for k, v := range a.Tiers {
		bt := b.Tiers[k]
		if d := (TierStats{Hits: v.Hits - bt.Hits, Misses: v.Misses - bt.Misses}); d.Hits != 0 || d.Misses != 0 {
			out.Tiers[k] = d
		}
	}
	return out
}

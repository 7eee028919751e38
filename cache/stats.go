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
)

// Stats are a cache's counters. From (*Cache).Stats they count this
// process; from ReadPersistedStats they are the cumulative totals that
// writer processes persisted in the cache directory.
type Stats struct {
	// Hits and Misses count lookups in every tier; SharedHits counts hits
	// served by the shared tier (included in Hits).
	Hits, Misses, SharedHits int64
	// BytesRead and BytesWritten count entry bytes (as stored).
	BytesRead, BytesWritten int64
	// CompileTimeSaved sums the recorded compile time of every hit.
	CompileTimeSaved time.Duration
	// Errors counts failures by kind: corrupt, foreign, version, signature,
	// load, io, permission, nospace, shared, encode.
	Errors map[string]int64
	// Tiers breaks hits and misses down by tier name.
	Tiers map[string]TierStats
}

// TierStats are one tier's counters. Entries and Bytes are filled only by
// a scan of the directory (Scan, the CLI).
type TierStats struct {
	Hits, Misses   int64
	Entries, Bytes int64 `json:",omitempty"`
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
	s.mu.Lock()
	ts := s.tiers[tier]
	ts.Hits++
	s.tiers[tier] = ts
	s.mu.Unlock()
}

func (s *counters) miss(tier string) {
	s.misses.Add(1)
	s.mu.Lock()
	ts := s.tiers[tier]
	ts.Misses++
	s.tiers[tier] = ts
	s.mu.Unlock()
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

// statsFile holds the cumulative counters of every writer process.
const statsFile = "stats.json"

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
	path := filepath.Join(c.dir, StateDir, statsFile)
	err := c.ledger.locked(func() error {
		total, err := ReadPersistedStatsFile(path)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			// A damaged stats file is not worth failing over: start again.
			c.logger.Debug("resetting unreadable stats file", "path", path, "err", err)
		}
		total = addStats(total, delta)
		b, err := json.MarshalIndent(total, "", "  ")
		if err != nil {
			return err
		}
		_, err = c.replaceFile(path, b)
		return err
	})
	if err != nil {
		c.logOnce("stats-flush", "persisting cache statistics failed", "path", path, "err", err)
		return
	}
	c.stats.flushed = cur
}

// replaceFile atomically replaces path with data (temp file and rename).
func (c *Cache) replaceFile(path string, data []byte) (bool, error) {
	f, err := os.CreateTemp(filepath.Dir(path), tmpPrefix+"*")
	if err != nil {
		return false, err
	}
	tmp := f.Name()
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil {
		os.Remove(tmp)
		return false, errors.Join(werr, cerr)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return false, err
	}
	return true, nil
}

// ReadPersistedStats returns the cumulative counters persisted in the
// cache directory dir (zero Stats when none were persisted yet).
func ReadPersistedStats(dir string) (Stats, error) {
	st, err := ReadPersistedStatsFile(filepath.Join(dir, StateDir, statsFile))
	if errors.Is(err, fs.ErrNotExist) {
		return st, nil
	}
	return st, err
}

// ReadPersistedStatsFile reads one stats file.
func ReadPersistedStatsFile(path string) (Stats, error) {
	st := Stats{Errors: map[string]int64{}, Tiers: map[string]TierStats{}}
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return Stats{Errors: map[string]int64{}, Tiers: map[string]TierStats{}}, fmt.Errorf("stats file %s: %w", path, err)
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

package cache

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
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
	// BytesRead and BytesWritten count entry bytes (as stored) read by
	// hits and written to the local directory; SharedBytesWritten counts
	// those uploaded to the shared tier (objects this process published).
	BytesRead          int64 `json:"bytes_read"`
	BytesWritten       int64 `json:"bytes_written"`
	SharedBytesWritten int64 `json:"shared_bytes_written,omitempty"`
	// CompileTimeSaved sums the recorded compile time of every hit.
	CompileTimeSaved time.Duration `json:"compile_time_saved_ns"`
	// Compiles counts the backend compiles run through Compile (hits
	// skip them), failed ones included; CompileTime sums their duration.
	Compiles    int64         `json:"compiles"`
	CompileTime time.Duration `json:"compile_time_ns"`
	// Errors counts failures by kind: corrupt, foreign, version, signature,
	// load, io, permission, nospace, shared, encode; toolarge (a shared
	// object over the size bound) and replaced (a damaged shared object
	// this writer replaced).
	Errors map[string]int64 `json:"errors"`
	// TierErrors breaks Errors down by tier name, then kind. Failures that
	// serve no one tier (opening the directory, the size ledger, trims,
	// usage markers in the shared store) are in Errors only, as are all
	// failures in stats files written before this field existed.
	TierErrors map[string]map[string]int64 `json:"tier_errors,omitempty"`
	// Tiers breaks the counters down by tier name (every backend
	// together).
	Tiers map[string]TierStats `json:"tiers"`
	// Backends breaks them down by backend: its compiles and its use of
	// each tier. A backend's own subcache tiers ("cpu/autotune") belong to
	// it; an executables lookup belongs to the backend Compile was given,
	// or to "" when a caller used the tier directly. Stats files written
	// before this field existed have none: their counts show only in
	// Tiers.
	Backends map[string]BackendStats `json:"backends,omitempty"`
}

// TierStats are one tier's counters. Entries and Bytes are filled only by
// a scan of the directory (Scan, the CLI).
type TierStats struct {
	Hits    int64 `json:"hits"`
	Misses  int64 `json:"misses"`
	Entries int64 `json:"entries,omitempty"`
	Bytes   int64 `json:"bytes,omitempty"`
	// SharedHits, BytesRead, BytesWritten, SharedBytesWritten and
	// CompileTimeSaved are the tier's share of the Stats fields of the same
	// names.
	SharedHits         int64         `json:"shared_hits,omitempty"`
	BytesRead          int64         `json:"bytes_read,omitempty"`
	BytesWritten       int64         `json:"bytes_written,omitempty"`
	SharedBytesWritten int64         `json:"shared_bytes_written,omitempty"`
	CompileTimeSaved   time.Duration `json:"compile_time_saved_ns,omitempty"`
}

// BackendStats are one backend's counters.
type BackendStats struct {
	// Compiles and CompileTime are the backend's share of the Stats
	// fields of the same names.
	Compiles    int64         `json:"compiles,omitempty"`
	CompileTime time.Duration `json:"compile_time_ns,omitempty"`
	// RequireHitWarned counts the compiles that XLACACHE_REQUIRE_HIT=warn
	// logged (the cache could not serve them; they compiled), and
	// RequireHitFailed those that XLACACHE_REQUIRE_HIT=fail refused.
	RequireHitWarned int64 `json:"require_hit_warned,omitempty"`
	RequireHitFailed int64 `json:"require_hit_failed,omitempty"`
	// Tiers are the backend's lookups and writes per tier name.
	Tiers map[string]TierStats `json:"tiers,omitempty"`
}

// series names the finest breakdown the counters keep: one tier as used by
// one backend.
type series struct{ tier, backend string }

// seriesOf is the series of a lookup in tier by backend; a backend's own
// subcache tier ("cpu/autotune") belongs to that backend whoever asks.
func seriesOf(tier, backend string) series {
	if b, _, ok := strings.Cut(tier, "/"); ok {
		backend = b
	}
	return series{tier: tier, backend: backend}
}

// backendName is the backend a lookup through t is counted for: the
// session's, when t was obtained from one.
func (t *Tier) backendName() string {
	if t.session != nil {
		return t.session.backend
	}
	return ""
}

// counters are the live, concurrency-safe form of Stats.
type counters struct {
	mu         sync.Mutex
	errors     map[string]int64
	tierErrors map[string]map[string]int64
	series     map[series]TierStats
	compiles   map[string]BackendStats // Tiers unused: those are in series

	flushMu sync.Mutex
	flushed Stats // what has been persisted already (writers); under flushMu
}

func (s *counters) init() {
	s.errors = map[string]int64{}
	s.tierErrors = map[string]map[string]int64{}
	s.series = map[series]TierStats{}
	s.compiles = map[string]BackendStats{}
}

// add applies f to the counts of k.
func (s *counters) add(k series, f func(*TierStats)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ts := s.series[k]
	f(&ts)
	s.series[k] = ts
}

// hit counts a hit in tier (a backend subcache tier, or any tier looked up
// outside a session) of n stored bytes that saved compile time saved.
func (s *counters) hit(tier string, n int, saved time.Duration, shared bool) {
	s.hitIn(seriesOf(tier, ""), n, saved, shared)
}

func (s *counters) hitIn(k series, n int, saved time.Duration, shared bool) {
	s.add(k, func(ts *TierStats) {
		ts.Hits++
		ts.BytesRead += int64(n)
		ts.CompileTimeSaved += saved
		if shared {
			ts.SharedHits++
		}
	})
}

func (s *counters) miss(tier string) { s.missIn(seriesOf(tier, "")) }

func (s *counters) missIn(k series) { s.add(k, func(ts *TierStats) { ts.Misses++ }) }

// hitTier, missTier and writtenTier count for t's tier and the backend
// of t's session.
func (s *counters) hitTier(t *Tier, n int, saved time.Duration, shared bool) {
	s.hitIn(seriesOf(t.name, t.backendName()), n, saved, shared)
}

func (s *counters) missTier(t *Tier) { s.missIn(seriesOf(t.name, t.backendName())) }

func (s *counters) writtenTier(t *Tier, n int64) {
	s.add(seriesOf(t.name, t.backendName()), func(ts *TierStats) { ts.BytesWritten += n })
}

// uploadedTier counts n bytes t published to the shared tier.
func (s *counters) uploadedTier(t *Tier, n int64) {
	s.add(seriesOf(t.name, t.backendName()), func(ts *TierStats) { ts.SharedBytesWritten += n })
}

// compiled counts one backend compile that took d.
func (s *counters) compiled(backend string, d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.compiles[backend]
	b.Compiles++
	b.CompileTime += d
	s.compiles[backend] = b
}

// countCompile counts a backend compile of this session that took d, in
// the counters of its cache (every role: metrics report readers too).
func (e *Session) countCompile(d time.Duration) {
	if e == nil || e.c == nil {
		return
	}
	e.c.stats.compiled(e.backend, d)
}

func (s *counters) snapshot() Stats {
	st := Stats{Errors: map[string]int64{}, Tiers: map[string]TierStats{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	for k, v := range s.errors {
		st.Errors[k] = v
	}
	st.TierErrors = addTierErrors(nil, s.tierErrors, 1)
	for b, v := range s.compiles {
		st.addBackend(b, BackendStats{Compiles: v.Compiles, CompileTime: v.CompileTime,
			RequireHitWarned: v.RequireHitWarned, RequireHitFailed: v.RequireHitFailed})
	}
	for k, v := range s.series {
		st.addBackend(k.backend, BackendStats{Tiers: map[string]TierStats{k.tier: v}})
	}
	return st
}

// addBackend adds b's counters to st: to the totals, to Tiers and to
// Backends[name].
func (st *Stats) addBackend(name string, b BackendStats) {
	st.Compiles += b.Compiles
	st.CompileTime += b.CompileTime
	if st.Backends == nil {
		st.Backends = map[string]BackendStats{}
	}
	cur := st.Backends[name]
	cur.Compiles += b.Compiles
	cur.CompileTime += b.CompileTime
	cur.RequireHitWarned += b.RequireHitWarned
	cur.RequireHitFailed += b.RequireHitFailed
	if len(b.Tiers) > 0 && cur.Tiers == nil {
		cur.Tiers = map[string]TierStats{}
	}
	for tier, v := range b.Tiers {
		st.Hits += v.Hits
		st.Misses += v.Misses
		st.SharedHits += v.SharedHits
		st.BytesRead += v.BytesRead
		st.BytesWritten += v.BytesWritten
		st.SharedBytesWritten += v.SharedBytesWritten
		st.CompileTimeSaved += v.CompileTimeSaved
		st.Tiers[tier] = st.Tiers[tier].Plus(v)
		cur.Tiers[tier] = cur.Tiers[tier].Plus(v)
	}
	st.Backends[name] = cur
}

// Plus returns the sum of t's and o's counters; Entries and Bytes (a
// scan's, not counters) stay t's.
func (t TierStats) Plus(o TierStats) TierStats {
	t.Hits = addSat(t.Hits, o.Hits)
	t.Misses = addSat(t.Misses, o.Misses)
	t.SharedHits = addSat(t.SharedHits, o.SharedHits)
	t.BytesRead = addSat(t.BytesRead, o.BytesRead)
	t.BytesWritten = addSat(t.BytesWritten, o.BytesWritten)
	t.SharedBytesWritten = addSat(t.SharedBytesWritten, o.SharedBytesWritten)
	t.CompileTimeSaved = addSatDur(t.CompileTimeSaved, o.CompileTimeSaved)
	return t
}

// addSat is a+b saturated at the ends of int64: totals read from a stats
// file can be anywhere (a damaged one holds whatever it holds), and a
// counter that wrapped around would turn negative.
func addSat(a, b int64) int64 {
	s := a + b
	switch {
	case b > 0 && s < a:
		return math.MaxInt64
	case b < 0 && s > a:
		return math.MinInt64
	}
	return s
}

func addSatDur(a, b time.Duration) time.Duration { return time.Duration(addSat(int64(a), int64(b))) }

// clampNegative sets every negative counter in st to zero and drops
// negative per-kind counts: no process counts below zero, so they come
// from a damaged stats file, and added to they would hide real counts.
func (st *Stats) clampNegative() {
	for _, p := range []*int64{&st.Hits, &st.Misses, &st.SharedHits, &st.BytesRead, &st.BytesWritten,
		&st.SharedBytesWritten, &st.Compiles, (*int64)(&st.CompileTimeSaved), (*int64)(&st.CompileTime)} {
		*p = max(*p, 0)
	}
	for k, v := range st.Errors {
		if v < 0 {
			delete(st.Errors, k)
		}
	}
	for tier, kinds := range st.TierErrors {
		for k, v := range kinds {
			if v < 0 {
				delete(kinds, k)
			}
		}
		if len(kinds) == 0 {
			delete(st.TierErrors, tier)
		}
	}
	clampTiers(st.Tiers)
	for name, b := range st.Backends {
		b.Compiles, b.CompileTime = max(b.Compiles, 0), max(b.CompileTime, 0)
		b.RequireHitWarned, b.RequireHitFailed = max(b.RequireHitWarned, 0), max(b.RequireHitFailed, 0)
		clampTiers(b.Tiers)
		st.Backends[name] = b
	}
}

func clampTiers(m map[string]TierStats) {
	for k, v := range m {
		for _, p := range []*int64{&v.Hits, &v.Misses, &v.Entries, &v.Bytes, &v.SharedHits, &v.BytesRead,
			&v.BytesWritten, &v.SharedBytesWritten, (*int64)(&v.CompileTimeSaved)} {
			*p = max(*p, 0)
		}
		m[k] = v
	}
}

// Minus returns t's counters less o's; Entries and Bytes stay t's.
func (t TierStats) Minus(o TierStats) TierStats {
	t.Hits -= o.Hits
	t.Misses -= o.Misses
	t.SharedHits -= o.SharedHits
	t.BytesRead -= o.BytesRead
	t.BytesWritten -= o.BytesWritten
	t.SharedBytesWritten -= o.SharedBytesWritten
	t.CompileTimeSaved -= o.CompileTimeSaved
	return t
}

// subTier is a - b for the counters, and whether the difference is zero.
func subTier(a, b TierStats) (TierStats, bool) {
	d := a.Minus(b)
	d.Entries, d.Bytes = 0, 0
	return d, d == TierStats{}
}

// countError counts a failure of the given kind in tier ("" for one that
// serves no one tier).
func (c *Cache) countError(tier, kind string) {
	if c == nil || kind == "" {
		return
	}
	c.stats.mu.Lock()
	defer c.stats.mu.Unlock()
	c.stats.errors[kind]++
	if tier != "" {
		m := c.stats.tierErrors[tier]
		if m == nil {
			m = map[string]int64{}
			c.stats.tierErrors[tier] = m
		}
		m[kind]++
	}
}

// addTierErrors adds sign times the counts of b to a (allocated when nil)
// and returns it, dropping counts that become zero; nil when nothing is
// left.
func addTierErrors(a, b map[string]map[string]int64, sign int64) map[string]map[string]int64 {
	for tier, kinds := range b {
		for kind, n := range kinds {
			if a == nil {
				a = map[string]map[string]int64{}
			}
			m := a[tier]
			if m == nil {
				m = map[string]int64{}
				a[tier] = m
			}
			d := n
			if sign < 0 {
				if d = -n; n == math.MinInt64 {
					d = math.MaxInt64
				}
			}
			if m[kind] = addSat(m[kind], d); m[kind] == 0 {
				delete(m, kind)
			}
			if len(m) == 0 {
				delete(a, tier)
			}
		}
	}
	if len(a) == 0 {
		return nil
	}
	return a
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
	if delta.Hits == 0 && delta.Misses == 0 && delta.BytesWritten == 0 && delta.SharedBytesWritten == 0 && delta.Compiles == 0 && len(delta.Errors) == 0 {
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
	st.clampNegative()
	return st, nil
}

func addStats(a, b Stats) Stats {
	out := Stats{
		Hits: addSat(a.Hits, b.Hits), Misses: addSat(a.Misses, b.Misses), SharedHits: addSat(a.SharedHits, b.SharedHits),
		BytesRead: addSat(a.BytesRead, b.BytesRead), BytesWritten: addSat(a.BytesWritten, b.BytesWritten),
		SharedBytesWritten: addSat(a.SharedBytesWritten, b.SharedBytesWritten),
		CompileTimeSaved:   addSatDur(a.CompileTimeSaved, b.CompileTimeSaved),
		Compiles:           addSat(a.Compiles, b.Compiles), CompileTime: addSatDur(a.CompileTime, b.CompileTime),
		Errors: map[string]int64{}, Tiers: map[string]TierStats{},
	}
	for _, m := range []map[string]int64{a.Errors, b.Errors} {
		for k, v := range m {
			out.Errors[k] = addSat(out.Errors[k], v)
		}
	}
	out.TierErrors = addTierErrors(addTierErrors(nil, a.TierErrors, 1), b.TierErrors, 1)
	for _, m := range []map[string]TierStats{a.Tiers, b.Tiers} {
		for k, v := range m {
			v.Entries, v.Bytes = 0, 0
			out.Tiers[k] = out.Tiers[k].Plus(v)
		}
	}
	for _, m := range []map[string]BackendStats{a.Backends, b.Backends} {
		for name, v := range m {
			if out.Backends == nil {
				out.Backends = map[string]BackendStats{}
			}
			cur := out.Backends[name]
			cur.Compiles = addSat(cur.Compiles, v.Compiles)
			cur.CompileTime = addSatDur(cur.CompileTime, v.CompileTime)
			cur.RequireHitWarned = addSat(cur.RequireHitWarned, v.RequireHitWarned)
			cur.RequireHitFailed = addSat(cur.RequireHitFailed, v.RequireHitFailed)
			for k, t := range v.Tiers {
				if cur.Tiers == nil {
					cur.Tiers = map[string]TierStats{}
				}
				cur.Tiers[k] = cur.Tiers[k].Plus(t)
			}
			out.Backends[name] = cur
		}
	}
	return out
}

// subStats is a - b, keeping only the non-zero breakdowns.
func subStats(a, b Stats) Stats {
	out := Stats{
		Hits: a.Hits - b.Hits, Misses: a.Misses - b.Misses, SharedHits: a.SharedHits - b.SharedHits,
		BytesRead: a.BytesRead - b.BytesRead, BytesWritten: a.BytesWritten - b.BytesWritten,
		SharedBytesWritten: a.SharedBytesWritten - b.SharedBytesWritten,
		CompileTimeSaved:   a.CompileTimeSaved - b.CompileTimeSaved,
		Compiles:           a.Compiles - b.Compiles, CompileTime: a.CompileTime - b.CompileTime,
		Errors: map[string]int64{}, Tiers: map[string]TierStats{},
	}
	for k, v := range a.Errors {
		if d := v - b.Errors[k]; d != 0 {
			out.Errors[k] = d
		}
	}
	out.TierErrors = addTierErrors(addTierErrors(nil, a.TierErrors, 1), b.TierErrors, -1)
	for k, v := range a.Tiers {
		if d, zero := subTier(v, b.Tiers[k]); !zero {
			out.Tiers[k] = d
		}
	}
	for name, v := range a.Backends {
		bv := b.Backends[name]
		d := BackendStats{Compiles: v.Compiles - bv.Compiles, CompileTime: v.CompileTime - bv.CompileTime,
			RequireHitWarned: v.RequireHitWarned - bv.RequireHitWarned, RequireHitFailed: v.RequireHitFailed - bv.RequireHitFailed}
		for k, t := range v.Tiers {
			if dt, zero := subTier(t, bv.Tiers[k]); !zero {
				if d.Tiers == nil {
					d.Tiers = map[string]TierStats{}
				}
				d.Tiers[k] = dt
			}
		}
		if d.Compiles != 0 || d.CompileTime != 0 || d.RequireHitWarned != 0 || d.RequireHitFailed != 0 || len(d.Tiers) > 0 {
			if out.Backends == nil {
				out.Backends = map[string]BackendStats{}
			}
			out.Backends[name] = d
		}
	}
	return out
}

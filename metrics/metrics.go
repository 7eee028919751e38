// Package metrics exposes xlacache's counters in the Prometheus text
// exposition format, with the official client library: a
// prometheus.Collector over a cache's live counters (every role, readers
// included) or over a fixed snapshot (the totals `xlacache stats`
// reads), and an atomic writer for the node exporter's textfile
// collector.
//
// Package cache does not import this package (nor the client library):
// xlacache.Open hands a cache FileSink through cache.WithMetrics when
// XLACACHE_METRICS_FILE is set, and the cache calls it every minute and at
// Close.
//
// Every metric is a counter named xlacache_<what>_<unit>_total, labelled
// with the role of the process ("writer" or "reader"); the per-tier ones
// also carry tier ("executables", "autotune", "kernels") and backend
// ("cpu", "xla"; "unknown" for lookups made outside a compile, and for
// totals persisted before backends were recorded). See docs/metrics.md.
package metrics

import (
	"math"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xlacache/xlacache/cache"
)

// Role label values.
const (
	RoleWriter = "writer"
	RoleReader = "reader"
)

// UnknownBackend is the backend label of counts no backend is known for.
const UnknownBackend = "unknown"

// NoTier is the tier label of failures that serve no one tier (opening
// the directory, the size ledger, trims, usage markers in the shared
// store), and of failures counted by releases that did not record tiers.
const NoTier = "none"

// Source is what NewCollector reads; *cache.Cache implements it.
type Source interface {
	// Stats returns the current counters.
	Stats() cache.Stats
	// Writer reports whether the process writes to the cache.
	Writer() bool
}

var (
	tierLabels    = []string{"tier", "backend", "role"}
	backendLabels = []string{"backend", "role"}

	hitsDesc = prometheus.NewDesc("xlacache_hits_total",
		"Lookups served from the cache, per tier (local directory or shared store).", tierLabels, nil)
	missesDesc = prometheus.NewDesc("xlacache_misses_total",
		"Lookups the cache could not serve, per tier (damaged entries included).", tierLabels, nil)
	sharedHitsDesc = prometheus.NewDesc("xlacache_shared_hits_total",
		"Hits served by the shared object-store tier (a subset of xlacache_hits_total).", tierLabels, nil)
	readBytesDesc = prometheus.NewDesc("xlacache_read_bytes_total",
		"Entry bytes (as stored) of the hits.", tierLabels, nil)
	writtenBytesDesc = prometheus.NewDesc("xlacache_written_bytes_total",
		"Entry bytes (as stored) written to the local directory.", tierLabels, nil)
	sharedWrittenBytesDesc = prometheus.NewDesc("xlacache_shared_written_bytes_total",
		"Entry bytes (as stored) uploaded to the shared object store: objects this process published (first-writer-wins losers and failed uploads excluded).", tierLabels, nil)
	savedDesc = prometheus.NewDesc("xlacache_saved_seconds_total",
		"Compile time the hits saved: the compile time their writers recorded.", tierLabels, nil)
	compileSecondsDesc = prometheus.NewDesc("xlacache_compile_seconds_total",
		"Time spent in backend compiles through the cache (misses), failed ones included.", backendLabels, nil)
	compilesDesc = prometheus.NewDesc("xlacache_compiles_total",
		"Backend compiles through the cache (misses), failed ones included.", backendLabels, nil)
	requireHitDesc = prometheus.NewDesc("xlacache_require_hit_compiles_total",
		"Compiles the cache could not spare under XLACACHE_REQUIRE_HIT, per backend: outcome \"warned\" (logged, compiled) or \"failed\" (refused).",
		[]string{"backend", "outcome", "role"}, nil)
	errorsDesc = prometheus.NewDesc("xlacache_errors_total",
		"Cache failures by kind (corrupt, foreign, version, signature, load, io, permission, nospace, shared, encode, toolarge, replaced, ...) and tier (\"none\" for failures that serve no one tier: the directory, the size ledger, trims, usage markers); each degraded to compiling normally.",
		[]string{"kind", "tier", "role"}, nil)

	allDescs = []*prometheus.Desc{hitsDesc, missesDesc, sharedHitsDesc, readBytesDesc, writtenBytesDesc, sharedWrittenBytesDesc,
		savedDesc, compileSecondsDesc, compilesDesc, requireHitDesc, errorsDesc}
)

// collector renders the Stats that stats returns.
type collector struct {
	stats func() (cache.Stats, string)
}

// NewCollector returns a collector of src's counters, read at every
// collection.
func NewCollector(src Source) prometheus.Collector {
	return collector{stats: func() (cache.Stats, string) {
		role := RoleReader
		if src.Writer() {
			role = RoleWriter
		}
		return src.Stats(), role
	}}
}

// StatsCollector returns a collector of the fixed counters st, labelled
// with role: for the totals that writers persisted in a cache directory
// (cache.ReadPersistedStats), role is RoleWriter.
func StatsCollector(st cache.Stats, role string) prometheus.Collector {
	return collector{stats: func() (cache.Stats, string) { return st, role }}
}

// Describe implements prometheus.Collector.
func (collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	st, role := c.stats()
	for k, v := range tierSeries(st) {
		for _, m := range []struct {
			d *prometheus.Desc
			v float64
		}{
			{hitsDesc, float64(v.Hits)},
			{missesDesc, float64(v.Misses)},
			{sharedHitsDesc, float64(v.SharedHits)},
			{readBytesDesc, float64(v.BytesRead)},
			{writtenBytesDesc, float64(v.BytesWritten)},
			{sharedWrittenBytesDesc, float64(v.SharedBytesWritten)},
			{savedDesc, v.CompileTimeSaved.Seconds()},
		} {
			emit(ch, m.d, prometheus.CounterValue, m.v, k.tier, k.backend, role)
		}
	}
	for b, v := range backendSeries(st) {
		emit(ch, compilesDesc, prometheus.CounterValue, float64(v.Compiles), b, role)
		emit(ch, compileSecondsDesc, prometheus.CounterValue, v.CompileTime.Seconds(), b, role)
	}
	for b, v := range requireHitSeries(st) {
		emit(ch, requireHitDesc, prometheus.CounterValue, float64(v.RequireHitWarned), b, OutcomeWarned, role)
		emit(ch, requireHitDesc, prometheus.CounterValue, float64(v.RequireHitFailed), b, OutcomeFailed, role)
	}
	for k, n := range errorSeries(st) {
		emit(ch, errorsDesc, prometheus.CounterValue, float64(n), k.kind, k.tier, role)
	}
}

// emit sends one metric, or nothing when its label values are not valid
// or it is a counter with a negative value (a stats file is read from the
// cache directory, so a damaged one can hold anything; reporting must
// never fail a process, and a counter never goes below zero).
func emit(ch chan<- prometheus.Metric, d *prometheus.Desc, t prometheus.ValueType, v float64, labelValues ...string) {
	if t == prometheus.CounterValue && !(v >= 0) {
		return
	}
	if m, err := prometheus.NewConstMetric(d, t, v, labelValues...); err == nil {
		ch <- m
	}
}

// labels are a per-tier series' tier and backend label values.
type labels struct{ tier, backend string }

// labelsOf returns the labels of tier name as used by backend: a
// backend's own subcache tier "cpu/autotune" is tier "autotune" of
// backend "cpu".
func labelsOf(tier, backend string) labels {
	if b, sub, ok := strings.Cut(tier, "/"); ok && (backend == "" || backend == b) {
		return labels{tier: sub, backend: b}
	}
	if backend == "" {
		backend = UnknownBackend
	}
	return labels{tier: tier, backend: backend}
}

// tierSeries breaks st down into one series per tier and backend. Counts
// in st.Tiers that no backend accounts for (stats files written before
// backends were recorded) form the series of the tier's own backend, or
// of UnknownBackend.
func tierSeries(st cache.Stats) map[labels]cache.TierStats {
	out := map[labels]cache.TierStats{}
	accounted := map[string]cache.TierStats{}
	for b, bs := range st.Backends {
		for tier, v := range bs.Tiers {
			k := labelsOf(tier, b)
			out[k] = out[k].Plus(v)
			accounted[tier] = accounted[tier].Plus(v)
		}
	}
	for tier, v := range st.Tiers {
		rest := v.Minus(accounted[tier])
		if rest.Hits > 0 || rest.Misses > 0 || rest.BytesWritten > 0 || rest.SharedBytesWritten > 0 {
			k := labelsOf(tier, "")
			out[k] = out[k].Plus(rest)
		}
	}
	return out
}

// errorKey is the labels of one xlacache_errors_total series.
type errorKey struct{ kind, tier string }

// errorSeries breaks st.Errors down by kind and tier label: a backend's
// subcache tier "cpu/autotune" counts under "autotune" (as the other
// per-tier metrics name it), and what no tier claims under NoTier.
func errorSeries(st cache.Stats) map[errorKey]int64 {
	out := map[errorKey]int64{}
	claimed := map[string]int64{}
	for tier, kinds := range st.TierErrors {
		for kind, n := range kinds {
			if n <= 0 {
				continue
			}
			k := errorKey{kind, labelsOf(tier, "").tier}
			out[k] = addSat(out[k], n)
			claimed[kind] = addSat(claimed[kind], n)
		}
	}
	for kind, n := range st.Errors {
		if rest := n - claimed[kind]; rest > 0 {
			k := errorKey{kind, NoTier}
			out[k] = addSat(out[k], rest)
		}
	}
	return out
}

// addSat is a+b for counts a, b >= 0, saturated at math.MaxInt64: a
// damaged stats file may hold counts near the top, and a sum that wrapped
// around would turn negative (and the series vanish).
func addSat(a, b int64) int64 {
	if a > math.MaxInt64-b {
		return math.MaxInt64
	}
	return a + b
}

// Outcome label values of xlacache_require_hit_compiles_total.
const (
	OutcomeWarned = "warned"
	OutcomeFailed = "failed"
)

// requireHitSeries is st's require-hit counts per backend label, for the
// backends that have any.
func requireHitSeries(st cache.Stats) map[string]cache.BackendStats {
	out := map[string]cache.BackendStats{}
	for b, bs := range st.Backends {
		if bs.RequireHitWarned == 0 && bs.RequireHitFailed == 0 {
			continue
		}
		if b == "" {
			b = UnknownBackend
		}
		o := out[b]
		o.RequireHitWarned = addSat(o.RequireHitWarned, bs.RequireHitWarned)
		o.RequireHitFailed = addSat(o.RequireHitFailed, bs.RequireHitFailed)
		out[b] = o
	}
	return out
}

// backendSeries is st's compile counts per backend label; compiles no
// backend accounts for go to UnknownBackend.
func backendSeries(st cache.Stats) map[string]cache.BackendStats {
	out := map[string]cache.BackendStats{}
	var n int64
	var d = st.CompileTime
	for b, bs := range st.Backends {
		if bs.Compiles == 0 && bs.CompileTime == 0 {
			continue
		}
		if b == "" {
			b = UnknownBackend
		}
		o := out[b]
		o.Compiles += bs.Compiles
		o.CompileTime += bs.CompileTime
		out[b] = o
		n += bs.Compiles
		d -= bs.CompileTime
	}
	if rest := st.Compiles - n; rest > 0 {
		o := out[UnknownBackend]
		o.Compiles += rest
		o.CompileTime += d
		out[UnknownBackend] = o
	}
	return out
}

var (
	storedEntriesDesc = prometheus.NewDesc("xlacache_stored_entries",
		"Files the cache directory holds, per area (a tier such as executables or cpu/autotune, an XLA subcache, quarantine).", []string{"area"}, nil)
	storedBytesDesc = prometheus.NewDesc("xlacache_stored_bytes",
		"Bytes the cache directory holds, per area.", []string{"area"}, nil)
	maxSizeDesc = prometheus.NewDesc("xlacache_max_size_bytes",
		"The configured bound on the cache directory (XLACACHE_MAX_SIZE); absent when unbounded.", nil, nil)
)

// usageCollector renders a directory scan.
type usageCollector struct {
	u       cache.Usage
	maxSize int64
}

// UsageCollector returns a collector of what a scan of a cache directory
// found (cache.Scan) as gauges per area, and of its size bound maxSize
// (<= 0: unbounded, not reported).
func UsageCollector(u cache.Usage, maxSize int64) prometheus.Collector {
	return usageCollector{u: u, maxSize: maxSize}
}

// Describe implements prometheus.Collector.
func (usageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storedEntriesDesc
	ch <- storedBytesDesc
	ch <- maxSizeDesc
}

// Collect implements prometheus.Collector.
func (c usageCollector) Collect(ch chan<- prometheus.Metric) {
	for area, v := range c.u.Areas {
		emit(ch, storedEntriesDesc, prometheus.GaugeValue, float64(v.Entries), area)
		emit(ch, storedBytesDesc, prometheus.GaugeValue, float64(v.Bytes), area)
	}
	if c.maxSize > 0 {
		emit(ch, maxSizeDesc, prometheus.GaugeValue, float64(c.maxSize))
	}
}

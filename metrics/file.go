package metrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// Write writes what g gathers to w in the Prometheus text exposition
// format (version 0.0.4, what the node exporter's textfile collector and
// promtool read).
func Write(w io.Writer, g prometheus.Gatherer) error {
	mfs, err := g.Gather()
	if err != nil {
		return fmt.Errorf("gathering metrics: %w", err)
	}
	enc := expfmt.NewEncoder(w, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return fmt.Errorf("encoding metric %s: %w", mf.GetName(), err)
		}
	}
	return nil
}

// WriteFile writes what g gathers to path, owner-only (0600), atomically:
// a temporary file in the same directory, flushed, then renamed over
// path, so that a scrape never reads half a file (the node exporter's
// textfile collector convention; it reads only files named *.prom).
func WriteFile(path string, g prometheus.Gatherer) error {
	return WriteFileMode(path, g, 0o600)
}

// WriteFileMode is WriteFile with the file's mode: perm, typically the
// cache's file mode (config.Options.EffectiveFileMode).
func WriteFileMode(path string, g prometheus.Gatherer, perm os.FileMode) error {
	// Gathered first, so that a failure leaves the previous file intact.
	var buf bytes.Buffer
	if err := Write(&buf, g); err != nil {
		return err
	}
	if err := atomicfile.Replace(path, buf.Bytes(), atomicfile.Options{Perm: perm}); err != nil {
		return fmt.Errorf("writing metrics file: %w", err)
	}
	return nil
}

// FileSink returns the cache.MetricsSink that writes a cache's counters to
// path with mode perm (see WriteFileMode): give it to cache.Open with
// cache.WithMetrics. xlacache.Open does so for
// config.Options.MetricsFile.
func FileSink(path string, perm os.FileMode) cache.MetricsSink {
	return func(c *cache.Cache) error {
		reg := prometheus.NewPedanticRegistry()
		if err := reg.Register(NewCollector(c)); err != nil {
			return fmt.Errorf("registering the cache's metrics: %w", err)
		}
		return WriteFileMode(path, reg, perm)
	}
}

// WriteDirStats writes, in the Prometheus text format, the counters the
// writers of the cache directory dir persisted (labelled role="writer":
// only writers persist) and what dir holds, against the bound maxSize
// (`xlacache stats --format prometheus`). A directory without xlacache's
// own layout (only JAX's entries), an empty one and one that does not
// exist yet give every metric family with one zero series, not an error
// and not an empty file: a textfile collector job runs before the first
// compile too, and a family that appears only later breaks alerts and
// rate() over it.
func WriteDirStats(ctx context.Context, w io.Writer, dir string, maxSize int64) error {
	var (
		u        cache.Usage
		counters cache.Stats
	)
	if _, err := os.Lstat(dir); !errors.Is(err, fs.ErrNotExist) {
		if u, err = cache.Scan(ctx, dir); err != nil {
			return err
		}
		if counters, err = cache.ReadPersistedStats(dir); err != nil {
			return err
		}
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(StatsCollector(counters, RoleWriter)); err != nil {
		return fmt.Errorf("registering the persisted counters: %w", err)
	}
	if err := reg.Register(UsageCollector(u, maxSize)); err != nil {
		return fmt.Errorf("registering the directory's usage: %w", err)
	}
	if err := reg.Register(zeroSeries{counters, u}); err != nil {
		return fmt.Errorf("registering the zero series: %w", err)
	}
	jl, err := jaxLoads(ctx, dir)
	if err != nil {
		return err
	}
	if err := reg.Register(jl); err != nil {
		return fmt.Errorf("registering the JAX entries: %w", err)
	}
	return Write(w, reg)
}

// jaxEntriesDesc counts a directory's JAX entries by load state.
var jaxEntriesDesc = prometheus.NewDesc("xlacache_jax_entries",
	"JAX entries in the directory by whether JAX read them since they were written: loaded, never_loaded, or unknown (a filesystem mounted noatime).",
	[]string{"load"}, nil)

// jaxLoadCounts is the JAX entries of a directory by load state.
type jaxLoadCounts struct{ loaded, never, unknown int }

// jaxLoads counts dir's JAX entries by load state (all zero when it has
// none or does not exist).
func jaxLoads(ctx context.Context, dir string) (jaxLoadCounts, error) {
	var c jaxLoadCounts
	if ok, err := jaxcache.IsJAXDir(dir); err != nil || !ok {
		return c, nil // no directory, or no JAX entries: zeros
	}
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		return c, fmt.Errorf("scanning the JAX entries: %w", err)
	}
	for _, e := range d.Entries {
		switch e.Load {
		case jaxcache.Loaded:
			c.loaded++
		case jaxcache.NotLoaded:
			c.never++
		default:
			c.unknown++
		}
	}
	return c, nil
}

// Describe implements prometheus.Collector.
func (jaxLoadCounts) Describe(ch chan<- *prometheus.Desc) { ch <- jaxEntriesDesc }

// Collect implements prometheus.Collector.
func (c jaxLoadCounts) Collect(ch chan<- prometheus.Metric) {
	emit(ch, jaxEntriesDesc, prometheus.GaugeValue, float64(c.loaded), "loaded")
	emit(ch, jaxEntriesDesc, prometheus.GaugeValue, float64(c.never), "never_loaded")
	emit(ch, jaxEntriesDesc, prometheus.GaugeValue, float64(c.unknown), "unknown")
}

// zeroSeries gives each metric family that st and u have no series of one
// series of value 0: tier "executables" of backend UnknownBackend, errors
// of kind and tier NoTier, area "executables".
type zeroSeries struct {
	st cache.Stats
	u  cache.Usage
}

// Describe implements prometheus.Collector. It describes nothing: the
// descriptors are the other collectors', and a registry refuses a second
// registration of one (an unchecked collector may emit them).
func (zeroSeries) Describe(chan<- *prometheus.Desc) {}

// Collect implements prometheus.Collector.
func (z zeroSeries) Collect(ch chan<- prometheus.Metric) {
	if len(tierSeries(z.st)) == 0 {
		for _, d := range []*prometheus.Desc{hitsDesc, missesDesc, sharedHitsDesc, readBytesDesc, writtenBytesDesc, sharedWrittenBytesDesc, savedDesc} {
			emit(ch, d, prometheus.CounterValue, 0, "executables", UnknownBackend, RoleWriter)
		}
	}
	if len(backendSeries(z.st)) == 0 {
		emit(ch, compilesDesc, prometheus.CounterValue, 0, UnknownBackend, RoleWriter)
		emit(ch, compileSecondsDesc, prometheus.CounterValue, 0, UnknownBackend, RoleWriter)
	}
	if len(errorSeries(z.st)) == 0 {
		emit(ch, errorsDesc, prometheus.CounterValue, 0, NoTier, NoTier, RoleWriter)
	}
	if len(z.u.Areas) == 0 {
		emit(ch, storedEntriesDesc, prometheus.GaugeValue, 0, "executables")
		emit(ch, storedBytesDesc, prometheus.GaugeValue, 0, "executables")
	}
}

package metrics

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/atomicfile"
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
// own layout (only JAX's entries) gives zero xlacache series, not an
// error: a textfile collector job runs before the first compile too.
func WriteDirStats(ctx context.Context, w io.Writer, dir string, maxSize int64) error {
	u, err := cache.Scan(ctx, dir)
	if err != nil {
		return err
	}
	counters, err := cache.ReadPersistedStats(dir)
	if err != nil {
		return err
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(StatsCollector(counters, RoleWriter)); err != nil {
		return fmt.Errorf("registering the persisted counters: %w", err)
	}
	if err := reg.Register(UsageCollector(u, maxSize)); err != nil {
		return fmt.Errorf("registering the directory's usage: %w", err)
	}
	return Write(w, reg)
}

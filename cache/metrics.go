package cache

import (
	"sync"
	"time"
)

// DefaultMetricsInterval is how often WithMetrics writes between Open and
// Close when no interval is given: the node exporter's textfile collector
// is read at every scrape, so a minute keeps a long compile visible
// without a write per lookup.
const DefaultMetricsInterval = time.Minute

// MetricsSink writes the counters of c (c.Stats, c.Writer) somewhere:
// package metrics renders them in the Prometheus text format into the
// file XLACACHE_METRICS_FILE names. Calls never overlap.
type MetricsSink func(c *Cache) error

// metricsOptions are WithMetrics's arguments.
type metricsOptions struct {
	sink     MetricsSink
	interval time.Duration
}

// metricsState is the cache's side of WithMetrics.
type metricsState struct {
	mu   sync.Mutex // serializes calls of sink
	sink MetricsSink
}

// WithMetrics makes the cache hand its counters to sink every interval
// (<= 0: DefaultMetricsInterval), from a goroutine that Close stops, and
// once more in Close after the last lookup was counted. It works in every
// role, readers included, and with caching off (compiles are still
// counted). A failing sink is logged once and does not affect the cache.
//
// This package does not write metrics itself, so that it does not depend
// on a metrics library: xlacache.Open passes package metrics's file sink
// when Options.MetricsFile is set.
func WithMetrics(sink MetricsSink, interval time.Duration) Option {
	return func(o *openOptions) { o.metrics = metricsOptions{sink: sink, interval: interval} }
}

// startMetrics starts the periodic writes of WithMetrics. Open calls it
// last, once the cache's role is known.
func (c *Cache) startMetrics(m metricsOptions) {
	if m.sink == nil {
		return
	}
	c.metrics.sink = m.sink
	interval := m.interval
	if interval <= 0 {
		interval = DefaultMetricsInterval
	}
	c.bg.Add(1)
	go func() {
		defer c.bg.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-c.bgCtx.Done():
				return
			case <-t.C:
				c.writeMetrics()
			}
		}
	}()
}

// writeMetrics hands the counters to the sink, if any.
func (c *Cache) writeMetrics() {
	c.metrics.mu.Lock()
	defer c.metrics.mu.Unlock()
	if c.metrics.sink == nil {
		return
	}
	if err := c.metrics.sink(c); err != nil {
		c.logOnce("metrics", "writing metrics failed; the cache is unaffected", "err", err)
	}
}

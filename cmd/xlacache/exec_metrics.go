package main

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/metrics"
)

// The metrics `xlacache exec` writes to XLACACHE_METRICS_FILE for its
// whole job step: what the fill and the publishes did (docs/metrics.md,
// "xlacache exec").
var (
	execRoleLabels = []string{"role"}

	execFillFilesDesc = prometheus.NewDesc("xlacache_exec_fill_files_total",
		"Files the fill wrote into the local directory from the shared tier.", execRoleLabels, nil)
	execFillBytesDesc = prometheus.NewDesc("xlacache_exec_fill_bytes_total",
		"Bytes of the files the fill wrote into the local directory.", execRoleLabels, nil)
	execFillPacksDesc = prometheus.NewDesc("xlacache_exec_fill_packs_total",
		"Packs the fill downloaded from the shared tier.", execRoleLabels, nil)
	execFillPresentDesc = prometheus.NewDesc("xlacache_exec_fill_present_total",
		"Files the shared tier holds that the local directory already had (kept, never replaced).", execRoleLabels, nil)
	execFillRefusedDesc = prometheus.NewDesc("xlacache_exec_fill_refused_total",
		"Files or objects of the shared tier that failed verification; none of their bytes was written.", execRoleLabels, nil)
	execFillWaitDesc = prometheus.NewDesc("xlacache_exec_fill_wait_seconds_total",
		"Time this process waited for another process of its host to fill the directory.", execRoleLabels, nil)
	execPublishedFilesDesc = prometheus.NewDesc("xlacache_exec_published_files_total",
		"Files published to the shared tier.", execRoleLabels, nil)
	execPublishedBytesDesc = prometheus.NewDesc("xlacache_exec_published_bytes_total",
		"Bytes of the files published to the shared tier.", execRoleLabels, nil)
	execPublishedPacksDesc = prometheus.NewDesc("xlacache_exec_published_packs_total",
		"Packs published to the shared tier.", execRoleLabels, nil)
	execRequestsDesc = prometheus.NewDesc("xlacache_exec_shared_requests_total",
		"Requests made to the shared tier by the fill and the publishes.", execRoleLabels, nil)
	execErrorsDesc = prometheus.NewDesc("xlacache_exec_errors_total",
		"Failures by step (dir, autotune_dir, fill, xla_flags, env, list, publish, prune), each degraded to running the command without that step.",
		[]string{"kind", "role"}, nil)

	execDescs = []*prometheus.Desc{execFillFilesDesc, execFillBytesDesc, execFillPacksDesc, execFillPresentDesc,
		execFillRefusedDesc, execFillWaitDesc, execPublishedFilesDesc, execPublishedBytesDesc, execPublishedPacksDesc,
		execRequestsDesc, execErrorsDesc}
)

// execCollector renders the report that report returns.
type execCollector struct {
	report func() hostfill.Report
	role   string
}

// Describe implements prometheus.Collector.
func (execCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range execDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c execCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.report()
	fs := rep.Fill.Stats
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{
		{execFillFilesDesc, float64(fs.Files)},
		{execFillBytesDesc, float64(fs.Bytes)},
		{execFillPacksDesc, float64(fs.PacksFetched)},
		{execFillPresentDesc, float64(fs.Present)},
		{execFillRefusedDesc, float64(fs.Refused)},
		{execFillWaitDesc, rep.Fill.Waited.Seconds()},
		{execPublishedFilesDesc, float64(rep.Publish.Files)},
		{execPublishedBytesDesc, float64(rep.Publish.Bytes)},
		{execPublishedPacksDesc, float64(rep.Publish.Packs)},
		{execRequestsDesc, float64(rep.Requests)},
	} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, m.v, c.role)
	}
	for kind, n := range rep.Errors {
		ch <- prometheus.MustNewConstMetric(execErrorsDesc, prometheus.CounterValue, float64(n), kind, c.role)
	}
}

// execGatherer is the registry of a job's exec metrics, read from report
// at every gathering.
func execGatherer(report func() hostfill.Report, writer bool) (prometheus.Gatherer, error) {
	role := metrics.RoleReader
	if writer {
		role = metrics.RoleWriter
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(execCollector{report: report, role: role}); err != nil {
		return nil, err
	}
	return reg, nil
}

// commandMetricsFile is where the command's own xlacache (a Go program
// using xlacache.Open) writes its metrics: beside exec's file, never over
// it.
func commandMetricsFile(path string) string {
	return strings.TrimSuffix(path, ".prom") + ".command.prom"
}

// withCommandMetricsFile returns env with XLACACHE_METRICS_FILE pointed
// at commandMetricsFile.
func withCommandMetricsFile(env []string, path string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, config.EnvMetricsFile+"=") {
			out = append(out, kv)
		}
	}
	return append(out, config.EnvMetricsFile+"="+commandMetricsFile(path))
}

// execMetricsWriter writes job's metrics to path every interval until
// stop is called, which writes them once more (the final report) and
// returns when that is done. A write that fails is logged once.
func execMetricsWriter(job *hostfill.Job, opts config.Options, interval time.Duration, logger *slog.Logger) (stop func()) {
	g, err := execGatherer(job.Snapshot, opts.Writer())
	if err != nil {
		logger.Warn("xlacache exec: metrics unavailable", "err", err)
		return func() {}
	}
	logged := false
	write := func() {
		if err := metrics.WriteFileMode(opts.MetricsFile, g, opts.EffectiveFileMode()); err != nil && !logged {
			logged = true
			logger.Warn("xlacache exec: writing the metrics file failed; the command is unaffected", "file", opts.MetricsFile, "err", err)
		}
	}
	if interval <= 0 {
		interval = cache.DefaultMetricsInterval
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				write()
			case <-ctx.Done():
				return
			}
		}
	}()
	return func() {
		cancel()
		<-done
		write()
	}
}

package metrics

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
)

// ExecReport is what an `xlacache exec` job step did so far, as its
// metrics show it: the counters of jobrun.Report, given here field by
// field so that this package (which the root package imports) does not
// import the job runner and, through it, the pack transport.
type ExecReport struct {
	// FillFiles, FillPacks, FillPresent and FillRefused are the fill's
	// counts (hostfill.FillStats).
	FillFiles, FillPacks, FillPresent, FillRefused int
	// FillBytes is the size of the files the fill wrote.
	FillBytes int64
	// FillWaited is how long this process waited for another one's fill.
	FillWaited time.Duration
	// PublishedFiles and PublishedPacks are the publishes' counts
	// (hostfill.PublishStats).
	PublishedFiles, PublishedPacks int
	// PublishedBytes is the size of the files published.
	PublishedBytes int64
	// Requests counts the requests made to the shared tier.
	Requests int64
	// Errors counts the failures by step (jobrun.Report.Errors).
	Errors map[string]int
	// JAX is what the command did in JAX's directory, nil when this
	// process did not watch it (jobrun.Report.JAX).
	JAX *ExecJAX
}

// ExecJAX is what a job step's command did in JAX's directory
// (jobrun.JAXActivity), on one host.
type ExecJAX struct {
	// Host is the host's name; Runtime the runtime the entries are for
	// ("" until the runtime-scoped fill names it; shown as "unknown").
	Host, Runtime string
	// Present are the entries when the command started; Written those it
	// wrote (compiles JAX stored); Loaded those present that it read.
	Present, Written, Loaded int
	// NeverLoaded are the entries after the run not read since written.
	NeverLoaded int
	// LoadsKnown is false on a filesystem that keeps no access times:
	// then Loaded and NeverLoaded are not exported (never a false 0).
	LoadsKnown bool
}

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

	execJAXLabels      = []string{"host", "runtime", "role"}
	execJAXPresentDesc = prometheus.NewDesc("xlacache_exec_jax_entries_present", "JAX entries in the host's directory when the command started.", execJAXLabels, nil)
	execJAXWrittenDesc = prometheus.NewDesc("xlacache_exec_jax_entries_written_total", "JAX entries the command wrote: compiles JAX stored.", execJAXLabels, nil)
	execJAXLoadedDesc  = prometheus.NewDesc("xlacache_exec_jax_entries_loaded_total", "JAX entries present at the start that the command loaded (told by access times; absent on a noatime filesystem).", execJAXLabels, nil)
	execJAXNeverDesc   = prometheus.NewDesc("xlacache_exec_jax_entries_never_loaded", "JAX entries in the host's directory after the command that JAX has not read since they were written (absent on a noatime filesystem).", execJAXLabels, nil)
	execJAXDescs       = []*prometheus.Desc{execJAXPresentDesc, execJAXWrittenDesc, execJAXLoadedDesc, execJAXNeverDesc}
	execDescs          = []*prometheus.Desc{execFillFilesDesc, execFillBytesDesc, execFillPacksDesc, execFillPresentDesc,
		execFillRefusedDesc, execFillWaitDesc, execPublishedFilesDesc, execPublishedBytesDesc, execPublishedPacksDesc,
		execRequestsDesc, execErrorsDesc}
)

// execCollector renders the report that report returns.
type execCollector struct {
	report func() ExecReport
	role   string
}

// Describe implements prometheus.Collector.
func (execCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range execDescs {
		ch <- d
	}
	for _, d := range execJAXDescs {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c execCollector) Collect(ch chan<- prometheus.Metric) {
	rep := c.report()
	for _, m := range []struct {
		d *prometheus.Desc
		v float64
	}{
		{execFillFilesDesc, float64(rep.FillFiles)},
		{execFillBytesDesc, float64(rep.FillBytes)},
		{execFillPacksDesc, float64(rep.FillPacks)},
		{execFillPresentDesc, float64(rep.FillPresent)},
		{execFillRefusedDesc, float64(rep.FillRefused)},
		{execFillWaitDesc, rep.FillWaited.Seconds()},
		{execPublishedFilesDesc, float64(rep.PublishedFiles)},
		{execPublishedBytesDesc, float64(rep.PublishedBytes)},
		{execPublishedPacksDesc, float64(rep.PublishedPacks)},
		{execRequestsDesc, float64(rep.Requests)},
	} {
		ch <- prometheus.MustNewConstMetric(m.d, prometheus.CounterValue, m.v, c.role)
	}
	for kind, n := range rep.Errors {
		ch <- prometheus.MustNewConstMetric(execErrorsDesc, prometheus.CounterValue, float64(n), kind, c.role)
	}
	if j := rep.JAX; j != nil {
		runtime := j.Runtime
		if runtime == "" {
			runtime = "unknown"
		}
		ch <- prometheus.MustNewConstMetric(execJAXPresentDesc, prometheus.GaugeValue, float64(j.Present), j.Host, runtime, c.role)
		ch <- prometheus.MustNewConstMetric(execJAXWrittenDesc, prometheus.CounterValue, float64(j.Written), j.Host, runtime, c.role)
		if j.LoadsKnown {
			ch <- prometheus.MustNewConstMetric(execJAXLoadedDesc, prometheus.CounterValue, float64(j.Loaded), j.Host, runtime, c.role)
			ch <- prometheus.MustNewConstMetric(execJAXNeverDesc, prometheus.GaugeValue, float64(j.NeverLoaded), j.Host, runtime, c.role)
		}
	}
}

// ExecGatherer returns the registry of a job step's exec metrics, read
// from report at every gathering and labelled with the writer's role or
// the reader's.
func ExecGatherer(report func() ExecReport, writer bool) (prometheus.Gatherer, error) {
	role := RoleReader
	if writer {
		role = RoleWriter
	}
	reg := prometheus.NewPedanticRegistry()
	if err := reg.Register(execCollector{report: report, role: role}); err != nil {
		return nil, err
	}
	return reg, nil
}

// CommandFile is where the command under `xlacache exec` writes its own
// metrics (a Go program using xlacache.Open) when exec writes its job
// step's to path: beside exec's file, never over it.
func CommandFile(path string) string {
	return strings.TrimSuffix(path, ".prom") + ".command.prom"
}

// WithCommandFile returns env (KEY=VALUE strings) with
// XLACACHE_METRICS_FILE pointed at CommandFile(path).
func WithCommandFile(env []string, path string) []string {
	out := make([]string, 0, len(env)+1)
	for _, kv := range env {
		if !strings.HasPrefix(kv, config.EnvMetricsFile+"=") {
			out = append(out, kv)
		}
	}
	return append(out, config.EnvMetricsFile+"="+CommandFile(path))
}

// StartExecWriter writes the exec metrics of report to path (with mode
// perm, see WriteFileMode) every interval (<= 0:
// cache.DefaultMetricsInterval) until stop is called, which writes them
// once more (the final report) and returns when that is done. A write
// that fails is logged once; the job is unaffected.
func StartExecWriter(path string, perm os.FileMode, report func() ExecReport, writer bool, interval time.Duration, logger *slog.Logger) (stop func()) {
	g, err := ExecGatherer(report, writer)
	if err != nil {
		logger.Warn("xlacache exec: metrics unavailable", "err", err)
		return func() {}
	}
	logged := false
	write := func() {
		if err := WriteFileMode(path, g, perm); err != nil && !logged {
			logged = true
			logger.Warn("xlacache exec: writing the metrics file failed; the command is unaffected", "file", path, "err", err)
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

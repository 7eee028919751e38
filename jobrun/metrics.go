package jobrun

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"

	"github.com/xlacache/xlacache/metrics"
)

// Metrics is what exec's metrics file shows of r.
func (r Report) Metrics() metrics.ExecReport {
	st := r.Fill.Stats
	return metrics.ExecReport{
		FillFiles: st.Files, FillBytes: st.Bytes, FillPacks: st.PacksFetched, FillPresent: st.Present, FillRefused: st.Refused,
		FillWaited:     r.Fill.Waited,
		PublishedFiles: r.Publish.Files, PublishedPacks: r.Publish.Packs, PublishedBytes: r.Publish.Bytes,
		Requests: r.Requests, Errors: r.Errors,
		JAX: r.JAX.metrics(),
	}
}

// metrics is what the metrics show of a, labelled with this host's name;
// nil for nil.
func (a *JAXActivity) metrics() *metrics.ExecJAX {
	if a == nil {
		return nil
	}
	host, err := os.Hostname()
	if err != nil {
		host = "unknown"
	}
	return &metrics.ExecJAX{Host: host, Runtime: a.Runtime, Present: a.Present, Written: len(a.Written), Loaded: a.Loaded,
		NeverLoaded: a.NeverLoaded, LoadsKnown: a.LoadsKnown()}
}

// StartMetrics, when j.Opts names a metrics file, writes the job's
// metrics (Report.Metrics of Snapshot) there while it runs, and returns
// the function that writes them a last time and stops; call it before
// the process exits. The command's environment (j.Env) then names a file
// beside exec's for the command's own xlacache, if it has one: exec's
// file is the job step's. Without a metrics file it does nothing.
func (j *Job) StartMetrics() (stop func()) {
	o := j.Opts
	if o.MetricsFile == "" {
		return func() {}
	}
	j.Env = metrics.WithCommandFile(os.Environ(), o.MetricsFile)
	report := func() metrics.ExecReport { return j.Snapshot().Metrics() }
	return metrics.StartExecWriter(o.MetricsFile, o.EffectiveFileMode(), report, o.Writer(), 0, j.Logger)
}

// LookCommand finds the command name before any cache work, as a shell
// would: when it is missing it returns the error and 127, when it is not
// executable 126.
func LookCommand(name string) (code int, err error) {
	if _, err = exec.LookPath(name); err == nil {
		return 0, nil
	}
	if errors.Is(err, fs.ErrPermission) {
		return 126, err
	}
	return 127, err
}

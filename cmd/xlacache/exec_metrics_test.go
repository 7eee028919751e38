package main

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/metrics"
)

// parseProm parses a metrics file with the Prometheus text parser.
func parseProm(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parsePrometheus(t, string(b))
}

// checkExecMetrics checks that the file at path holds exactly rep's
// counters for role.
func checkExecMetrics(t *testing.T, path string, rep hostfill.Report, role string) {
	t.Helper()
	fams := parseProm(t, path)
	for name, want := range map[string]float64{
		"xlacache_exec_fill_files_total":        float64(rep.Fill.Stats.Files),
		"xlacache_exec_fill_bytes_total":        float64(rep.Fill.Stats.Bytes),
		"xlacache_exec_fill_packs_total":        float64(rep.Fill.Stats.PacksFetched),
		"xlacache_exec_fill_present_total":      float64(rep.Fill.Stats.Present),
		"xlacache_exec_fill_refused_total":      float64(rep.Fill.Stats.Refused),
		"xlacache_exec_fill_wait_seconds_total": rep.Fill.Waited.Seconds(),
		"xlacache_exec_published_files_total":   float64(rep.Publish.Files),
		"xlacache_exec_published_bytes_total":   float64(rep.Publish.Bytes),
		"xlacache_exec_published_packs_total":   float64(rep.Publish.Packs),
		"xlacache_exec_shared_requests_total":   float64(rep.Requests),
	} {
		if got := promValue(fams, name, "role", role); got != want {
			t.Errorf("%s{role=%q} = %v, want %v", name, role, got, want)
		}
	}
	for kind, n := range rep.Errors {
		if got := promValue(fams, "xlacache_exec_errors_total", "kind", kind, "role", role); got != float64(n) {
			t.Errorf("errors{kind=%q} = %v, want %d", kind, got, n)
		}
	}
	if mf := fams["xlacache_exec_errors_total"]; mf != nil && len(mf.GetMetric()) != len(rep.Errors) {
		t.Errorf("%d error series, want %d", len(mf.GetMetric()), len(rep.Errors))
	}
}

// TestExecMetricsMatchReport: the file exec writes parses with the
// Prometheus text parser and holds the report's counters, for a writer
// and a reader.
func TestExecMetricsMatchReport(t *testing.T) {
	rep := hostfill.Report{
		Fill: hostfill.FillResult{Filled: true, Waited: 1500 * time.Millisecond,
			Stats: hostfill.FillStats{Files: 10050, Bytes: 3 << 20, PacksFetched: 3, Present: 7, Refused: 2}},
		Publish:  hostfill.PublishStats{Files: 12, Packs: 2, Bytes: 4096},
		Requests: 9,
		Errors:   map[string]int{hostfill.ErrPublish: 2, hostfill.ErrPrune: 1},
	}
	for _, writer := range []bool{true, false} {
		g, err := execGatherer(func() hostfill.Report { return rep }, writer)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(t.TempDir(), "exec.prom")
		if err := metrics.WriteFile(path, g); err != nil {
			t.Fatal(err)
		}
		role := metrics.RoleReader
		if writer {
			role = metrics.RoleWriter
		}
		checkExecMetrics(t, path, rep, role)
	}
}

// TestExecMetricsWriterPeriodicAndFinal: the writer writes while the job
// runs and once more, with the final report, when stopped.
func TestExecMetricsWriterPeriodicAndFinal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exec.prom")
	job := &hostfill.Job{}
	stop := execMetricsWriter(job, config.Options{MetricsFile: path}, time.Millisecond, slog.Default())
	if !waitFor(10*time.Second, func() bool { _, err := os.Stat(path); return err == nil }) {
		t.Fatal("no periodic write")
	}
	stop()
	checkExecMetrics(t, path, job.Snapshot(), metrics.RoleWriter)
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("metrics file mode: %v %v", st, err)
	}
}

func TestWithCommandMetricsFile(t *testing.T) {
	env := withCommandMetricsFile([]string{"A=1", "XLACACHE_METRICS_FILE=/m/x.prom", "B=2"}, "/m/x.prom")
	want := []string{"A=1", "B=2", "XLACACHE_METRICS_FILE=/m/x.command.prom"}
	if len(env) != len(want) {
		t.Fatalf("%q", env)
	}
	for i := range want {
		if env[i] != want[i] {
			t.Fatalf("%q, want %q", env, want)
		}
	}
}

package metrics_test

import (
	"log/slog"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/xlacache/xlacache/metrics"
)

// checkExecMetrics checks that the file at path holds exactly rep's
// counters for role.
func checkExecMetrics(t *testing.T, path string, rep metrics.ExecReport, role string) {
	t.Helper()
	fams := parseFile(t, path)
	for name, want := range map[string]float64{
		"xlacache_exec_fill_files_total":        float64(rep.FillFiles),
		"xlacache_exec_fill_bytes_total":        float64(rep.FillBytes),
		"xlacache_exec_fill_packs_total":        float64(rep.FillPacks),
		"xlacache_exec_fill_present_total":      float64(rep.FillPresent),
		"xlacache_exec_fill_refused_total":      float64(rep.FillRefused),
		"xlacache_exec_fill_wait_seconds_total": rep.FillWaited.Seconds(),
		"xlacache_exec_published_files_total":   float64(rep.PublishedFiles),
		"xlacache_exec_published_bytes_total":   float64(rep.PublishedBytes),
		"xlacache_exec_published_packs_total":   float64(rep.PublishedPacks),
		"xlacache_exec_shared_requests_total":   float64(rep.Requests),
	} {
		if got, ok := lookup(fams, name, map[string]string{"role": role}); !ok || got != want {
			t.Errorf("%s{role=%q} = %v (present %v), want %v", name, role, got, ok, want)
		}
	}
	for kind, n := range rep.Errors {
		if got, ok := lookup(fams, "xlacache_exec_errors_total", map[string]string{"kind": kind, "role": role}); !ok || got != float64(n) {
			t.Errorf("errors{kind=%q} = %v (present %v), want %d", kind, got, ok, n)
		}
	}
	if mf := fams["xlacache_exec_errors_total"]; mf != nil && len(mf.GetMetric()) != len(rep.Errors) {
		t.Errorf("%d error series, want %d", len(mf.GetMetric()), len(rep.Errors))
	}
	for _, mf := range fams {
		if mf.GetType() != dto.MetricType_COUNTER {
			t.Errorf("%s is a %v, want a counter", mf.GetName(), mf.GetType())
		}
	}
}

// TestExecMetricsMatchReport: the file exec writes parses with the
// Prometheus text parser and holds the report's counters, for a writer
// and a reader.
func TestExecMetricsMatchReport(t *testing.T) {
	rep := metrics.ExecReport{
		FillFiles: 10050, FillBytes: 3 << 20, FillPacks: 3, FillPresent: 7, FillRefused: 2, FillWaited: 1500 * time.Millisecond,
		PublishedFiles: 12, PublishedPacks: 2, PublishedBytes: 4096,
		Requests: 9,
		Errors:   map[string]int{"publish": 2, "prune": 1},
	}
	for _, writer := range []bool{true, false} {
		g, err := metrics.ExecGatherer(func() metrics.ExecReport { return rep }, writer)
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

// TestExecWriterPeriodicAndFinal: the writer writes while the job runs
// and once more, with the final report, when stopped.
func TestExecWriterPeriodicAndFinal(t *testing.T) {
	path := filepath.Join(t.TempDir(), "exec.prom")
	var requests atomic.Int64
	report := func() metrics.ExecReport { return metrics.ExecReport{Requests: requests.Load()} }
	stop := metrics.StartExecWriter(path, 0o600, report, true, time.Millisecond, slog.Default())
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(path); err == nil {
			break
		}
		if time.Now().After(deadline) {
			stop()
			t.Fatal("no periodic write")
		}
		time.Sleep(20 * time.Millisecond) // polling for the writer's goroutine
	}
	requests.Store(7) // the file must hold the report as it is at stop
	stop()
	checkExecMetrics(t, path, report(), metrics.RoleWriter)
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("metrics file mode: %v %v", st, err)
	}
}

func TestWithCommandFile(t *testing.T) {
	env := metrics.WithCommandFile([]string{"A=1", "XLACACHE_METRICS_FILE=/m/x.prom", "B=2"}, "/m/x.prom")
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

// seriesValue is the one series of family name with labels l, counter or
// gauge.
func seriesValue(fams map[string]*dto.MetricFamily, name string, l map[string]string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		match := len(m.GetLabel()) == len(l)
		for _, lp := range m.GetLabel() {
			match = match && l[lp.GetName()] == lp.GetValue()
		}
		if match {
			if mf.GetType() == dto.MetricType_GAUGE {
				return m.GetGauge().GetValue(), true
			}
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// TestExecJAXMetrics: the JAX counts come per host and runtime; where the
// filesystem keeps no access times, loaded and never-loaded are absent,
// never a false 0.
func TestExecJAXMetrics(t *testing.T) {
	for _, tc := range []struct {
		name    string
		jax     metrics.ExecJAX
		runtime string
	}{
		{"cold run", metrics.ExecJAX{Host: "n1", Present: 0, Written: 3, NeverLoaded: 3, LoadsKnown: true}, "unknown"},
		{"warm run", metrics.ExecJAX{Host: "n2", Runtime: "jaxlib-0.12.0", Present: 3, Loaded: 3, LoadsKnown: true}, "jaxlib-0.12.0"},
		{"noatime", metrics.ExecJAX{Host: "n3", Present: 3, Written: 1}, "unknown"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep := metrics.ExecReport{JAX: &tc.jax}
			g, err := metrics.ExecGatherer(func() metrics.ExecReport { return rep }, true)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "exec.prom")
			if err := metrics.WriteFile(path, g); err != nil {
				t.Fatal(err)
			}
			fams := parseFile(t, path)
			labels := map[string]string{"host": tc.jax.Host, "runtime": tc.runtime, "role": metrics.RoleWriter}
			want := map[string]float64{
				"xlacache_exec_jax_entries_present":       float64(tc.jax.Present),
				"xlacache_exec_jax_entries_written_total": float64(tc.jax.Written),
			}
			if tc.jax.LoadsKnown {
				want["xlacache_exec_jax_entries_loaded_total"] = float64(tc.jax.Loaded)
				want["xlacache_exec_jax_entries_never_loaded"] = float64(tc.jax.NeverLoaded)
			} else {
				for _, name := range []string{"xlacache_exec_jax_entries_loaded_total", "xlacache_exec_jax_entries_never_loaded"} {
					if _, ok := fams[name]; ok {
						t.Errorf("%s exported with loads unknown", name)
					}
				}
			}
			for name, w := range want {
				if got, ok := seriesValue(fams, name, labels); !ok || got != w {
					t.Errorf("%s%v = %v (present %v), want %v", name, labels, got, ok, w)
				}
			}
		})
	}
}

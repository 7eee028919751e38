package metrics_test

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/metrics"
)

// FuzzStatsCollector: whatever a stats file holds (it is read from the
// cache directory), its metrics gather without a registry error (no
// duplicate or inconsistent series) and the text written parses back.
func FuzzStatsCollector(f *testing.F) {
	f.Add([]byte(`{"hits":3,"misses":2,"errors":{"io":1},"tiers":{"executables":{"hits":3,"misses":2},"cpu/autotune":{"hits":1}}}`))
	f.Add([]byte(`{"tiers":{"cpu/kernels":{"hits":1}},"backends":{"cpu":{"compiles":2,"compile_time_ns":5,"tiers":{"cpu/kernels":{"hits":1}}},"":{"tiers":{"executables":{"misses":1}}},"unknown":{"tiers":{"executables":{"misses":1}}}}}`))
	f.Add([]byte(`{"backends":{"xla":{"tiers":{"cpu/autotune":{"hits":1}}}},"tiers":{"cpu/autotune":{"hits":5}},"compiles":9}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var st cache.Stats
		if json.Unmarshal(data, &st) != nil {
			return
		}
		reg := prometheus.NewPedanticRegistry()
		reg.MustRegister(metrics.StatsCollector(st, metrics.RoleWriter))
		reg.MustRegister(metrics.UsageCollector(cache.Usage{Areas: st.Tiers}, st.Hits))
		var buf bytes.Buffer
		if err := metrics.Write(&buf, reg); err != nil {
			t.Fatalf("gathering %s: %v", data, err)
		}
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(&buf)
		if err != nil {
			t.Fatalf("output of %s does not parse: %v", data, err)
		}
		for name, mf := range fams {
			for _, m := range mf.GetMetric() {
				if v := m.GetCounter().GetValue(); mf.GetType() == dto.MetricType_COUNTER && !(v >= 0) {
					t.Fatalf("counter %s of %s is %v", name, data, v)
				}
			}
		}
	})
}

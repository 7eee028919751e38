package jobrun

import (
	"reflect"
	"testing"
	"time"

	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/metrics"
)

// TestExecMetricsFromReport: every counter of a run's report reaches the
// metrics exec writes, each in its own field.
func TestExecMetricsFromReport(t *testing.T) {
	rep := Report{
		Fill: hostfill.FillResult{Filled: true, Waited: 1500 * time.Millisecond,
			Stats: hostfill.FillStats{Files: 10050, Bytes: 3 << 20, PacksFetched: 3, Present: 7, Refused: 2}},
		Publish:  hostfill.PublishStats{Files: 12, Packs: 2, Bytes: 4096},
		Requests: 9,
		Errors:   map[string]int{"publish": 2, "prune": 1},
	}
	want := metrics.ExecReport{FillFiles: 10050, FillBytes: 3 << 20, FillPacks: 3, FillPresent: 7, FillRefused: 2,
		FillWaited: 1500 * time.Millisecond, PublishedFiles: 12, PublishedPacks: 2, PublishedBytes: 4096,
		Requests: 9, Errors: map[string]int{"publish": 2, "prune": 1}}
	if got := rep.Metrics(); !reflect.DeepEqual(got, want) {
		t.Errorf("%+v\nwant %+v", got, want)
	}
}

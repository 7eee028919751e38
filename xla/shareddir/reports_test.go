package shareddir

import (
	"errors"
	"testing"

	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestNewJAXVerifyReport: every problem is reported, and only those not
// possibly in flight count as damage that fails verify.
func TestNewJAXVerifyReport(t *testing.T) {
	for _, tc := range []struct {
		name     string
		problems []jaxcache.Problem
		bad      int
	}{
		{"clean", nil, 0},
		{"damaged", []jaxcache.Problem{{Path: "a", Err: errors.New("truncated")}}, 1},
		{"in flight", []jaxcache.Problem{{Path: "a", Err: errors.New("truncated"), MaybeInFlight: true}, {Path: "b", Err: errors.New("bad")}}, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rep, bad := NewJAXVerifyReport(jaxcache.VerifyResult{Checked: 3, Problems: tc.problems})
			if bad != tc.bad || rep.Checked != 3 || len(rep.Bad) != len(tc.problems) || rep.Bad == nil {
				t.Fatalf("report %+v, bad %d; want %d problems, %d bad", rep, bad, len(tc.problems), tc.bad)
			}
			for i, p := range tc.problems {
				if rep.Bad[i].Path != p.Path || rep.Bad[i].Err != p.Err.Error() || rep.Bad[i].MaybeInFlight != p.MaybeInFlight {
					t.Errorf("problem %d: %+v, from %+v", i, rep.Bad[i], p)
				}
			}
		})
	}
}

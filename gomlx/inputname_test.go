package gomlx

import "testing"

// TestInputNameDropsUUIDs: inputs are named without the UUIDs GoMLX draws
// per process, so one program's text is the same in every process (the
// cache's alias of a text depends on it), and names stay unique.
func TestInputNameDropsUUIDs(t *testing.T) {
	b := &Builder{}
	for _, tc := range []struct{ in, want string }{
		{"x", "x"},
		{"/metrics/Moving Average Loss/uuid-7b60c88f-657c-449c-905f-702982779856/mean", "_metrics_Moving_Average_Loss_uuid__mean"},
		{"/metrics/Moving Average Loss/uuid-FF6A974B-D123-4E16-9193-D87974996638/mean", "_metrics_Moving_Average_Loss_uuid__mean_"},
		{"x", "x_"},
		{"deadbeef_face", "deadbeef_face"},
	} {
		if got := b.inputName(tc.in); got != tc.want {
			t.Errorf("inputName(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

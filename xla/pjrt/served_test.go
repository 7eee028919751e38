package pjrt

import (
	"context"
	"log/slog"
	"sync"
	"testing"
)

// servedLog is a slog.Handler that keeps the helper's "served" lines
// (Server.logServed): one map of attributes per compile served.
type servedLog struct {
	mu    sync.Mutex
	lines []map[string]any
}

func (l *servedLog) Enabled(context.Context, slog.Level) bool { return true }
func (l *servedLog) WithAttrs([]slog.Attr) slog.Handler       { return l }
func (l *servedLog) WithGroup(string) slog.Handler            { return l }

func (l *servedLog) Handle(_ context.Context, r slog.Record) error {
	if r.Message != servedMsg {
		return nil
	}
	m := map[string]any{}
	r.Attrs(func(a slog.Attr) bool {
		m[a.Key] = a.Value.Any()
		return true
	})
	l.mu.Lock()
	l.lines = append(l.lines, m)
	l.mu.Unlock()
	return nil
}

// take returns the lines logged since the last take.
func (l *servedLog) take() []map[string]any {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.lines
	l.lines = nil
	return out
}

// A hit's debug line names the cache's phases and the wrapper's round
// trip, which the benchmark's overhead breakdown is made of; a miss's has
// no wrapper load.
func TestServerLogsServedPhases(t *testing.T) {
	log := &servedLog{}
	sock := serve(t, &Server{Cache: openCache(t, t.TempDir()), Logger: slog.New(log)})
	req := request(fakePlugin(t, "plugin A"))
	w := fakeWrapper{exe: "EXE-A", sig: addSig}
	for _, tc := range []struct {
		name   string
		status byte
		want   []string
		absent []string
	}{
		{"cold", doneStored, []string{"total_ms", "request_ms", "key_ms", "lookup_ms", "compile_ms", "store_ms"}, []string{"wrapper_ms"}},
		{"warm", doneHit, []string{"total_ms", "request_ms", "key_ms", "lookup_ms", "load_ms", "wrapper_ms"}, []string{"compile_ms"}},
	} {
		if st, ev := w.session(t, sock, req); st != tc.status {
			t.Fatalf("%s: status %q (events %v), want %q", tc.name, st, ev, tc.status)
		}
		lines := log.take()
		if len(lines) != 1 {
			t.Fatalf("%s: %d served lines, want 1: %v", tc.name, len(lines), lines)
		}
		l := lines[0]
		if l["status"] != string(tc.status) || l["module"] != "add" {
			t.Errorf("%s: line %v, want status %q module add", tc.name, l, tc.status)
		}
		for _, k := range tc.want {
			if v, ok := l[k].(float64); !ok || v < 0 {
				t.Errorf("%s: %s = %v, want a duration in ms", tc.name, k, l[k])
			}
		}
		for _, k := range tc.absent {
			if _, ok := l[k]; ok {
				t.Errorf("%s: unexpected %s in %v", tc.name, k, l)
			}
		}
		if total, load := l["total_ms"].(float64), l["load_ms"]; load != nil && load.(float64) > total {
			t.Errorf("%s: load %v ms longer than the whole compile %v ms", tc.name, load, total)
		}
	}
}

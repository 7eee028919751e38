package pjrt

import (
	"context"
	"log/slog"
	"net"
	"sync"
	"testing"
	"time"
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

// The wrapper ends a hit with its "loaded" and hangs up without reading
// the helper's "done": the helper must still count a hit and keep the
// entry (a later process hits again), not take the hang-up for a failed
// load.
func TestServerHitWrapperHangsUpAfterLoaded(t *testing.T) {
	log := &servedLog{}
	sock := serve(t, &Server{Cache: openCache(t, t.TempDir()), Logger: slog.New(log)})
	req := request(fakePlugin(t, "plugin A"))
	w := fakeWrapper{exe: "EXE-A", sig: addSig}
	if st, ev := w.session(t, sock, req); st != doneStored {
		t.Fatalf("cold: status %q events %v, want stored", st, ev)
	}
	for i := range 3 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		c.SetDeadline(time.Now().Add(30 * time.Second))
		if err := writeFrame(c, frameRequest, encodeRequest(req)); err != nil {
			t.Fatal(err)
		}
		typ, p, err := readFrame(c)
		if err != nil || typ != frameLoad {
			t.Fatalf("hit %d: frame %q, %v; want a load", i, typ, err)
		}
		if e, err := decodeEntry(p); err != nil || string(e.Executable) != "EXE-A" {
			t.Fatalf("hit %d: load of %q, %v; want EXE-A", i, e.Executable, err)
		}
		if err := writeFrame(c, frameLoadOK, nil); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	// The helper serves each connection on its own goroutine: wait for
	// the three hits' lines (Serve's cleanup waits for the goroutines).
	deadline := time.Now().Add(30 * time.Second)
	var lines []map[string]any
	for len(lines) < 4 && time.Now().Before(deadline) {
		lines = append(lines, log.take()...)
		time.Sleep(10 * time.Millisecond)
	}
	if len(lines) != 4 {
		t.Fatalf("%d served lines, want 4 (one store, three hits): %v", len(lines), lines)
	}
	for _, l := range lines[1:] {
		if l["status"] != string(doneHit) {
			t.Errorf("after a hang-up following loaded: status %v, want hit", l["status"])
		}
	}
	if st, ev := w.session(t, sock, req); st != doneHit {
		t.Fatalf("after the hang-ups: status %q events %v, want a hit (entry kept)", st, ev)
	}
}

package xlacache

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
)

// Issue 10 item 4 against a real S3 server: an object larger than
// XLACACHE_SHARED_MAX_OBJECT_SIZE planted under a program's name is a miss
// with one log line, refused from its size without being read.
func TestSharedPlantedOversizeObject(t *testing.T) {
	srv, b, p, name := publishedProgram(t, "bound", "oversize planted object")

	const bound = 1 << 20
	o := sharedHostOptions(t, srv, "bound")
	o.SharedMaxObjectSize = bound
	var logs logtest.Buffer
	c, err := Open(context.Background(), o, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx := context.Background()
	if err := c.Shared().Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := c.Shared().PutIfAbsent(ctx, name, bytes.Repeat([]byte{'x'}, 16*bound)); err != nil {
		t.Fatal(err)
	}
	var rep *cache.Report
	n := memtest.Allocated(func() { _, rep, err = cache.Compile(ctx, c, b, p) })
	if err != nil {
		t.Fatal(err)
	}
	if rep.Hit || b.compiles != 2 {
		t.Fatalf("report %+v after %d compiles", rep, b.compiles)
	}
	if n > 4*bound {
		t.Errorf("the lookup allocated %d bytes: the %d-byte object was read", n, 16*bound)
	}
	if c.Stats().Errors["toolarge"] != 1 {
		t.Errorf("errors %v, want toolarge 1", c.Stats().Errors)
	}
	if got := strings.Count(logs.String(), "level=WARN"); got != 1 || !strings.Contains(logs.String(), config.EnvSharedMaxObjectSize) {
		t.Errorf("%d warnings, want one naming %s:\n%s", got, config.EnvSharedMaxObjectSize, logs.String())
	}
}

// Issue 10 item 8 against a real S3 server: a damaged shared object is
// replaced (If-Match on its ETag) by the next writer that compiles the
// program, and every later host hits it.
func TestSharedDamagedObjectRepaired(t *testing.T) {
	srv, b, p, name := publishedProgram(t, "repair", "damaged in the bucket")

	st, err := OpenShared(srv.SharedURL("bkt", "repair"), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	ctx := context.Background()
	data, err := st.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	data[len(data)/2] ^= 0xFF
	if err := st.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if err := st.PutIfAbsent(ctx, name, data); err != nil {
		t.Fatal(err)
	}

	r, stats := compileOn(t, sharedHostOptions(t, srv, "repair"), b, p, nil)
	if r.Hit || b.compiles != 2 {
		t.Fatalf("a damaged object was used: %+v", r)
	}
	if stats.Errors["replaced"] != 1 || stats.Errors["corrupt"] != 1 {
		t.Fatalf("errors %v, want corrupt 1 and replaced 1", stats.Errors)
	}
	fixed, err := st.Get(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := entry.DecodeAs(fixed, r.Key, nil); err != nil {
		t.Fatalf("the shared object was not repaired: %v", err)
	}
	for i := range 2 {
		r, _ := compileOn(t, sharedHostOptions(t, srv, "repair"), b, p, nil)
		if !r.Hit || r.Source != "shared" {
			t.Fatalf("host %d after the repair: %+v", i, r)
		}
	}
	if b.compiles != 2 {
		t.Fatalf("%d compiles, want 2", b.compiles)
	}
}

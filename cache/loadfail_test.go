package cache

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/config"
)

// Item 12 of the hardening issue: an entry that verifies but that the
// backend cannot load is a miss, counted as a load error, quarantined by a
// writer, and the program compiles; it is never reported, counted or
// persisted as a hit, and its recorded compile time is not counted as
// saved.
func TestUnloadableEntryIsAMiss(t *testing.T) {
	dir := t.TempDir()
	o := testOptions(dir)
	o.Subcaches, o.SubcachesExplicit = nil, true
	b := &fakeBackend{}
	p := Program{Name: "f", Text: []byte("unloadable")}
	ctx := context.Background()

	// A previous process stored an entry with a long recorded compile
	// time, so that counting it as saved would show.
	c := mustOpen(t, o, nil)
	parts, err := b.KeyParts(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	key := NewKey(p.Name, parts)
	if err := c.Tier(ExecutablesTier).Put(ctx, key, b.expected(p), time.Hour); err != nil {
		t.Fatal(err)
	}
	c.Close()

	var logs logBuffer
	c = mustOpen(t, o, &logs)
	b.failLoad.Store(true)
	exe, r := compileOK(t, c, b, p)
	b.failLoad.Store(false)
	if exe == nil || r.Hit || r.Source != "" {
		t.Errorf("report %+v: unloadable entry reported as a hit", r)
	}
	if got := r.Tiers[ExecutablesTier]; got.Hits != 0 || got.Misses != 1 {
		t.Errorf("report tiers %+v, want 0 hits 1 miss", r.Tiers)
	}
	if b.compiles.Load() != 1 {
		t.Errorf("%d compiles, want 1", b.compiles.Load())
	}
	if !r.Stored {
		t.Error("the compiled result was not stored in place of the unloadable entry")
	}
	st := c.Stats()
	if st.Hits != 0 || st.Misses != 1 || st.CompileTimeSaved != 0 || st.BytesRead != 0 {
		t.Errorf("stats %+v: want one miss, nothing saved", st)
	}
	if st.Tiers[ExecutablesTier].Hits != 0 {
		t.Errorf("tier stats %+v", st.Tiers)
	}
	if st.Errors["load"] != 1 || st.TierErrors[ExecutablesTier]["load"] != 1 {
		t.Errorf("errors %v by tier %v, want load=1 in %s", st.Errors, st.TierErrors, ExecutablesTier)
	}
	if q, _ := os.ReadDir(filepath.Join(dir, QuarantineDir)); len(q) != 1 {
		t.Errorf("%d quarantined files, want 1", len(q))
	}
	if n := countWarn(logs.String()); n != 1 {
		t.Errorf("%d WARN lines for one unloadable entry, want 1:\n%s", n, logs.String())
	}
	// The new entry records this compile's time, not the hour of the
	// entry that could not be loaded.
	if e, _, _, ok := c.Tier(ExecutablesTier).find(ctx, key); !ok {
		t.Error("no entry stored")
	} else if e.CompileTime >= time.Hour {
		t.Errorf("stored compile time %v: carried over from the unloadable entry", e.CompileTime)
	}
	c.Close()

	persisted, err := ReadPersistedStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	if persisted.Hits != 0 || persisted.CompileTimeSaved != 0 || persisted.Errors["load"] != 1 || persisted.TierErrors[ExecutablesTier]["load"] != 1 {
		t.Errorf("persisted stats %+v: want no hit, nothing saved, load=1", persisted)
	}

	// The good entry that replaced it is a hit.
	c = mustOpen(t, o, nil)
	if _, r = compileOK(t, c, b, p); !r.Hit {
		t.Errorf("good entry not a hit: %+v", r)
	}
}

// The same from the shared tier, for a reader that has nothing local to
// quarantine: a miss, a load error, and a compile.
func TestUnloadableSharedEntryIsAMiss(t *testing.T) {
	shared := memblob.New(memblob.Options{})
	b := &fakeBackend{}
	p := Program{Name: "f", Text: []byte("unloadable shared")}

	oa := testOptions(t.TempDir())
	oa.Subcaches, oa.SubcachesExplicit = nil, true
	a := mustOpen(t, oa, nil, WithShared(shared))
	compileOK(t, a, b, p)

	ob := testOptions(t.TempDir())
	ob.Subcaches, ob.SubcachesExplicit = nil, true
	ob.Role = config.RoleReader
	var logs logBuffer
	rb := mustOpen(t, ob, &logs, WithShared(shared), WithFlight(nil))
	b.failLoad.Store(true)
	_, r := compileOK(t, rb, b, p)
	if r.Hit {
		t.Errorf("report %+v: unloadable shared entry reported as a hit", r)
	}
	st := rb.Stats()
	if st.Hits != 0 || st.SharedHits != 0 || st.Misses != 1 || st.CompileTimeSaved != 0 || st.Errors["load"] != 1 {
		t.Errorf("stats %+v", st)
	}
	// A second compile of the same program fails to load again: still one
	// line.
	compileOK(t, rb, b, p)
	if n := countWarn(logs.String()); n != 1 {
		t.Errorf("%d WARN lines, want 1:\n%s", n, logs.String())
	}
	if b.compiles.Load() != 3 {
		t.Errorf("%d compiles, want 3", b.compiles.Load())
	}
}

// countWarn counts the WARN and ERROR lines in text-handler output: the
// cache promises one line per kind of failure per process.
func countWarn(s string) int {
	return strings.Count(s, "level=WARN") + strings.Count(s, "level=ERROR")
}

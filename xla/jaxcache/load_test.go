package jaxcache

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func TestLoadStateFromTimes(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		name         string
		mode         AtimeMode
		atime, mtime time.Time
		want         LoadState
	}{
		{"read after written", AtimeRelatime, t0.Add(time.Second), t0, Loaded},
		{"atime equal to mtime: written, not read", AtimeRelatime, t0, t0, NotLoaded},
		{"atime before mtime: written in place after creation", AtimeRelatime, t0, t0.Add(time.Second), NotLoaded},
		{"strictatime", AtimeStrict, t0.Add(time.Nanosecond), t0, Loaded},
		{"noatime mount: never a false not-loaded", AtimeNever, t0, t0, LoadUnknown},
		{"noatime mount, atime after", AtimeNever, t0.Add(time.Hour), t0, LoadUnknown},
		{"mode unknown", AtimeUnknown, t0, t0, LoadUnknown},
		{"no access time", AtimeRelatime, time.Time{}, t0, LoadUnknown},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := loadState(tc.mode, tc.atime, tc.mtime); got != tc.want {
				t.Errorf("loadState(%s) = %s, want %s", tc.mode, got, tc.want)
			}
		})
	}
}

// atimes returns p's access, modification and change times.
func atimes(t *testing.T, p string) (atime, mtime, ctime time.Time) {
	t.Helper()
	info, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	at, ok1 := fileAtime(info)
	ct, ok2 := fileCtime(info)
	if !ok1 || !ok2 {
		t.Fatal("no access or change time")
	}
	return at, info.ModTime(), ct
}

// loadSettled reads p the ordinary way, as JAX does, until its access
// time is after both its modification and change times: the state in
// which relatime will not move it on the next read (an entry loaded by an
// earlier run today). Reads in the clock tick of the last metadata change
// leave the access time equal to the change time, so it reads again
// until the tick has passed.
func loadSettled(t *testing.T, p string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.ReadFile(p); err != nil {
			t.Fatal(err)
		}
		at, mt, ct := atimes(t, p)
		if at.After(mt) && at.After(ct) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: access time %v never passed mtime %v and ctime %v", p, at, mt, ct)
		}
	}
}

// readByXLACache reads p as every xlacache reader of JAX entries does.
func readByXLACache(t *testing.T, dir, p string) {
	t.Helper()
	if _, _, err := VerifyFile(p); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadEntryPath(p, 1<<20); err != nil {
		t.Fatal(err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	if _, err := ReadEntry(root, filepath.Base(p), 1<<20); err != nil {
		t.Fatal(err)
	}
	d, err := Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := List(context.Background(), d); err != nil {
		t.Fatal(err)
	}
}

func TestScanLoadState(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	loaded := writeEntry(t, dir, entrySpec{key: key("jit_loaded", 1), codec: CodecZstd, exe: []byte("exe1"), noAtime: true, modTime: old})
	fresh := writeEntry(t, dir, entrySpec{key: key("jit_fresh", 2), codec: CodecZstd, exe: []byte("exe2"), noAtime: true, modTime: old})
	ctx := context.Background()
	d, err := Scan(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if !d.AtimeMode.Tells() {
		// A noatime mount: every entry unknown, none "never loaded".
		s := d.Stats()
		if s.NeverLoaded != 0 || s.LoadUnknown != 2 {
			t.Fatalf("%s mount: stats %+v, want 0 never loaded and 2 unknown", d.AtimeMode, s)
		}
		t.Skipf("the test directory's filesystem is mounted %s: loads cannot be told there", d.AtimeMode)
	}
	loadSettled(t, loaded)
	readByXLACache(t, dir, fresh)
	d, err = Scan(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]LoadState{}
	for _, e := range d.Entries {
		got[e.Module] = e.Load
	}
	if got["jit_loaded"] != Loaded || got["jit_fresh"] != NotLoaded {
		t.Fatalf("load states %v: want jit_loaded loaded, jit_fresh not (xlacache's own reads are not loads)", got)
	}
	if s := d.Stats(); s.NeverLoaded != 1 || s.LoadUnknown != 0 || s.AtimeMode != d.AtimeMode {
		t.Fatalf("stats %+v: want 1 never loaded, 0 unknown", s)
	}
}

func TestRunActivity(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-2 * time.Hour)
	// Loaded by an earlier run today: relatime would not move its access
	// time again unless BeginRun re-arms it.
	again := writeEntry(t, dir, entrySpec{key: key("jit_again", 1), codec: CodecZstd, exe: []byte("a"), noAtime: true, modTime: old})
	// Loaded earlier too, and only read by xlacache during the run.
	ours := writeEntry(t, dir, entrySpec{key: key("jit_ours", 2), codec: CodecZstd, exe: []byte("b"), noAtime: true, modTime: old})
	// Never loaded, and not during the run either.
	writeEntry(t, dir, entrySpec{key: key("jit_idle", 3), codec: CodecZstd, exe: []byte("c"), noAtime: true, modTime: old})
	// Rewritten during the run.
	rewritten := writeEntry(t, dir, entrySpec{key: key("jit_rewritten", 4), codec: CodecZstd, exe: []byte("d"), noAtime: true, modTime: old})
	writeFile(t, filepath.Join(dir, AutotuneDirName, "a.textproto"), []byte("x"), old)
	writeFile(t, filepath.Join(dir, AutotuneDirName, "b.textproto"), []byte("y"), old)
	ctx := context.Background()
	if d, err := Scan(ctx, dir); err != nil {
		t.Fatal(err)
	} else if !d.AtimeMode.Tells() {
		t.Skipf("the test directory's filesystem is mounted %s: loads cannot be told there", d.AtimeMode)
	}
	loadSettled(t, again)
	loadSettled(t, ours)

	s, err := BeginRun(ctx, dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if at, _, ct := atimes(t, again); ct.Before(at) {
		t.Fatalf("BeginRun left %s unarmed: ctime %v before atime %v", again, ct, at)
	}
	// The run: JAX loads one entry, xlacache reads another, JAX writes a
	// new entry and one is rewritten, XLA writes an autotune result.
	if _, err := os.ReadFile(again); err != nil {
		t.Fatal(err)
	}
	readByXLACache(t, dir, ours)
	newKey := key("jit_new", 5)
	writeEntry(t, dir, entrySpec{key: newKey, codec: CodecZstd, exe: []byte("e"), noAtime: true})
	writeEntry(t, dir, entrySpec{key: key("jit_rewritten", 4), codec: CodecZstd, exe: []byte("dd"), noAtime: true})
	_ = rewritten
	writeFile(t, filepath.Join(dir, AutotuneDirName, "c.textproto"), []byte("z"), time.Now())

	a, err := s.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Never loaded at the end: jit_idle and the two written.
	if !a.LoadsKnown() || a.Present != 4 || a.Loaded != 1 || a.NotLoaded != 2 || a.Unobserved != 0 || a.NeverLoaded != 3 {
		t.Errorf("activity %+v: want 4 present, 1 loaded, 2 not loaded, 3 never loaded", a)
	}
	if want := []string{newKey, key("jit_rewritten", 4)}; !slices.Equal(a.Written, want) {
		t.Errorf("written %v, want %v", a.Written, want)
	}
	if want := []string{AutotuneDirName + "/c.textproto"}; !slices.Equal(a.XLAFiles, want) {
		t.Errorf("XLA files %v, want %v", a.XLAFiles, want)
	}
	if c := a.Compiles(); len(c) != 3 || c[0] != "JAX module jit_new (entry "+newKey+")" {
		t.Errorf("compiles %q", c)
	}
}

func TestRunActivityNoatime(t *testing.T) {
	dir := t.TempDir()
	writeEntry(t, dir, entrySpec{key: key("jit_f", 1), codec: CodecZstd, exe: []byte("a"), noAtime: true})
	ctx := context.Background()
	s, err := BeginRun(ctx, dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	// As a noatime mount reports itself: loads are unknown, not zero.
	s.mode = AtimeNever
	a, err := s.End(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if a.LoadsKnown() || a.Loaded != 0 || a.NotLoaded != 0 || a.Present != 1 {
		t.Errorf("activity %+v: want loads unknown", a)
	}
}

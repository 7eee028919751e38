package gomlx_test

import (
	stdctx "context"
	"errors"
	"strings"
	"testing"

	"github.com/gomlx/gomlx/backends"
	"github.com/gomlx/gomlx/pkg/core/dtypes"
	"github.com/gomlx/gomlx/pkg/core/shapes"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/gomlx"
)

// compileTanh builds and compiles tanh(x) as the computation named name.
func compileTanh(t *testing.T, b *gomlx.Backend, name string) error {
	t.Helper()
	bld := b.Builder(name)
	x, err := bld.Parameter("x", shapes.Make(dtypes.Float32, 2), nil)
	if err != nil {
		t.Fatal(err)
	}
	y, err := bld.Tanh(x)
	if err != nil {
		t.Fatal(err)
	}
	_, err = bld.Compile([]backends.Op{y}, nil)
	return err
}

// TestRequireHitFail (issue 24 item 2): with require_hit=fail (or
// XLACACHE_REQUIRE_HIT=fail) a graph the cache cannot serve fails to
// compile with an error naming the computation and the program's key; once
// a backend without the requirement has compiled it, it loads.
func TestRequireHitFail(t *testing.T) {
	dir := t.TempDir()
	none := func(string) (string, bool) { return "", false }
	open := func(cfg string) *gomlx.Backend {
		b, err := gomlx.NewWithLookup(stdctx.Background(), "dir="+dir+",notune"+cfg, none, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(b.Finalize)
		return b
	}
	golden := open(",require_hit=fail")
	err := compileTanh(t, golden, "golden")
	if !errors.Is(err, cache.ErrHitRequired) {
		t.Fatalf("cold compile under fail: %v, want cache.ErrHitRequired", err)
	}
	for _, s := range []string{`compiling "golden"`, "program gomlx (key gomlx-", "no entry for this program"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q lacks %q", err, s)
		}
	}
	if err := compileTanh(t, open(""), "filler"); err != nil {
		t.Fatalf("filling: %v", err)
	}
	if err := compileTanh(t, golden, "golden"); err != nil {
		t.Fatalf("compile of a cached graph under fail: %v", err)
	}
	if s := golden.Stats(); s.Compiles != 1 || s.Hits != 1 {
		t.Errorf("stats %+v, want the one successful compile, a hit", s)
	}
}

package main

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestJAXReports checks the printers of the JAX directory commands on the
// jaxFixture directory (two entries, one truncated and without its atime
// file, and XLA's autotune directory).
func TestJAXReports(t *testing.T) {
	dir := jaxFixture(t)
	ctx := context.Background()
	d, err := jaxcache.Scan(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := writeJAXStats(&b, d); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2 entries", jaxcache.AutotuneDirName, "1 files", "without atime file"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("stats lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	ls, _ := jaxcache.List(ctx, d)
	if err := writeJAXList(&b, ls); err != nil {
		t.Fatal(err)
	}
	if lines := strings.Count(b.String(), "\n"); lines != 3 || !strings.Contains(b.String(), "unreadable") || !strings.Contains(b.String(), "(mtime)") {
		t.Errorf("ls:\n%s", b.String())
	}
	b.Reset()
	r, _ := jaxcache.Verify(ctx, d, jaxcache.VerifyOptions{})
	bad, err := writeJAXVerify(&b, d, r)
	if err != nil || bad != 1 || !strings.Contains(b.String(), "BAD jit_eval-") {
		t.Errorf("verify bad=%d err=%v:\n%s", bad, err, b.String())
	}
	b.Reset()
	pr, err := jaxcache.Prune(ctx, dir, jaxcache.PruneOptions{MaxSize: 1, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := writeJAXPrune(&b, dir, pr, true); err != nil || !strings.Contains(b.String(), "would remove jit_") {
		t.Errorf("prune:\n%s", b.String())
	}
	if got := fmtBytes(1536); got != "1.5 KB" {
		t.Errorf("fmtBytes = %q", got)
	}
}

// TestJAXLoadLine: stats says how many entries JAX never loaded, and says
// "unknown" rather than a false count where access times tell nothing.
func TestJAXLoadLine(t *testing.T) {
	for _, tc := range []struct {
		s    jaxcache.Stats
		want string
	}{
		{jaxcache.Stats{Entries: 5, NeverLoaded: 2, AtimeMode: jaxcache.AtimeRelatime}, "JAX: 5 entries, 2 never loaded since written"},
		{jaxcache.Stats{Entries: 3, NeverLoaded: 3, AtimeMode: jaxcache.AtimeStrict}, "JAX: 3 entries, 3 never loaded since written (if jobs ran"},
		{jaxcache.Stats{Entries: 3, LoadUnknown: 3, AtimeMode: jaxcache.AtimeNever}, "JAX: 3 entries, loads unknown (filesystem mounted noatime"},
		{jaxcache.Stats{Entries: 3, LoadUnknown: 3, AtimeMode: jaxcache.AtimeUnknown}, "JAX: 3 entries, loads unknown (access times not read"},
	} {
		if got := jaxLoadLine(tc.s); !strings.HasPrefix(got, tc.want) {
			t.Errorf("jaxLoadLine(%+v) = %q, want %q...", tc.s, got, tc.want)
		}
	}
}

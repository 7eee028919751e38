package cpu

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/cache"
)

// TestAliasWarmStart: a warm start by the same text (a new cache and
// backend on the directory) loads the executable through the cache's
// alias without parsing the program, and runs it to the cold compile's
// results; texts with the same canonical form share one executable, each
// with its own alias; another thread count is another key.
func TestAliasWarmStart(t *testing.T) {
	ctx := context.Background()
	if _, err := cc.Find(ctx); err != nil {
		t.Skip(err)
	}
	dir := t.TempDir()
	// The same program with other SSA names and a location: one
	// canonical form.
	renamed := strings.NewReplacer("%0", "%dot", "%1", "%t", "%3", "%sum").Replace(tierProgram)
	renamed = strings.Replace(renamed, "return %sum : tensor<64xf32>", `return %sum : tensor<64xf32> loc("model.py":3:1)`, 1)
	if renamed == tierProgram {
		t.Fatal("the renamed text is the same text")
	}
	args := randomArgs(parseText(t, tierProgram), 3)
	compile := func(text string, threads int) (*cache.Report, []byte, *Backend) {
		t.Helper()
		c := openCacheDir(t, dir)
		defer c.Close()
		b := New()
		b.NoTune = true
		b.Threads = threads
		rep, exe := compileIn(t, c, b, "alias", text)
		defer exe.Close()
		out, err := exe.Run(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		return rep, out[0].Data, b
	}
	cold, want, _ := compile(tierProgram, 1)
	if cold.Hit || cold.Alias || !cold.Stored {
		t.Fatalf("cold compile: hit %v alias %v stored %v", cold.Hit, cold.Alias, cold.Stored)
	}
	for _, tc := range []struct {
		name    string
		text    string
		threads int
		alias   bool // the start is an alias hit
		hit     bool
	}{
		{"same text", tierProgram, 1, true, true},
		{"renamed, first time", renamed, 1, false, true},
		{"renamed, again", renamed, 1, true, true},
		{"other threads", tierProgram, 2, false, false},
		{"other threads, again", tierProgram, 2, true, true},
	} {
		rep, got, b := compile(tc.text, tc.threads)
		if rep.Alias != tc.alias || rep.Hit != tc.hit {
			t.Fatalf("%s: alias %v hit %v, want %v %v", tc.name, rep.Alias, rep.Hit, tc.alias, tc.hit)
		}
		if tc.threads == 1 && rep.Key != cold.Key {
			t.Fatalf("%s: key %s, want the cold compile's %s", tc.name, rep.Key, cold.Key)
		}
		b.mu.Lock()
		parsed := len(b.parsed)
		b.mu.Unlock()
		if tc.alias && (parsed != 0 || rep.PhaseTime("key") != 0) {
			t.Fatalf("%s: an alias hit parsed the program (%d modules, key phase %v)", tc.name, parsed, rep.PhaseTime("key"))
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%s: results differ from the cold compile's", tc.name)
		}
	}
}

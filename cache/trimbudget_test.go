package cache

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/layout"
)

// Issue 20, item 23: a writer that runs for a moment and closes makes
// progress proportional to how far its directory is over the bound. A
// directory of 8,000 entries (about 31 a shard) twice over its bound
// gets under it in one such run, within the pass's budget; it took one
// run per shard, about 256, when Close stopped the background trim at
// once. (The count is kept down for a loaded machine: writing the files
// is most of the test's time.)
func TestTrimShortRunsGetUnderBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20,000 files")
	}
	dir := t.TempDir()
	const files, size = 8000, 1024
	payload := make([]byte, size)
	start := time.Now()
	made := map[string]bool{}
	for i := range files {
		k := NewKey("trim", []KeyPart{{Name: "i", Data: fmt.Appendf(nil, "%d", i)}})
		rel := layout.EntryRel(ExecutablesTier, k.String())
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if d := filepath.Dir(p); !made[d] {
			if err := os.MkdirAll(d, 0o700); err != nil {
				t.Fatal(err)
			}
			made[d] = true
		}
		if err := os.WriteFile(p, payload, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d files written in %v", files, time.Since(start).Round(time.Millisecond))
	total := int64(files * size)

	// A writer without a bound records the directory's total (the size
	// ledger), as any earlier writer would have.
	o := testOptions(dir)
	c := mustOpen(t, o, nil)
	c.waitBackground()
	if lt, _, err := c.ledger.read(); err != nil || lt != total {
		t.Fatalf("ledger %d (err %v), want %d", lt, err, total)
	}
	c.Close()

	o.MaxSize = total / 2
	// What is checked is that a run goes on after Close until it is
	// under the bound, within its budget; how much fits in the default
	// budget depends on the machine's load.
	passBudgetOverride.Store(int64(2 * time.Minute))
	t.Cleanup(func() { passBudgetOverride.Store(0) })
	runs := 0
	for {
		runs++
		rstart := time.Now()
		c := mustOpen(t, o, nil)
		c.Close() // a run that does nothing else
		u, err := Scan(context.Background(), dir)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("run %d: %d files, %d bytes left (bound %d) in %v", runs, u.Files, u.Bytes, o.MaxSize, time.Since(rstart).Round(time.Millisecond))
		if u.Bytes <= o.MaxSize {
			break
		}
		if runs == 2 {
			t.Fatalf("still %d bytes, over the bound %d, after %d short runs", u.Bytes, o.MaxSize, runs)
		}
	}
}

// The budget of a pass grows with the share of the directory it removes,
// within [passBudgetMin, passBudgetMax], and is nothing for a recount.
func TestPassBudget(t *testing.T) {
	for _, c := range []struct {
		bound, ledger int64
		fraction      float64
		want          time.Duration
	}{
		{0, 100, 0, 0},                           // no bound
		{100, 90, 0, 0},                          // within the bound: a recount
		{100, 0, 0, passBudgetMin},               // total unknown
		{100, 105, 0.1, passBudgetMin},           // just over
		{100, 150, 0.4, 3200 * time.Millisecond}, // 1.5x over
		{100, 200, 0.55, 4400 * time.Millisecond},
		{100, 1000, 0.91, passBudgetMax}, // far over: capped
	} {
		cur := &trimCursor{LedgerStart: c.ledger, Fraction: c.fraction}
		if got := passBudget(c.bound, cur); got != c.want {
			t.Errorf("bound %d ledger %d fraction %v: budget %v, want %v", c.bound, c.ledger, c.fraction, got, c.want)
		}
	}
}

// A pass's context outlives its parent by the rest of its budget, and no
// longer.
func TestPassContext(t *testing.T) {
	parent, cancel := context.WithCancel(context.Background())
	ctx, stop := passContext(parent, time.Hour)
	defer stop()
	cancel()
	if ctx.Err() != nil {
		t.Fatal("pass stopped with its parent despite its budget")
	}
	stop()
	if ctx.Err() == nil {
		t.Fatal("stop did not end the pass")
	}

	parent, cancel = context.WithCancel(context.Background())
	ctx, stop = passContext(parent, time.Millisecond)
	defer stop()
	done := make(chan struct{})
	go func() { <-ctx.Done(); close(done) }()
	cancel()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("pass outlived its budget")
	}

	ctx, stop = passContext(context.Background(), time.Millisecond)
	defer stop()
	if ctx.Err() != nil {
		t.Fatal("a budget alone ended a pass whose parent is live")
	}
}

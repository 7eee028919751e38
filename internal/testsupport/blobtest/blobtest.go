// Package blobtest is the conformance suite every blob.Store must pass: the
// in-memory store, the S3 store and the GCS store (against real servers)
// run the same checks, so a caller tested with one can rely on the others.
package blobtest

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/blobflight"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
)

// config holds what the Options give Run.
type config struct {
	newLimited func(t *testing.T, limit int64) blob.Store
	newOutage  func(t *testing.T) (blob.Store, func())
}

// Option adds store-specific checks to Run.
type Option func(*config)

// WithMaxObjectSize lets Run check the read bound: newLimited returns an
// empty store whose Get refuses objects larger than limit bytes.
func WithMaxObjectSize(newLimited func(t *testing.T, limit int64) blob.Store) Option {
	return func(c *config) { c.newLimited = newLimited }
}

// WithOutage lets Run check how an outage looks through blob.Guard:
// newOutage returns an empty store and a function that makes it
// unreachable (stops the server, sets the fault hook).
func WithOutage(newOutage func(t *testing.T) (blob.Store, func())) Option {
	return func(c *config) { c.newOutage = newOutage }
}

// Run runs the suite. newStore returns an empty store (a fresh namespace);
// each subtest calls it once and closes the store when done.
func Run(t *testing.T, newStore func(t *testing.T) blob.Store, opts ...Option) {
	var c config
	for _, o := range opts {
		o(&c)
	}
	open := func(t *testing.T) blob.Store {
		t.Helper()
		s := newStore(t)
		t.Cleanup(func() { s.Close() })
		return s
	}
	t.Run("Basics", func(t *testing.T) { testBasics(t, open(t)) })
	t.Run("NotFound", func(t *testing.T) { testNotFound(t, open(t)) })
	t.Run("FirstWriterWins", func(t *testing.T) { testFirstWriterWins(t, open(t)) })
	t.Run("ListPrefixes", func(t *testing.T) { testListPrefixes(t, open(t)) })
	t.Run("LargeObject", func(t *testing.T) { testLargeObject(t, open(t)) })
	t.Run("Open", func(t *testing.T) { testOpen(t, open(t)) })
	t.Run("ReplaceIfMatch", func(t *testing.T) { testReplaceIfMatch(t, open(t)) })
	t.Run("ConcurrentReplace", func(t *testing.T) { testConcurrentReplace(t, open(t)) })
	t.Run("LeaseProbe", func(t *testing.T) { testLeaseProbe(t, open(t)) })
	t.Run("InvalidNames", func(t *testing.T) { testInvalidNames(t, open(t)) })
	t.Run("Cancelled", func(t *testing.T) { testCancelled(t, open(t)) })
	t.Run("TooLarge", func(t *testing.T) {
		if c.newLimited == nil {
			t.Skip("the store has no read bound to test")
		}
		s := c.newLimited(t, 10)
		t.Cleanup(func() { s.Close() })
		testTooLarge(t, s)
	})
	t.Run("Outage", func(t *testing.T) {
		if c.newOutage == nil {
			t.Skip("the store cannot be made unreachable")
		}
		s, stop := c.newOutage(t)
		t.Cleanup(func() { s.Close() })
		testOutage(t, s, stop)
	})
}

func testBasics(t *testing.T, s blob.Store) {
	ctx := context.Background()
	payload := bytes.Repeat([]byte{0, 1, 2, 255}, 1000)
	before := time.Now().Add(-time.Hour)
	if err := s.PutIfAbsent(ctx, "executables/k1", payload); err != nil {
		t.Fatalf("PutIfAbsent: %v", err)
	}
	if err := s.PutIfAbsent(ctx, "executables/k1", []byte("second")); !errors.Is(err, blob.ErrExist) {
		t.Fatalf("second PutIfAbsent: %v, want ErrExist", err)
	}
	got, err := s.Get(ctx, "executables/k1")
	if err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("Get = %d bytes, %v; want the first writer's %d bytes", len(got), err, len(payload))
	}
	info, err := s.Stat(ctx, "executables/k1")
	if err != nil {
		t.Fatalf("Stat: %v", err)
	}
	if info.Name != "executables/k1" || info.Size != int64(len(payload)) || info.ETag == "" {
		t.Fatalf("Stat = %+v", info)
	}
	if info.ModTime.Before(before) || info.ModTime.After(time.Now().Add(time.Hour)) {
		t.Fatalf("Stat ModTime %v is not about now", info.ModTime)
	}
	// An empty object is an object.
	if err := s.PutIfAbsent(ctx, "cpu/kernels/empty", nil); err != nil {
		t.Fatalf("PutIfAbsent of an empty object: %v", err)
	}
	if got, err := s.Get(ctx, "cpu/kernels/empty"); err != nil || len(got) != 0 {
		t.Fatalf("Get of the empty object = %q, %v", got, err)
	}
	if info, err := s.Stat(ctx, "cpu/kernels/empty"); err != nil || info.Size != 0 {
		t.Fatalf("Stat of the empty object = %+v, %v", info, err)
	}
	// Different content, different ETag.
	if err := s.PutIfAbsent(ctx, "executables/k2", []byte("other")); err != nil {
		t.Fatal(err)
	}
	if info2, err := s.Stat(ctx, "executables/k2"); err != nil || info2.ETag == info.ETag {
		t.Fatalf("Stat of other content = %+v, %v; the ETag must differ from %q", info2, err, info.ETag)
	}
	// Delete, then the name is free again; deleting twice is fine.
	if err := s.Delete(ctx, "executables/k1"); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, "executables/k1"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("Get after Delete: %v, want ErrNotExist", err)
	}
	if err := s.Delete(ctx, "executables/k1"); err != nil {
		t.Fatalf("Delete of an absent object: %v", err)
	}
	if err := s.PutIfAbsent(ctx, "executables/k1", []byte("again")); err != nil {
		t.Fatalf("PutIfAbsent after Delete: %v", err)
	}
	if got, err := s.Get(ctx, "executables/k1"); err != nil || string(got) != "again" {
		t.Fatalf("Get after re-put = %q, %v", got, err)
	}
}

func testNotFound(t *testing.T, s blob.Store) {
	ctx := context.Background()
	if _, err := s.Get(ctx, "executables/absent"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("Get of an absent object: %v, want ErrNotExist", err)
	}
	if _, err := s.Stat(ctx, "executables/absent"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("Stat of an absent object: %v, want ErrNotExist", err)
	}
	if infos, err := s.List(ctx, "executables/"); err != nil || len(infos) != 0 {
		t.Fatalf("List of an empty store = %v, %v", infos, err)
	}
	// A name that is a "directory" of another object is not an object.
	if err := s.PutIfAbsent(ctx, "dir/leaf", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "dir"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("Get of a name's parent: %v, want ErrNotExist", err)
	}
	if _, err := s.Stat(ctx, "dir"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("Stat of a name's parent: %v, want ErrNotExist", err)
	}
}

func testFirstWriterWins(t *testing.T, s blob.Store) {
	errs := race(12, func(i int) error {
		return s.PutIfAbsent(context.Background(), "executables/race", fmt.Appendf(nil, "writer-%02d", i))
	})
	winner := oneWinner(t, "writer", errs, blob.ErrExist)
	got, err := s.Get(context.Background(), "executables/race")
	if err != nil || string(got) != fmt.Sprintf("writer-%02d", winner) {
		t.Fatalf("stored %q, %v; the winner was writer %d", got, err, winner)
	}
}

// race runs call(0) to call(n-1) in n goroutines released at once, so that
// the calls overlap, and returns their errors by index.
func race(n int, call func(i int) error) []error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = call(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// oneWinner returns the index of the one racer (a writer or replacer,
// named by who) whose call succeeded, and fails the test unless exactly
// one did and every other one lost with an error wrapping lost.
func oneWinner(t *testing.T, who string, errs []error, lost error) int {
	t.Helper()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("%ss %d and %d both won", who, winner, i)
			}
			winner = i
		case !errors.Is(err, lost):
			t.Fatalf("%s %d: %v, want nil or %v", who, i, err, lost)
		}
	}
	if winner < 0 {
		t.Fatalf("no %s won", who)
	}
	return winner
}

func names(infos []blob.Info) []string {
	out := make([]string, len(infos))
	for i, in := range infos {
		out[i] = in.Name
	}
	return out
}

func testListPrefixes(t *testing.T, s blob.Store) {
	ctx := context.Background()
	all := []string{"a/b/c", "a/b/d", "a/bc", "a/x", "ab", "z/deep/er/name"}
	for i, n := range []string{"z/deep/er/name", "a/bc", "a/b/d", "ab", "a/x", "a/b/c"} {
		if err := s.PutIfAbsent(ctx, n, bytes.Repeat([]byte("x"), i+1)); err != nil {
			t.Fatal(err)
		}
	}
	sizes := map[string]int64{"z/deep/er/name": 1, "a/bc": 2, "a/b/d": 3, "ab": 4, "a/x": 5, "a/b/c": 6}
	for _, tt := range []struct {
		prefix string
		want   []string
	}{
		{"", all},
		{"a/", []string{"a/b/c", "a/b/d", "a/bc", "a/x"}},
		{"a/b/", []string{"a/b/c", "a/b/d"}},
		// A prefix that is not a directory matches by string.
		{"a/b", []string{"a/b/c", "a/b/d", "a/bc"}},
		{"a", []string{"a/b/c", "a/b/d", "a/bc", "a/x", "ab"}},
		{"z/deep/", []string{"z/deep/er/name"}},
		{"a/b/c", []string{"a/b/c"}},
		{"absent/", nil},
		{"a/bd", nil},
	} {
		infos, err := s.List(ctx, tt.prefix)
		if err != nil {
			t.Fatalf("List(%q): %v", tt.prefix, err)
		}
		if got := names(infos); !slices.Equal(got, tt.want) {
			t.Errorf("List(%q) = %q, want %q (sorted)", tt.prefix, got, tt.want)
		}
		for _, in := range infos {
			if in.Size != sizes[in.Name] || in.ETag == "" || in.ModTime.IsZero() {
				t.Errorf("List(%q): %+v, want size %d, an ETag and a time", tt.prefix, in, sizes[in.Name])
			}
		}
	}
}

func testLargeObject(t *testing.T, s blob.Store) {
	ctx := context.Background()
	big := make([]byte, 8<<20)
	rand.Read(big)
	if err := s.PutIfAbsent(ctx, "executables/big", big); err != nil {
		t.Fatalf("PutIfAbsent of 8 MiB: %v", err)
	}
	got, err := s.Get(ctx, "executables/big")
	if err != nil || !bytes.Equal(got, big) {
		t.Fatalf("Get of 8 MiB: %d bytes, %v", len(got), err)
	}
	if info, err := s.Stat(ctx, "executables/big"); err != nil || info.Size != int64(len(big)) {
		t.Fatalf("Stat of 8 MiB = %+v, %v", info, err)
	}
}

// openRead reads name through Open, checking that Info agrees with the
// bytes.
func openRead(t *testing.T, s blob.Store, name string) ([]byte, blob.Info) {
	t.Helper()
	rc, info, err := s.Open(context.Background(), name)
	if err != nil {
		t.Fatalf("Open(%q): %v", name, err)
	}
	defer rc.Close()
	data, err := io.ReadAll(rc)
	if err != nil {
		t.Fatalf("reading %q: %v", name, err)
	}
	if int64(len(data)) != info.Size || info.Name != name || info.ETag == "" {
		t.Fatalf("Open(%q) = %+v with %d bytes", name, info, len(data))
	}
	return data, info
}

func testOpen(t *testing.T, s blob.Store) {
	ctx := context.Background()
	payload := bytes.Repeat([]byte("open"), 5000)
	if err := s.PutIfAbsent(ctx, "executables/o", payload); err != nil {
		t.Fatal(err)
	}
	got, info := openRead(t, s, "executables/o")
	if !bytes.Equal(got, payload) {
		t.Fatalf("Open read %d bytes, want the %d stored", len(got), len(payload))
	}
	st, err := s.Stat(ctx, "executables/o")
	if err != nil || st.ETag != info.ETag || st.Size != info.Size {
		t.Fatalf("Stat = %+v, %v; Open said %+v", st, err, info)
	}
	// A reader may stop early: the rest is never read.
	rc, _, err := s.Open(ctx, "executables/o")
	if err != nil {
		t.Fatal(err)
	}
	head := make([]byte, 4)
	if _, err := io.ReadFull(rc, head); err != nil || string(head) != "open" {
		t.Fatalf("first bytes %q, %v", head, err)
	}
	if err := rc.Close(); err != nil {
		t.Fatalf("Close after a partial read: %v", err)
	}
	if rc, _, err := s.Open(ctx, "executables/absent"); !errors.Is(err, blob.ErrNotExist) {
		if err == nil {
			rc.Close()
		}
		t.Fatalf("Open of an absent object: %v, want ErrNotExist", err)
	}
	// ReadSized reads what Open announced.
	rc, info, err = s.Open(ctx, "executables/o")
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if got, err := blob.ReadSized(rc, info, 0); err != nil || !bytes.Equal(got, payload) {
		t.Fatalf("ReadSized = %d bytes, %v", len(got), err)
	}
}

func testReplaceIfMatch(t *testing.T, s blob.Store) {
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "executables/r", []byte("damaged")); err != nil {
		t.Fatal(err)
	}
	_, bad := openRead(t, s, "executables/r")
	newETag, err := s.ReplaceIfMatch(ctx, "executables/r", bad.ETag, []byte("repaired"))
	if err != nil {
		t.Fatalf("ReplaceIfMatch with the current ETag: %v", err)
	}
	got, cur := openRead(t, s, "executables/r")
	if string(got) != "repaired" || cur.ETag == bad.ETag || newETag != cur.ETag {
		t.Fatalf("after the replace: %q, ETag %q (was %q; the replace said %q)", got, cur.ETag, bad.ETag, newETag)
	}
	// The returned ETag is good for the next replace: how a lease holder
	// keeps its lease object alive.
	again, err := s.ReplaceIfMatch(ctx, "executables/r", newETag, []byte("repaired again"))
	if err != nil {
		t.Fatalf("ReplaceIfMatch with the ETag the last replace returned: %v", err)
	}
	got, cur = openRead(t, s, "executables/r")
	if string(got) != "repaired again" || again != cur.ETag {
		t.Fatalf("after the second replace: %q, ETag %q (the replace said %q)", got, cur.ETag, again)
	}
	// A stale ETag loses and changes nothing.
	if _, err := s.ReplaceIfMatch(ctx, "executables/r", bad.ETag, []byte("late")); !errors.Is(err, blob.ErrPrecondition) {
		t.Fatalf("ReplaceIfMatch with a stale ETag: %v, want ErrPrecondition", err)
	}
	if _, err := s.ReplaceIfMatch(ctx, "executables/r", "0123456789abcdef0123456789abcdef", []byte("late")); !errors.Is(err, blob.ErrPrecondition) {
		t.Fatalf("ReplaceIfMatch with a wrong ETag: %v, want ErrPrecondition", err)
	}
	if got, _ := openRead(t, s, "executables/r"); string(got) != "repaired again" {
		t.Fatalf("a failed replace changed the object to %q", got)
	}
	// An absent object is a failed precondition, and is not created: a
	// repair must never resurrect what a prune removed.
	if _, err := s.ReplaceIfMatch(ctx, "executables/gone", cur.ETag, []byte("x")); !errors.Is(err, blob.ErrPrecondition) {
		t.Fatalf("ReplaceIfMatch of an absent object: %v, want ErrPrecondition", err)
	}
	if _, err := s.Stat(ctx, "executables/gone"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("ReplaceIfMatch created an absent object: %v", err)
	}
	if err := s.Delete(ctx, "executables/r"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.ReplaceIfMatch(ctx, "executables/r", cur.ETag, []byte("x")); !errors.Is(err, blob.ErrPrecondition) {
		t.Fatalf("ReplaceIfMatch of a deleted object: %v, want ErrPrecondition", err)
	}
	if _, err := s.Stat(ctx, "executables/r"); !errors.Is(err, blob.ErrNotExist) {
		t.Fatalf("ReplaceIfMatch recreated a deleted object: %v", err)
	}
}

func testConcurrentReplace(t *testing.T, s blob.Store) {
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "executables/cr", []byte("damaged")); err != nil {
		t.Fatal(err)
	}
	_, bad := openRead(t, s, "executables/cr")
	errs := race(8, func(i int) error {
		_, err := s.ReplaceIfMatch(ctx, "executables/cr", bad.ETag, fmt.Appendf(nil, "replacement-%02d", i))
		return err
	})
	winner := oneWinner(t, "replacer", errs, blob.ErrPrecondition)
	if got, _ := openRead(t, s, "executables/cr"); string(got) != fmt.Sprintf("replacement-%02d", winner) {
		t.Fatalf("stored %q; the winner was replacer %d", got, winner)
	}
}

func testTooLarge(t *testing.T, s blob.Store) {
	ctx := context.Background()
	if err := s.PutIfAbsent(ctx, "big", make([]byte, 11)); err != nil {
		t.Fatal(err)
	}
	if err := s.PutIfAbsent(ctx, "fits", make([]byte, 10)); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "big"); !errors.Is(err, blob.ErrTooLarge) {
		t.Fatalf("Get of an oversize object: %v, want ErrTooLarge", err)
	}
	if got, err := s.Get(ctx, "fits"); err != nil || len(got) != 10 {
		t.Fatalf("Get of an object at the bound = %d bytes, %v", len(got), err)
	}
	if rc, _, err := s.Open(ctx, "big"); !errors.Is(err, blob.ErrTooLarge) {
		if err == nil {
			rc.Close()
		}
		t.Fatalf("Open of an oversize object: %v, want ErrTooLarge", err)
	}
	rc, info, err := s.Open(ctx, "fits")
	if err != nil || info.Size != 10 {
		t.Fatalf("Open of an object at the bound = %+v, %v", info, err)
	}
	rc.Close()
	// Stat reports the size without reading: it is how a caller finds out.
	if info, err := s.Stat(ctx, "big"); err != nil || info.Size != 11 {
		t.Fatalf("Stat of the oversize object = %+v, %v", info, err)
	}
}

func testInvalidNames(t *testing.T, s blob.Store) {
	ctx := context.Background()
	isAnswer := func(err error) bool {
		return errors.Is(err, blob.ErrNotExist) || errors.Is(err, blob.ErrExist) || errors.Is(err, blob.ErrUnavailable)
	}
	for _, bad := range []string{"", "../escape", "/abs", "a//b", "a/./b", "a/..", "a\\b", "a\x00b", "a\nb", "trailing/", strings.Repeat("x", 901)} {
		if _, err := s.Get(ctx, bad); err == nil || isAnswer(err) {
			t.Errorf("Get(%q) = %v, want a name error", bad, err)
		}
		if err := s.PutIfAbsent(ctx, bad, []byte("x")); err == nil || isAnswer(err) {
			t.Errorf("PutIfAbsent(%q) = %v, want a name error", bad, err)
		}
		if _, err := s.Stat(ctx, bad); err == nil || isAnswer(err) {
			t.Errorf("Stat(%q) = %v, want a name error", bad, err)
		}
		if err := s.Delete(ctx, bad); err == nil || isAnswer(err) {
			t.Errorf("Delete(%q) = %v, want a name error", bad, err)
		}
		if rc, _, err := s.Open(ctx, bad); err == nil || isAnswer(err) {
			if err == nil {
				rc.Close()
			}
			t.Errorf("Open(%q) = %v, want a name error", bad, err)
		}
		if _, err := s.ReplaceIfMatch(ctx, bad, "etag", []byte("x")); err == nil || isAnswer(err) || errors.Is(err, blob.ErrPrecondition) {
			t.Errorf("ReplaceIfMatch(%q) = %v, want a name error", bad, err)
		}
	}
	for _, bad := range []string{"../", "/abs/", "a//", "./"} {
		if _, err := s.List(ctx, bad); err == nil {
			t.Errorf("List(%q) accepted", bad)
		}
	}
	if infos, err := s.List(ctx, ""); err != nil || len(infos) != 0 {
		t.Fatalf("after refused puts the store holds %q, %v", names(infos), err)
	}
}

func testCancelled(t *testing.T, s blob.Store) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Get(ctx, "executables/k"); !errors.Is(err, context.Canceled) {
		t.Errorf("Get with a cancelled context: %v, want context.Canceled", err)
	}
	if err := s.PutIfAbsent(ctx, "executables/k", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("PutIfAbsent with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := s.List(ctx, ""); !errors.Is(err, context.Canceled) {
		t.Errorf("List with a cancelled context: %v, want context.Canceled", err)
	}
	if rc, _, err := s.Open(ctx, "executables/k"); !errors.Is(err, context.Canceled) {
		if err == nil {
			rc.Close()
		}
		t.Errorf("Open with a cancelled context: %v, want context.Canceled", err)
	}
	if _, err := s.ReplaceIfMatch(ctx, "executables/k", "etag", []byte("x")); !errors.Is(err, context.Canceled) {
		t.Errorf("ReplaceIfMatch with a cancelled context: %v, want context.Canceled", err)
	}
	// The cancelled put stored nothing.
	if _, err := s.Get(context.Background(), "executables/k"); !errors.Is(err, blob.ErrNotExist) {
		t.Errorf("Get after a cancelled put: %v, want ErrNotExist", err)
	}
}

func testOutage(t *testing.T, s blob.Store, stop func()) {
	ctx := context.Background()
	logs := &logtest.Recorder{}
	const timeout = 3 * time.Second
	g := blob.Guard(s, blob.GuardOptions{Timeout: timeout, Cooldown: time.Hour, Logger: slog.New(logs)})
	if err := g.PutIfAbsent(ctx, "executables/k", []byte("1")); err != nil {
		t.Fatal(err)
	}
	stop()
	start := time.Now()
	if _, err := g.Get(ctx, "executables/k"); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("Get with the store down: %v, want ErrUnavailable", err)
	}
	// The first failure costs at most the per-call timeout (and some
	// slack for a loaded machine).
	if d := time.Since(start); d > 2*timeout {
		t.Fatalf("the first failing call took %v with a %v timeout", d, timeout)
	}
	// Then every call fails fast without reaching the store.
	start = time.Now()
	for i := range 5 {
		if _, err := g.Get(ctx, "executables/k"); !errors.Is(err, blob.ErrUnavailable) {
			t.Fatalf("Get %d while the guard is open: %v", i, err)
		}
		if err := g.PutIfAbsent(ctx, "executables/other", []byte("x")); !errors.Is(err, blob.ErrUnavailable) {
			t.Fatalf("PutIfAbsent %d while the guard is open: %v", i, err)
		}
		if _, err := g.List(ctx, ""); !errors.Is(err, blob.ErrUnavailable) {
			t.Fatalf("List %d while the guard is open: %v", i, err)
		}
		if rc, _, err := g.Open(ctx, "executables/k"); !errors.Is(err, blob.ErrUnavailable) {
			if err == nil {
				rc.Close()
			}
			t.Fatalf("Open %d while the guard is open: %v", i, err)
		}
		if _, err := g.ReplaceIfMatch(ctx, "executables/k", "etag", []byte("x")); !errors.Is(err, blob.ErrUnavailable) {
			t.Fatalf("ReplaceIfMatch %d while the guard is open: %v", i, err)
		}
	}
	if d := time.Since(start); d > timeout {
		t.Fatalf("25 calls with the guard open took %v: they must not wait for the store", d)
	}
	if n := logs.Count("WARN"); n != 1 {
		t.Fatalf("%d warnings for one outage, want exactly 1", n)
	}
}

// testLeaseProbe: the store passes the probe that turns single-flight
// across hosts on (blobflight.Probe), and leaves nothing behind.
func testLeaseProbe(t *testing.T, s blob.Store) {
	ctx := context.Background()
	if err := blobflight.Probe(ctx, s); err != nil {
		t.Fatalf("lease probe: %v", err)
	}
	infos, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	var left []blob.Info
	for _, in := range infos {
		if layout.IsLeaseObject(in.Name) {
			left = append(left, in)
		}
	}
	if len(left) != 0 {
		t.Fatalf("the probe left objects: %v", names(left))
	}
}

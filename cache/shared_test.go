package cache

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/sign"
)

// Unit tests of the shared tier's fall-through logic on the in-memory
// store; the S3 store is tested against a real server in the multi-host
// tests and in internal/s3blob.

func TestSharedFallThrough(t *testing.T) {
	shared := memblob.New(memblob.Options{})
	b := &fakeBackend{useTier: config.SubcacheAutotune}
	p := Program{Name: "f", Text: []byte("shared program")}

	// Host A (writer) publishes the executable and its subcache entry.
	oa := testOptions(t.TempDir())
	oa.Subcaches, oa.SubcachesExplicit = nil, true // keep XLA raw subcaches out of it
	a := mustOpen(t, oa, nil, WithShared(shared))
	compileOK(t, a, b, p)
	infos, _ := shared.List(context.Background(), "")
	if len(infos) != 1 || !strings.HasPrefix(infos[0].Name, "executables/") {
		t.Fatalf("published %v", infos)
	}

	// Host B, a reader with an empty local directory, hits the shared
	// tier and writes nothing locally.
	ob := testOptions(t.TempDir())
	ob.Subcaches, ob.SubcachesExplicit = nil, true
	ob.Role = config.RoleReader
	rb := mustOpen(t, ob, nil, WithShared(shared))
	_, r := compileOK(t, rb, b, p)
	if !r.Hit || r.Source != "shared" || rb.Stats().SharedHits != 1 {
		t.Fatalf("reader report %+v", r)
	}
	if ents, _ := os.ReadDir(ob.Dir); len(ents) != 0 {
		t.Errorf("reader wrote %d items locally", len(ents))
	}

	// Host C, a writer, copies the shared hit into its directory: the
	// second lookup is local.
	oc := testOptions(t.TempDir())
	oc.Subcaches, oc.SubcachesExplicit = nil, true
	c := mustOpen(t, oc, nil, WithShared(shared))
	if _, r = compileOK(t, c, b, p); r.Source != "shared" {
		t.Fatalf("writer C report %+v", r)
	}
	if _, r = compileOK(t, c, b, p); r.Source != "local" {
		t.Fatalf("writer C second report %+v", r)
	}

	// A forged shared object is refused when a signing key is set.
	od := testOptions(t.TempDir())
	od.Subcaches, od.SubcachesExplicit = nil, true
	od.SigningKey = sign.NewHMAC([]byte("k"))
	d := mustOpen(t, od, nil, WithShared(shared))
	if _, r = compileOK(t, d, b, p); r.Hit {
		t.Error("unsigned shared entry loaded with a signing key")
	}
	if d.Stats().Errors["signature"] != 1 {
		t.Errorf("errors %v", d.Stats().Errors)
	}
	if b.compiles.Load() != 2 {
		t.Errorf("%d compiles, want 2 (host A and the signing host)", b.compiles.Load())
	}
}

// An unreachable shared store costs no log line of the cache's own (the
// store's guard logs the outage) and never fails a compile.
func TestSharedUnavailable(t *testing.T) {
	shared := memblob.New(memblob.Options{})
	shared.SetUnavailable(true, errors.New("connection refused"))
	b := &fakeBackend{}
	o := testOptions(t.TempDir())
	o.Subcaches, o.SubcachesExplicit = nil, true
	o.SigningKey = sign.NewHMAC([]byte("k"))
	var logs logBuffer
	c := mustOpen(t, o, &logs, WithShared(shared))
	p := Program{Name: "f", Text: []byte("while the store is down")}
	if _, r := compileOK(t, c, b, p); r.Hit || !r.Stored {
		t.Fatalf("report %+v", r)
	}
	if _, r := compileOK(t, c, b, p); !r.Hit || r.Source != "local" {
		t.Fatalf("second report %+v", r)
	}
	if n := c.Stats().Errors["shared"]; n != 2 {
		t.Errorf("shared errors %d, want 2 (one lookup, one publish)", n)
	}
	if logs.String() != "" {
		t.Errorf("the cache logged an outage the store reports itself:\n%s", logs.String())
	}
}

// The unsigned-shared-tier warning comes from the cache that is given a
// shared store, once per process.
func TestSharedUnsignedWarning(t *testing.T) {
	warnUnsignedOnce = sync.Once{}
	t.Cleanup(func() { warnUnsignedOnce = sync.Once{} })
	var logs logBuffer
	o := testOptions(t.TempDir())
	signed := testOptions(t.TempDir())
	signed.SigningKey = sign.NewHMAC([]byte("k"))
	mustOpen(t, signed, &logs, WithShared(memblob.New(memblob.Options{})))
	if strings.Contains(logs.String(), unsignedSharedWarning) {
		t.Fatal("warned about a signed shared tier")
	}
	mustOpen(t, o, &logs, WithShared(memblob.New(memblob.Options{})))
	mustOpen(t, o, &logs, WithShared(memblob.New(memblob.Options{})))
	if n := strings.Count(logs.String(), unsignedSharedWarning); n != 1 {
		t.Fatalf("warning printed %d times, want once:\n%s", n, logs.String())
	}
}

// A disabled cache takes no shared tier (and closes what it was given).
func TestSharedIgnoredWhenDisabled(t *testing.T) {
	c := mustOpen(t, config.Defaults(), nil, WithShared(memblob.New(memblob.Options{})))
	if c.Shared() != nil || c.enabled() {
		t.Fatal("a disabled cache uses a shared tier")
	}
}

package cache

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/config"
)

// coreMemShared is an in-memory SharedStore for unit tests of the fall-through
// logic (the S3 store itself is tested against a real server elsewhere).
type coreMemShared struct {
	mu   sync.Mutex
	objs map[string][]byte
	gets int
}

func newCoreMemShared() *coreMemShared { return &coreMemShared{objs: map[string][]byte{}} }

func (m *coreMemShared) Get(_ context.Context, name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	b, ok := m.objs[name]
	if !ok {
		return nil, fmt.Errorf("%s: %w", name, ErrNotExist)
	}
	return bytes.Clone(b), nil
}

func (m *coreMemShared) PutIfAbsent(_ context.Context, name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.objs[name]; ok {
		return fmt.Errorf("%s: %w", name, ErrExist)
	}
	m.objs[name] = bytes.Clone(data)
	return nil
}

func (m *coreMemShared) List(_ context.Context, prefix string) ([]string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.objs {
		if strings.HasPrefix(k, prefix) {
			out = append(out, k)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (m *coreMemShared) Close() error { return nil }

func TestSharedFallThrough(t *testing.T) {
	shared := newCoreMemShared()
	b := &fakeBackend{useTier: config.SubcacheAutotune}
	p := Program{Name: "f", Text: []byte("shared program")}

	// Host A (writer) publishes the executable and its subcache entry.
	oa := testOptions(t.TempDir())
	oa.Subcaches, oa.SubcachesExplicit = nil, true // keep XLA raw subcaches out of it
	a := mustOpen(t, oa, nil)
	a.shared = shared
	compileOK(t, a, b, p)
	names, _ := shared.List(context.Background(), "")
	if len(names) != 1 || !strings.HasPrefix(names[0], "executables/") {
		t.Fatalf("published %v", names)
	}

	// Host B, a reader with an empty local directory, hits the shared
	// tier and writes nothing locally.
	ob := testOptions(t.TempDir())
	ob.Subcaches, ob.SubcachesExplicit = nil, true
	ob.Role = config.RoleReader
	rb := mustOpen(t, ob, nil)
	rb.shared = shared
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
	c := mustOpen(t, oc, nil)
	c.shared = shared
	if _, r = compileOK(t, c, b, p); r.Source != "shared" {
		t.Fatalf("writer C report %+v", r)
	}
	if _, r = compileOK(t, c, b, p); r.Source != "local" {
		t.Fatalf("writer C second report %+v", r)
	}

	// A forged shared object is refused when a signing key is set.
	od := testOptions(t.TempDir())
	od.Subcaches, od.SubcachesExplicit = nil, true
	od.SigningKey = []byte("k")
	d := mustOpen(t, od, nil)
	d.shared = shared
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

package cache

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/config"
)

// countingStore records every request made to the store it wraps, as
// "Method name" lines with the key part of entry names left out.
type countingStore struct {
	blob.Store
	mu   sync.Mutex
	reqs []string
}

func (s *countingStore) note(method, name string) {
	if i := strings.LastIndexByte(name, '/'); i >= 0 && strings.HasPrefix(name, ExecutablesTier+"/") {
		name = name[:i+1] + "<key>"
	}
	s.mu.Lock()
	s.reqs = append(s.reqs, method+" "+name)
	s.mu.Unlock()
}

func (s *countingStore) take() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.reqs
	s.reqs = nil
	return r
}

func (s *countingStore) Get(ctx context.Context, name string) ([]byte, error) {
	s.note("Get", name)
	return s.Store.Get(ctx, name)
}

func (s *countingStore) Open(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	s.note("Open", name)
	return s.Store.Open(ctx, name)
}

func (s *countingStore) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	s.note("PutIfAbsent", name)
	return s.Store.PutIfAbsent(ctx, name, data)
}

func (s *countingStore) ReplaceIfMatch(ctx context.Context, name, etag string, data []byte) (string, error) {
	s.note("ReplaceIfMatch", name)
	return s.Store.ReplaceIfMatch(ctx, name, etag, data)
}

func (s *countingStore) Stat(ctx context.Context, name string) (blob.Info, error) {
	s.note("Stat", name)
	return s.Store.Stat(ctx, name)
}

func (s *countingStore) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	s.note("List", prefix)
	return s.Store.List(ctx, prefix)
}

func (s *countingStore) Delete(ctx context.Context, name string) error {
	s.note("Delete", name)
	return s.Store.Delete(ctx, name)
}

// A compile miss asks the shared tier only about the entry itself: whether
// it is there, and (a writer) publishing it. The core mirrors no compiler's
// raw files, so no request lists a prefix, whichever subcaches are on.
func TestSharedRequestsPerMiss(t *testing.T) {
	for _, subs := range [][]config.Subcache{nil, {config.SubcacheAutotune, config.SubcacheKernels}} {
		t.Run(fmt.Sprint(subs), func(t *testing.T) {
			store := &countingStore{Store: memblob.New(memblob.Options{})}
			o := testOptions(t.TempDir())
			if subs != nil {
				o.Subcaches, o.SubcachesExplicit = subs, true
			}
			c := mustOpen(t, o, nil, WithShared(store))
			store.take() // what Open asked, if anything, is not the miss's
			b := &fakeBackend{}
			compileOK(t, c, b, Program{Name: "m", Text: []byte("one miss")})
			got := store.take()
			for _, r := range got {
				if strings.HasPrefix(r, "List ") {
					t.Errorf("a miss listed the shared store: %q", r)
				}
				if !strings.Contains(r, " "+ExecutablesTier+"/") {
					t.Errorf("a miss made a request not about its entry: %q", r)
				}
			}
			if !slices.ContainsFunc(got, func(r string) bool { return strings.HasPrefix(r, "PutIfAbsent ") }) {
				t.Errorf("the writer did not publish its entry: %q", got)
			}
			t.Logf("%d shared-tier requests for one miss: %q", len(got), got)
			if len(got) > 2 {
				t.Errorf("%d shared-tier requests for one miss, want at most 2 (look up, publish): %q", len(got), got)
			}
		})
	}
}

package memblob_test

import (
	"context"
	"errors"
	"testing"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/testsupport/blobtest"
)

func TestConformance(t *testing.T) {
	blobtest.Run(t,
		func(t *testing.T) blob.Store { return memblob.New(memblob.Options{}) },
		blobtest.WithMaxObjectSize(func(t *testing.T, limit int64) blob.Store {
			return memblob.New(memblob.Options{MaxObjectSize: limit})
		}),
		blobtest.WithOutage(func(t *testing.T) (blob.Store, func()) {
			s := memblob.New(memblob.Options{})
			return s, func() { s.SetUnavailable(true, nil) }
		}),
	)
}

func TestFaultHookAndCalls(t *testing.T) {
	ctx := context.Background()
	s := memblob.New(memblob.Options{})
	cause := errors.New("network unreachable")
	s.SetUnavailable(true, cause)
	if _, err := s.Get(ctx, "a"); !errors.Is(err, blob.ErrUnavailable) || !errors.Is(err, cause) {
		t.Fatalf("Get while unavailable: %v", err)
	}
	if err := s.PutIfAbsent(ctx, "a", nil); !errors.Is(err, blob.ErrUnavailable) {
		t.Fatalf("PutIfAbsent while unavailable: %v", err)
	}
	s.SetUnavailable(false, nil)
	if err := s.PutIfAbsent(ctx, "a", []byte("x")); err != nil {
		t.Fatal(err)
	}
	if s.Calls("get") != 1 || s.Calls("put") != 2 || s.Len() != 1 {
		t.Fatalf("calls get=%d put=%d, len %d", s.Calls("get"), s.Calls("put"), s.Len())
	}
	// PutRaw plays a foreign writer: it skips name checks, List shows it.
	s.PutRaw("x/../escape", []byte("evil"))
	infos, err := s.List(ctx, "x/")
	if err != nil || len(infos) != 1 || infos[0].Name != "x/../escape" {
		t.Fatalf("List after PutRaw = %+v, %v", infos, err)
	}
	// Close keeps the objects for other users of the store.
	s.Close()
	if got, err := s.Get(ctx, "a"); err != nil || string(got) != "x" {
		t.Fatalf("Get after Close = %q, %v", got, err)
	}
}

// A guarded store is a store like any other.
func TestGuardedConformance(t *testing.T) {
	guard := func(s blob.Store) blob.Store { return blob.Guard(s, blob.GuardOptions{}) }
	blobtest.Run(t,
		func(t *testing.T) blob.Store { return guard(memblob.New(memblob.Options{})) },
		blobtest.WithMaxObjectSize(func(t *testing.T, limit int64) blob.Store {
			return guard(memblob.New(memblob.Options{MaxObjectSize: limit}))
		}),
	)
}

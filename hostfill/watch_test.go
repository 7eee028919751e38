package hostfill

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestWatchPublishes: a file that appears while the watcher runs is
// published, by file events (with scans an hour apart) and by scans
// alone (the fallback without inotify).
func TestWatchPublishes(t *testing.T) {
	for _, tc := range []struct {
		name     string
		noNotify bool
		poll     time.Duration
	}{{"events", false, time.Hour}, {"polling", true, 20 * time.Millisecond}} {
		t.Run(tc.name, func(t *testing.T) {
			store := memblob.New(memblob.Options{})
			h := newHost(t, nil)
			h.write(t, autotuneName(0), []byte("results { before: 1 }\n")) // the autotune directory exists
			defer startWatch(newPublisher(store, h.o, nil), WatchOptions{Dir: h.path, Poll: tc.poll, NoNotify: tc.noNotify, Settle: 10 * time.Millisecond, BatchDelay: 10 * time.Millisecond})()
			// The first scan has run: from now on only events (or the
			// fallback's scans) can publish a new file.
			waitPublished(t, store, autotuneName(0))
			h.write(t, autotuneName(1), []byte("results { during: 1 }\n"))
			waitPublished(t, store, autotuneName(1))
		})
	}
}

// startWatch runs Watch until the returned function stops it and waits
// for it to return.
func startWatch(p *Publisher, wo WatchOptions) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		Watch(ctx, p, wo)
	}()
	return func() { cancel(); wg.Wait() }
}

// waitPublished waits until rel is named by an index on store.
func waitPublished(t *testing.T, store interface {
	List(context.Context, string) ([]blob.Info, error)
	Get(context.Context, string) ([]byte, error)
}, rel string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		objs, _ := store.List(context.Background(), Prefix)
		for _, o := range objs {
			if !strings.HasSuffix(o.Name, indexSuffix) {
				continue
			}
			b, _ := store.Get(context.Background(), o.Name)
			recs, _ := DecodeIndex(b)
			for _, r := range recs {
				if r.Name == rel {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not published while the watcher ran", rel)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestWatchDirectoryCreatedLater: the autotune directory appears only
// once XLA first writes to it, after exec started; files XLA then renames
// into it from tmp/ are published by file events alone (scans an hour
// apart), so the new directory is watched too.
func TestWatchDirectoryCreatedLater(t *testing.T) {
	store := memblob.New(memblob.Options{})
	h := newHost(t, nil)
	entry := jaxKey("jit_g", 3) + "-cache"
	h.write(t, entry, jaxEntry(t, jaxcache.CodecZlib, 2, []byte("executable")))
	defer startWatch(newPublisher(store, h.o, nil), WatchOptions{Dir: h.path, Poll: time.Hour, Settle: 10 * time.Millisecond, BatchDelay: 10 * time.Millisecond})()
	waitPublished(t, store, entry) // the watches are set

	// XLA's first write: the directory, its tmp/ and a first file at once.
	tmp := filepath.Join(h.path, "xla_gpu_per_fusion_autotune_cache_dir", "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		t.Fatal(err)
	}
	h.write(t, autotuneName(0), []byte("results { first: 1 }\n"))
	waitPublished(t, store, autotuneName(0)) // the directory's Create event was handled

	// A later result, written to tmp/ and renamed into place: only an
	// event on the new directory can report it.
	src := filepath.Join(tmp, "tmp_per_fusion_cache_1.textproto")
	if err := os.WriteFile(src, []byte("results { later: 1 }\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(src, filepath.Join(h.path, filepath.FromSlash(autotuneName(1)))); err != nil {
		t.Fatal(err)
	}
	waitPublished(t, store, autotuneName(1))
}

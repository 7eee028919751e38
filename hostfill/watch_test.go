package hostfill

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
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
			p := NewPublisher(store, h.o, nil)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Add(1)
			go func() {
				defer wg.Done()
				Watch(ctx, p, WatchOptions{Dir: h.path, Poll: tc.poll, NoNotify: tc.noNotify, Settle: 10 * time.Millisecond})
			}()
			defer func() { cancel(); wg.Wait() }()
			published := func(rel string) bool {
				objs, _ := store.List(context.Background(), Prefix)
				for _, o := range objs {
					if !strings.HasSuffix(o.Name, indexSuffix) {
						continue
					}
					b, _ := store.Get(context.Background(), o.Name)
					recs, _ := DecodeIndex(b)
					for _, r := range recs {
						if r.Name == rel {
							return true
						}
					}
				}
				return false
			}
			wait := func(rel string) {
				deadline := time.Now().Add(30 * time.Second)
				for !published(rel) {
					if time.Now().After(deadline) {
						t.Fatalf("%s not published while the watcher ran", rel)
					}
					time.Sleep(10 * time.Millisecond)
				}
			}
			// The first scan has run: from now on only events (or the
			// fallback's scans) can publish a new file.
			wait(autotuneName(0))
			h.write(t, autotuneName(1), []byte("results { during: 1 }\n"))
			wait(autotuneName(1))
		})
	}
}

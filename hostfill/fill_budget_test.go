package hostfill

import (
	"context"
	"crypto/rand"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// plantPacks puts on store n packs, pack i holding the members made by
// files(i), and returns the names and contents of every file.
func plantPacks(t *testing.T, store *memblob.Store, n int, files func(i int) map[string][]byte) map[string][]byte {
	t.Helper()
	all := map[string][]byte{}
	for i := range n {
		var ms []Member
		for rel, data := range files(i) {
			m, err := Seal(rel, data, nil)
			if err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
			all[rel] = data
		}
		pack, index, err := EncodePack(ms)
		if err != nil {
			t.Fatal(err)
		}
		pn, in := ObjectNames(pack)
		if err := store.PutIfAbsent(context.Background(), pn, pack); err != nil {
			t.Fatal(err)
		}
		if err := store.PutIfAbsent(context.Background(), in, index); err != nil {
			t.Fatal(err)
		}
	}
	return all
}

func randomJAXEntry(t *testing.T, size int) []byte {
	t.Helper()
	exe := make([]byte, size)
	rand.Read(exe)
	return jaxEntry(t, jaxcache.CodecZlib, 3, exe)
}

// peakHeap runs f and returns the most heap it found in use while f ran,
// above what was in use before, sampling often; collections are made
// frequent so that the heap in use stays close to what is live.
func peakHeap(f func()) uint64 {
	defer debug.SetGCPercent(debug.SetGCPercent(5))
	runtime.GC()
	s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	metrics.Read(s)
	base := s[0].Value.Uint64()
	var peak uint64
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		s := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
		for {
			metrics.Read(s)
			if v := s[0].Value.Uint64(); v > base && v-base > peak {
				peak = v - base
			}
			select {
			case <-done:
				return
			case <-time.After(50 * time.Microsecond):
			}
		}
	}()
	f()
	close(done)
	wg.Wait()
	return peak
}

// TestFillStreamsPacksWithinBudget: a fill streams packs. Bytes it does
// not want (files the host already has) are read past, never held; the
// members it wants are held one budget's worth at a time across all its
// concurrent requests, not a whole pack per request (8 packs of 4 MiB held
// at once before).
func TestFillStreamsPacksWithinBudget(t *testing.T) {
	const big = 4 << 20
	ctx := context.Background()
	// One entry under every name: compressing random bytes is slow.
	entry := randomJAXEntry(t, big)
	t.Run("unwanted bytes read past", func(t *testing.T) {
		store := memblob.New(memblob.Options{})
		h := newHost(t, nil)
		h.o.Kernels = false
		all := plantPacks(t, store, 8, func(i int) map[string][]byte {
			return map[string][]byte{
				jaxKey("jit_big", i) + "-cache":   entry,
				jaxKey("jit_small", i) + "-cache": jaxEntry(t, jaxcache.CodecZlib, 1, []byte("small executable")),
			}
		})
		for i := range 8 {
			rel := jaxKey("jit_big", i) + "-cache"
			h.write(t, rel, all[rel]) // the host has them: not wanted
		}
		var st FillStats
		var err error
		n := memtest.Allocated(func() { st, err = fill(ctx, store, h.o) })
		if err != nil || st.Files != 8 || st.Refused != 0 {
			t.Fatalf("%+v %v", st, err)
		}
		t.Logf("8 packs of %d MiB, %d bytes wanted: %.1f MiB allocated", big>>20, st.Bytes, float64(n)/(1<<20))
		if n > 8*big/4 {
			t.Errorf("fill allocated %d bytes for %d wanted: the packs were held whole", n, st.Bytes)
		}
	})
	t.Run("wanted members within the budget", func(t *testing.T) {
		store := memblob.New(memblob.Options{})
		h := newHost(t, nil)
		h.o.Kernels = false
		h.o.FillMemory = big + big/2
		all := plantPacks(t, store, 8, func(i int) map[string][]byte {
			return map[string][]byte{jaxKey("jit_big", i) + "-cache": entry}
		})
		var st FillStats
		var err error
		peak := peakHeap(func() { st, err = fill(ctx, store, h.o) })
		if err != nil || st.Files != 8 || st.Refused != 0 {
			t.Fatalf("%+v %v", st, err)
		}
		for rel, want := range all {
			if got, ok := h.read(t, rel); !ok || string(got) != string(want) {
				t.Fatalf("%s not installed intact", rel)
			}
		}
		t.Logf("8 packs of %d MiB wanted, budget %.1f MiB: peak heap %.1f MiB", big>>20, float64(h.o.FillMemory)/(1<<20), float64(peak)/(1<<20))
		if peak > 4*big {
			t.Errorf("peak heap %d bytes during the fill, budget %d: more than one budget's worth of packs held", peak, h.o.FillMemory)
		}
	})
}

package hostfill

import (
	"context"
	"encoding/hex"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// byteStore counts the requests made to a store and the bytes read back.
type byteStore struct {
	blob.Store
	requests, bytes atomic.Int64
}

func (s *byteStore) Get(ctx context.Context, name string) ([]byte, error) {
	s.requests.Add(1)
	b, err := s.Store.Get(ctx, name)
	s.bytes.Add(int64(len(b)))
	return b, err
}

func (s *byteStore) Open(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	s.requests.Add(1)
	rc, info, err := s.Store.Open(ctx, name)
	if err != nil {
		return rc, info, err
	}
	return &countingReader{ReadCloser: rc, n: &s.bytes}, info, nil
}

func (s *byteStore) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	s.requests.Add(1)
	return s.Store.List(ctx, prefix)
}

func (s *byteStore) Stat(ctx context.Context, name string) (blob.Info, error) {
	s.requests.Add(1)
	return s.Store.Stat(ctx, name)
}

type countingReader struct {
	io.ReadCloser
	n *atomic.Int64
}

func (r *countingReader) Read(p []byte) (int, error) {
	n, err := r.ReadCloser.Read(p)
	r.n.Add(int64(n))
	return n, err
}

// BenchmarkScopedFill is issue 24's measure of scoping: a bucket on
// versitygw holds what hosts of two runtimes published (jaxlib 0.11.2
// and 0.12.0.1; each 2,000 autotune results and 20 JAX entries of about
// 200 kB, in packs of 256 files), and four fresh hosts of jaxlib 0.12.0.1 each fill their
// directory, as exec does before its command starts: "unscoped" is every
// release before scoping (the hosts do not know their runtime, so every
// pack is filled), "scoped" knows it. Reported per host: requests, MB
// read from the store, files written.
//
//	go test -run '^$' -bench ScopedFill -benchtime 1x ./hostfill/
func BenchmarkScopedFill(b *testing.B) {
	srv := s3test.Start(b, "bkt")
	srv.Setenv(b)
	raw, err := xlacache.OpenShared(srv.SharedURL("bkt", "scope"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	rng := rand.NewChaCha8([32]byte{1})
	for _, jl := range []string{"0.11.2", "0.12.0.1"} {
		src := newHost(b, nil)
		src.o.Kernels = false
		src.o.Origin = testOrigin(jl)
		// A job publishes while it runs, in many packs (the watcher's
		// batches): 256 files a pack here.
		src.o.PackFiles = 256
		for i := 0; i < 2000; i++ {
			name := fmt.Sprintf("xla_gpu_per_fusion_autotune_cache_dir/%s.textproto", hex.EncodeToString([]byte(fmt.Sprintf("%s-%06d", jl, i))))
			src.write(b, name, []byte(fmt.Sprintf("version: 3\nresults {\n  device: \"jaxlib %s\"\n  hlo: \"fusion.%d\"\n  result { run_time { nanos: %d } }\n}\n", jl, i, 1000+i)))
		}
		for i := 0; i < 20; i++ {
			// Machine code compresses little: random bytes stand in.
			exe := make([]byte, 200<<10)
			rng.Read(exe)
			src.write(b, fmt.Sprintf("jit_step%d-%064x-cache", i, len(jl)), jaxEntry(b, jaxcache.CodecZstd, 2, exe))
		}
		if err := newPublisher(raw, src.o, nil).Publish(ctx, false); err != nil {
			b.Fatal(err)
		}
	}
	const hosts = 4
	for _, c := range []struct {
		name string
		rt   Runtime
	}{{"unscoped", Runtime{}}, {"scoped", Runtime{JAXLib: "0.12.0.1", Platforms: "cpu"}}} {
		b.Run(c.name, func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				store := &byteStore{Store: raw}
				var files int
				var skipped int
				for h := 0; h < hosts; h++ {
					b.StopTimer()
					dst := newHost(b, nil)
					dst.o.Kernels = false
					dst.o.Origin.Runtime = c.rt
					b.StartTimer()
					fr, err := CoordinatedFill(ctx, store, dst.o, time.Now(), time.Minute)
					if err != nil || !fr.Filled {
						b.Fatalf("host %d: %+v, %v", h, fr, err)
					}
					files += fr.Stats.Files
					p, _, _ := fr.Stats.SkippedPacks()
					skipped += p
				}
				b.ReportMetric(float64(store.requests.Load())/hosts, "requests/host")
				b.ReportMetric(float64(store.bytes.Load())/hosts/1e6, "MB/host")
				b.ReportMetric(float64(files)/hosts, "files/host")
				b.ReportMetric(float64(skipped)/hosts, "skipped-packs/host")
			}
		})
	}
}

package hostfill

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// benchFiles are 10,000 autotune results and 50 JAX entries.
func benchFiles(b testing.TB) map[string][]byte {
	files := map[string][]byte{}
	for i := 0; i < 10000; i++ {
		files[autotuneName(i)] = []byte(fmt.Sprintf("version: 3\nresults {\n  device: \"sm_90 with 132 SMs\"\n  hlo: \"fusion.%d\"\n  result { run_time { nanos: %d } gemm { algorithm: %d } }\n}\n", i, 1000+i, i%17))
	}
	for i := 0; i < 50; i++ {
		exe := bytes.Repeat([]byte(fmt.Sprintf("executable %d;", i)), 4000)
		files[jaxKey("jit_step", i)+"-cache"] = jaxEntry(b, jaxcache.CodecZstd, 2, exe)
	}
	return files
}

// singlePrefix is where the per-object comparison stores each file by
// itself, sealed the same way.
const singlePrefix = "single/"

// BenchmarkColdFill fills an empty directory with 10,000 autotune files
// and 50 JAX entries from versitygw on loopback: in packs (fill), and one
// object per file (List, then a Get per file, the same parallelism),
// reporting requests and files per fill.
//
//	go test -run '^$' -bench ColdFill -benchtime 3x ./hostfill/
func BenchmarkColdFill(b *testing.B) {
	srv := s3test.Start(b, "bkt")
	srv.Setenv(b)
	raw, err := xlacache.OpenShared(srv.SharedURL("bkt", "bench"), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	ctx := context.Background()
	files := benchFiles(b)
	src := newHost(b, nil)
	for rel, data := range files {
		src.write(b, rel, data)
	}
	if err := newPublisher(raw, src.o, nil).Publish(ctx, false); err != nil {
		b.Fatal(err)
	}
	rels := make([]string, 0, len(files))
	for rel := range files {
		rels = append(rels, rel)
	}
	var perr atomic.Value
	each(ctx, 8, len(rels), func(i int) {
		m, err := Seal(rels[i], files[rels[i]], nil)
		if err == nil {
			err = raw.PutIfAbsent(ctx, singlePrefix+rels[i], m.Sealed)
		}
		if err != nil {
			perr.Store(err)
		}
	})
	if err, _ := perr.Load().(error); err != nil {
		b.Fatal(err)
	}
	check := func(b *testing.B, dir string) {
		for _, rel := range []string{rels[0], rels[len(rels)-1], jaxKey("jit_step", 49) + "-cache"} {
			got, err := os.ReadFile(dir + "/" + rel)
			if err != nil || !bytes.Equal(got, files[rel]) {
				b.Fatalf("%s not filled (%v)", rel, err)
			}
		}
	}
	b.Run("packs", func(b *testing.B) {
		store := &countingStore{Store: raw}
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dst := newHost(b, nil)
			dst.o.Kernels = false
			store.n.Store(0)
			b.StartTimer()
			st, err := fill(ctx, store, dst.o)
			if err != nil || st.Files != len(files) {
				b.Fatalf("filled %d of %d: %v", st.Files, len(files), err)
			}
			b.StopTimer()
			check(b, dst.path)
			b.ReportMetric(float64(store.n.Load()), "requests/op")
			b.ReportMetric(float64(st.Files), "files/op")
		}
	})
	b.Run("local-writes-only", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dst := newHost(b, nil)
			b.StartTimer()
			if err := writeFloor(ctx, files, rels, dst.o); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("per-object", func(b *testing.B) {
		store := &countingStore{Store: raw}
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			dst := newHost(b, nil)
			store.n.Store(0)
			b.StartTimer()
			n, err := fillPerObject(ctx, store, dst.o)
			if err != nil || n != len(files) {
				b.Fatalf("filled %d of %d: %v", n, len(files), err)
			}
			b.StopTimer()
			check(b, dst.path)
			b.ReportMetric(float64(store.n.Load()), "requests/op")
			b.ReportMetric(float64(n), "files/op")
		}
	})
}

// writeFloor writes every file through atomicfile.Publish (temporary
// file, fsync, link: one flush per file, as the per-object fill pays),
// with the parallelism fill writes with. fill itself flushes once per
// pack (atomicfile.Batch), so it can beat this floor.
func writeFloor(ctx context.Context, files map[string][]byte, rels []string, o Options) error {
	var ferr atomic.Value
	each(ctx, writeParallel(o), len(rels), func(i int) {
		if _, err := atomicfile.Publish(rels[i], files[rels[i]], o.writeOpts()); err != nil {
			ferr.Store(err)
		}
	})
	err, _ := ferr.Load().(error)
	return err
}

// fillPerObject is the baseline: every file its own object, verified and
// written as fill does.
func fillPerObject(ctx context.Context, store blob.Store, o Options) (int, error) {
	objs, err := store.List(ctx, singlePrefix)
	if err != nil {
		return 0, err
	}
	var n atomic.Int64
	var ferr atomic.Value
	each(ctx, o.parallel(), len(objs), func(i int) {
		rel := strings.TrimPrefix(objs[i].Name, singlePrefix)
		if _, err := o.Root.Lstat(rel); err == nil {
			return
		}
		b, err := getBounded(ctx, store, objs[i].Name, o.maxObject())
		if err != nil {
			ferr.Store(err)
			return
		}
		data, err := openPayload(Member{Record: Record{Name: rel}, Sealed: b}, o.SigningKey)
		if err == nil {
			err = checkContent(classify(rel), rel, data, o.SigningKey)
		}
		if err != nil {
			ferr.Store(err)
			return
		}
		if created, err := atomicfile.Publish(rel, data, o.writeOpts()); err == nil && created {
			n.Add(1)
		}
	})
	err, _ = ferr.Load().(error)
	return int(n.Load()), err
}

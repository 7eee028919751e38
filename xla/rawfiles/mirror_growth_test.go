package rawfiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"google.golang.org/protobuf/encoding/protowire"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/memtest"
)

// These tests use only the Mirror's API of before issue 20 item 19, so
// that they run (and fail) on that version too.

// kernelRec is one entry of XLA's KernelCacheProto map (field 1: a
// message of name and binary) with a binary of size bytes.
func kernelRec(name string, size int) []byte {
	bin := bytes.Repeat([]byte{byte(len(name))}, size)
	copy(bin, name)
	var entry []byte
	entry = protowire.AppendTag(entry, 1, protowire.BytesType)
	entry = protowire.AppendBytes(entry, []byte(name))
	entry = protowire.AppendTag(entry, 2, protowire.BytesType)
	entry = protowire.AppendBytes(entry, bin)
	return protowire.AppendBytes(protowire.AppendTag(nil, 1, protowire.BytesType), entry)
}

// jobKernels is what job j adds to the kernel cache: perJob records of
// recSize bytes.
func jobKernels(j, perJob, recSize int) []byte {
	var out []byte
	for k := range perJob {
		out = append(out, kernelRec(fmt.Sprintf("job%d-kernel%d", j, k), recSize)...)
	}
	return out
}

// partBytes sums the sizes of the kernel parts on the store.
func partBytes(t *testing.T, store *memblob.Store) (n int64, parts int) {
	t.Helper()
	infos, err := store.List(context.Background(), layout.XLAKernelPartsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range infos {
		n += in.Size
	}
	return n, len(infos)
}

// recordSet returns the records of a kernel cache file.
func recordSet(t *testing.T, b []byte) map[string]bool {
	t.Helper()
	recs, err := protoRecords(b)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, r := range recs {
		out[string(r)] = true
	}
	return out
}

// Issue 20 item 19: N jobs, each a fresh host that pulls the kernel
// cache, extends it and pushes it, stored 1+2+…+N file sizes of parts (8
// jobs: 288 MiB for a 64 MiB file). The parts must stay within twice the
// file.
func TestKernelPartsGrowLinearly(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	key := sign.NewHMAC([]byte("team"))
	const jobs, perJob, recSize = 8, 16, 16 << 10
	for j := range jobs {
		dir := t.TempDir()
		m := NewMirror(store, MirrorOptions{Dir: dir, Kernels: true, SigningKey: key})
		if _, err := m.Pull(ctx); err != nil {
			t.Fatalf("job %d pull: %v", j, err)
		}
		kf := filepath.Join(dir, KernelFile)
		local, _ := os.ReadFile(kf)
		writeLocal(t, kf, append(local, jobKernels(j, perJob, recSize)...))
		if _, err := m.Push(ctx); err != nil {
			t.Fatalf("job %d push: %v", j, err)
		}
	}
	// A fresh host gets every kernel of every job.
	dir := t.TempDir()
	if _, err := NewMirror(store, MirrorOptions{Dir: dir, Kernels: true, SigningKey: key}).Pull(ctx); err != nil {
		t.Fatal(err)
	}
	final, err := os.ReadFile(filepath.Join(dir, KernelFile))
	if err != nil {
		t.Fatal(err)
	}
	got := recordSet(t, final)
	for j := range jobs {
		for r := range recordSet(t, jobKernels(j, perJob, recSize)) {
			if !got[r] {
				t.Fatalf("job %d's kernels missing from a fresh host's file", j)
			}
		}
	}
	n, parts := partBytes(t, store)
	t.Logf("%d jobs: %d parts of %d bytes in all for a %d-byte kernel cache file (%.2fx)", jobs, parts, n, len(final), float64(n)/float64(len(final)))
	if n > 2*int64(len(final))+int64(parts)*(rawHeaderLen+32) {
		t.Errorf("%d bytes of parts for a %d-byte file: more than twice it", n, len(final))
	}
}

// legacyBucket fills store as versions before deltas did: in each of
// rounds, concurrent jobs start from the file of the round before, add
// their own kernels and push their whole file as a part. It returns the
// union of every part (with concurrent 1: the last job's file).
func legacyBucket(t *testing.T, store *memblob.Store, key *sign.Keys, rounds, concurrent, perJob, recSize int) []byte {
	t.Helper()
	var union []byte
	for r := range rounds {
		var added []byte
		for c := range concurrent {
			own := jobKernels(r*concurrent+c, perJob, recSize)
			file := append(bytes.Clone(union), own...)
			added = append(added, own...)
			obj := layout.XLAKernelPartObject(sha256.Sum256(file))
			if err := store.PutIfAbsent(context.Background(), obj, Seal(obj, file, key)); err != nil {
				t.Fatal(err)
			}
		}
		union = append(union, added...)
	}
	return union
}

// Issue 20 item 19: a pull held every part in memory at once (680–790 MB
// RSS on a bucket of 288 MiB of parts). It must stream them: what it
// allocates stays far below the parts' and the file's size.
func TestKernelPullMemory(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	key := sign.NewHMAC([]byte("team"))
	const jobs, perJob, recSize = 8, 16, 64 << 10 // 8 MiB file, 36 MiB of parts
	want := legacyBucket(t, store, key, jobs, 1, perJob, recSize)
	n, _ := partBytes(t, store)
	dir := t.TempDir()
	m := NewMirror(store, MirrorOptions{Dir: dir, Kernels: true, SigningKey: key})
	var st MirrorStats
	var err error
	alloc := memtest.Allocated(func() { st, err = m.Pull(ctx) })
	if err != nil || st.Pulled != jobs {
		t.Fatalf("pull: %+v %v", st, err)
	}
	got, err := os.ReadFile(filepath.Join(dir, KernelFile))
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("pulled kernel file of %d bytes (%v), want the %d-byte file", len(got), err, len(want))
	}
	t.Logf("pull of %d parts (%d bytes) into a %d-byte file allocated %d bytes", jobs, n, len(want), alloc)
	if limit := uint64(len(want)) / 4; alloc > limit {
		t.Errorf("pull allocated %d bytes, more than %d: it holds parts in memory", alloc, limit)
	}
}

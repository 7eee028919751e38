package rawfiles

import (
	"bytes"
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
)

// oldPull merges every part the way versions before deltas did (all
// parts fetched, then MergeKernelCaches): what an old reader makes of a
// bucket this version wrote.
// The part skip is left out (refused, as an old reader refuses it).
func oldPull(t *testing.T, m *Mirror, key *sign.Keys, skip string) []byte {
	t.Helper()
	ctx := context.Background()
	infos, err := m.objs.List(ctx, layout.XLAKernelPartsPrefix)
	if err != nil {
		t.Fatal(err)
	}
	var parts [][]byte
	for _, in := range infos {
		if in.Name == skip {
			continue
		}
		data, err := m.objs.Get(ctx, in.Name)
		if err != nil {
			t.Fatal(err)
		}
		p, err := Unseal(in.Name, data, key)
		if err != nil {
			t.Fatalf("an old reader refuses %s: %v", in.Name, err)
		}
		if err := verifyKernelPart(in.Name, p); err != nil {
			t.Fatalf("an old writer would replace %s: %v", in.Name, err)
		}
		parts = append(parts, p)
	}
	merged, _, err := MergeKernelCaches(nil, parts)
	if err != nil {
		t.Fatal(err)
	}
	return merged
}

// A writer on a bucket old versions filled with whole-file parts (rounds
// of concurrent jobs, so that no one part holds the others) compacts it: one merged part, and the superseded parts deleted once the
// merged one is older than the grace, never before. A reader of either
// version gets every kernel at every step.
func TestKernelPartsCompact(t *testing.T) {
	ctx := context.Background()
	store := newMem()
	key := sign.NewHMAC([]byte("team"))
	const rounds, concurrent, perJob, recSize = 4, 3, 8, 4 << 10
	const jobs = rounds * concurrent
	legacy := legacyBucket(t, store, key, rounds, concurrent, perJob, recSize)
	before, partsBefore := partBytes(t, store)
	// A part no host can verify that claims every record must not get
	// the verified parts deleted.
	forged := append(bytes.Clone(legacy), jobKernels(99, 1, 16)...)
	fobj := layout.XLAKernelPartObject(sha256.Sum256(forged))
	store.PutRaw(fobj, Seal(fobj, forged, sign.NewHMAC([]byte("other key"))))

	const grace = 10 * time.Minute
	now := time.Now()
	dir := t.TempDir()
	m := NewMirror(store, MirrorOptions{Dir: dir, Kernels: true, SigningKey: key, CompactGrace: grace})
	m.clock = func() time.Time { return now }
	kf := filepath.Join(dir, KernelFile)
	job := func(j int) MirrorStats {
		t.Helper()
		if _, err := m.Pull(ctx); err == nil {
			t.Fatal("the forged part was not refused")
		}
		local, _ := os.ReadFile(kf)
		writeLocal(t, kf, append(local, jobKernels(j, perJob, recSize)...))
		st, err := m.Push(ctx)
		if err != nil {
			t.Fatalf("job %d push: %v", j, err)
		}
		return st
	}
	check := func(when string) {
		t.Helper()
		want, _ := os.ReadFile(kf)
		wantSet := recordSet(t, want)
		c := NewMirror(store, MirrorOptions{Dir: t.TempDir(), Kernels: true, SigningKey: key})
		if _, err := c.Pull(ctx); err == nil {
			t.Fatal("the forged part was not refused")
		}
		got, _ := os.ReadFile(filepath.Join(c.opts.Dir, KernelFile))
		old := oldPull(t, NewMirror(store, MirrorOptions{}), key, fobj)
		for name, b := range map[string][]byte{"this version": got, "an old version": old} {
			gs := recordSet(t, b)
			if len(gs) != len(wantSet) {
				t.Fatalf("%s: a fresh host of %s has %d kernels, want %d", when, name, len(gs), len(wantSet))
			}
			for r := range wantSet {
				if !gs[r] {
					t.Fatalf("%s: a fresh host of %s lacks a kernel", when, name)
				}
			}
		}
	}
	st := job(jobs)
	if st.Pushed != 1 || st.Compacted != 1 || st.Removed != 0 {
		t.Fatalf("first push on the old bucket: %+v, want a delta and a merged part, nothing removed", st)
	}
	check("after compacting")
	// Within the grace, the parts readers may have listed stay.
	now = now.Add(grace / 2)
	if st := job(jobs + 1); st.Removed != 0 {
		t.Fatalf("a push within the grace removed %d parts", st.Removed)
	}
	now = now.Add(grace)
	st = job(jobs + 2)
	if st.Removed != partsBefore+1 {
		t.Fatalf("a push after the grace: %+v, want the %d superseded parts removed", st, partsBefore+1)
	}
	if _, err := store.Stat(ctx, fobj); err != nil {
		t.Fatalf("the part no host here can verify was deleted: %v", err)
	}
	check("after removing")
	store.Delete(ctx, fobj) // not this writer's: left out of the sizes
	after, partsAfter := partBytes(t, store)
	final, _ := os.ReadFile(kf)
	t.Logf("old bucket: %d parts, %d bytes for a %d-byte file; compacted: %d parts, %d bytes for a %d-byte file",
		partsBefore, before, len(legacy), partsAfter, after, len(final))
	if after > 2*int64(len(final))+int64(partsAfter)*(rawHeaderLen+32) {
		t.Errorf("%d bytes of parts after compaction for a %d-byte file", after, len(final))
	}
}

// Two parts with the same records (in another order, so another name):
// of two writers removing at once, the one order makes one of them stay.
func TestSupersedesIsStrict(t *testing.T) {
	a := &partIndex{sums: map[[32]byte]int64{{1}: 1, {2}: 1}}
	b := &partIndex{sums: map[[32]byte]int64{{1}: 1, {2}: 1}}
	small := &partIndex{sums: map[[32]byte]int64{{1}: 1}}
	other := &partIndex{sums: map[[32]byte]int64{{3}: 1}}
	tests := []struct {
		name string
		an   string
		a    *partIndex
		bn   string
		b    *partIndex
		want bool
	}{
		{"larger holds smaller", "p/z", a, "p/a", small, true},
		{"smaller never holds larger", "p/a", small, "p/z", a, false},
		{"same records: smaller name stays", "p/a", a, "p/b", b, true},
		{"same records: greater name goes", "p/b", b, "p/a", a, false},
		{"itself", "p/a", a, "p/a", a, false},
		{"disjoint", "p/a", a, "p/b", other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := supersedes(tt.an, tt.a, tt.bn, tt.b); got != tt.want {
				t.Fatalf("supersedes = %v, want %v", got, tt.want)
			}
		})
	}
}

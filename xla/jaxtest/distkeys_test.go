package jaxtest_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
)

// TestDistributedJobKeys is issue 21's test 2: a real two-process JAX job
// on loopback (jax.distributed, coordinator on 127.0.0.1, process_index 0
// and 1, one jit over a mesh spanning both processes' CPU devices) under
// `xlacache exec`, for each subcache choice and each jaxlib. The keys are
// JAX's own (the keys it logs a hit or miss for, and the hash of each of
// their parts from its cache_key debug log), never recomputed here.
//
// Two "hosts": process 0 with one XLACACHE_DIR, process 1 with another
// (a different path, with a space), one versitygw bucket. Then the job
// again with the hosts swapped, so each process runs where the other ran:
//   - within a run, the two processes' keys agree in every part but the
//     device topology (below);
//   - each process computes the same key on either host, whatever the
//     directory's path: JAX hashes XLA_FLAGS and the compile options, and
//     both name paths under the directory (the kernel cache file; the
//     autotune directory before jax 0.11);
//   - on the second run process 0 hits, on the host it never ran on,
//     through the bucket.
//
// XLA:CPU's topology lists only the process's own devices
// (CpuTopologyProto), so on CPU JAX's "accelerator_config" part, and with
// it the key, differs between processes 0 and 1 whatever the environment;
// JAX writes entries from process 0 only, so process 1 of a CPU job never
// hits. Where its key equals process 0's (GPU, where the topology is the
// job's), it must hit too; the test checks that whenever it is so.
//
// And one host: both processes on one directory, LOCAL_RANK 0 and 1.
func TestDistributedJobKeys(t *testing.T) {
	bucket := startBucket(t)
	for _, jl := range jaxlibs {
		for _, sub := range subcacheChoices {
			t.Run(jl.version+"/two-hosts/"+strings.ReplaceAll(sub, ",", "+"), func(t *testing.T) {
				t.Parallel()
				py := testneed.PeerPython(t, jl.list)
				base := t.TempDir()
				a, b := filepath.Join(base, "host-a", "cache"), filepath.Join(base, "node b", "local", "xlacache")
				j := distJob{py: py, bin: xlacacheBin(t), sub: sub, shared: bucket(strings.ReplaceAll(t.Name(), "/", "-"))}
				j.dirs = [2]string{a, b}
				r1, _, err := runDist(t, j)
				if err != nil {
					t.Fatalf("run 1: %v", err)
				}
				j.dirs = [2]string{b, a}
				r2, runs2, err := runDist(t, j)
				if err != nil {
					t.Fatalf("run 2 (hosts swapped): %v", err)
				}
				checkDistKeys(t, r1, r2, runs2)
			})
		}
		t.Run(jl.version+"/one-host/all", func(t *testing.T) {
			t.Parallel()
			py := testneed.PeerPython(t, jl.list)
			dir := filepath.Join(t.TempDir(), "cache")
			j := distJob{py: py, bin: xlacacheBin(t), sub: "all", dirs: [2]string{dir, dir}, sameHost: true}
			r1, _, err := runDist(t, j)
			if err != nil {
				t.Fatalf("run 1: %v", err)
			}
			r2, runs2, err := runDist(t, j)
			if err != nil {
				t.Fatalf("run 2: %v", err)
			}
			checkDistKeys(t, r1, r2, runs2)
		})
	}
}

// checkDistKeys checks two runs of one job (process i of r2 may run on
// the other host).
func checkDistKeys(t *testing.T, r1, r2 [2]distResult, runs2 [2]run) {
	t.Helper()
	var k1, k2 [2]string
	var hit1, hit2 [2]bool
	for i := range 2 {
		var err error
		if k1[i], hit1[i], err = r1[i].key(); err != nil {
			t.Fatalf("run 1: %v", err)
		}
		if k2[i], hit2[i], err = r2[i].key(); err != nil {
			t.Fatalf("run 2: %v", err)
		}
	}
	for n, r := range [][2]distResult{r1, r2} {
		if d := partsDiffer(r[0], r[1]); len(slices.DeleteFunc(slices.Clone(d), func(p string) bool { return p == "accelerator_config" })) > 0 {
			t.Errorf("run %d: the keys of processes 0 and 1 differ in %v (more than XLA:CPU's per-process topology)\n%s\n%s",
				n+1, d, k1[0], k1[1])
		}
	}
	if hit1[0] {
		t.Fatalf("run 1 hit (%s): the cache was not cold, the test proves nothing", k1[0])
	}
	for i := range 2 {
		if k1[i] != k2[i] {
			t.Errorf("process %d computed %s on run 1 and %s on run 2 (in another directory): parts %v differ",
				i, k1[i], k2[i], partsDiffer(r1[i], r2[i]))
		}
	}
	if !hit2[0] {
		t.Errorf("run 2: process 0 missed %s\nstderr: %s", k2[0], tail(runs2[0].stderr, 3000))
	}
	if k2[1] == k2[0] && !hit2[1] {
		t.Errorf("run 2: process 1 has process 0's key %s and missed", k2[1])
	}
	t.Logf("keys: process 0 %s (run 2 hit %v), process 1 %s (hit %v)%s", k2[0], hit2[0], k2[1], hit2[1],
		map[bool]string{true: "", false: fmt.Sprintf("; they differ in %v", partsDiffer(r2[0], r2[1]))}[k2[0] == k2[1]])
}

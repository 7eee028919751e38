package jaxtest_test

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

// A job is several processes started together, as a launcher starts the
// processes of one job step: each gets its own environment and command,
// and they run at once (a jax.distributed job cannot start its processes
// one by one).

// pairMu makes taking several slots at once atomic: two jobs each holding
// one slot and waiting for a second would wait for ever.
var pairMu sync.Mutex

// runJob runs n processes at once, process i with the environment and
// command proc(i) returns, and returns their runs. When one fails, the
// others are stopped: a jax.distributed process whose peer died would
// otherwise wait for it until its initialization timeout.
func runJob(t *testing.T, n int, proc func(i int) (env []string, argv []string)) []run {
	t.Helper()
	// A job larger than the slots takes them all and runs anyway: its
	// processes must overlap.
	take := min(n, cap(slots))
	pairMu.Lock()
	for range take {
		slots <- struct{}{}
	}
	pairMu.Unlock()
	defer func() {
		for range take {
			<-slots
		}
	}()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	runs := make([]run, n)
	var wg sync.WaitGroup
	for i := range n {
		env, argv := proc(i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			runs[i] = runCmdCtx(t, ctx, env, argv[0], argv[1:]...)
			if runs[i].err != nil || runs[i].exitCode != 0 {
				cancel()
			}
		}()
	}
	wg.Wait()
	return runs
}

// freeAddr is a loopback address with a port nobody listened on a moment
// ago, for a jax.distributed coordinator. Another process may take the
// port in between; runDist retries on that.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return addr
}

// distResult is what testdata/dist.py prints.
type distResult struct {
	JAX          string         `json:"jax"`
	ProcessIndex int            `json:"process_index"`
	ProcessCount int            `json:"process_count"`
	Devices      int            `json:"devices"`
	Sum          int64          `json:"sum"`
	Max          int64          `json:"max"`
	Events       map[string]int `json:"events"`
	Keys         []struct {
		Module string `json:"module"`
		Key    string `json:"key"`
		Hit    bool   `json:"hit"`
	} `json:"keys"`
	// Parts are the hash of each part of each key JAX computed, by name
	// ("computation", "XLA flags", "compile_options", "accelerator_config"…).
	Parts []map[string]string `json:"parts"`
}

// The jit of dist.py over two devices: y = 3x+1 for x in arange(8),
// sum(y*y) and max(y).
const (
	wantDistSum = 1436
	wantDistMax = 22
)

// key is the one key JAX computed for dist.py's jit, and whether it hit.
func (d distResult) key() (string, bool, error) {
	if len(d.Keys) != 1 {
		return "", false, fmt.Errorf("process %d: JAX computed %d persistent-cache keys, want 1 (%v)", d.ProcessIndex, len(d.Keys), d.Keys)
	}
	return d.Keys[0].Key, d.Keys[0].Hit, nil
}

// partsDiffer names the parts of two processes' keys that differ.
func partsDiffer(a, b distResult) []string {
	if len(a.Parts) == 0 || len(b.Parts) == 0 {
		return []string{"(no parts logged)"}
	}
	pa, pb := a.Parts[len(a.Parts)-1], b.Parts[len(b.Parts)-1]
	var out []string
	for name, h := range pa {
		if pb[name] != h {
			out = append(out, name)
		}
	}
	for name := range pb {
		if _, ok := pa[name]; !ok {
			out = append(out, name)
		}
	}
	return out
}

// distJob describes one run of dist.py as a two-process jax.distributed
// job under `xlacache exec`.
type distJob struct {
	py, bin  string
	sub      string    // XLACACHE_ENABLE_XLA_CACHES
	dirs     [2]string // process i's XLACACHE_DIR
	shared   []string  // XLACACHE_SHARED_URL and the store's credentials, or nil
	sameHost bool      // both processes on one host (LOCAL_RANK 0 and 1)
}

// runDist runs the job and returns each process's result by index.
func runDist(t *testing.T, j distJob) ([2]distResult, [2]run, error) {
	t.Helper()
	var res [2]distResult
	var runs []run
	for attempt := 0; ; attempt++ {
		coord := freeAddr(t)
		runs = runJob(t, 2, func(i int) ([]string, []string) {
			localRank := "0"
			if j.sameHost {
				localRank = fmt.Sprint(i)
			}
			env := cleanEnv(append([]string{
				"XLACACHE_DIR=" + j.dirs[i],
				"XLACACHE_ENABLE_XLA_CACHES=" + j.sub,
				"XLACACHE_PROCESS_INDEX=" + fmt.Sprint(i),
				"XLACACHE_MIN_COMPILE_TIME_SECS=0",
				"XLACACHE_MIN_ENTRY_SIZE_BYTES=0",
				"LOCAL_RANK=" + localRank,
			}, j.shared...)...)
			return env, onHost(t, j.dirs[i], []string{j.bin, "exec", "--", j.py, testdata(t, "dist.py"), coord, fmt.Sprint(i), "2"})
		})
		inUse := false
		for _, r := range runs {
			inUse = inUse || strings.Contains(r.stderr, "ddress already in use")
		}
		if !inUse || attempt == 2 {
			break
		}
		t.Logf("coordinator port %s taken meanwhile; again", coord)
	}
	for i, r := range runs {
		if r.err != nil || r.exitCode != 0 {
			return res, [2]run{runs[0], runs[1]}, fmt.Errorf("process %d: exit %d %v\nstderr: %s", i, r.exitCode, r.err, tail(r.stderr, 4000))
		}
		if err := line(r.stdout, "JAXTEST_DIST", &res[i]); err != nil {
			return res, [2]run{runs[0], runs[1]}, fmt.Errorf("process %d: %v\nstdout: %s\nstderr: %s", i, err, tail(r.stdout, 2000), tail(r.stderr, 2000))
		}
		d := res[i]
		if d.ProcessIndex != i || d.ProcessCount != 2 || d.Devices != 2 || d.Sum != wantDistSum || d.Max != wantDistMax {
			return res, [2]run{runs[0], runs[1]}, fmt.Errorf("process %d: index %d of %d, %d devices, result %d %d; want %d of 2, 2 devices, %d %d",
				i, d.ProcessIndex, d.ProcessCount, d.Devices, d.Sum, d.Max, i, wantDistSum, wantDistMax)
		}
	}
	return res, [2]run{runs[0], runs[1]}, nil
}

// startBucket starts versitygw on loopback with one bucket and returns the
// environment a process needs for XLACACHE_SHARED_URL under prefix.
func startBucket(t testing.TB) func(prefix string) []string {
	t.Helper()
	srv := s3test.Start(t, "jaxtest")
	return func(prefix string) []string {
		return append(srv.Env(), "XLACACHE_SHARED_URL="+srv.SharedURL("jaxtest", prefix),
			"XLACACHE_SIGNING_KEY=jaxtest-signing-key-0123456789abcdef")
	}
}

// jaxEntries lists JAX's executable entries (<module>-<hash>-cache) in dir.
func jaxEntries(t *testing.T, dir string) []string {
	t.Helper()
	des, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var out []string
	for _, de := range des {
		if strings.HasSuffix(de.Name(), "-cache") && de.Type().IsRegular() {
			out = append(out, filepath.Join(dir, de.Name()))
		}
	}
	return out
}

// Hosts on one machine. exec gives JAX the cache directory through a link
// at /tmp/xlacache-<uid>/jax-<hash>, one path for every host of a job,
// each host's /tmp its own (jobrun/jaxview.go). Two "hosts" on one
// machine would share that /tmp; onHost gives each its own, as real hosts
// have: the process runs in a private mount namespace with the host's own
// directory bound over /tmp/xlacache-<uid>. A host is named by its cache
// directory: its link directory is "jaxlink" beside it.

var (
	nsOnce sync.Once
	nsErr  error
)

// viewDir is /tmp/xlacache-<uid>, where exec keeps JAX's link.
func viewDir() string { return filepath.Join("/tmp", "xlacache-"+strconv.Itoa(os.Getuid())) }

// onHost returns argv run on the host whose cache directory is dir.
func onHost(t *testing.T, dir string, argv []string) []string {
	t.Helper()
	nsOnce.Do(func() {
		if err := os.MkdirAll(viewDir(), 0o700); err != nil {
			nsErr = err
			return
		}
		out, err := exec.Command("unshare", "--mount", "--propagation", "private", "true").CombinedOutput()
		if err != nil {
			nsErr = fmt.Errorf("unshare --mount: %v %s", err, out)
		}
	})
	if nsErr != nil {
		t.Logf("%v", nsErr)
		testneed.Missing(t, "system", "a private mount namespace per simulated host (unshare --mount: root or CAP_SYS_ADMIN)", "run the tests as root, or in a container with CAP_SYS_ADMIN")
	}
	own := filepath.Join(filepath.Dir(dir), "jaxlink")
	if err := os.MkdirAll(own, 0o700); err != nil {
		t.Fatal(err)
	}
	return append([]string{"unshare", "--mount", "--propagation", "private", "sh", "-c", `mount --bind "$0" "$1" && shift && exec "$@"`, own, viewDir()}, argv...)
}

package jaxtest_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/internal/testneed"
)

// xc runs the xlacache CLI on dir with env, in a slot.
func xc(t *testing.T, env []string, dir string, args ...string) run {
	t.Helper()
	return runCmd(t, env, xlacacheBin(t), append([]string{"--dir", dir}, args...)...)
}

// mustXC is xc that fails the test on a non-zero exit.
func mustXC(t *testing.T, env []string, dir string, args ...string) string {
	t.Helper()
	r := xc(t, env, dir, args...)
	if r.err != nil || r.exitCode != 0 {
		t.Fatalf("xlacache %v: exit %d %v\n%s%s", args, r.exitCode, r.err, r.stdout, tail(r.stderr, 2000))
	}
	return r.stdout + r.stderr
}

// TestJAXWrittenDirectories is issue 21's test 5: directories that real
// JAX wrote (under exec; with and without JAX's own size bound,
// jax_compilation_cache_max_size, which needs the filelock package) are
// read by `xlacache stats`, `ls`, `verify`, `explain` and `prune`, carried
// by `export`/`import` and `sync push`/`pull` so that JAX hits every
// entry in the copy; and `prune` run again and again while a real JAX
// process writes entries deletes none of them and does not fail the job.
func TestJAXWrittenDirectories(t *testing.T) {
	bucket := startBucket(t)
	for _, jl := range jaxlibs {
		for _, bound := range []string{"", "1GB"} {
			if bound != "" && !jl.filelock {
				continue
			}
			name := jl.version + "/unbounded"
			if bound != "" {
				name = jl.version + "/jax-max-size"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				py := testneed.PeerPython(t, jl.list)
				if bound != "" && runCmd(t, cleanEnv(), py, "-c", "import filelock").exitCode != 0 {
					// Without filelock JAX turns its cache off for a bound.
					testneed.Missing(t, testneed.GroupPeers, "the filelock package in "+jl.list+" (JAX's size bound needs it)", testneed.PeersCommand+" "+jl.list)
				}
				bin := xlacacheBin(t)
				base := t.TempDir()
				dir := filepath.Join(base, "jax")
				var extra []string
				if bound != "" {
					extra = append(extra, "JAX_COMPILATION_CACHE_MAX_SIZE=1000000000")
				}
				train := func(dir string, args ...string) trainResult {
					t.Helper()
					r := runCmd(t, execEnv(dir, extra...), bin, append(append([]string{"exec", "--", py, testdata(t, "train.py")}, trainArgs...), args...)...)
					res, err := parseTrain(r)
					if err != nil {
						t.Fatalf("train.py on %s: %v", dir, err)
					}
					return res
				}
				cold := train(dir)
				written := jaxEntries(t, dir)
				if _, m := cold.hits(); m == 0 || len(written) != m {
					t.Fatalf("JAX missed %d times and wrote %d entries", m, len(written))
				}
				env := cleanEnv()
				out := mustXC(t, env, dir, "stats")
				if !regexp.MustCompile(fmt.Sprintf(`executables\s+%d entries`, len(written))).MatchString(out) {
					t.Errorf("stats does not count %d JAX entries:\n%s", len(written), out)
				}
				out = mustXC(t, env, dir, "ls")
				for _, k := range cold.Keys {
					if !strings.Contains(out, k.Key) {
						t.Errorf("ls does not list %s:\n%s", k.Key, out)
					}
				}
				out = mustXC(t, env, dir, "verify")
				if !strings.Contains(out, fmt.Sprintf("%d ok, 0 bad", len(written))) {
					t.Errorf("verify: %s", out)
				}
				key := cold.keyOfModule("jit_train_step")
				if out = mustXC(t, env, dir, "explain", key); !strings.Contains(out, key+" is stored") {
					t.Errorf("explain %s: %s", key, out)
				}
				missing := key[:len(key)-4] + "0000"
				if r := xc(t, env, dir, "explain", missing); !strings.Contains(r.stdout+r.stderr, "jit_train_step") {
					t.Errorf("explain of a key JAX never wrote does not name the module's entries: %s%s", r.stdout, r.stderr)
				}
				out = mustXC(t, env, dir, "prune", "--max-size", "1GB")
				if got := len(jaxEntries(t, dir)); got != len(written) {
					t.Errorf("prune --max-size 1GB removed entries (%d of %d left): %s", got, len(written), out)
				}

				// export/import and sync push/pull: JAX hits every entry in
				// the copy, put back at the directory's own path (a copy at
				// another path is test 2's and 3's business: through the
				// bucket, under exec).
				archive := filepath.Join(base, "cache.tar.zst")
				mustXC(t, env, dir, "export", archive)
				shared := bucket(strings.ReplaceAll(t.Name(), "/", "-"))
				mustXC(t, cleanEnv(shared...), dir, "sync", "push")
				for _, how := range []string{"import", "sync pull"} {
					if err := os.RemoveAll(dir); err != nil {
						t.Fatal(err)
					}
					if how == "import" {
						mustXC(t, env, dir, "import", archive)
					} else {
						mustXC(t, cleanEnv(shared...), dir, "sync", "pull")
					}
					if got := len(jaxEntries(t, dir)); got != len(written) {
						t.Errorf("after %s: %d JAX entries, want %d", how, got, len(written))
						continue
					}
					warm := train(dir)
					if h, m := warm.hits(); m != 0 || h != len(cold.Keys) {
						t.Errorf("JAX after %s: %d hits, %d misses, want %d and 0", how, h, m, len(cold.Keys))
					}
					if d := warm.same(cold); d != "" {
						t.Errorf("after %s: results differ: %s", how, d)
					}
				}

				// prune while JAX writes: a process writing one entry after
				// another, and prune run back to back until it exits.
				busy := filepath.Join(base, "busy")
				for _, maxSize := range []string{"1GB", "1"} {
					done := make(chan run, 1)
					go func() {
						done <- runCmd(t, execEnv(busy, extra...), bin, append(append([]string{"exec", "--", py, testdata(t, "train.py")}, trainArgs...), "--variants", "12")...)
					}()
					prunes, failed := 0, 0
					var jr run
				loop:
					for {
						select {
						case jr = <-done:
							break loop
						default:
						}
						ctx, cancel := context.WithTimeout(context.Background(), processTimeout)
						c := exec.CommandContext(ctx, bin, "--dir", busy, "prune", "--max-size", maxSize)
						c.Env = env
						if out, err := c.CombinedOutput(); err != nil {
							if failed == 0 {
								t.Logf("prune --max-size %s failed while JAX wrote: %v\n%s", maxSize, err, out)
							}
							failed++
						}
						cancel()
						prunes++
					}
					res, err := parseTrain(jr)
					if err != nil {
						t.Fatalf("JAX writing while prune --max-size %s ran %d times: %v", maxSize, prunes, err)
					}
					_, m := res.hits()
					t.Logf("prune --max-size %s ran %d times (%d failed) while JAX wrote; JAX missed %d", maxSize, prunes, failed, m)
					if maxSize == "1GB" {
						if got := len(jaxEntries(t, busy)); got != m {
							t.Errorf("prune --max-size 1GB while JAX wrote: %d entries left of the %d JAX wrote", got, m)
						}
						if out := mustXC(t, env, busy, "verify"); !strings.Contains(out, fmt.Sprintf("%d ok, 0 bad", m)) {
							t.Errorf("verify after prune while JAX wrote: %s", out)
						}
					}
					if err := os.RemoveAll(busy); err != nil {
						t.Fatal(err)
					}
				}
			})
		}
	}
}

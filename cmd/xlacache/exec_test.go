package main

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
	"github.com/xlacache/xlacache/internal/testsupport/sharedtest"
	"github.com/xlacache/xlacache/xla"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// The test binary doubles as xlacache (testMainEnv set: it runs main) and
// as the job's program under exec (testProgEnv names its role), so exec is
// tested end to end with real processes.
const (
	testMainEnv = "XLACACHE_TEST_MAIN"
	testProgEnv = "XLACACHE_TEST_PROG"
	// testSyncEnv is a directory the program and the test use to meet:
	// "started" (the program runs), "go" (the test lets it continue).
	testSyncEnv = "XLACACHE_TEST_SYNC"
	// testExitEnv is the program's exit status.
	testExitEnv = "XLACACHE_TEST_EXIT"
	// testOutEnv is a directory where the program records its
	// environment, one JSON file per process.
	testOutEnv = "XLACACHE_TEST_OUT"
	// testBarrierEnv makes N programs wait for each other ("N:dir").
	testBarrierEnv = "XLACACHE_TEST_BARRIER"
	// testWaitPublishedEnv makes the writing program wait until the shared
	// tier holds everything it wrote: publishing while it runs.
	testWaitPublishedEnv = "XLACACHE_TEST_WAIT_PUBLISHED"
)

func TestMain(m *testing.M) {
	if os.Getenv(testMainEnv) == "1" {
		// The command exec runs is this binary again, as the program.
		os.Unsetenv(testMainEnv)
		main()
		return
	}
	if role := os.Getenv(testProgEnv); role != "" {
		os.Exit(testProgram(role))
	}
	os.Exit(m.Run())
}

// jobFiles are the files the writing program writes, in the formats JAX
// (compilation_cache.py, lru_cache.py: zstd or zlib of a 4-byte big-endian
// compile time and the executable, written in place) and XLA
// (autotuner_util.cc: one text proto per key, written to tmp/ and renamed;
// the kernel cache, a serialized proto) write them.
func jobFiles() (map[string][]byte, error) {
	files := map[string][]byte{}
	for i := 0; i < 3; i++ {
		for _, c := range []jaxcache.Codec{jaxcache.CodecZstd, jaxcache.CodecZlib} {
			exe := bytes.Repeat([]byte(fmt.Sprintf("executable %s %d;", c, i)), 200+i)
			b, err := jaxcache.Encode(c, time.Duration(i+1)*time.Second, exe)
			if err != nil {
				return nil, err
			}
			files[fmt.Sprintf("jit_%s_%d-%064x-cache", c, i, i+1)] = b
		}
	}
	for i := 0; i < 25; i++ {
		name := hex.EncodeToString([]byte(fmt.Sprintf("fusion-%03d", i)))
		files[xla.FlagAutotuneCacheDir+"/"+name+".textproto"] = []byte(fmt.Sprintf("version: 3\nresults {\n  device: \"sm_90\"\n  hlo: \"fusion.%d\"\n}\n", i))
	}
	return files, nil
}

// kernelCache is a kernel cache file: one length-delimited field per
// kernel (KernelCacheProto's map entries).
var kernelCache = []byte{0x0a, 0x05, 0x0a, 0x01, 'k', 0x12, 0x00}

func testProgram(role string) int {
	dir := os.Getenv(xla.EnvJAXCacheDir)
	sync := os.Getenv(testSyncEnv)
	if sync != "" {
		if err := os.WriteFile(filepath.Join(sync, "started"), nil, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 20
		}
	}
	if out := os.Getenv(testOutEnv); out != "" {
		rec := map[string]string{}
		for _, k := range []string{xla.EnvJAXXLACaches, xla.EnvXLAFlags, xla.EnvJAXCacheDir, "XLACACHE_PROCESS_INDEX"} {
			rec[k] = os.Getenv(k)
		}
		b, _ := json.Marshal(rec)
		if err := os.WriteFile(filepath.Join(out, strconv.Itoa(os.Getpid())+".json"), b, 0o600); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 21
		}
	}
	if spec := os.Getenv(testBarrierEnv); spec != "" {
		n, bdir, _ := strings.Cut(spec, ":")
		want, _ := strconv.Atoi(n)
		os.WriteFile(filepath.Join(bdir, strconv.Itoa(os.Getpid())), nil, 0o600)
		if !waitFor(60*time.Second, func() bool { ents, _ := os.ReadDir(bdir); return len(ents) >= want }) {
			fmt.Fprintln(os.Stderr, "barrier: the other processes never came")
			return 22
		}
	}
	files, err := jobFiles()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 23
	}
	switch role {
	case "write":
		if sync != "" && !waitFor(60*time.Second, func() bool { _, err := os.Stat(filepath.Join(sync, "go")); return err == nil }) {
			return 24
		}
		if err := writeJobFiles(dir, files); err != nil {
			fmt.Fprintln(os.Stderr, "write:", err)
			return 25
		}
		if os.Getenv(testWaitPublishedEnv) == "1" && !waitPublished(files) {
			fmt.Fprintln(os.Stderr, "write: files not published while running")
			return 26
		}
	case "check":
		for rel, want := range files {
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil || !bytes.Equal(got, want) {
				fmt.Fprintf(os.Stderr, "check: %s missing or different before the command started (%v)\n", rel, err)
				return 9
			}
		}
		if got, err := os.ReadFile(filepath.Join(dir, xla.FlagKernelCacheFile)); err != nil || !bytes.Equal(got, kernelCache) {
			fmt.Fprintf(os.Stderr, "check: kernel cache %x (%v)\n", got, err)
			return 9
		}
	case "sleep":
		time.Sleep(60 * time.Second) // killed by the test's signal long before
	}
	n, _ := strconv.Atoi(os.Getenv(testExitEnv))
	return n
}

// writeJobFiles writes files as JAX and XLA do: JAX entries in place, in
// two writes; autotune results through tmp/ and a rename; the kernel cache
// through a temporary file and a rename.
func writeJobFiles(dir string, files map[string][]byte) error {
	tmp := filepath.Join(dir, xla.FlagAutotuneCacheDir, "tmp")
	if err := os.MkdirAll(tmp, 0o700); err != nil {
		return err
	}
	for rel, data := range files {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if strings.HasPrefix(rel, xla.FlagAutotuneCacheDir+"/") {
			t := filepath.Join(tmp, "tmp_per_fusion_cache_"+filepath.Base(rel)+"_1.textproto")
			if err := os.WriteFile(t, data, 0o600); err != nil {
				return err
			}
			if err := os.Rename(t, p); err != nil {
				return err
			}
			continue
		}
		f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
		if err != nil {
			return err
		}
		half := len(data) / 2
		if _, err := f.Write(data[:half]); err != nil {
			return err
		}
		f.Sync()
		if _, err := f.Write(data[half:]); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	k := filepath.Join(dir, xla.FlagKernelCacheFile+".tmp.1")
	if err := os.WriteFile(k, kernelCache, 0o600); err != nil {
		return err
	}
	return os.Rename(k, filepath.Join(dir, xla.FlagKernelCacheFile))
}

// waitPublished polls the shared tier until its packs hold every file.
func waitPublished(files map[string][]byte) bool {
	store, err := xlacache.OpenShared(os.Getenv("XLACACHE_SHARED_URL"), nil)
	if err != nil || store == nil {
		return false
	}
	defer store.Close()
	return waitFor(60*time.Second, func() bool {
		ctx := context.Background()
		objs, err := store.List(ctx, hostfill.Prefix)
		if err != nil {
			return false
		}
		have := map[string]bool{}
		for _, o := range objs {
			if !strings.HasSuffix(o.Name, ".index") {
				continue
			}
			b, err := store.Get(ctx, o.Name)
			if err != nil {
				continue
			}
			recs, err := hostfill.DecodeIndex(b)
			if err != nil {
				continue
			}
			for _, r := range recs {
				have[r.Name] = true
			}
		}
		for rel := range files {
			if !have[rel] {
				return false
			}
		}
		return true
	})
}

// parseProm parses a metrics file with the Prometheus text parser.
func parseProm(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return parsePrometheus(t, string(b))
}

// waitFor polls cond until it holds or d passes.
func waitFor(d time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(20 * time.Millisecond)
	}
	return true
}

// execEnv is a clean environment for an exec process on a host with dir.
func execEnv(srv sharedtest.Server, dir string, extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(k, "XLACACHE_") || strings.HasPrefix(k, "JAX_") || strings.HasPrefix(k, "AWS_") || k == "XLA_FLAGS" || k == "STORAGE_EMULATOR_HOST" {
			continue
		}
		skip := false
		for _, v := range append(append([]string{}, hostfill.LocalRankVars...), "OMPI_COMM_WORLD_RANK", "PMI_RANK", "SLURM_PROCID", "RANK") {
			skip = skip || k == v
		}
		if !skip {
			env = append(env, kv)
		}
	}
	// Every compile is stored: whether a tuned MLP compiles in more than
	// the default threshold (1 s) depends on the machine and its load
	// (0.6-1.1 s), and must not decide a test. extra may set another.
	env = append(env, testMainEnv+"=1", "XLACACHE_DIR="+dir, "XLACACHE_ENABLE_XLA_CACHES=all", "XLACACHE_WAIT_SECS=60", "XLACACHE_MIN_COMPILE_TIME_SECS=0")
	if srv != nil {
		env = append(env, srv.Env()...)
		env = append(env, "XLACACHE_SHARED_URL="+srv.SharedURL("bkt", "job"))
	}
	return append(env, extra...)
}

// xcCommand is `xlacache -v exec -- <this test binary>` with env.
func xcCommand(env []string) (*exec.Cmd, *bytes.Buffer) {
	cmd := exec.Command(os.Args[0], "-v", "exec", "--", os.Args[0])
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	cmd.Stdout = &stderr
	return cmd, &stderr
}

func runXC(t *testing.T, env []string) (int, string) {
	t.Helper()
	cmd, out := xcCommand(env)
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// TestExecTwoHosts: host A's process 0 runs a program that writes JAX
// entries, autotune files and the kernel cache while it runs, and exec
// publishes them while it runs; host B's process 1 finds all of them in
// its own directory, verified and byte-identical, before its command
// starts; a forged object on the bucket never reaches B. It runs on an S3
// and a GCS server: the packs and their indexes are the same objects on
// both.
func TestExecTwoHosts(t *testing.T) {
	sharedtest.Run(t, testExecTwoHosts)
}

func testExecTwoHosts(t *testing.T, k sharedtest.Kind) {
	srv := k.Start(t, "bkt")
	hostA, hostB := t.TempDir(), t.TempDir()
	key := "XLACACHE_SIGNING_KEY=the job's key"
	// A JAX fixture directory on host A travels too.
	fixtures, _ := filepath.Glob("../../../shared/fixtures/jax-cache/unbounded/*-cache")
	for _, f := range fixtures {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		os.WriteFile(filepath.Join(hostA, filepath.Base(f)), b, 0o600)
	}
	promDir := t.TempDir()
	promA, promB := filepath.Join(promDir, "a.prom"), filepath.Join(promDir, "b.prom")
	code, out := runXC(t, execEnv(srv, hostA, key, "XLACACHE_PROCESS_INDEX=0", testProgEnv+"=write", testWaitPublishedEnv+"=1",
		"XLACACHE_METRICS_FILE="+promA))
	if code != 0 {
		t.Fatalf("host A: exit %d\n%s", code, out)
	}
	// A forged pack: a valid JAX entry signed with another key.
	srv.Setenv(t)
	store, err := xlacache.OpenShared(srv.SharedURL("bkt", "job"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	forged := func(rel string) {
		exe, _ := jaxcache.Encode(jaxcache.CodecZstd, time.Second, []byte("evil executable"))
		m, err := hostfill.Seal(rel, exe, sign.NewHMAC([]byte("attacker's key")))
		if err != nil {
			t.Fatal(err)
		}
		pack, index, err := hostfill.EncodePack([]hostfill.Member{m})
		if err != nil {
			t.Fatal(err)
		}
		pn, in := hostfill.ObjectNames(pack)
		if err := store.PutIfAbsent(context.Background(), pn, pack); err != nil {
			t.Fatal(err)
		}
		if err := store.PutIfAbsent(context.Background(), in, index); err != nil {
			t.Fatal(err)
		}
	}
	forgedName := fmt.Sprintf("jit_forged-%064x-cache", 99)
	forged(forgedName)
	code, out = runXC(t, execEnv(srv, hostB, key, "XLACACHE_PROCESS_INDEX=1", testProgEnv+"=check",
		"XLACACHE_METRICS_FILE="+promB))
	if code != 0 {
		t.Fatalf("host B: exit %d\n%s", code, out)
	}
	// exec's metrics for each host's job step: what A published is what B
	// filled, and the forged file was refused.
	famA, famB := parseProm(t, promA), parseProm(t, promB)
	published := promValue(famA, "xlacache_exec_published_files_total", "role", "writer")
	if published <= 0 || promValue(famA, "xlacache_exec_shared_requests_total", "role", "writer") <= 0 {
		t.Errorf("host A's metrics: published %v files", published)
	}
	if filled := promValue(famB, "xlacache_exec_fill_files_total", "role", "reader"); filled != published {
		t.Errorf("host B filled %v files, host A published %v", filled, published)
	}
	if refused := promValue(famB, "xlacache_exec_fill_refused_total", "role", "reader"); refused < 1 {
		t.Errorf("host B refused %v files, want the forged one", refused)
	}
	t.Logf("host B:\n%s", out)
	if _, err := os.Stat(filepath.Join(hostB, forgedName)); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the forged entry reached host B: %v", err)
	}
	if len(fixtures) == 0 {
		t.Log("no JAX fixtures found; skipped that part")
	}
	for _, f := range fixtures {
		a, _ := os.ReadFile(f)
		b, err := os.ReadFile(filepath.Join(hostB, filepath.Base(f)))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("fixture %s not byte-identical on host B (%v)", filepath.Base(f), err)
		}
	}
}

// TestExecEightProcessesOneFill: eight processes on one host start
// together; one fills the directory, the others wait for it and find
// everything; one is the host's autotune writer; all get the same
// XLA_FLAGS.
func TestExecEightProcessesOneFill(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	code, out := runXC(t, execEnv(srv, t.TempDir(), "XLACACHE_PROCESS_INDEX=0", testProgEnv+"=write"))
	if code != 0 {
		t.Fatalf("publishing host: exit %d\n%s", code, out)
	}
	host, barrier, rec := t.TempDir(), t.TempDir(), t.TempDir()
	const n = 8
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for i := 0; i < n; i++ {
		// Independent processes: no rank variables, each JAX's process 0.
		cmd, out := xcCommand(execEnv(srv, host, testProgEnv+"=check", testOutEnv+"="+rec, testBarrierEnv+"="+strconv.Itoa(n)+":"+barrier))
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	fills := 0
	for i, cmd := range cmds {
		err := cmd.Wait()
		if err != nil {
			t.Errorf("process %d: %v\n%s", i, err, outs[i])
		}
		for _, line := range strings.Split(outs[i].String(), "\n") {
			if strings.Contains(line, "filled the local directory") && !strings.Contains(line, " files=0 ") {
				fills++
			}
		}
	}
	if fills != 1 {
		t.Errorf("%d processes fetched files, want 1", fills)
	}
	ents, err := os.ReadDir(rec)
	if err != nil || len(ents) != n {
		t.Fatalf("%d records (%v)", len(ents), err)
	}
	writers := 0
	var flags string
	for i, e := range ents {
		b, _ := os.ReadFile(filepath.Join(rec, e.Name()))
		var r map[string]string
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		if r[xla.EnvJAXXLACaches] == "all" {
			writers++
		} else if r[xla.EnvJAXXLACaches] != xla.FlagKernelCacheFile {
			t.Errorf("%s=%q", xla.EnvJAXXLACaches, r[xla.EnvJAXXLACaches])
		}
		if i == 0 {
			flags = r[xla.EnvXLAFlags]
		} else if r[xla.EnvXLAFlags] != flags {
			t.Errorf("XLA_FLAGS differ: %q vs %q", r[xla.EnvXLAFlags], flags)
		}
	}
	if writers != 1 || !strings.Contains(flags, xla.ModeRead) {
		t.Errorf("%d autotune writers, XLA_FLAGS %q", writers, flags)
	}
}

// TestExecStoreStoppedMidRun: the shared tier goes away while the command
// runs; the command's exit status is exec's, unchanged.
func TestExecStoreStoppedMidRun(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	sync := t.TempDir()
	cmd, out := xcCommand(execEnv(srv, t.TempDir(), "XLACACHE_PROCESS_INDEX=0", testProgEnv+"=write", testSyncEnv+"="+sync, testExitEnv+"=7"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(60*time.Second, func() bool { _, err := os.Stat(filepath.Join(sync, "started")); return err == nil }) {
		cmd.Process.Kill()
		t.Fatalf("the command never started\n%s", out)
	}
	srv.Stop()
	os.WriteFile(filepath.Join(sync, "go"), nil, 0o600)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 7 {
		t.Errorf("exit %d, want 7\n%s", code, out)
	}
	t.Logf("exec's log:\n%s", out)
	if strings.Count(out.String(), "publishing to the shared tier failed") > 1 {
		t.Errorf("the failure was logged more than once:\n%s", out)
	}
}

// TestExecStatusAndSignals: the command's exit status passes through; a
// SIGTERM sent to exec reaches the command, whose death by it is 128+15.
func TestExecStatusAndSignals(t *testing.T) {
	host := t.TempDir()
	if code, out := runXC(t, execEnv(nil, host, testProgEnv+"=check-nothing", testExitEnv+"=3")); code != 3 {
		t.Errorf("exit %d, want 3\n%s", code, out)
	}
	sync := t.TempDir()
	cmd, out := xcCommand(execEnv(nil, host, testProgEnv+"=sleep", testSyncEnv+"="+sync))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !waitFor(60*time.Second, func() bool { _, err := os.Stat(filepath.Join(sync, "started")); return err == nil }) {
		cmd.Process.Kill()
		t.Fatalf("the command never started\n%s", out)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d\n%s", code, 128+int(syscall.SIGTERM), out)
	}
	// A command that does not exist: 127, as from a shell.
	c := exec.Command(os.Args[0], "exec", "--", "/nonexistent/program")
	c.Env = execEnv(nil, host)
	c.Run()
	if code := c.ProcessState.ExitCode(); code != 127 {
		t.Errorf("missing command: exit %d, want 127", code)
	}
	// A file that is not executable: 126, as from a shell.
	notExe := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notExe, []byte("#!/bin/sh\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c = exec.Command(os.Args[0], "exec", "--", notExe)
	c.Env = execEnv(nil, host)
	c.Run()
	if code := c.ProcessState.ExitCode(); code != 126 {
		t.Errorf("command not executable: exit %d, want 126", code)
	}
}

// TestExecBadConfigRunsCommand: a configuration exec cannot use (a bad
// XLACACHE_* value, a plugin file that is not there) is logged, naming
// it, and the command still runs, with its environment unchanged and its
// exit status passed through.
func TestExecBadConfigRunsCommand(t *testing.T) {
	for name, extra := range map[string][]string{
		"bad value":      {"XLACACHE_MAX_SIZE=banana"},
		"missing plugin": {"XLACACHE_XLA_PLUGIN=/nonexistent/pjrt_plugin.so"},
	} {
		t.Run(name, func(t *testing.T) {
			host := t.TempDir()
			env := append(execEnv(nil, host, testProgEnv+"=check-nothing", testExitEnv+"=5"), extra...)
			code, out := runXC(t, env)
			if code != 5 {
				t.Errorf("exit %d, want the command's 5\n%s", code, out)
			}
			if !strings.Contains(out, "running the command without the cache") || !strings.Contains(out, strings.SplitN(extra[0], "=", 2)[1]) {
				t.Errorf("want one line naming the bad input:\n%s", out)
			}
			if entries, _ := os.ReadDir(host); len(entries) > 0 {
				t.Errorf("the cache directory was used: %v", entries)
			}
		})
	}
}

// BenchmarkExecOverhead: the time `xlacache exec -- true` adds to
// running true directly, on a warm local directory: without a shared
// tier, and with one (versitygw on loopback) holding nothing new. The
// test binary stands in for xlacache (it runs main; its start-up is a
// little slower than the real binary's).
//
//	go test -run '^$' -bench ExecOverhead -benchtime 50x ./cmd/xlacache/
func BenchmarkExecOverhead(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip("no true(1)")
	}
	run := func(b *testing.B, cmd *exec.Cmd) {
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("%v\n%s", err, out)
		}
	}
	b.Run("direct", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			run(b, exec.Command(truePath))
		}
	})
	xc := func(env []string) *exec.Cmd {
		c := exec.Command(os.Args[0], "exec", "--", truePath)
		c.Env = env
		return c
	}
	b.Run("exec-local", func(b *testing.B) {
		env := execEnv(nil, b.TempDir())
		run(b, xc(env)) // warm: the directory and its state exist
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(b, xc(env))
		}
	})
	b.Run("exec-shared-warm", func(b *testing.B) {
		srv := s3test.Start(b, "bkt")
		src := t0Host(b)
		env := execEnv(srv, src, "XLACACHE_PROCESS_INDEX=1")
		run(b, xc(env))
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			run(b, xc(env))
		}
	})
}

func t0Host(b *testing.B) string { return b.TempDir() }

// TestExecPrunesAtExit: at exit the host's leader bounds the directory to
// XLACACHE_MAX_SIZE; JAX entries older than the grace period go.
func TestExecPrunesAtExit(t *testing.T) {
	host := t.TempDir()
	files, err := jobFiles()
	if err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-time.Hour)
	var jax []string
	for rel, data := range files {
		if strings.Contains(rel, "/") {
			continue
		}
		p := filepath.Join(host, rel)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		os.Chtimes(p, old, old)
		jax = append(jax, p)
	}
	var total int64
	for _, p := range jax {
		st, _ := os.Stat(p)
		total += st.Size()
	}
	bound := total / 2
	if code, out := runXC(t, execEnv(nil, host, "XLACACHE_MAX_SIZE="+strconv.FormatInt(bound, 10), testProgEnv+"=none")); code != 0 {
		t.Fatalf("exit %d\n%s", code, out)
	}
	var left int64
	for _, p := range jax {
		if st, err := os.Stat(p); err == nil {
			left += st.Size()
		}
	}
	if left > bound || left == 0 {
		t.Errorf("%d bytes of JAX entries left of %d, bound %d", left, total, bound)
	}
}

// TestPruneSharedRemovesOldPacks: `prune --shared --older-than` removes
// exec's packs published longer ago than the age, with their indexes,
// and keeps younger ones; a dry run removes nothing.
func TestPruneSharedRemovesOldPacks(t *testing.T) {
	srv := s3test.Start(t, "bkt")
	srv.Setenv(t)
	url := srv.SharedURL("bkt", "job")
	store, err := xlacache.OpenShared(url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	ctx := context.Background()
	publish := func(rel, body string) (pack, index string) {
		m, err := hostfill.Seal(rel, []byte(body), nil)
		if err != nil {
			t.Fatal(err)
		}
		p, i, err := hostfill.EncodePack([]hostfill.Member{m})
		if err != nil {
			t.Fatal(err)
		}
		pn, in := hostfill.ObjectNames(p)
		if err := store.PutIfAbsent(ctx, pn, p); err != nil {
			t.Fatal(err)
		}
		if err := store.PutIfAbsent(ctx, in, i); err != nil {
			t.Fatal(err)
		}
		return pn, in
	}
	oldPack, oldIndex := publish("xla_gpu_per_fusion_autotune_cache_dir/"+hex.EncodeToString([]byte("old"))+".textproto", "results { a: 1 }\n")
	newPack, newIndex := publish("xla_gpu_per_fusion_autotune_cache_dir/"+hex.EncodeToString([]byte("new"))+".textproto", "results { b: 1 }\n")
	// versitygw reports its files' modification times.
	onDisk := func(name string) string { return filepath.Join(srv.Root, "bkt", "job", filepath.FromSlash(name)) }
	old := time.Now().Add(-40 * 24 * time.Hour)
	for _, n := range []string{oldPack, oldIndex} {
		if err := os.Chtimes(onDisk(n), old, old); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("XLACACHE_SHARED_URL", url)
	dir := t.TempDir()
	out, _, err := execCLI(t, "prune", "--dir", dir, "--shared", "--older-than", "30d", "--dry-run")
	if err != nil || !strings.Contains(out, "2 packs") || !strings.Contains(out, "would remove 1 packs") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if _, err := os.Stat(onDisk(oldPack)); err != nil {
		t.Fatalf("the dry run removed a pack: %v", err)
	}
	out, _, err = execCLI(t, "prune", "--dir", dir, "--shared", "--older-than", "30d")
	if err != nil || !strings.Contains(out, "removed 1 packs") {
		t.Fatalf("prune: %v\n%s", err, out)
	}
	for n, want := range map[string]bool{oldPack: false, oldIndex: false, newPack: true, newIndex: true} {
		if _, err := os.Stat(onDisk(n)); (err == nil) != want {
			t.Errorf("%s present = %v, want %v", n, err == nil, want)
		}
	}
}

package cache_test

// End-to-end tests of single-flight compilation across real processes and
// of the shared object-store tier across "hosts" (processes with separate
// local directories), against a real S3 server (versitygw) on loopback.
//
// Child processes are this test binary re-executed with -test.run pointing
// at TestHostsChild and XLACACHE_HOSTS_CHILD=1; everything else reaches the
// child through the same XLACACHE_* environment a user would set. They
// live in the external test package so that every process opens its cache
// the way programs do, with xlacache.Open (which imports this package).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/hangtest"
	"github.com/xlacache/xlacache/internal/testsupport/logtest"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

const (
	hostsChildEnv   = "XLACACHE_HOSTS_CHILD"
	hostsCounterEnv = "XLACACHE_HOSTS_COUNTER"
	hostsHangEnv    = "XLACACHE_HOSTS_HANG"
	hostsProgramEnv = "XLACACHE_HOSTS_PROGRAM"
	hostsWorkEnv    = "XLACACHE_HOSTS_WORK"
	hostsBucket     = "xlacache"
)

// hostsBackend is a test double whose Compile does real CPU work (a SHA-256
// chain), uses its own autotune tier through Session.Tier, and records each compile as
// a file in a counter directory so tests can count compiles across
// processes.
type hostsBackend struct {
	counterDir string
	work       int
	// hang makes Compile block after recording itself, until the process
	// is killed: it plays a compiler that dies mid-compile.
	hang bool
}

type hostsExe struct{ payload []byte }

func (e *hostsExe) Serialize() ([]byte, error) { return e.payload, nil }

func (b *hostsBackend) Name() string { return "hosts" }

func (b *hostsBackend) KeyParts(ctx context.Context, p cache.Program) ([]cache.KeyPart, error) {
	return []cache.KeyPart{
		{Name: "program", Data: p.Text},
		{Name: "options", Data: p.Options},
		{Name: "backend", Data: []byte("hosts v1 work=" + strconv.Itoa(b.work))},
	}, nil
}

// hostsKernels splits a program into its "kernels": one per line.
func hostsKernels(p cache.Program) []string {
	var ks []string
	for _, l := range strings.Split(string(p.Text), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			ks = append(ks, l)
		}
	}
	return ks
}

// hostsWork is the stand-in for compilation: a SHA-256 chain seeded by s.
func hostsWork(s string, n int) [32]byte {
	sum := sha256.Sum256([]byte(s))
	for i := 0; i < n; i++ {
		sum = sha256.Sum256(sum[:])
	}
	return sum
}

func hostsExpected(p cache.Program, work int) []byte {
	var out []byte
	for _, k := range hostsKernels(p) {
		sum := hostsWork(k, work)
		out = append(out, hex.EncodeToString(sum[:])...)
		out = append(out, '\n')
	}
	return append([]byte("hosts-exe\n"), out...)
}

func (b *hostsBackend) Compile(ctx context.Context, p cache.Program, env *cache.Session) (cache.Executable, error) {
	if b.counterDir != "" {
		f, err := os.CreateTemp(b.counterDir, "compile-")
		if err != nil {
			return nil, fmt.Errorf("recording compile: %w", err)
		}
		f.Close()
	}
	if b.hang {
		// Blocks until the parent kills this process (it never closes
		// stdin): a compiler dying mid-compile.
		io.Copy(io.Discard, os.Stdin)
		return nil, errors.New("hosts: hang released")
	}
	out := []byte("hosts-exe\n")
	for _, k := range hostsKernels(p) {
		kkey := cache.NewKey("kernel", []cache.KeyPart{{Name: "kernel", Data: []byte(k)}})
		// The backend's own autotune tier: a hit skips the "tuning" work.
		var sum []byte
		if data, ok := env.Tier(config.SubcacheAutotune).Get(ctx, kkey); ok {
			sum = data
		} else {
			s := hostsWork(k, b.work)
			sum = []byte(hex.EncodeToString(s[:]))
			if err := env.Tier(config.SubcacheAutotune).Put(ctx, kkey, sum, 0); err != nil {
				env.Logger().Debug("hosts: storing kernel", "err", err)
			}
		}
		out = append(out, sum...)
		out = append(out, '\n')
	}
	return &hostsExe{payload: out}, nil
}

func (b *hostsBackend) Load(ctx context.Context, data []byte, env *cache.Session) (cache.Executable, error) {
	if !bytes.HasPrefix(data, []byte("hosts-exe\n")) {
		return nil, errors.New("hosts: not an executable")
	}
	return &hostsExe{payload: bytes.Clone(data)}, nil
}

// hostsResult is what a child prints.
type hostsResult struct {
	Digest string
	Hit    bool
	Source string
	Tiers  map[string]cache.TierResult
	Errors map[string]int64
}

// TestHostsChild is the body of a child process; it does nothing in a
// normal test run.
func TestHostsChild(t *testing.T) {
	if os.Getenv(hostsChildEnv) != "1" {
		t.Skip("runs only as a child process of the multi-host tests")
	}
	opts, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	work, _ := strconv.Atoi(os.Getenv(hostsWorkEnv))
	b := &hostsBackend{counterDir: os.Getenv(hostsCounterEnv), work: work, hang: os.Getenv(hostsHangEnv) == "1"}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
	c, err := xlacache.Open(context.Background(), opts, logger)
	if err != nil {
		t.Fatal(err)
	}
	var results []hostsResult
	for _, prog := range strings.Split(os.Getenv(hostsProgramEnv), ";") {
		p := cache.Program{Name: "prog", Text: []byte(strings.ReplaceAll(prog, ",", "\n"))}
		exe, rep, err := cache.Compile(context.Background(), c, b, p)
		if err != nil {
			t.Fatal(err)
		}
		payload := exe.(*hostsExe).payload
		if !bytes.Equal(payload, hostsExpected(p, work)) {
			t.Fatalf("wrong executable: %q", payload)
		}
		sum := sha256.Sum256(payload)
		results = append(results, hostsResult{Digest: hex.EncodeToString(sum[:]), Hit: rep.Hit, Source: rep.Source, Tiers: rep.Tiers, Errors: c.Stats().Errors})
	}
	c.Close()
	out, _ := json.Marshal(results)
	fmt.Fprintf(os.Stdout, "\nHOSTS-RESULT %s\n", out)
}

// hostsChild describes one child process.
type hostsChild struct {
	env     map[string]string
	program string // programs separated by ';', kernels by ','
}

func hostsCmd(t testing.TB, ch hostsChild) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^TestHostsChild$", "-test.count=1", "-test.v")
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "XLACACHE_"), strings.HasPrefix(k, "AWS_"),
			k == "OMPI_COMM_WORLD_RANK", k == "PMI_RANK", k == "SLURM_PROCID", k == "RANK":
			continue
		}
		cmd.Env = append(cmd.Env, kv)
	}
	env := map[string]string{
		hostsChildEnv:                    "1",
		"XLACACHE_MIN_COMPILE_TIME_SECS": "0",
		"XLACACHE_ENABLE_XLA_CACHES":     "all",
		hostsProgramEnv:                  ch.program,
	}
	for k, v := range ch.env {
		env[k] = v
	}
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	return cmd
}

func parseHostsResult(t testing.TB, out []byte) []hostsResult {
	t.Helper()
	i := bytes.LastIndex(out, []byte("HOSTS-RESULT "))
	if i < 0 {
		t.Fatalf("child printed no result:\n%s", out)
	}
	line := out[i+len("HOSTS-RESULT "):]
	if j := bytes.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	var rs []hostsResult
	if err := json.Unmarshal(line, &rs); err != nil {
		t.Fatalf("child result %q: %v", line, err)
	}
	return rs
}

// runHosts runs children concurrently and returns their results; stderr
// of each is returned for log assertions.
func runHosts(t testing.TB, children []hostsChild) ([][]hostsResult, []string) {
	t.Helper()
	results := make([][]hostsResult, len(children))
	stderrs := make([]string, len(children))
	outs := make([][]byte, len(children))
	errs := make([]error, len(children))
	var wg sync.WaitGroup
	for i, ch := range children {
		wg.Add(1)
		go func(i int, ch hostsChild) {
			defer wg.Done()
			cmd := hostsCmd(t, ch)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			outs[i], errs[i] = cmd.Output()
			stderrs[i] = stderr.String()
		}(i, ch)
	}
	wg.Wait()
	for i := range children {
		if errs[i] != nil {
			t.Fatalf("child %d: %v\nstdout:\n%s\nstderr:\n%s", i, errs[i], outs[i], stderrs[i])
		}
		results[i] = parseHostsResult(t, outs[i])
	}
	return results, stderrs
}

func countCompiles(t testing.TB, dir string) int {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

const hostsTestWork = 150000 // about 100 ms of SHA-256 per kernel

func TestHostsSingleFlightProcesses(t *testing.T) {
	tests := []struct {
		name string
		env  func(i int) map[string]string
	}{
		{"all writers: the lease picks one", func(i int) map[string]string {
			return map[string]string{"XLACACHE_ROLE": "writer"}
		}},
		{"one writer and seven readers by process index", func(i int) map[string]string {
			return map[string]string{"XLACACHE_PROCESS_INDEX": strconv.Itoa(i)}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir, counter := t.TempDir(), t.TempDir()
			const n = 8
			var children []hostsChild
			for i := 0; i < n; i++ {
				env := map[string]string{"XLACACHE_DIR": dir, hostsCounterEnv: counter, hostsWorkEnv: strconv.Itoa(hostsTestWork)}
				for k, v := range tt.env(i) {
					env[k] = v
				}
				children = append(children, hostsChild{env: env, program: "matmul,relu,softmax"})
			}
			results, _ := runHosts(t, children)
			if got := countCompiles(t, counter); got != 1 {
				t.Fatalf("%d compiles across %d processes, want exactly 1", got, n)
			}
			for i, r := range results {
				if r[0].Digest != results[0][0].Digest {
					t.Fatalf("process %d got a different executable", i)
				}
			}
		})
	}
}

func TestHostsKilledCompilerTakenOver(t *testing.T) {
	dir, counter := t.TempDir(), t.TempDir()
	base := map[string]string{
		"XLACACHE_DIR": dir, "XLACACHE_ROLE": "writer", hostsCounterEnv: counter,
		hostsWorkEnv: strconv.Itoa(hostsTestWork),
		// Only the heartbeat counts (no same-host pid shortcut), with a
		// short timeout so that the test takes seconds.
		config.EnvLeaseStale: "1", config.EnvLeasePIDCheck: "0",
	}
	hangEnv := map[string]string{hostsHangEnv: "1"}
	for k, v := range base {
		hangEnv[k] = v
	}
	holder := hostsCmd(t, hostsChild{env: hangEnv, program: "attention,layernorm"})
	stdin := hangtest.StartHolder(t, holder, 60*time.Second, func() bool { return countCompiles(t, counter) > 0 },
		"the first process never started compiling")
	defer stdin.Close()
	done := make(chan struct{})
	var results [][]hostsResult
	go func() {
		defer close(done)
		var ch []hostsChild
		for i := 0; i < 3; i++ {
			ch = append(ch, hostsChild{env: base, program: "attention,layernorm"})
		}
		results, _ = runHosts(t, ch)
	}()
	if err := holder.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	holder.Wait()
	select {
	case <-done:
	case <-time.After(120 * time.Second):
		t.Fatal("processes hung after the compiling process was killed")
	}
	if t.Failed() {
		return
	}
	if got := countCompiles(t, counter); got != 2 {
		t.Fatalf("%d compiles, want 2 (the killed one and exactly one successor)", got)
	}
	for i, r := range results {
		if r[0].Digest != results[0][0].Digest {
			t.Fatalf("waiter %d got a different executable", i)
		}
	}
}

// hostsServer starts versitygw and returns the env for children.
func hostsServer(t testing.TB) (*s3test.Server, map[string]string) {
	srv := s3test.Start(t, hostsBucket)
	env := map[string]string{"XLACACHE_SHARED_URL": "s3://" + hostsBucket + "/team?timeout=3s&cooldown=30s"}
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	return srv, env
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

func TestHostsTwoHostsSharedBucket(t *testing.T) {
	srv, s3env := hostsServer(t)
	dirA, dirB, counter := t.TempDir(), t.TempDir(), t.TempDir()
	work := map[string]string{hostsCounterEnv: counter, hostsWorkEnv: "20000", "XLACACHE_SIGNING_KEY": "team-secret"}
	hostA := merge(s3env, work, map[string]string{"XLACACHE_DIR": dirA, "XLACACHE_PROCESS_INDEX": "0"})
	hostB := merge(s3env, work, map[string]string{"XLACACHE_DIR": dirB, "XLACACHE_PROCESS_INDEX": "1"})

	// Host A (writer) compiles P and publishes everything.
	runHosts(t, []hostsChild{{env: hostA, program: "matmul,gelu"}})
	if got := countCompiles(t, counter); got != 1 {
		t.Fatalf("host A: %d compiles", got)
	}
	names := listObjects(t, srv)
	for _, want := range []string{"executables/", "hosts/autotune/"} {
		if !hasPrefix(names, want) {
			t.Fatalf("nothing published under %s: %q", want, names)
		}
	}

	// Host B (reader, its own empty directory) loads P without compiling.
	rs, _ := runHosts(t, []hostsChild{{env: hostB, program: "matmul,gelu"}})
	if got := countCompiles(t, counter); got != 1 {
		t.Fatalf("host B compiled P although host A published it (%d compiles)", got)
	}
	if !rs[0][0].Hit || rs[0][0].Source != "shared" {
		t.Fatalf("host B: hit=%v source=%q, want a shared hit", rs[0][0].Hit, rs[0][0].Source)
	}
	// Host B compiles Q, which shares the kernel "matmul" with P: the
	// executable is new, but the subcache entry comes from host A.
	rs, _ = runHosts(t, []hostsChild{{env: hostB, program: "matmul,softmax"}})
	if got := countCompiles(t, counter); got != 2 {
		t.Fatalf("host B: %d compiles after Q, want 2", got)
	}
	if tr := rs[0][0].Tiers["hosts/autotune"]; tr.Hits != 1 || tr.Misses != 1 {
		t.Fatalf("host B backend tier for Q: %+v, want 1 hit (matmul from host A) and 1 miss", tr)
	}

	// The server stops mid-run: both hosts keep working.
	srv.Stop()
	_, stderrs := runHosts(t, []hostsChild{
		{env: hostA, program: "conv,pool;matmul,gelu"},
		{env: hostB, program: "conv,pool;matmul,gelu"},
	})
	// A compiles R once; B compiles R and (no local copy, store down) P.
	if got := countCompiles(t, counter); got != 5 {
		t.Fatalf("%d compiles with the server down, want 5", got)
	}
	for i, s := range stderrs {
		if n := strings.Count(s, "shared store failed"); n != 1 {
			t.Errorf("host %c logged the outage %d times, want once:\n%s", 'A'+i, n, s)
		}
		// The outage is one clear line: no other warning follows from it.
		if n := strings.Count(s, "level=WARN") + strings.Count(s, "level=ERROR"); n != 1 {
			t.Errorf("host %c logged %d warnings for one outage, want 1:\n%s", 'A'+i, n, s)
		}
	}
}

func listObjects(t testing.TB, srv *s3test.Server) []string {
	t.Helper()
	var names []string
	root := filepath.Join(srv.Root, hostsBucket, "team")
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			rel, _ := filepath.Rel(root, p)
			names = append(names, filepath.ToSlash(rel))
		}
		return nil
	})
	return names
}

func hasPrefix(names []string, prefix string) bool {
	for _, n := range names {
		if strings.HasPrefix(n, prefix) {
			return true
		}
	}
	return false
}

func TestHostsSigning(t *testing.T) {
	srv, _ := hostsServer(t)
	srv.Setenv(t)
	shared := "s3://" + hostsBucket + "/signing?timeout=3s"
	open := func(t *testing.T, dir string, key string, writer bool) (*cache.Cache, *logtest.Buffer) {
		t.Helper()
		o := config.Defaults()
		o.Dir = dir
		o.MinCompileTime = 0
		o.SharedURL = shared
		o.SigningKey = sign.NewHMAC([]byte(key))
		o.Role = config.RoleReader
		if writer {
			o.Role = config.RoleWriter
		}
		var logs logtest.Buffer
		c, err := xlacache.Open(context.Background(), o, slog.New(slog.NewTextHandler(&logs, nil)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c, &logs
	}
	compile := func(t *testing.T, c *cache.Cache, p cache.Program) (*cache.Report, int) {
		t.Helper()
		counter := t.TempDir()
		b := &hostsBackend{counterDir: counter, work: 1000}
		exe, rep, err := cache.Compile(context.Background(), c, b, p)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(exe.(*hostsExe).payload, hostsExpected(p, 1000)) {
			t.Fatal("wrong executable")
		}
		return rep, countCompiles(t, counter)
	}
	p := cache.Program{Name: "signed", Text: []byte("matmul\nbias")}

	dirA := t.TempDir()
	a, _ := open(t, dirA, "key-one", true)
	if _, n := compile(t, a, p); n != 1 {
		t.Fatal("writer did not compile")
	}

	t.Run("same key: shared hit", func(t *testing.T) {
		c, _ := open(t, t.TempDir(), "key-one", false)
		if rep, n := compile(t, c, p); n != 0 || !rep.Hit || rep.Source != "shared" {
			t.Fatalf("hit=%v source=%q compiles=%d", rep.Hit, rep.Source, n)
		}
	})
	t.Run("other key: refused, compiled", func(t *testing.T) {
		c, _ := open(t, t.TempDir(), "key-two", false)
		if rep, n := compile(t, c, p); n != 1 || rep.Hit {
			t.Fatalf("entry signed with another key was used: hit=%v compiles=%d", rep.Hit, n)
		}
		if c.Stats().Errors["signature"] == 0 {
			t.Fatalf("refusal not counted: %v", c.Stats().Errors)
		}
	})
	t.Run("tampered shared entry: refused", func(t *testing.T) {
		tamperUnder(t, filepath.Join(srv.Root, hostsBucket, "signing", cache.ExecutablesDir))
		c, _ := open(t, t.TempDir(), "key-one", false)
		if rep, n := compile(t, c, p); n != 1 || rep.Hit {
			t.Fatalf("tampered shared entry used: hit=%v compiles=%d", rep.Hit, n)
		}
	})
	// The shared copy is tampered too by now, so a refused local entry
	// must end in a compile.
	t.Run("tampered local entry: refused", func(t *testing.T) {
		tamperUnder(t, filepath.Join(dirA, cache.ExecutablesDir))
		c, _ := open(t, dirA, "key-one", true)
		if rep, n := compile(t, c, p); n != 1 || rep.Hit {
			t.Fatalf("tampered local entry used: hit=%v compiles=%d", rep.Hit, n)
		}
	})
	t.Run("unsigned mode works and warns once", func(t *testing.T) {
		cache.ResetUnsignedWarning()
		q := cache.Program{Name: "unsigned", Text: []byte("conv")}
		w, wlogs := open(t, t.TempDir(), "", true)
		if _, n := compile(t, w, q); n != 1 {
			t.Fatal("unsigned writer did not compile")
		}
		r, rlogs := open(t, t.TempDir(), "", false)
		if rep, n := compile(t, r, q); n != 0 || !rep.Hit {
			t.Fatalf("unsigned reader: hit=%v compiles=%d", rep.Hit, n)
		}
		total := strings.Count(wlogs.String(), cache.UnsignedSharedTierWarning) + strings.Count(rlogs.String(), cache.UnsignedSharedTierWarning)
		if total != 1 {
			t.Fatalf("unsigned-shared-cache warning printed %d times, want once per process", total)
		}
	})
}

// tamperUnder flips a byte in the middle of every regular file under root.
func tamperUnder(t *testing.T, root string) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		data[len(data)/2] ^= 0x40
		n++
		return os.WriteFile(p, data, 0o600)
	})
	if err != nil || n == 0 {
		t.Fatalf("tampering under %s: %d files, %v", root, n, err)
	}
}

// BenchmarkHostsColdStart compares N processes cold-starting the same
// program on one directory with one process: compiles per run and wall
// time relative to a single process (goal: 1 compile, ≤ 1.3×).
func BenchmarkHostsColdStart(b *testing.B) {
	run := func(b *testing.B, n int, dir string) (time.Duration, int) {
		counter := b.TempDir()
		var ch []hostsChild
		for i := 0; i < n; i++ {
			ch = append(ch, hostsChild{env: map[string]string{
				"XLACACHE_DIR": dir, "XLACACHE_ROLE": "writer", hostsCounterEnv: counter,
				hostsWorkEnv: strconv.Itoa(4 * hostsTestWork),
			}, program: "matmul,relu,softmax,layernorm"})
		}
		start := time.Now()
		runHosts(b, ch)
		return time.Since(start), countCompiles(b, counter)
	}
	var one, eight, warm time.Duration
	var compiles int
	for i := 0; i < b.N; i++ {
		d1, _ := run(b, 1, b.TempDir())
		dir := b.TempDir()
		d8, c8 := run(b, 8, dir)
		// The same 8 processes on the now warm directory: what starting 8
		// processes costs on this machine, without any compile or wait.
		dw, _ := run(b, 8, dir)
		one += d1
		eight += d8
		warm += dw
		compiles += c8
	}
	b.ReportMetric(float64(eight)/float64(one), "wall-8/wall-1")
	b.ReportMetric(float64(warm)/float64(one), "wall-8-warm/wall-1")
	b.ReportMetric(float64(compiles)/float64(b.N), "compiles/8-procs")
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "ms/1-proc")
}

// BenchmarkHostsSharedHit compares a new host (empty local directory)
// loading a program from the shared tier with compiling it cold.
func BenchmarkHostsSharedHit(b *testing.B) {
	srv := s3test.Start(b, hostsBucket)
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	p := cache.Program{Name: "bench", Text: []byte("matmul\nrelu\nsoftmax\nlayernorm")}
	be := &hostsBackend{work: 4 * hostsTestWork}
	open := func(shared string) *cache.Cache {
		o := config.Defaults()
		o.Dir = b.TempDir()
		o.MinCompileTime = 0
		o.SharedURL = shared
		o.Role = config.RoleWriter
		c, err := xlacache.Open(context.Background(), o, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	var cold, hit time.Duration
	for i := 0; i < b.N; i++ {
		shared := fmt.Sprintf("s3://%s/bench%d", hostsBucket, i)
		w := open(shared)
		start := time.Now()
		if _, _, err := cache.Compile(context.Background(), w, be, p); err != nil {
			b.Fatal(err)
		}
		cold += time.Since(start)
		w.Close()
		r := open(shared)
		start = time.Now()
		_, rep, err := cache.Compile(context.Background(), r, be, p)
		if err != nil || !rep.Hit {
			b.Fatalf("no shared hit: %v %+v", err, rep)
		}
		hit += time.Since(start)
		r.Close()
	}
	b.ReportMetric(float64(cold)/float64(hit), "cold/shared-hit")
	b.ReportMetric(float64(hit.Microseconds())/float64(b.N), "µs/shared-hit")
}

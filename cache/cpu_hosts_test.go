package cache_test

// Multi-process and multi-host tests and benchmarks with the real cpu
// backend and the example programs (MLP, transformer). They live in the
// external test package because backend/cpu imports package cache.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/backend/cpu"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/examples/mlp"
	"github.com/xlacache/xlacache/examples/transformer"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
	"github.com/xlacache/xlacache/stablehlo"
)

const cpuChildEnv = "XLACACHE_CPUHOSTS_CHILD"

func cpuProgram(name string) cache.Program {
	switch name {
	case "transformer":
		return cache.Program{Name: "transformer", Text: transformer.Source}
	default:
		return cache.Program{Name: "mlp", Text: mlp.Source}
	}
}

// cpuResult is what a child prints.
type cpuResult struct {
	Output   string // SHA-256 of the outputs of one run
	Compiled bool
	Hit      bool
	Source   string
	Millis   float64
}

// cpuRun compiles p through c, runs it on deterministic inputs, and digests
// the outputs.
func cpuRun(ctx context.Context, c *cache.Cache, p cache.Program) (cpuResult, error) {
	start := time.Now()
	exe, rep, err := cache.Compile(ctx, c, cpu.New(), p)
	if err != nil {
		return cpuResult{}, err
	}
	e := exe.(*cpu.Executable)
	defer e.Close()
	var args []*stablehlo.Tensor
	for i, tt := range e.ArgTypes() {
		t := stablehlo.NewTensor(tt)
		if tt.DType == stablehlo.F32 {
			for j := range t.Float32s() {
				t.Float32s()[j] = float32(math.Sin(float64(i*7919+j))) * 0.05
			}
		}
		args = append(args, t)
	}
	outs, err := e.Run(ctx, args)
	if err != nil {
		return cpuResult{}, err
	}
	h := sha256.New()
	for _, o := range outs {
		h.Write(o.Data)
	}
	return cpuResult{
		Output:   hex.EncodeToString(h.Sum(nil)),
		Compiled: !rep.Hit,
		Hit:      rep.Hit,
		Source:   rep.Source,
		Millis:   float64(time.Since(start).Microseconds()) / 1000,
	}, nil
}

// TestCPUHostsChild is the body of a child process.
func TestCPUHostsChild(t *testing.T) {
	if os.Getenv(cpuChildEnv) == "" {
		t.Skip("runs only as a child process of the cpu multi-process tests")
	}
	opts, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := xlacache.Open(context.Background(), opts, slog.New(slog.NewTextHandler(os.Stderr, nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	r, err := cpuRun(context.Background(), c, cpuProgram(os.Getenv(cpuChildEnv)))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(r)
	fmt.Printf("\nCPU-RESULT %s\n", b)
}

func runCPUChildren(t testing.TB, program string, envs []map[string]string) []cpuResult {
	t.Helper()
	res := make([]cpuResult, len(envs))
	errs := make([]error, len(envs))
	outs := make([]string, len(envs))
	var wg sync.WaitGroup
	for i, env := range envs {
		wg.Add(1)
		go func(i int, env map[string]string) {
			defer wg.Done()
			cmd := exec.Command(os.Args[0], "-test.run=^TestCPUHostsChild$", "-test.count=1", "-test.v")
			for _, kv := range os.Environ() {
				if !strings.HasPrefix(kv, "XLACACHE_") && !strings.HasPrefix(kv, "AWS_") {
					cmd.Env = append(cmd.Env, kv)
				}
			}
			cmd.Env = append(cmd.Env, cpuChildEnv+"="+program, "XLACACHE_MIN_COMPILE_TIME_SECS=0")
			for k, v := range env {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			outs[i] = string(out) + stderr.String()
			if err != nil {
				errs[i] = err
				return
			}
			j := bytes.LastIndex(out, []byte("CPU-RESULT "))
			if j < 0 {
				errs[i] = fmt.Errorf("no result")
				return
			}
			line, _, _ := bytes.Cut(out[j+len("CPU-RESULT "):], []byte("\n"))
			errs[i] = json.Unmarshal(line, &res[i])
		}(i, env)
	}
	wg.Wait()
	for i := range envs {
		if errs[i] != nil {
			t.Fatalf("child %d: %v\n%s", i, errs[i], outs[i])
		}
	}
	return res
}

func compiles(rs []cpuResult) int {
	n := 0
	for _, r := range rs {
		if r.Compiled {
			n++
		}
	}
	return n
}

// TestCPUHostsColdStartMLP: 8 processes cold-start the MLP example on one
// directory with the real cpu backend: one compiles, all get the same
// result.
func TestCPUHostsColdStartMLP(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the MLP with the system C compiler; the test-double variant runs in -short")
	}
	dir := t.TempDir()
	var envs []map[string]string
	for i := 0; i < 8; i++ {
		envs = append(envs, map[string]string{"XLACACHE_DIR": dir, "XLACACHE_ROLE": "writer"})
	}
	rs := runCPUChildren(t, "mlp", envs)
	if n := compiles(rs); n != 1 {
		t.Fatalf("%d of 8 processes compiled the MLP, want exactly 1", n)
	}
	for i, r := range rs {
		if r.Output != rs[0].Output {
			t.Fatalf("process %d computed a different result", i)
		}
	}
}

// BenchmarkCPUHostsColdStartMLP: N = 8 processes cold-starting the MLP vs 1
// process (goal: 1 compile, wall time ≤ 1.3× one compile).
func BenchmarkCPUHostsColdStartMLP(b *testing.B) {
	var one, eight time.Duration
	total := 0
	for i := 0; i < b.N; i++ {
		for _, n := range []int{1, 8} {
			dir := b.TempDir()
			var envs []map[string]string
			for j := 0; j < n; j++ {
				envs = append(envs, map[string]string{"XLACACHE_DIR": dir, "XLACACHE_ROLE": "writer"})
			}
			start := time.Now()
			rs := runCPUChildren(b, "mlp", envs)
			d := time.Since(start)
			if n == 1 {
				one += d
			} else {
				eight += d
				total += compiles(rs)
			}
		}
	}
	b.ReportMetric(float64(eight)/float64(one), "wall-8/wall-1")
	b.ReportMetric(float64(total)/float64(b.N), "compiles/8-procs")
	b.ReportMetric(float64(one.Milliseconds())/float64(b.N), "ms/1-proc")
}

// BenchmarkCPUHostsSharedHitTransformer: a new host (empty local directory)
// loading the transformer from the shared tier vs compiling it cold.
func BenchmarkCPUHostsSharedHitTransformer(b *testing.B) {
	srv := s3test.Start(b, "xlacache")
	for _, kv := range srv.Env() {
		k, v, _ := strings.Cut(kv, "=")
		b.Setenv(k, v)
	}
	open := func(shared string, role config.Role) *cache.Cache {
		o := config.Defaults()
		o.Dir = b.TempDir()
		o.MinCompileTime = 0
		o.SharedURL = shared
		o.Role = role
		c, err := xlacache.Open(context.Background(), o, slog.New(slog.DiscardHandler))
		if err != nil {
			b.Fatal(err)
		}
		return c
	}
	p := cpuProgram("transformer")
	var cold, hit time.Duration
	for i := 0; i < b.N; i++ {
		shared := "s3://xlacache/bench-" + strconv.Itoa(i) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
		w := open(shared, config.RoleWriter)
		r1, err := cpuRun(context.Background(), w, p)
		if err != nil || !r1.Compiled {
			b.Fatalf("cold: %v %+v", err, r1)
		}
		cold += time.Duration(r1.Millis * float64(time.Millisecond))
		w.Close()
		r := open(shared, config.RoleReader)
		r2, err := cpuRun(context.Background(), r, p)
		if err != nil || !r2.Hit || r2.Source != "shared" {
			b.Fatalf("no shared hit: %v %+v", err, r2)
		}
		if r2.Output != r1.Output {
			b.Fatal("the shared executable computes a different result")
		}
		hit += time.Duration(r2.Millis * float64(time.Millisecond))
		r.Close()
	}
	b.ReportMetric(float64(cold)/float64(hit), "cold/shared-hit")
	b.ReportMetric(float64(cold.Milliseconds())/float64(b.N), "ms/cold")
	b.ReportMetric(float64(hit.Milliseconds())/float64(b.N), "ms/shared-hit")
}

package xlacache

import (
	"bufio"
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
)

// plainBackend compiles a program into its text, counting compiles.
type plainBackend struct{ compiles int }

func (b *plainBackend) Name() string { return "plain" }
func (b *plainBackend) KeyParts(ctx context.Context, p cache.Program) ([]cache.KeyPart, error) {
	return []cache.KeyPart{{Name: "program", Data: p.Text}}, nil
}
func (b *plainBackend) Compile(ctx context.Context, p cache.Program, env *cache.Session) (cache.Executable, error) {
	b.compiles++
	return exe("compiled " + string(p.Text)), nil
}
func (b *plainBackend) Load(ctx context.Context, data []byte, env *cache.Session) (cache.Executable, error) {
	return exe(data), nil
}

// sharedHostOptions are a writer's options on its own directory with the
// shared tier of srv.
func sharedHostOptions(t *testing.T, srv *s3test.Server, prefix string) config.Options {
	o := config.Defaults()
	o.Dir = t.TempDir()
	o.MinCompileTime = 0
	o.Role = config.RoleWriter
	o.Subcaches, o.SubcachesExplicit = nil, true
	o.SharedURL = srv.SharedURL("bkt", prefix)
	return o
}

// publishedProgram starts an S3 server (its credentials in the
// environment), compiles a program of the given text on a first host whose
// shared tier is the bucket "bkt" under prefix, and returns the server, the
// backend (one compile counted), the program and the name of its shared
// object.
func publishedProgram(t *testing.T, prefix, text string) (*s3test.Server, *plainBackend, cache.Program, string) {
	t.Helper()
	srv := s3test.Start(t, "bkt")
	srv.Setenv(t)
	b := &plainBackend{}
	p := cache.Program{Name: "f", Text: []byte(text)}
	r, _ := compileOn(t, sharedHostOptions(t, srv, prefix), b, p, nil)
	return srv, b, p, layout.ObjectName(cache.ExecutablesTier, r.Key)
}

// compileOn opens a cache with o, compiles p and closes the cache.
func compileOn(t *testing.T, o config.Options, b *plainBackend, p cache.Program, logger *slog.Logger) (*cache.Report, cache.Stats) {
	t.Helper()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	c, err := Open(context.Background(), o, logger)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	e, r, err := cache.Compile(context.Background(), c, b, p)
	if err != nil {
		t.Fatal(err)
	}
	if string(e.(exe)) != "compiled "+string(p.Text) {
		t.Fatalf("wrong executable %.40q", e.(exe))
	}
	return r, c.Stats()
}

// vmHWM returns the process's peak resident set size in bytes.
func vmHWM(t *testing.T) int64 {
	t.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		t.Skip("no /proc/self/status")
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Skip("no VmHWM")
	return 0
}

// TestPlantedHugeObjectPeakMemory is the figure of issue 10 item 4: the
// peak memory of a host that misses locally and finds a huge object
// planted in the bucket under the program's name. The object is a sparse
// file in versitygw's backend directory, so planting it costs no memory or
// disk. Set XLACACHE_BIG_OBJECT_TEST=1 (XLACACHE_BIG_OBJECT_SIZE, default
// 1GiB, to choose the size) to run it:
//
//	XLACACHE_BIG_OBJECT_TEST=1 go test -run TestPlantedHugeObjectPeakMemory -v .
func TestPlantedHugeObjectPeakMemory(t *testing.T) {
	if os.Getenv("XLACACHE_BIG_OBJECT_TEST") == "" {
		t.Skip("set XLACACHE_BIG_OBJECT_TEST=1 to plant a large object and measure peak memory")
	}
	size := int64(1 << 30)
	if v := os.Getenv("XLACACHE_BIG_OBJECT_SIZE"); v != "" {
		n, err := config.ParseSize(v)
		if err != nil {
			t.Fatal(err)
		}
		size = n
	}
	srv, b, p, name := publishedProgram(t, "big", "huge planted object")
	obj := filepath.Join(srv.Root, "bkt", "big", filepath.FromSlash(name))
	if err := os.Remove(obj); err != nil {
		t.Fatalf("the published object is not where expected: %v", err)
	}
	f, err := os.Create(obj)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(size); err != nil {
		t.Fatal(err)
	}
	f.Close()

	before := vmHWM(t)
	start := time.Now()
	r, st := compileOn(t, sharedHostOptions(t, srv, "big"), b, p, nil)
	elapsed := time.Since(start)
	after := vmHWM(t)
	msg := fmt.Sprintf("planted %d-byte object: hit=%v compiles=%d errors=%v; peak RSS %.1f MiB before the lookup, %.1f MiB after, %v",
		size, r.Hit, b.compiles, st.Errors, float64(before)/(1<<20), float64(after)/(1<<20), elapsed.Round(time.Millisecond))
	t.Log(msg)
	if r.Hit || b.compiles != 2 {
		t.Fatalf("the planted object was used: %s", msg)
	}
	if after-before > 256<<20 {
		t.Fatalf("the planted object was read into memory: %s", msg)
	}
}

package metrics_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/metrics"
)

// fakeBackend compiles "programs" whose text names one kernel: it looks
// the kernel up in its autotune and kernel tiers and stores it there on a
// miss, so that a run controls hits and misses in every tier.
type fakeBackend struct{}

func (fakeBackend) Name() string                  { return "fake" }
func (fakeBackend) KernelsContentAddressed() bool { return true }

func (fakeBackend) KeyParts(_ context.Context, p cache.Program) ([]cache.KeyPart, error) {
	return []cache.KeyPart{{Name: "program", Data: p.Text}}, nil
}

type fakeExe []byte

func (e fakeExe) Serialize() ([]byte, error) { return e, nil }

func (fakeBackend) Compile(ctx context.Context, p cache.Program, env *cache.Session) (cache.Executable, error) {
	kernel := strings.TrimSpace(string(p.Text[strings.IndexByte(string(p.Text), ':')+1:]))
	key := cache.NewKey("k", []cache.KeyPart{{Name: "kernel", Data: []byte(kernel)}})
	for _, sub := range []config.Subcache{config.SubcacheAutotune, config.SubcacheKernels} {
		tier := env.Tier(sub)
		if _, ok := tier.Get(ctx, key); !ok {
			tier.Put(ctx, key, []byte(string(sub)+" of "+kernel), time.Millisecond)
		}
	}
	return fakeExe("exe of " + string(p.Text)), nil
}

func (fakeBackend) Load(_ context.Context, data []byte, _ *cache.Session) (cache.Executable, error) {
	return fakeExe(data), nil
}

// program is a fake program named name that uses kernel.
func program(name, kernel string) cache.Program {
	return cache.Program{Name: name, Text: []byte(name + ":" + kernel)}
}

// keepOpen is a shared store that one cache's Close does not close, so
// that several caches in a test can share it.
type keepOpen struct{ blob.Store }

func (keepOpen) Close() error { return nil }

func compileAll(t *testing.T, c *cache.Cache, progs ...cache.Program) {
	t.Helper()
	for _, p := range progs {
		if _, _, err := cache.Compile(context.Background(), c, fakeBackend{}, p); err != nil {
			t.Fatalf("compile %s: %v", p.Name, err)
		}
	}
}

func testOptions(dir string, role config.Role) config.Options {
	o := config.Defaults()
	o.Dir = dir
	o.Role = role
	o.MinCompileTime = 0
	return o
}

// TestMetricsFileMatchesStats: a writer and a reader sharing a store,
// each with hits and misses in every tier (executables, autotune,
// kernels; shared hits too), write metrics files at Close that parse with
// the Prometheus text parser and match their caches' Stats.
func TestMetricsFileMatchesStats(t *testing.T) {
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	out := t.TempDir()
	open := func(dir string, role config.Role, file string) *cache.Cache {
		c, err := cache.Open(ctx, testOptions(dir, role), nil,
			cache.WithShared(keepOpen{store}), cache.WithMetrics(metrics.FileSink(file, 0o600), time.Hour))
		if err != nil {
			t.Fatal(err)
		}
		return c
	}

	wfile := filepath.Join(out, "writer.prom")
	w := open(t.TempDir(), config.RoleWriter, wfile)
	// p1 misses everywhere; again it hits; p2 misses its executable but
	// hits p1's kernel in both subcaches.
	compileAll(t, w, program("p1", "k1"), program("p1", "k1"), program("p2", "k1"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}

	rfile := filepath.Join(out, "reader.prom")
	r := open(t.TempDir(), config.RoleReader, rfile)
	// p1 and p2 hit in the shared store; p3 misses everywhere (and is not
	// stored); p4 misses its executable and hits k1 in the shared store.
	compileAll(t, r, program("p1", "k1"), program("p3", "k3"), program("p4", "k1"))
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		c    *cache.Cache
		file string
		role string
	}{{w, wfile, metrics.RoleWriter}, {r, rfile, metrics.RoleReader}} {
		st := tc.c.Stats()
		fams := parseFile(t, tc.file)
		checkMatches(t, tc.file, fams, st, tc.role)
		for _, tier := range []string{"executables", "autotune", "kernels"} {
			l := map[string]string{"tier": tier, "backend": "fake", "role": tc.role}
			if value(t, fams, "xlacache_hits_total", l) == 0 || value(t, fams, "xlacache_misses_total", l) == 0 {
				t.Errorf("%s: tier %s lacks hits or misses", tc.file, tier)
			}
			if tc.role == metrics.RoleReader && value(t, fams, "xlacache_shared_hits_total", l) == 0 {
				t.Errorf("%s: tier %s has no shared hits", tc.file, tier)
			}
		}
		if value(t, fams, "xlacache_compiles_total", map[string]string{"backend": "fake", "role": tc.role}) != 2 {
			t.Errorf("%s: want 2 compiles", tc.file)
		}
	}
	if st := w.Stats(); st.BytesWritten == 0 || st.SharedBytesWritten == 0 {
		t.Errorf("writer wrote or uploaded no bytes: %+v", st)
	}
	if st := r.Stats(); st.BytesWritten != 0 || st.SharedBytesWritten != 0 {
		t.Errorf("reader wrote or uploaded bytes: %+v", st)
	}
}

// parseFile parses path with the Prometheus text parser.
func parseFile(t *testing.T, path string) map[string]*dto.MetricFamily {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(f)
	if err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	return fams
}

// value returns the counter of family name with exactly labels l (0 when
// absent).
func value(t *testing.T, fams map[string]*dto.MetricFamily, name string, l map[string]string) float64 {
	t.Helper()
	v, _ := lookup(fams, name, l)
	return v
}

// lookup returns the counter of family name with exactly labels l, and
// whether there is one.
func lookup(fams map[string]*dto.MetricFamily, name string, l map[string]string) (float64, bool) {
	mf := fams[name]
	if mf == nil {
		return 0, false
	}
	for _, m := range mf.GetMetric() {
		if len(m.GetLabel()) != len(l) {
			continue
		}
		match := true
		for _, lp := range m.GetLabel() {
			if l[lp.GetName()] != lp.GetValue() {
				match = false
			}
		}
		if match {
			return m.GetCounter().GetValue(), true
		}
	}
	return 0, false
}

// sum adds up every series of family name, checking its type and role.
func sum(t *testing.T, fams map[string]*dto.MetricFamily, name, role string) float64 {
	t.Helper()
	mf := fams[name]
	if mf == nil {
		return 0
	}
	if mf.GetType() != dto.MetricType_COUNTER {
		t.Errorf("%s is a %v, want a counter", name, mf.GetType())
	}
	var s float64
	for _, m := range mf.GetMetric() {
		for _, lp := range m.GetLabel() {
			if lp.GetName() == "role" && lp.GetValue() != role {
				t.Errorf("%s has role %q, want %q", name, lp.GetValue(), role)
			}
		}
		s += m.GetCounter().GetValue()
	}
	return s
}

// checkMatches compares every series of fams with st: per tier and
// backend, per backend, per error kind, and the totals.
func checkMatches(t *testing.T, file string, fams map[string]*dto.MetricFamily, st cache.Stats, role string) {
	t.Helper()
	near := func(what string, got, want float64) {
		if math.Abs(got-want) > 1e-9*math.Max(1, math.Abs(want)) {
			t.Errorf("%s: %s = %v, stats say %v", file, what, got, want)
		}
	}
	near("hits", sum(t, fams, "xlacache_hits_total", role), float64(st.Hits))
	near("misses", sum(t, fams, "xlacache_misses_total", role), float64(st.Misses))
	near("shared hits", sum(t, fams, "xlacache_shared_hits_total", role), float64(st.SharedHits))
	near("bytes read", sum(t, fams, "xlacache_read_bytes_total", role), float64(st.BytesRead))
	near("bytes written", sum(t, fams, "xlacache_written_bytes_total", role), float64(st.BytesWritten))
	near("bytes uploaded", sum(t, fams, "xlacache_shared_written_bytes_total", role), float64(st.SharedBytesWritten))
	near("saved", sum(t, fams, "xlacache_saved_seconds_total", role), st.CompileTimeSaved.Seconds())
	near("compiles", sum(t, fams, "xlacache_compiles_total", role), float64(st.Compiles))
	near("compile seconds", sum(t, fams, "xlacache_compile_seconds_total", role), st.CompileTime.Seconds())
	var errs int64
	for kind, n := range st.Errors {
		errs += n
		byLabel := map[string]int64{metrics.NoTier: n}
		for tier, kinds := range st.TierErrors {
			label := tier
			if i := strings.LastIndex(tier, "/"); i >= 0 {
				label = tier[i+1:]
			}
			byLabel[label] += kinds[kind]
			byLabel[metrics.NoTier] -= kinds[kind]
		}
		for label, want := range byLabel {
			near("errors "+label+" "+kind, value(t, fams, "xlacache_errors_total", map[string]string{"kind": kind, "tier": label, "role": role}), float64(want))
		}
	}
	near("errors", sum(t, fams, "xlacache_errors_total", role), float64(errs))
	for b, bs := range st.Backends {
		for name, v := range bs.Tiers {
			tier := strings.TrimPrefix(name, b+"/")
			l := map[string]string{"tier": tier, "backend": b, "role": role}
			near(name+" hits", value(t, fams, "xlacache_hits_total", l), float64(v.Hits))
			near(name+" misses", value(t, fams, "xlacache_misses_total", l), float64(v.Misses))
			near(name+" shared hits", value(t, fams, "xlacache_shared_hits_total", l), float64(v.SharedHits))
			near(name+" read", value(t, fams, "xlacache_read_bytes_total", l), float64(v.BytesRead))
			near(name+" written", value(t, fams, "xlacache_written_bytes_total", l), float64(v.BytesWritten))
			near(name+" uploaded", value(t, fams, "xlacache_shared_written_bytes_total", l), float64(v.SharedBytesWritten))
			near(name+" saved", value(t, fams, "xlacache_saved_seconds_total", l), v.CompileTimeSaved.Seconds())
		}
		if b != "" {
			l := map[string]string{"backend": b, "role": role}
			near(b+" compiles", value(t, fams, "xlacache_compiles_total", l), float64(bs.Compiles))
			near(b+" compile seconds", value(t, fams, "xlacache_compile_seconds_total", l), bs.CompileTime.Seconds())
		}
	}
	if st.Hits+st.Misses == 0 {
		t.Errorf("%s: the run counted nothing", file)
	}
}

// TestMetricsFileFromProcesses: real processes opened with xlacache.Open
// and XLACACHE_METRICS_FILE, a writer then a reader on one directory,
// each leave a metrics file that matches the Stats it reports.
func TestMetricsFileFromProcesses(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "cache")
	out := t.TempDir()
	var before map[string]string // the directory as the writer left it
	for _, role := range []string{"writer", "reader"} {
		if role == "reader" {
			before = snapshot(t, dir)
		}
		file := filepath.Join(out, role+".prom")
		statsFile := filepath.Join(out, role+".json")
		cmd := exec.Command(os.Args[0], "-test.run=^TestMetricsChild$")
		cmd.Env = append(os.Environ(), "XLACACHE_METRICS_CHILD="+statsFile,
			config.EnvDir+"="+dir, config.EnvRole+"="+role, config.EnvMinCompileTime+"=0",
			config.EnvMetricsFile+"="+file, config.EnvSharedURL+"=")
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("%s process: %v\n%s", role, err, b)
		}
		b, err := os.ReadFile(statsFile)
		if err != nil {
			t.Fatal(err)
		}
		var st cache.Stats
		if err := json.Unmarshal(b, &st); err != nil {
			t.Fatal(err)
		}
		fams := parseFile(t, file)
		checkMatches(t, file, fams, st, role)
		l := map[string]string{"tier": "executables", "backend": "fake", "role": role}
		if role == "reader" && value(t, fams, "xlacache_hits_total", l) != 3 {
			t.Errorf("reader: want 3 executable hits, stats %+v", st)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("metrics file mode: %v %v", fi, err)
		}
	}
	// The reader reported through its metrics file only: it wrote nothing
	// in the cache directory.
	if after := snapshot(t, dir); !maps.Equal(before, after) {
		t.Errorf("the reader changed the cache directory:\nbefore %v\nafter  %v", before, after)
	}
}

// snapshot describes every file and directory under dir: its mode, size
// and modification time.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	m := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		m[p] = fmt.Sprintf("%v %d %d", fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestMetricsChild is the process TestMetricsFileFromProcesses starts.
func TestMetricsChild(t *testing.T) {
	statsFile := os.Getenv("XLACACHE_METRICS_CHILD")
	if statsFile == "" {
		t.Skip("started by TestMetricsFileFromProcesses only")
	}
	opts, err := config.FromEnv(os.LookupEnv)
	if err != nil {
		t.Fatal(err)
	}
	c, err := xlacache.Open(context.Background(), opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	compileAll(t, c, program("p1", "k1"), program("p2", "k2"), program("p1", "k1"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(c.Stats())
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(statsFile, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestPeriodicWritesStopAtClose: the sink runs every interval while the
// cache is open, once more at Close, and never after.
func TestPeriodicWritesStopAtClose(t *testing.T) {
	var calls atomic.Int64
	ticked := make(chan struct{}, 1)
	sink := func(*cache.Cache) error {
		calls.Add(1)
		select {
		case ticked <- struct{}{}:
		default:
		}
		return nil
	}
	c, err := cache.Open(context.Background(), testOptions(t.TempDir(), config.RoleReader), nil, cache.WithMetrics(sink, time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-ticked:
	case <-time.After(time.Minute):
		t.Fatal("no periodic write within a minute")
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	// Close waited for the goroutine: nothing may call the sink now.
	n := calls.Load()
	c.Close()
	if calls.Load() != n || n < 2 {
		t.Errorf("sink calls %d after Close (then %d); want >= 2 and no more", n, calls.Load())
	}
}

// TestSinkFailureDoesNotBreakTheCache: an unwritable metrics path is
// logged, and compiles go on.
func TestSinkFailureDoesNotBreakTheCache(t *testing.T) {
	file := filepath.Join(t.TempDir(), "missing", "dir", "x.prom")
	c, err := cache.Open(context.Background(), testOptions(t.TempDir(), config.RoleWriter), nil, cache.WithMetrics(metrics.FileSink(file, 0o600), 0))
	if err != nil {
		t.Fatal(err)
	}
	compileAll(t, c, program("p1", "k1"))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("metrics file: %v", err)
	}
}

type failingGatherer struct{}

func (failingGatherer) Gather() ([]*dto.MetricFamily, error) {
	return nil, fmt.Errorf("no metrics today")
}

// TestWriteFileAtomic: WriteFile replaces the file whole, leaves no
// temporary file, and a failed gather keeps the previous file.
func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "m.prom")
	st := cache.Stats{Hits: 1, Tiers: map[string]cache.TierStats{"executables": {Hits: 1}}, Errors: map[string]int64{"io": 2}}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.StatsCollector(st, metrics.RoleWriter))
	if err := metrics.WriteFile(path, reg); err != nil {
		t.Fatal(err)
	}
	before, _ := os.ReadFile(path)
	if err := metrics.WriteFile(path, failingGatherer{}); err == nil {
		t.Fatal("a failed gather was not reported")
	}
	after, _ := os.ReadFile(path)
	if string(before) != string(after) {
		t.Error("a failed write changed the file")
	}
	ents, _ := os.ReadDir(dir)
	if len(ents) != 1 {
		t.Errorf("directory holds %v, want only m.prom", ents)
	}
	fams := parseFile(t, path)
	// A stats file from before backends were recorded: its counts show
	// under the unknown backend.
	if v := value(t, fams, "xlacache_hits_total", map[string]string{"tier": "executables", "backend": metrics.UnknownBackend, "role": "writer"}); v != 1 {
		t.Errorf("legacy executables hits %v, want 1:\n%s", v, after)
	}
	if v := value(t, fams, "xlacache_errors_total", map[string]string{"kind": "io", "tier": metrics.NoTier, "role": "writer"}); v != 2 {
		t.Errorf("errors %v, want 2", v)
	}
}

// Errors are reported per tier, under the tier label the other per-tier
// metrics use; what no tier claims (and counts from stats files written
// before tiers were recorded) is reported under tier="none".
func TestErrorsByTier(t *testing.T) {
	st := cache.Stats{
		Errors: map[string]int64{"corrupt": 3, "io": 2, "nospace": 1},
		TierErrors: map[string]map[string]int64{
			"executables":  {"corrupt": 2},
			"cpu/autotune": {"io": 1},
			"xla/autotune": {"io": 1},
		},
	}
	byName := gatherStats(t, st)
	for _, tc := range []struct {
		kind, tier string
		want       float64
	}{
		{"corrupt", "executables", 2},
		{"corrupt", metrics.NoTier, 1},
		{"io", "autotune", 2},
		{"io", metrics.NoTier, 0},
		{"nospace", metrics.NoTier, 1},
	} {
		l := map[string]string{"kind": tc.kind, "tier": tc.tier, "role": metrics.RoleWriter}
		if got := value(t, byName, "xlacache_errors_total", l); got != tc.want {
			t.Errorf("errors %v = %v, want %v", l, got, tc.want)
		}
	}
	if got := sum(t, byName, "xlacache_errors_total", metrics.RoleWriter); got != 6 {
		t.Errorf("errors sum to %v, want 6 (every failure once)", got)
	}
}

// Counts near the top of int64 (a stats file is read from the cache
// directory; a damaged one holds anything) must not wrap around when
// several tiers report under one label: the series would go negative and
// vanish instead of staying at its largest value.
func TestErrorsByTierSaturate(t *testing.T) {
	const max = math.MaxInt64
	st := cache.Stats{
		Errors: map[string]int64{"io": max, "corrupt": 1},
		TierErrors: map[string]map[string]int64{
			"cpu/autotune":   {"io": max},
			"gomlx/autotune": {"io": max},
			"executables":    {"io": max, "corrupt": -3},
		},
	}
	byName := gatherStats(t, st)
	for _, tc := range []struct {
		kind, tier string
		want       float64
	}{
		{"io", "autotune", max},
		{"io", "executables", max},
		{"io", metrics.NoTier, 0},
		{"corrupt", metrics.NoTier, 1},
		{"corrupt", "executables", 0},
	} {
		l := map[string]string{"kind": tc.kind, "tier": tc.tier, "role": metrics.RoleWriter}
		if got := value(t, byName, "xlacache_errors_total", l); got != tc.want {
			t.Errorf("errors %v = %v, want %v", l, got, tc.want)
		}
	}
}

// gatherStats collects st's metrics as a writer's, by family name.
func gatherStats(t *testing.T, st cache.Stats) map[string]*dto.MetricFamily {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(metrics.StatsCollector(st, metrics.RoleWriter))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		byName[f.GetName()] = f
	}
	return byName
}

// TestRequireHitCompiles: a process under XLACACHE_REQUIRE_HIT counts, per
// backend, the compiles it warned about (warn) or refused (fail); hits
// count nothing, and a process that refused only still reports them.
func TestRequireHitCompiles(t *testing.T) {
	for _, tc := range []struct {
		mode           config.RequireHit
		warned, failed float64
	}{
		{config.RequireHitWarn, 2, 0},
		{config.RequireHitFail, 0, 2},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			w, err := xlacache.Open(context.Background(), testOptions(dir, config.RoleWriter), nil)
			if err != nil {
				t.Fatal(err)
			}
			compileAll(t, w, program("cached", "k1"))
			w.Close()
			o := testOptions(dir, config.RoleReader)
			o.RequireHit = tc.mode
			c, err := xlacache.Open(context.Background(), o, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			for _, p := range []cache.Program{program("cached", "k1"), program("new", "k2"), program("other", "k3")} {
				_, _, err := cache.Compile(context.Background(), c, fakeBackend{}, p)
				if (err != nil) != (tc.mode == config.RequireHitFail && p.Name != "cached") {
					t.Fatalf("compile %s: %v", p.Name, err)
				}
			}
			reg := prometheus.NewPedanticRegistry()
			reg.MustRegister(metrics.NewCollector(c))
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]*dto.MetricFamily{}
			for _, mf := range mfs {
				byName[mf.GetName()] = mf
			}
			for outcome, want := range map[string]float64{metrics.OutcomeWarned: tc.warned, metrics.OutcomeFailed: tc.failed} {
				l := map[string]string{"backend": "fake", "outcome": outcome, "role": metrics.RoleReader}
				if got := value(t, byName, "xlacache_require_hit_compiles_total", l); got != want {
					t.Errorf("require-hit %v = %v, want %v", l, got, want)
				}
			}
		})
	}
}

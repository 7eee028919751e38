package jobrun

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/internal/testneed"
	"github.com/xlacache/xlacache/internal/testsupport/s3test"
	"github.com/xlacache/xlacache/xla"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// fakeJAX is the "fakejax" child: it does what a JAX process does to the
// cache directory (on a miss, an entry keyed by what it hashes, here
// XLA_FLAGS, JAX_PLATFORMS and the device kind, and an autotune result), so that scoping and
// explanations are tested with real processes and a real server without
// a JAX installation (the real one: cmd/xlacache TestExecRealJAXTwoJAXLibs).
func fakeJAX() int {
	dir := os.Getenv(xla.EnvJAXCacheDir)
	if dir == "" {
		return 7
	}
	// The device kind (here the tag) is in JAX's key too.
	sum := sha256.Sum256([]byte(os.Getenv(xla.EnvXLAFlags) + "\x00" + os.Getenv("JAX_PLATFORMS") + "\x00" + os.Getenv("XLACACHE_RUNTIME_TAG")))
	name := filepath.Join(dir, "jit_step-"+hex.EncodeToString(sum[:])+"-cache")
	if _, err := os.Stat(name); err == nil {
		return 0 // a hit: JAX loads the entry and writes nothing
	}
	entry, err := jaxcache.Encode(jaxcache.CodecZstd, 2*time.Second, bytes.Repeat([]byte("executable;"), 500))
	if err != nil {
		return 8
	}
	if err := os.WriteFile(name, entry, 0o600); err != nil {
		return 9
	}
	at := filepath.Join(os.Getenv("XLACACHE_DIR"), filepath.FromSlash(autotuneName(int(sum[0]))))
	if err := os.MkdirAll(filepath.Dir(at), 0o700); err != nil {
		return 10
	}
	if err := os.WriteFile(at, []byte("results { fake: 1 }\n"), 0o600); err != nil {
		return 11
	}
	return 0
}

// scopeHost is one host of a job on a shared bucket, running the fakejax
// child under exec with env (KEY=VALUE) as what the launcher sets.
type scopeHost struct {
	dir string
	log bytes.Buffer
}

func runScopeHost(t *testing.T, srv *s3test.Server, h *scopeHost, env ...string) Report {
	t.Helper()
	store, err := xlacache.OpenShared(srv.SharedURL("bkt", "job"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	opts := xlacacheOpts(t, h.dir, srv.SharedURL("bkt", "job"))
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	base := append(os.Environ(), envRunChild+"=fakejax")
	base = append(base, env...)
	j := &Job{
		Opts: opts, Target: xla.TargetJAX, Support: xla.SupportForVersion(xla.DefaultVersion, xla.SourceDefault),
		Args: []string{os.Args[0]}, Env: base, Stdin: eofReader{},
		Getenv: func(k string) (string, bool) { v, ok := vars[k]; return v, ok },
		Store:  store,
		Logger: slog.New(slog.NewTextHandler(&h.log, &slog.HandlerOptions{Level: slog.LevelInfo})),
	}
	rep, err := j.Run(context.Background())
	if err != nil || rep.ExitCode != 0 {
		t.Fatalf("run: exit %d, %v\n%s", rep.ExitCode, err, h.log.String())
	}
	return rep
}

// TestRuntimeTagScopesFill is issue 24's "a host with another runtime
// tag fills nothing it cannot use": on versitygw, host A (tag v6e)
// publishes; host B (tag v7) fills none of it and says so; host C (v6e)
// fills it; a host whose runtime is unknown fills it too.
func TestRuntimeTagScopesFill(t *testing.T) {
	jaxViewRoot = t.TempDir()
	defer func() { jaxViewRoot = "/tmp" }()
	srv := s3test.Start(t, "bkt")
	srv.Setenv(t)
	a := &scopeHost{dir: t.TempDir()}
	runScopeHost(t, srv, a, "XLACACHE_RUNTIME_TAG=v6e")
	published := jaxEntries(t, a.dir)
	if len(published) != 1 {
		t.Fatalf("host A wrote %v", published)
	}
	b := &scopeHost{dir: t.TempDir()}
	rep := runScopeHost(t, srv, b, "XLACACHE_RUNTIME_TAG=v7")
	if rep.Runtime.Tag != "v7" {
		t.Errorf("runtime %+v", rep.Runtime)
	}
	st := rep.Fill.Stats
	packs, files, bytes := st.SkippedPacks()
	if st.Files != 0 || st.PacksFetched != 0 || packs == 0 || files < 2 || bytes == 0 {
		t.Fatalf("host B filled %d files from %d packs, skipped %d packs (%d files, %d bytes)\n%s", st.Files, st.PacksFetched, packs, files, bytes, b.log.String())
	}
	if !strings.Contains(b.log.String(), "of runtime XLACACHE_RUNTIME_TAG v6e (this host: XLACACHE_RUNTIME_TAG v7)") {
		t.Errorf("the report does not say what was skipped:\n%s", b.log.String())
	}
	if _, err := os.Stat(filepath.Join(b.dir, published[0]+"-cache")); err == nil {
		t.Error("host B has host A's entry")
	}
	for _, c := range []struct {
		name string
		env  []string
	}{{"same tag", []string{"XLACACHE_RUNTIME_TAG=v6e"}}, {"unknown runtime", nil}} {
		h := &scopeHost{dir: t.TempDir()}
		rep := runScopeHost(t, srv, h, c.env...)
		if _, err := os.Stat(filepath.Join(h.dir, published[0]+"-cache")); err != nil {
			t.Errorf("%s: host A's entry not filled (%d files, skipped %+v)", c.name, rep.Fill.Stats.Files, rep.Fill.Stats.Skipped)
		}
	}
}

// TestJAXMismatchNamesSetting: host A and host B run the same (fake) JAX
// program with XLA_FLAGS differing in one flag; B's JAX misses and
// compiles, and exec's report names the flag.
func TestJAXMismatchNamesSetting(t *testing.T) {
	jaxViewRoot = t.TempDir()
	defer func() { jaxViewRoot = "/tmp" }()
	srv := s3test.Start(t, "bkt")
	srv.Setenv(t)
	a := &scopeHost{dir: t.TempDir()}
	runScopeHost(t, srv, a, "XLA_FLAGS=--xla_foo=1 --xla_same=x", "JAX_PLATFORMS=cpu")
	b := &scopeHost{dir: t.TempDir()}
	rep := runScopeHost(t, srv, b, "XLA_FLAGS=--xla_foo=2 --xla_same=x", "JAX_PLATFORMS=cpu")
	if len(rep.JAXMismatches) != 1 {
		t.Fatalf("mismatches %+v\n%s", rep.JAXMismatches, b.log.String())
	}
	m := rep.JAXMismatches[0]
	want := "XLA_FLAGS differ in --xla_foo (1 vs 2)"
	if m.Module != "jit_step" || len(m.Differences) != 1 || m.Differences[0].String() != want {
		t.Fatalf("mismatch %s, want one difference: %s", m, want)
	}
	if !strings.Contains(b.log.String(), want) {
		t.Errorf("the report does not name it:\n%s", b.log.String())
	}
	// The same settings on a third host: A's entry is filled and hit, so
	// nothing is reported.
	c := &scopeHost{dir: t.TempDir()}
	rep = runScopeHost(t, srv, c, "XLA_FLAGS=--xla_foo=1 --xla_same=x", "JAX_PLATFORMS=cpu")
	if len(rep.JAXMismatches) != 0 {
		t.Errorf("host C: %+v", rep.JAXMismatches)
	}
	// This host's origin is kept for `xlacache explain`.
	root, err := os.OpenRoot(b.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer root.Close()
	o, ok, err := hostfill.LocalOrigin(root)
	if !ok || err != nil || !strings.Contains(o.Settings["env:XLA_FLAGS"], "--xla_foo=2") {
		t.Errorf("local origin %+v %v %v", o, ok, err)
	}
}

func jaxEntries(t *testing.T, dir string) []string {
	t.Helper()
	d, err := jaxcache.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, e := range d.Entries {
		keys = append(keys, e.Key)
	}
	return keys
}

// xlacacheOpts are the options of an exec process on a host with dir and
// the shared tier at url: every subcache, entries stored whatever their
// compile time.
func xlacacheOpts(t *testing.T, dir, url string) config.Options {
	t.Helper()
	opts, err := config.FromEnv(func(k string) (string, bool) {
		v, ok := map[string]string{"XLACACHE_DIR": dir, "XLACACHE_ENABLE_XLA_CACHES": "all",
			"XLACACHE_MIN_COMPILE_TIME_SECS": "0", "XLACACHE_SHARED_URL": url, "XLACACHE_WAIT_SECS": "60"}[k]
		return v, ok
	})
	if err != nil {
		t.Fatal(err)
	}
	return opts
}

// TestDetectJAXLib reads jaxlib's version from the peers' real Python
// environments without importing jax.
func TestDetectJAXLib(t *testing.T) {
	for _, c := range []struct{ list, want string }{{"jax-0.12.0.1", "0.12.0.1"}, {"jax-0.4.36", "0.4.36"}} {
		t.Run(c.want, func(t *testing.T) {
			py := testneed.PeerPython(t, c.list)
			got, err := DetectJAXLib(context.Background(), py, os.Environ())
			if err != nil || got != c.want {
				t.Fatalf("%s: %q, %v; want %q", py, got, err, c.want)
			}
		})
	}
	// Not a Python's name: nothing is started.
	if got, err := DetectJAXLib(context.Background(), "/bin/false", nil); got != "" || err != nil {
		t.Errorf("/bin/false: %q, %v", got, err)
	}
}

func TestDescribeDifferences(t *testing.T) {
	base := func(jaxlib, flags string) hostfill.Origin {
		return hostfill.Origin{Runtime: hostfill.Runtime{JAXLib: jaxlib, Platforms: "cpu"},
			Settings: map[string]string{"env:XLA_FLAGS": flags, "env:JAX_PLATFORMS": "cpu"}}
	}
	for _, c := range []struct {
		theirs, ours hostfill.Origin
		want         string
	}{
		{base("0.12.0.1", "--a=1"), base("0.4.36", "--a=1"), "jaxlib 0.12.0.1 vs 0.4.36"},
		{base("1", "--a=1 --b"), base("1", "--a=2"), "XLA_FLAGS differ in --a (1 vs 2), --b (set vs unset)"},
		{base("1", "--a=1  --b=2"), base("1", "--b=2 --a=1"), ""}, // JAX sorts what it hashes
		{base("1", "/etc/flags"), base("1", "--b=2"), "XLA_FLAGS /etc/flags vs --b=2"},
		{base("1", "--a=1"), base("1", "--a=1"), ""},
		// A pack published before origins records no settings: nothing
		// is claimed about them.
		{hostfill.Origin{}, base("1", "--a=1"), ""},
		{hostfill.Origin{Settings: map[string]string{"opt:xla_gpu_kernel_cache_file": "/a/k"}},
			hostfill.Origin{Settings: map[string]string{"opt:xla_gpu_kernel_cache_file": "/b/k"}}, "compile option xla_gpu_kernel_cache_file /a/k vs /b/k"},
	} {
		var got []string
		for _, d := range DescribeDifferences(c.theirs, c.ours) {
			got = append(got, d.String())
		}
		if s := strings.Join(got, "; "); s != c.want {
			t.Errorf("%+v vs %+v: %q, want %q", c.theirs, c.ours, s, c.want)
		}
	}
}

// TestDescribeDifferencesAcrossReleases: the compile options JAX sets
// follow from its release, so with jaxlib differing only jaxlib and the
// variables are named.
func TestDescribeDifferencesAcrossReleases(t *testing.T) {
	env := []string{"JAX_COMPILATION_CACHE_DIR=/c", "JAX_PERSISTENT_CACHE_ENABLE_XLA_CACHES=all", "XLA_FLAGS=--a=1"}
	old := hostfill.Origin{Runtime: hostfill.Runtime{JAXLib: "0.4.36"}, Settings: jaxSettings(env, 0, "0.4.36")}
	cur := hostfill.Origin{Runtime: hostfill.Runtime{JAXLib: "0.12.0.1"}, Settings: jaxSettings(env, 0, "0.12.0.1")}
	if len(old.Settings) == len(cur.Settings) {
		t.Fatalf("the model hashes the same options for both releases: %v", old.Settings)
	}
	ds := DescribeDifferences(old, cur)
	if len(ds) != 1 || ds[0].String() != "jaxlib 0.4.36 vs 0.12.0.1" {
		t.Errorf("%v", ds)
	}
}

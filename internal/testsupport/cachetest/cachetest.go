// Package cachetest builds cache directories for tests of the packages and
// commands that operate on whole directories (export and import, sync, the
// CLI's admin commands, the prune of a directory shared with JAX).
package cachetest

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// Populate puts an entry in each of three tiers (executables, cpu/autotune,
// cpu/kernels) of dir through a writer cache that signs with key (none when
// empty), and writes an XLA autotune file and kernel cache file. It returns
// the entries as "<tier>/<key>", sorted.
func Populate(t testing.TB, dir string, key []byte) []string {
	t.Helper()
	return PopulateKeys(t, dir, sign.NewHMAC(key))
}

// PopulateKeys is Populate signing with signing (an Ed25519 writer's, an
// HMAC key, or nil for unsigned entries).
func PopulateKeys(t testing.TB, dir string, signing *sign.Keys) []string {
	t.Helper()
	o := config.Defaults()
	o.Dir, o.MinCompileTime, o.Role, o.SigningKey = dir, 0, config.RoleWriter, signing
	c, err := cache.Open(context.Background(), o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var keys []string
	for i, tier := range []string{cache.ExecutablesTier, "cpu/autotune", "cpu/kernels"} {
		k := cache.NewKey("mod"+string(rune('a'+i)), []cache.KeyPart{{Name: "program", Data: []byte(tier)}})
		if err := c.Tier(tier).Put(context.Background(), k, []byte("payload of "+tier), time.Second); err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tier+"/"+k.String())
	}
	d := layout.Dir(dir)
	if err := os.MkdirAll(d.XLAAutotune(), 0o700); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(d.XLAAutotune(), AutotuneFile), []byte(AutotuneContent), 0o600)
	os.WriteFile(d.XLAKernel(), []byte{0x0a, 0x01, 'k'}, 0o600)
	// Leave the directory settled: Prune waits for the trim Open started
	// and records a fresh recount. Cut short by Close instead, that trim
	// would leave the next writer's Open to start another, which then
	// races the files a test plants before calling Prune itself (it
	// removed a planted stale temp file first now and then).
	if _, err := c.Prune(context.Background(), 0, false); err != nil {
		t.Fatal(err)
	}
	slices.Sort(keys)
	return keys
}

// The autotune file Populate writes.
const (
	AutotuneFile    = "QUJD.textproto"
	AutotuneContent = "tuned"
)

// Listed returns the entries of dir as "<tier>/<key>", sorted, and fails
// the test on a damaged one.
func Listed(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := cache.List(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if e.Err != "" {
			t.Fatalf("damaged entry %s: %s", e.Path, e.Err)
		}
		out = append(out, e.Tier+"/"+e.Key)
	}
	slices.Sort(out)
	return out
}

// MixedFile is one evictable unit of the fixture, in last-use order.
type MixedFile struct {
	Name  string   // "X0", "J0", "sub", ...
	Paths []string // the files (a JAX entry has two)
	Size  int64
	Key   string // cache or JAX key ("" for the subcache file)
}

// MixedDir builds a directory shared by xlacache and JAX holding three xlacache entries (two
// executables, one cpu kernel; written with cache.Open and Tier.Put), three
// JAX entries (jaxcache.Encode and WriteEntry) and an XLA autotune file,
// all of module jit_f, with last uses interleaved oldest first:
// sub, X0, J0, X1, J1, X2, J2. Payloads are random so that sizes do not
// depend on compression.
func MixedDir(t testing.TB) (string, []MixedFile) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	o := config.Defaults()
	o.Dir, o.MinCompileTime, o.Role = dir, 0, config.RoleWriter
	c, err := cache.Open(ctx, o, nil)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	random := func(n int) []byte {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		return b
	}
	var ownKeys []string
	for i, tier := range []string{cache.ExecutablesTier, cache.ExecutablesTier, "cpu/kernels"} {
		k := cache.NewKey("jit_f", []cache.KeyPart{{Name: "program", Data: []byte{byte(i)}}})
		if err := c.Tier(tier).Put(ctx, k, random(2000+100*i), time.Second); err != nil {
			t.Fatal(err)
		}
		ownKeys = append(ownKeys, k.String())
	}
	// Settled, as in Populate: no trim left for the next writer's Open.
	if _, err := c.Prune(ctx, 0, false); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	listed, err := cache.List(ctx, dir)
	if err != nil || len(listed) != 3 {
		t.Fatalf("list: %v %+v", err, listed)
	}
	byKey := map[string]cache.EntryInfo{}
	for _, e := range listed {
		byKey[e.Key] = e
	}
	base := time.Now().Add(-10 * 24 * time.Hour).Truncate(time.Second)
	at := func(i int) time.Time { return base.Add(time.Duration(i) * time.Hour) }
	var files []MixedFile
	sub := filepath.Join(dir, jaxcache.AutotuneDirName, "QUJD.textproto")
	os.MkdirAll(filepath.Dir(sub), 0o700)
	if err := os.WriteFile(sub, []byte("version: 3\n"+strings.Repeat("result {}\n", 50)), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(sub, at(0), at(0))
	st, _ := os.Stat(sub)
	files = append(files, MixedFile{Name: "sub", Paths: []string{sub}, Size: st.Size()})
	for i := range 3 {
		e := byKey[ownKeys[i]]
		if err := os.Chtimes(e.Path, at(1+2*i), at(1+2*i)); err != nil {
			t.Fatal(err)
		}
		files = append(files, MixedFile{Name: "X" + string(rune('0'+i)), Paths: []string{e.Path}, Size: e.Size, Key: e.Key})
		data, err := jaxcache.Encode(jaxcache.CodecZlib, 3*time.Second, random(1500+100*i))
		if err != nil {
			t.Fatal(err)
		}
		k := "jit_f-" + strings.Repeat(string("abc"[i]), 64)
		if err := jaxcache.WriteEntry(dir, k, data, at(2+2*i), 0); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, k+jaxcache.CacheSuffix)
		files = append(files, MixedFile{Name: "J" + string(rune('0'+i)), Paths: []string{p, filepath.Join(dir, k+jaxcache.AtimeSuffix)}, Size: int64(len(data)) + 8, Key: k})
	}
	return dir, files
}

// DirTotal is what the bound covers: xlacache's files plus JAX's entries,
// XLA's subcaches once.
func DirTotal(t testing.TB, dir string) int64 {
	t.Helper()
	u, err := cache.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	d, err := jaxcache.Scan(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	return u.Bytes + d.Stats().OwnBytes()
}

package hostfill

import (
	"bytes"
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// countingStore counts the requests made to a store.
type countingStore struct {
	blob.Store
	n atomic.Int64
}

func (c *countingStore) Get(ctx context.Context, name string) ([]byte, error) {
	c.n.Add(1)
	return c.Store.Get(ctx, name)
}

func (c *countingStore) Open(ctx context.Context, name string) (io.ReadCloser, blob.Info, error) {
	c.n.Add(1)
	return c.Store.Open(ctx, name)
}

func (c *countingStore) List(ctx context.Context, prefix string) ([]blob.Info, error) {
	c.n.Add(1)
	return c.Store.List(ctx, prefix)
}

func (c *countingStore) PutIfAbsent(ctx context.Context, name string, data []byte) error {
	c.n.Add(1)
	return c.Store.PutIfAbsent(ctx, name, data)
}

func (c *countingStore) Stat(ctx context.Context, name string) (blob.Info, error) {
	c.n.Add(1)
	return c.Store.Stat(ctx, name)
}

// hostDir is one host's local directory.
type hostDir struct {
	path string
	o    Options
}

func newHost(t testing.TB, key []byte) hostDir {
	t.Helper()
	dir := t.TempDir()
	root, err := os.OpenRoot(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { root.Close() })
	return hostDir{dir, Options{Root: root, SigningKey: sign.NewHMAC(key), Kernels: true}}
}

func (h hostDir) write(t testing.TB, rel string, data []byte) {
	t.Helper()
	p := filepath.Join(h.path, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

func (h hostDir) read(t testing.TB, rel string) ([]byte, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(h.path, filepath.FromSlash(rel)))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return b, true
}

// jaxKey makes a JAX key for module m and index i.
func jaxKey(m string, i int) string {
	h := fmt.Sprintf("%064x", i+1)
	return m + "-" + h
}

// jaxEntry encodes an entry the way JAX's compilation_cache.py does.
func jaxEntry(t testing.TB, c jaxcache.Codec, secs int, exe []byte) []byte {
	t.Helper()
	b, err := jaxcache.Encode(c, time.Duration(secs)*time.Second, exe)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func autotuneName(i int) string {
	return fmt.Sprintf("xla_gpu_per_fusion_autotune_cache_dir/%s.textproto", hex.EncodeToString([]byte(fmt.Sprintf("file%06d", i))))
}

func copyFixture(t *testing.T, h hostDir, src string) []string {
	t.Helper()
	ents, err := os.ReadDir(src)
	if err != nil {
		t.Skipf("fixtures: %v", err)
	}
	var names []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		h.write(t, e.Name(), b)
		names = append(names, e.Name())
	}
	return names
}

const fixtures = "../../shared/fixtures/jax-cache"

// TestFixturesTravelByteIdentical: directories JAX's own LRUCache wrote
// (zstd and zlib entries, with and without "-atime" files) are published
// by one host and filled into another byte for byte; JAX's "-atime" and
// lock files stay local.
func TestFixturesTravelByteIdentical(t *testing.T) {
	for _, sub := range []string{"bounded", "unbounded"} {
		t.Run(sub, func(t *testing.T) {
			store := memblob.New(memblob.Options{})
			key := []byte("job key")
			a, b := newHost(t, key), newHost(t, key)
			names := copyFixture(t, a, filepath.Join(fixtures, sub))
			a.write(t, ".lockfile", nil)
			p := newPublisher(store, a.o, nil)
			if err := p.Publish(context.Background(), true); err != nil {
				t.Fatal(err)
			}
			st, err := fill(context.Background(), store, b.o)
			if err != nil {
				t.Fatal(err)
			}
			entries := 0
			for _, n := range names {
				got, ok := b.read(t, n)
				if strings.HasSuffix(n, "-cache") {
					entries++
					want, _ := a.read(t, n)
					if !ok || !bytes.Equal(got, want) {
						t.Errorf("%s: not byte-identical on the second host (present %v)", n, ok)
					}
					if _, _, err := jaxcache.VerifyFile(filepath.Join(b.path, n)); err != nil {
						t.Errorf("%s: %v", n, err)
					}
				} else if ok {
					t.Errorf("%s travelled", n)
				}
			}
			if entries == 0 || st.Files != entries || p.Stats().Files != entries {
				t.Errorf("entries %d, filled %d, published %d", entries, st.Files, p.Stats().Files)
			}
			if _, ok := b.read(t, ".lockfile"); ok {
				t.Error(".lockfile travelled")
			}
		})
	}
}

// TestFillAllKinds: JAX entries (zstd, zlib), autotune files, an xlacache
// entry and the kernel cache reach a second host, in fewer requests than
// files, and nothing is fetched twice.
func TestFillAllKinds(t *testing.T) {
	ctx := context.Background()
	mem := memblob.New(memblob.Options{})
	store := &countingStore{Store: mem}
	a, b := newHost(t, nil), newHost(t, nil)
	want := map[string][]byte{}
	for i := 0; i < 3; i++ {
		want[jaxKey("jit_zstd", i)+"-cache"] = jaxEntry(t, jaxcache.CodecZstd, i+1, []byte(strings.Repeat("z", 100+i)))
		want[jaxKey("jit_zlib", i)+"-cache"] = jaxEntry(t, jaxcache.CodecZlib, i+2, []byte(strings.Repeat("l", 100+i)))
	}
	for i := 0; i < 200; i++ {
		want[autotuneName(i)] = []byte(fmt.Sprintf("results { run: %d }\n", i))
	}
	for rel, data := range want {
		a.write(t, rel, data)
	}
	kernels := []byte{0x0a, 0x03, 'a', 'b', 'c'} // one length-delimited field
	a.write(t, "xla_gpu_kernel_cache_file", kernels)
	a.o.PackFiles = 64
	p := newPublisher(store, a.o, nil)
	if err := p.Publish(ctx, true); err != nil {
		t.Fatal(err)
	}
	if ps := p.Stats(); ps.Files != len(want) || ps.Packs < 4 {
		t.Fatalf("published %+v", ps)
	}
	store.n.Store(0)
	st, err := fill(ctx, store, b.o)
	if err != nil {
		t.Fatal(err)
	}
	for rel, data := range want {
		if got, ok := b.read(t, rel); !ok || !bytes.Equal(got, data) {
			t.Errorf("%s: missing or different", rel)
		}
	}
	if got, _ := b.read(t, "xla_gpu_kernel_cache_file"); !bytes.Equal(got, kernels) {
		t.Errorf("kernel cache %x, want %x", got, kernels)
	}
	reqs := store.n.Load()
	if st.Files != len(want) || reqs*10 > int64(len(want)) {
		t.Errorf("filled %d files in %d requests", st.Files, reqs)
	}
	// A second fill fetches no pack, and no index (the local copies).
	store.n.Store(0)
	st, err = fill(ctx, store, b.o)
	if err != nil || st.Files != 0 || st.PacksFetched != 0 || st.IndexesFetched != 0 {
		t.Errorf("second fill: files %d packs %d indexes %d, %v", st.Files, st.PacksFetched, st.IndexesFetched, err)
	}
	if n := store.n.Load(); n > 3 {
		t.Errorf("second fill made %d requests", n)
	}
	// The publisher knows what the store has: nothing is sent again.
	p2 := newPublisher(store, b.o, st.Remote)
	if err := p2.Publish(ctx, false); err != nil || p2.Stats().Files != 0 {
		t.Errorf("republished %+v, %v", p2.Stats(), err)
	}
}

// TestFillNeverReplacesLocal: a local file keeps its bytes whatever the
// store holds under its name.
func TestFillNeverReplacesLocal(t *testing.T) {
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	a, b := newHost(t, nil), newHost(t, nil)
	rel := autotuneName(1)
	a.write(t, rel, []byte("results { remote: 1 }\n"))
	b.write(t, rel, []byte("results { local: 1 }\n"))
	if err := newPublisher(store, a.o, nil).Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	st, err := fill(ctx, store, b.o)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := b.read(t, rel); string(got) != "results { local: 1 }\n" || st.Present != 1 || st.Files != 0 {
		t.Errorf("local file %q, present %d files %d", got, st.Present, st.Files)
	}
}

// TestForgedPackRefused: with a signing key, files sealed with another key
// or unsigned, a pack whose content does not match its index, and a
// damaged pack never reach the directory.
func TestForgedPackRefused(t *testing.T) {
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	key := []byte("the job's key")
	b := newHost(t, key)
	forge := func(rel string, data []byte, k []byte) {
		m, err := seal(rel, data, sign.NewHMAC(k), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		pack, index, err := EncodePack([]Member{m})
		if err != nil {
			t.Fatal(err)
		}
		id := packID(pack)
		store.PutIfAbsent(ctx, Prefix+id+packSuffix, pack)
		store.PutIfAbsent(ctx, Prefix+id+indexSuffix, index)
	}
	forge(autotuneName(1), []byte("results { evil: 1 }\n"), []byte("attacker's key"))
	forge(autotuneName(2), []byte("results { evil: 2 }\n"), nil)
	forge(jaxKey("jit_evil", 1)+"-cache", []byte("not a JAX entry"), key) // signed, but not of its kind
	// A pack that swaps content against its index.
	m1, _ := seal(autotuneName(3), []byte("results { good: 3 }\n"), sign.NewHMAC(key), time.Now())
	m2, _ := seal(autotuneName(4), []byte("results { evil: 4 }\n"), sign.NewHMAC(key), time.Now())
	_, index, _ := EncodePack([]Member{m1})
	m2.Name, m2.Digest = m1.Name, m1.Digest
	pack, _, _ := EncodePack([]Member{m2})
	id := packID(pack)
	store.PutIfAbsent(ctx, Prefix+id+packSuffix, pack)
	store.PutIfAbsent(ctx, Prefix+id+indexSuffix, index)

	st, err := fill(ctx, store, b.o)
	if err != nil {
		t.Fatal(err)
	}
	for _, rel := range []string{autotuneName(1), autotuneName(2), autotuneName(3), jaxKey("jit_evil", 1) + "-cache"} {
		if _, ok := b.read(t, rel); ok {
			t.Errorf("%s reached the directory", rel)
		}
	}
	if st.Refused != 4 || st.Files != 0 {
		t.Errorf("refused %d files %d", st.Refused, st.Files)
	}
	// A good copy published later is installed: a bad pack published
	// first does not keep the file from the host.
	forge(autotuneName(3), []byte("results { good: 3 }\n"), key)
	st, err = fill(ctx, store, b.o)
	if got, _ := b.read(t, autotuneName(3)); err != nil || string(got) != "results { good: 3 }\n" || st.Files != 1 {
		t.Errorf("good copy: %q, files %d refused %d packs %d indexes %d, %v", got, st.Files, st.Refused, st.PacksFetched, st.Indexes, err)
	}
}

// TestPartialJAXEntryNotPublished: a JAX entry being written in place is
// published only once its stream decodes whole.
func TestPartialJAXEntryNotPublished(t *testing.T) {
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	rel := jaxKey("jit_f", 7) + "-cache"
	for _, c := range []jaxcache.Codec{jaxcache.CodecZstd, jaxcache.CodecZlib} {
		a := newHost(t, nil)
		full := jaxEntry(t, c, 3, bytes.Repeat([]byte("executable "), 1000))
		p := newPublisher(store, a.o, nil)
		for _, n := range []int{1, 4, len(full) / 2, len(full) - 1} {
			a.write(t, rel, full[:n])
			if err := p.Publish(ctx, false); err != nil {
				t.Fatal(err)
			}
			if st := p.Stats(); st.Files != 0 {
				t.Fatalf("%s: published after %d of %d bytes", c, n, len(full))
			}
		}
		a.write(t, rel, full)
		if err := p.Publish(ctx, false); err != nil {
			t.Fatal(err)
		}
		if st := p.Stats(); st.Files != 1 {
			t.Errorf("%s: complete entry not published: %+v", c, st)
		}
	}
}

// failingStore fails every call as an unreachable store does.
type failingStore struct{ blob.Store }

func (failingStore) List(context.Context, string) ([]blob.Info, error) {
	return nil, fmt.Errorf("test: %w", blob.ErrUnavailable)
}

func (failingStore) PutIfAbsent(context.Context, string, []byte) error {
	return fmt.Errorf("test: %w", blob.ErrUnavailable)
}

// TestStoreDown: an unreachable store makes fill and publish fail with
// ErrUnavailable, writes nothing, and the next publish retries.
func TestStoreDown(t *testing.T) {
	ctx := context.Background()
	a := newHost(t, nil)
	a.o.Kernels = false
	a.write(t, autotuneName(1), []byte("results {}\n"))
	down := failingStore{memblob.New(memblob.Options{})}
	if _, err := fill(ctx, down, a.o); !errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("fill: %v", err)
	}
	p := newPublisher(down, a.o, nil)
	if err := p.Publish(ctx, false); !errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("publish: %v", err)
	}
	up := memblob.New(memblob.Options{})
	p.store = up
	if err := p.Publish(ctx, false); err != nil || p.Stats().Files != 1 {
		t.Errorf("publish after recovery: %+v, %v", p.Stats(), err)
	}
}

// TestCoordinatedFillOnce: a process that finds a fill finished after it
// started uses it.
func TestCoordinatedFillOnce(t *testing.T) {
	ctx := context.Background()
	store := &countingStore{Store: memblob.New(memblob.Options{})}
	b := newHost(t, nil)
	start := time.Now()
	r1, err := CoordinatedFill(ctx, store, b.o, start, time.Minute)
	if err != nil || !r1.Filled {
		t.Fatalf("first: %+v %v", r1, err)
	}
	n := store.n.Load()
	r2, err := CoordinatedFill(ctx, store, b.o, start, time.Minute)
	if err != nil || r2.Filled || store.n.Load() != n {
		t.Errorf("second: %+v %v, %d requests", r2, err, store.n.Load()-n)
	}
	// A process started after that fill fills again (cheaply).
	r3, err := CoordinatedFill(ctx, store, b.o, time.Now().Add(time.Second), time.Minute)
	if err != nil || !r3.Filled {
		t.Errorf("later process: %+v %v", r3, err)
	}
}

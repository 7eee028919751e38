package dirsync

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/xlacache/xlacache/blob"
	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
)

// populated fills a new cache directory with cachetest.Populate (entries
// signed with key, none when nil) and returns an empty in-memory store to
// sync it with, the directory and its entries.
func populated(t *testing.T, key []byte) (*memblob.Store, string, []string) {
	t.Helper()
	dir := t.TempDir()
	return memblob.New(memblob.Options{}), dir, cachetest.Populate(t, dir, key)
}

// open opens a cache on dir in role with XLA's subcaches on.
func open(t *testing.T, dir string, key []byte, role config.Role) *cache.Cache {
	t.Helper()
	return openWith(t, dir, key, func(o *config.Options) {
		o.Role = role
		o.Subcaches = []config.Subcache{config.SubcacheAutotune, config.SubcacheKernels}
	})
}

// openWith opens a writer cache on dir signing with key (none when nil),
// storing every compile, with the options further changed by mod; the
// cache is closed when the test ends.
func openWith(t *testing.T, dir string, key []byte, mod func(*config.Options)) *cache.Cache {
	t.Helper()
	o := config.Defaults()
	o.Dir, o.MinCompileTime, o.Role, o.SigningKey = dir, 0, config.RoleWriter, sign.NewHMAC(key)
	mod(&o)
	c, err := cache.Open(context.Background(), o, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func TestPushPull(t *testing.T) {
	ctx := context.Background()
	key := []byte("sync-key")
	store, adir, keys := populated(t, key)
	a := open(t, adir, key, config.RoleWriter)

	res, err := Push(ctx, a, store)
	if err != nil || res.Entries != 3 || res.Raw.Pushed != 2 {
		t.Fatalf("push: %+v %v", res, err)
	}
	if res, err = Push(ctx, a, store); err != nil || res.Entries != 0 || res.Skipped != 3 {
		t.Fatalf("second push: %+v %v", res, err)
	}
	bdir := t.TempDir()
	b := open(t, bdir, key, config.RoleWriter)
	if res, err = Pull(ctx, b, store); err != nil || res.Entries != 3 || res.Raw.Pulled != 2 {
		t.Fatalf("pull: %+v %v", res, err)
	}
	if got := cachetest.Listed(t, bdir); !slices.Equal(got, keys) {
		t.Fatalf("pulled %q, want %q", got, keys)
	}
	if data, err := os.ReadFile(filepath.Join(layout.Dir(bdir).XLAAutotune(), cachetest.AutotuneFile)); err != nil || string(data) != cachetest.AutotuneContent {
		t.Errorf("autotune file not pulled: %q %v", data, err)
	}
	// A copy is not a lookup.
	if st := b.Stats(); st.Hits != 0 || st.Misses != 0 {
		t.Errorf("pull counted lookups: %+v", st)
	}
	if res, err = Pull(ctx, b, store); err != nil || res.Entries != 0 || res.Skipped != 3 {
		t.Errorf("second pull: %+v %v", res, err)
	}
	// A forged object and another reader's key: refused, never written.
	forged := cache.NewKey("forged", nil).String()
	store.PutRaw(layout.ObjectName(cache.ExecutablesTier, forged), []byte("XLCE forged"))
	cdir := t.TempDir()
	c := open(t, cdir, []byte("wrong-key"), config.RoleWriter)
	res, err = Pull(ctx, c, store)
	if err == nil || res.Entries != 0 || res.Refused != 4 {
		t.Errorf("pull with the wrong key: %+v %v", res, err)
	}
	if got := cachetest.Listed(t, cdir); len(got) != 0 {
		t.Errorf("refused entries written: %q", got)
	}
	// A reader does not write its directory.
	r := open(t, bdir, key, config.RoleReader)
	if _, err := Pull(ctx, r, store); err == nil {
		t.Error("pull into a reader cache: no error")
	}
}

// TestPushRefusesDamagedAndStopsOnOutage: a damaged local entry is not
// published; an unreachable store stops the push with its error.
func TestPushRefusesDamagedAndStopsOnOutage(t *testing.T) {
	ctx := context.Background()
	store, adir, _ := populated(t, nil)
	a := open(t, adir, nil, config.RoleWriter)
	ents, _ := cache.List(ctx, a.Dir())
	data, _ := os.ReadFile(ents[0].Path)
	data[len(data)-6] ^= 1
	os.WriteFile(ents[0].Path, data, 0o600)
	res, err := Push(ctx, a, store)
	if err == nil || res.Refused != 1 || res.Entries != 2 {
		t.Errorf("push with a damaged entry: %+v %v", res, err)
	}
	if _, gerr := store.Get(ctx, layout.ObjectName(ents[0].Tier, ents[0].Key)); !errors.Is(gerr, blob.ErrNotExist) {
		t.Errorf("damaged entry published: %v", gerr)
	}
	store.SetUnavailable(true, nil)
	if _, err := Push(ctx, a, store); !errors.Is(err, blob.ErrUnavailable) {
		t.Errorf("push to a store that is down: %v", err)
	}
}

package dirsync

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
)

// An Ed25519 writer pushes; a process holding only the public key can
// neither push (not even entries that verify) nor repair, and leaves the
// store as it found it, damaged objects included.
func TestPushEd25519VerifyOnly(t *testing.T) {
	ctx := context.Background()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	writer, _ := sign.NewEd25519(priv)
	reader, _ := sign.NewEd25519(nil, priv.Public().(ed25519.PublicKey))
	openKeys := func(dir string, keys *sign.Keys) *cache.Cache {
		o := config.Defaults()
		o.Dir, o.MinCompileTime, o.Role, o.SigningKey = dir, 0, config.RoleWriter, keys
		o.Subcaches = []config.Subcache{config.SubcacheAutotune, config.SubcacheKernels}
		c, err := cache.Open(ctx, o, slog.New(slog.DiscardHandler))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	store := memblob.New(memblob.Options{})
	adir := t.TempDir()
	keys := cachetest.PopulateKeys(t, adir, writer)
	if res, err := Push(ctx, openKeys(adir, writer), store); err != nil || res.Entries != 3 {
		t.Fatalf("writer's push: %+v %v", res, err)
	}
	// Damage one object: a writer would replace it, a reader must not.
	i := slices.IndexFunc(keys, func(k string) bool { return strings.HasPrefix(k, cache.ExecutablesTier+"/") })
	damaged := layout.ObjectName(cache.ExecutablesTier, strings.TrimPrefix(keys[i], cache.ExecutablesTier+"/"))
	if _, err := store.Get(ctx, damaged); err != nil {
		t.Fatalf("%s not pushed: %v", damaged, err)
	}
	store.PutRaw(damaged, []byte("XLCE damaged"))
	before := map[string][]byte{}
	infos, _ := store.List(ctx, "")
	for _, in := range infos {
		before[in.Name], _ = store.Get(ctx, in.Name)
	}
	if res, err := Push(ctx, openKeys(adir, reader), store); err == nil || res.Entries != 0 || res.Replaced != 0 {
		t.Fatalf("a verify-only push: %+v %v", res, err)
	}
	after := map[string][]byte{}
	infos, _ = store.List(ctx, "")
	for _, in := range infos {
		after[in.Name], _ = store.Get(ctx, in.Name)
	}
	if !maps.EqualFunc(before, after, bytes.Equal) {
		t.Fatal("a verify-only push changed the store")
	}
}

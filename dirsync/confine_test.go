package dirsync

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/layout"
)

// A symbolic link planted in the destination (a tier's shard directory,
// XLA's autotune directory) does not redirect a pulled entry or raw file
// outside the directory.
func TestPullDoesNotFollowSymlinks(t *testing.T) {
	ctx := context.Background()
	key := []byte("sync-key")
	store, adir, keys := populated(t, key)
	if _, err := Push(ctx, open(t, adir, key, config.RoleWriter), store); err != nil {
		t.Fatal(err)
	}
	base := t.TempDir()
	bdir, outside := filepath.Join(base, "cache"), filepath.Join(base, "outside")
	os.Mkdir(outside, 0o700)
	b := open(t, bdir, key, config.RoleWriter)
	for _, k := range keys {
		i := strings.LastIndex(k, "/") // "<tier>/<key>", the tier may hold a slash
		tier, name := k[:i], k[i+1:]
		shard := filepath.Dir(filepath.Join(bdir, filepath.FromSlash(layout.EntryRel(tier, name))))
		os.MkdirAll(filepath.Dir(shard), 0o700)
		if err := os.Symlink(outside, shard); err != nil {
			t.Fatal(err)
		}
	}
	os.RemoveAll(filepath.Join(bdir, layout.XLAAutotuneDir))
	os.Symlink(outside, filepath.Join(bdir, layout.XLAAutotuneDir))
	if _, err := Pull(ctx, b, store); err == nil {
		t.Error("pull through planted symbolic links reported no error")
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("pull wrote outside the cache directory: %v", ents)
	}
}

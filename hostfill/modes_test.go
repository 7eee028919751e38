package hostfill

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestFillCreatesWithConfiguredModes: everything a fill and the host's
// coordination create in the cache directory (directories, fetched files,
// lock files, index copies) has exactly the configured modes, whatever
// the umask: owner-only by default, group-readable when a shared
// directory asks for it (XLACACHE_FILE_MODE, XLACACHE_DIR_MODE).
func TestFillCreatesWithConfiguredModes(t *testing.T) {
	old := syscall.Umask(0) // modes must come from the options, not the umask
	defer syscall.Umask(old)
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	a := newHost(t, nil)
	a.write(t, autotuneName(0), []byte("results { m: 1 }\n"))
	a.write(t, jaxKey("jit_m", 1)+"-cache", jaxEntry(t, jaxcache.CodecZstd, 1, []byte("exe")))
	if err := newPublisher(store, a.o, nil).Publish(ctx, false); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ file, dir os.FileMode }{{0o600, 0o700}, {0o640, 0o750}} {
		t.Run(m.file.String(), func(t *testing.T) {
			b := newHost(t, nil)
			b.o.FileMode, b.o.DirMode = m.file, m.dir
			before := map[string]bool{".": true}
			leader := ElectLeader(b.o, noLauncher)
			defer leader.Release()
			res, err := CoordinatedFill(ctx, store, b.o, time.Now(), time.Minute)
			if err != nil || res.Stats.Files != 2 {
				t.Fatalf("%+v %v", res, err)
			}
			n := 0
			err = filepath.WalkDir(b.path, func(p string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				rel, _ := filepath.Rel(b.path, p)
				if before[rel] {
					return nil
				}
				info, err := d.Info()
				if err != nil {
					return err
				}
				want := m.file
				if d.IsDir() {
					want = m.dir
				}
				if got := info.Mode().Perm(); got != want {
					t.Errorf("%s: mode %v, want %v", rel, got, want)
				}
				n++
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if n < 5 {
				t.Errorf("only %d entries created; the walk saw too little to prove anything", n)
			}
		})
	}
}

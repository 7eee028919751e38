package hostfill

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// TestFillBatchConfinedAndClean: a fill writes every pack through one
// atomicfile batch: the files arrive whole, no temporary file is left,
// and a symbolic link planted where the autotune directory belongs is
// refused (nothing is written through it, one log line) while the other
// files are still installed.
func TestFillBatchConfinedAndClean(t *testing.T) {
	ctx := context.Background()
	store := memblob.New(memblob.Options{})
	a := newHost(t, nil)
	a.o.Kernels = false
	want := map[string][]byte{}
	for i := 0; i < 50; i++ {
		want[autotuneName(i)] = []byte(fmt.Sprintf("results { run: %d }\n", i))
	}
	for i := 0; i < 3; i++ {
		want[jaxKey("jit_b", i)+"-cache"] = jaxEntry(t, jaxcache.CodecZstd, 1, bytes.Repeat([]byte{byte(i)}, 1000))
	}
	for rel, data := range want {
		a.write(t, rel, data)
	}
	a.o.PackFiles = 16
	if err := newPublisher(store, a.o, nil).Publish(ctx, false); err != nil {
		t.Fatal(err)
	}

	clean := newHost(t, nil)
	clean.o.Kernels = false
	st, err := fill(ctx, store, clean.o)
	if err != nil || st.Files != len(want) {
		t.Fatalf("fill: %+v, %v", st, err)
	}
	for rel, data := range want {
		if got, ok := clean.read(t, rel); !ok || !bytes.Equal(got, data) {
			t.Errorf("%s missing or different", rel)
		}
	}
	filepath.WalkDir(clean.path, func(p string, d fs.DirEntry, err error) error {
		if err == nil && layout.IsTemp(d.Name()) {
			t.Errorf("temporary file left: %s", p)
		}
		return nil
	})

	planted := newHost(t, nil)
	planted.o.Kernels = false
	outside := t.TempDir()
	if err := os.Symlink(outside, filepath.Join(planted.path, layout.XLAAutotuneDir)); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	planted.o.Logger = slog.New(slog.NewTextHandler(&logs, nil))
	st, err = fill(ctx, store, planted.o)
	if err != nil || st.Files != 3 {
		t.Fatalf("fill through a planted link: %+v, %v", st, err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("%d files written through the planted link", len(ents))
	}
	if n := strings.Count(logs.String(), "writing a fetched file"); n != 1 {
		t.Errorf("%d log lines about the failed writes, want 1:\n%s", n, logs.String())
	}
}

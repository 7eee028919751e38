package hostfill

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/layout"
)

// TestFillRemovesStaleTemps: the temporary files a killed fill left where
// it writes (the directory, the autotune directory, hostfill's state) are
// removed by the next fill once older than the grace; young ones (a write
// in progress) and other files stay. Before, nothing removed them.
func TestFillRemovesStaleTemps(t *testing.T) {
	h := newHost(t, nil)
	h.o.Kernels = false
	old := time.Now().Add(-2 * time.Hour)
	for _, tc := range []struct {
		rel   string
		stale bool
		gone  bool
	}{
		{layout.TempPrefix + "killed1", true, true},
		{layout.XLAAutotuneDir + "/" + layout.TempPrefix + "killed2", true, true},
		{stateRel + "/" + layout.TempPrefix + "killed3", true, true},
		{layout.TempPrefix + "writing", false, false},
		{"not-a-temp", true, false},
	} {
		h.write(t, tc.rel, []byte("partial"))
		p := filepath.Join(h.path, filepath.FromSlash(tc.rel))
		if tc.stale {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
		defer func() {
			_, err := os.Lstat(p)
			if gone := os.IsNotExist(err); gone != tc.gone {
				t.Errorf("%s: removed %v, want %v", tc.rel, gone, tc.gone)
			}
		}()
	}
	if _, err := fill(context.Background(), memblob.New(memblob.Options{}), h.o); err != nil {
		t.Fatal(err)
	}
}

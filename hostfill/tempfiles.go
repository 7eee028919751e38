package hostfill

import (
	"io/fs"
	"path"
	"strings"
	"time"

	"github.com/xlacache/xlacache/internal/layout"
)

// removeStaleTemps removes the temporary files (layout.TempPrefix) older
// than o.TempGrace that a killed fill or publish left where hostfill
// writes outside xlacache's tiers (whose own prune removes theirs): the
// directory itself (JAX entries), XLA's autotune directory and hostfill's
// state. Fills of one host are serialized by its fill lock, and a write
// in progress touches its file far more often than the grace, so only
// leftovers go. A failure only leaves them for the next fill.
func removeStaleTemps(o Options) (removed int) {
	grace := o.TempGrace
	if grace <= 0 {
		grace = time.Hour
	}
	cutoff := time.Now().Add(-grace)
	for _, dir := range []string{".", layout.XLAAutotuneDir, stateRel} {
		ents, err := fs.ReadDir(o.Root.FS(), dir)
		if err != nil {
			continue
		}
		for _, d := range ents {
			if !d.Type().IsRegular() || !strings.HasPrefix(d.Name(), layout.TempPrefix) {
				continue
			}
			info, err := d.Info()
			if err != nil || !info.ModTime().Before(cutoff) {
				continue
			}
			if o.Root.Remove(path.Join(dir, d.Name())) == nil {
				removed++
			}
		}
	}
	return removed
}

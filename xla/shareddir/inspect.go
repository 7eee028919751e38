package shareddir

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// Contents says whose caches a directory holds.
type Contents struct {
	// Own: xlacache's tiers or state. JAX: at least one JAX entry.
	Own, JAX bool
}

// Inspect tells whose caches dir holds. A directory with neither (empty,
// or XLA's subcaches alone) is xlacache's.
func Inspect(ctx context.Context, dir string) (Contents, error) {
	jax, err := jaxcache.IsJAXDir(dir)
	if err != nil {
		return Contents{}, fmt.Errorf("cache directory: %w", err)
	}
	if !jax {
		return Contents{Own: true}, nil
	}
	own, err := hasOwnState(ctx, dir)
	return Contents{Own: own, JAX: true}, err
}

// hasOwnState reports whether xlacache has used dir: its state,
// executables or quarantine directory, or a backend tier. XLA's subcaches
// alone do not count, since JAX puts them there too.
func hasOwnState(ctx context.Context, dir string) (bool, error) {
	d := layout.Dir(dir)
	for _, p := range []string{d.State(), d.Tier(layout.ExecutablesDir), d.Quarantine()} {
		if st, err := os.Lstat(p); err == nil && st.IsDir() {
			return true, nil
		}
	}
	u, err := cache.Scan(ctx, dir)
	if err != nil {
		return false, err
	}
	for area := range u.Areas {
		if strings.Contains(area, "/") { // a backend tier, "cpu/kernels"
			return true, nil
		}
	}
	return false, nil
}

package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/xlacache/xlacache/hostfill"
	"github.com/xlacache/xlacache/jobrun"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// runtimeLoads counts one runtime's JAX entries in a directory and those
// JAX never loaded since they were written.
type runtimeLoads struct {
	Runtime              string
	Entries, NeverLoaded int
}

// jaxLoadsByRuntime groups d's entries by the runtime they are for: the
// runtime recorded in the pack that brought or published each (the index
// copies this host's fills and publishes keep, hostfill.ReadOrigins), else
// this host's latest exec's (entries JAX wrote here since), else
// "unknown". It returns nil when no runtime is recorded at all (exec never
// ran with a shared tier here): the totals then say everything.
func jaxLoadsByRuntime(ctx context.Context, dir string, d *jaxcache.Dir) []runtimeLoads {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil
	}
	defer root.Close()
	packs, _ := hostfill.ReadOrigins(ctx, root) // unreadable copies are left out
	local, hasLocal, _ := hostfill.LocalOrigin(root)
	from := map[string]string{} // JAX key -> runtime of the pack naming it
	for _, es := range jobrun.PublishedJAXEntries(packs) {
		for _, e := range es {
			if !e.Origin.Runtime.IsZero() {
				from[e.Key] = e.Origin.Runtime.String()
			}
		}
	}
	if len(from) == 0 && (!hasLocal || local.Runtime.IsZero()) {
		return nil
	}
	by := map[string]*runtimeLoads{}
	for _, e := range d.Entries {
		rt, ok := from[e.Key]
		switch {
		case ok:
		case hasLocal && !local.Runtime.IsZero():
			rt = local.Runtime.String()
		default:
			rt = "unknown"
		}
		r := by[rt]
		if r == nil {
			r = &runtimeLoads{Runtime: rt}
			by[rt] = r
		}
		r.Entries++
		if e.Load == jaxcache.NotLoaded {
			r.NeverLoaded++
		}
	}
	out := make([]runtimeLoads, 0, len(by))
	for _, r := range by {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Runtime < out[j].Runtime })
	return out
}

// writeJAXRuntimeLoads prints jaxLoadsByRuntime's lines under the totals
// (nothing when no runtime is recorded or loads cannot be told).
func writeJAXRuntimeLoads(w io.Writer, d *jaxcache.Dir, rs []runtimeLoads) error {
	if len(rs) == 0 || !d.AtimeMode.Tells() {
		return nil
	}
	for _, r := range rs {
		if _, err := fmt.Fprintf(w, "  runtime %s: %d entries, %d never loaded since written\n", r.Runtime, r.Entries, r.NeverLoaded); err != nil {
			return err
		}
	}
	return nil
}

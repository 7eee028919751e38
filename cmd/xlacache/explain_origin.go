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

// What `explain` says of JAX entries other hosts published. JAX keeps
// only a hash of its key, but `xlacache exec` records, in every pack it
// publishes, the runtime and the settings JAX hashes (hostfill's origin),
// and keeps the indexes it read; it also records this host's own (the
// latest exec's). So for a module the published entries can be compared
// with this host, setting by setting.

// maxPublishedShown bounds the published entries explain lists.
const maxPublishedShown = 10

// jaxPublished is one published entry of the module in explain's --json.
type jaxPublished struct {
	Key  string `json:"key"`
	Host string `json:"host,omitempty"`
	// Runtime is the publisher's, as reports write it.
	Runtime string `json:"runtime"`
	// Differences name the recorded settings that differ from this
	// host's latest exec.
	Differences []string `json:"differences"`
	// Local says whether this host's directory holds the entry.
	Local bool `json:"local"`
}

// explainPublished writes to w (nil: none) what the host's kept pack
// indexes say of the published JAX entries of query's module, compared
// with this host's recorded settings, and returns them.
func explainPublished(ctx context.Context, w io.Writer, dir, query string) ([]jaxPublished, error) {
	module, key := query, ""
	if m, _, ok := jaxcache.SplitKey(query); ok {
		module, key = m, query
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	defer root.Close()
	origins, err := hostfill.ReadOrigins(ctx, root)
	if err != nil {
		return nil, err
	}
	entries := jobrun.PublishedJAXEntries(origins)[module]
	if len(entries) == 0 {
		return nil, nil
	}
	ours, recorded, err := hostfill.LocalOrigin(root)
	if err != nil {
		return nil, err
	}
	// The queried key first, then the closest to this host (the fewest
	// differing settings), as explain orders xlacache's own entries.
	out := make([]jaxPublished, 0, len(entries))
	for _, e := range entries {
		p := jaxPublished{Key: e.Key, Host: e.Origin.Host, Runtime: e.Origin.Runtime.String(), Differences: []string{}}
		if recorded {
			for _, d := range jobrun.DescribeDifferences(e.Origin, ours) {
				p.Differences = append(p.Differences, d.String())
			}
		}
		if _, err := root.Lstat(e.Key + jaxcache.CacheSuffix); err == nil {
			p.Local = true
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if (out[i].Key == key) != (out[j].Key == key) {
			return out[i].Key == key
		}
		return len(out[i].Differences) < len(out[j].Differences)
	})
	if w == nil {
		return out, nil
	}
	noun := "entries"
	if len(out) == 1 {
		noun = "entry"
	}
	if !recorded {
		fmt.Fprintf(w, "published by xlacache exec: %d %s of module %q; this host recorded no settings (run the job under xlacache exec to compare)\n",
			len(out), noun, module)
	} else {
		fmt.Fprintf(w, "published by xlacache exec: %d %s of module %q, compared with this host's latest xlacache exec (runtime %s):\n",
			len(out), noun, module, ours.Runtime)
	}
	for i, p := range out {
		if i == maxPublishedShown {
			fmt.Fprintf(w, "  ... %d more (--json lists them all)\n", len(out)-i)
			break
		}
		host := p.Host
		if host == "" {
			host = "a host that recorded no origin"
		}
		where := "not in this directory"
		if p.Local {
			where = "in this directory"
		}
		this := ""
		if p.Key == key {
			this = " (the key asked about)"
		}
		fmt.Fprintf(w, "  %s%s  from %s (runtime %s), %s\n", p.Key, this, host, p.Runtime, where)
		switch {
		case !recorded:
		case p.Key == key && len(p.Differences) == 0:
			fmt.Fprintf(w, "    published with this host's recorded settings\n")
		case len(p.Differences) > 0:
			for _, d := range p.Differences {
				fmt.Fprintf(w, "    differs: %s\n", d)
			}
		default:
			fmt.Fprintf(w, "    the same recorded settings: the program, its device assignment or a setting exec does not record differs\n")
		}
	}
	return out, nil
}

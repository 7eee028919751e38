package cache

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sort"
	"strings"

	"github.com/xlacache/xlacache/internal/atomicfile"
	"github.com/xlacache/xlacache/internal/entry"
)

// Explanation says how a key relates to the stored entries of its module.
type Explanation struct {
	// Key is the key explained.
	Key string `json:"key"`
	// Present is true when an entry with exactly this key is stored.
	Present bool `json:"present"`
	// Candidates counts the other stored entries of the same module.
	Candidates int `json:"candidates"`
	// Closest is the stored key sharing the most components, "" if none.
	Closest string `json:"closest,omitempty"`
	// Differs names the components whose digests differ from Closest
	// (a component present on one side only counts as differing).
	Differs []string `json:"differs,omitempty"`
}

// String renders the explanation as one line.
func (x Explanation) String() string {
	switch {
	case x.Present && x.Candidates == 0:
		return fmt.Sprintf("%s is stored; no other entry of module %q", x.Key, moduleOf(x.Key))
	case x.Present:
		return fmt.Sprintf("%s is stored; the closest of %d other entries, %s, differs in: %s", x.Key, x.Candidates, x.Closest, strings.Join(x.Differs, ", "))
	case x.Candidates == 0:
		return fmt.Sprintf("no stored entry for module %q", moduleOf(x.Key))
	case len(x.Differs) == 0:
		return fmt.Sprintf("closest of %d stored entries, %s, has the same components (module name or key version differs)", x.Candidates, x.Closest)
	}
	return fmt.Sprintf("closest of %d stored entries, %s, differs in: %s", x.Candidates, x.Closest, strings.Join(x.Differs, ", "))
}

func moduleOf(key string) string {
	if i := strings.LastIndexByte(key, '-'); i > 0 {
		return key[:i]
	}
	return key
}

// headerPrefix is how much of a file Explain and List read to get a header.
const headerPrefix = 64 << 10

// readHeader reads only the header of the entry file at rel in root,
// refusing a non-regular file without blocking on it.
func readHeader(root *os.Root, rel string) (entry.Header, int64, error) {
	f, st, err := atomicfile.OpenRegular(root, rel)
	if err != nil {
		return entry.Header{}, 0, err
	}
	defer f.Close()
	buf := make([]byte, min(st.Size(), headerPrefix))
	if _, err := io.ReadFull(f, buf); err != nil {
		return entry.Header{}, st.Size(), fmt.Errorf("%w: %v", entry.ErrCorrupt, err)
	}
	h, _, err := entry.ParseHeader(buf)
	return h, st.Size(), err
}

// Explain compares key with the stored entries of the same module in the
// executables tier. When key has no Parts (parsed from text) and is
// stored, the stored entry's parts are used, so the comparison reports how
// it differs from its nearest sibling.
func (c *Cache) Explain(ctx context.Context, key Key) (Explanation, error) {
	x := Explanation{Key: key.String()}
	t := c.Tier(ExecutablesTier)
	v := t.localView(true)
	if v == nil {
		return x, errors.New("explain: no usable cache directory")
	}
	root := v.root
	want := key.Parts
	if h, _, err := readHeader(root, t.rel(key)); err == nil && h.Key == key.String() {
		x.Present = true
		if len(want) == 0 {
			want = h.Parts
		}
	}
	prefix := key.Module + "-"
	shards, err := fs.ReadDir(root.FS(), t.name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return x, fmt.Errorf("explain: %w", err)
	}
	best := -1
	for _, sh := range shards {
		if !sh.IsDir() || ctx.Err() != nil {
			continue
		}
		names, err := fs.ReadDir(root.FS(), t.name+"/"+sh.Name())
		if err != nil {
			continue
		}
		for _, n := range names {
			name := n.Name()
			if !strings.HasPrefix(name, prefix) || name == key.String() {
				continue
			}
			if m, _, err := ParseKey(name); err != nil || m != key.Module {
				continue
			}
			h, _, err := readHeader(root, t.name+"/"+sh.Name()+"/"+name)
			if err != nil {
				continue
			}
			x.Candidates++
			differs := diffParts(want, h.Parts)
			score := len(want) + len(h.Parts) - 2*len(differs)
			if best < 0 || score > best || (score == best && name < x.Closest) {
				best, x.Closest, x.Differs = score, name, differs
			}
		}
	}
	return x, ctx.Err()
}

// diffParts names the components whose digests differ between a and b.
func diffParts(a, b []PartDigest) []string {
	am := map[string][32]byte{}
	for _, p := range a {
		am[p.Name] = p.Digest
	}
	bm := map[string][32]byte{}
	for _, p := range b {
		bm[p.Name] = p.Digest
	}
	var out []string
	for n, d := range am {
		if bd, ok := bm[n]; !ok || bd != d {
			out = append(out, n)
		}
	}
	for n := range bm {
		if _, ok := am[n]; !ok {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func (c *Cache) explainMiss(ctx context.Context, key Key) string {
	x, err := c.Explain(ctx, key)
	if err != nil {
		return "cannot explain: " + err.Error()
	}
	return x.String()
}

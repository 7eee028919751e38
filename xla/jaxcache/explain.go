package jaxcache

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Listing is one entry with its header, for `xlacache ls`.
type Listing struct {
	Entry
	Header Header
	// Err is set when the header could not be read.
	Err error
}

// List returns the entries of a scanned directory with their headers,
// most recently used first. Only the first bytes of each entry are
// decompressed.
func List(ctx context.Context, d *Dir) ([]Listing, error) {
	out := make([]Listing, 0, len(d.Entries))
	for _, e := range d.Entries {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		l := Listing{Entry: e}
		f, _, err := OpenEntryPath(e.Path)
		if err != nil {
			l.Err = err
		} else {
			l.Header, l.Err = ReadHeader(f)
			f.Close()
		}
		out = append(out, l)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].LastUse.After(out[j].LastUse) })
	return out, nil
}

// Explanation says what a JAX directory holds for a key or module.
type Explanation struct {
	// Query is the key or module name asked about.
	Query string
	// Found is the entry with exactly that key, if any.
	Found *Listing
	// SameModule are the other entries of the same module, most recently
	// used first.
	SameModule []Entry
	// Lines are the explanation for humans.
	Lines []string
}

// Explain tells what the directory holds for query, a full key
// ("<module>-<hash>") or a module name. JAX hashes every key component
// (program, jaxlib version, platform, XLA flags, compile options,
// devices, compression) into one SHA-256 and stores none of them, so for
// a missing key the most that can be said is which entries the same
// module has; `JAX_EXPLAIN_CACHE_MISSES=1` makes JAX itself log the
// component that changed.
func Explain(ctx context.Context, d *Dir, query string) (Explanation, error) {
	ex := Explanation{Query: query}
	module := query
	isKey := false
	if m, _, ok := SplitKey(query); ok {
		module, isKey = m, true
	}
	for _, e := range d.Entries {
		if err := ctx.Err(); err != nil {
			return ex, err
		}
		switch {
		case isKey && e.Key == query:
			l := Listing{Entry: e}
			if f, _, err := OpenEntryPath(e.Path); err != nil {
				l.Err = err
			} else {
				l.Header, l.Err = ReadHeader(f)
				f.Close()
			}
			ex.Found = &l
		case e.Module == module:
			ex.SameModule = append(ex.SameModule, e)
		}
	}
	sort.Slice(ex.SameModule, func(i, j int) bool { return ex.SameModule[i].LastUse.After(ex.SameModule[j].LastUse) })
	add := func(format string, a ...any) { ex.Lines = append(ex.Lines, fmt.Sprintf(format, a...)) }
	switch {
	case ex.Found != nil && ex.Found.Err == nil:
		add("hit: %s is stored (%d bytes, %s, compile time %v, last used %s)", query, ex.Found.Size, ex.Found.Header.Codec, ex.Found.Header.CompileTime, ex.Found.LastUse.Format(time.RFC3339))
	case ex.Found != nil:
		add("present but unreadable: %s: %v (JAX would fail to load it and compile again)", query, ex.Found.Err)
	case isKey:
		add("miss: no entry %s", query)
	}
	if len(ex.SameModule) == 0 {
		if ex.Found == nil {
			add("no entry for module %q: it was never stored here (compiled faster than the minimum compile time, smaller than the minimum entry size, compiled by a process other than process 0, or evicted)", module)
		}
		return ex, nil
	}
	var hashes []string
	for _, e := range ex.SameModule {
		_, h, _ := SplitKey(e.Key)
		hashes = append(hashes, h[:12])
	}
	add("%d other entr%s for module %q (hash prefixes %s): the same module was compiled with a different program, jaxlib version, platform, XLA_FLAGS, compile options, device assignment or compression",
		len(ex.SameModule), plural(len(ex.SameModule), "y", "ies"), module, strings.Join(hashes, ", "))
	add("JAX stores only the combined SHA-256, not its components; run the program with JAX_EXPLAIN_CACHE_MISSES=1 to have JAX log which component changed")
	return ex, nil
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

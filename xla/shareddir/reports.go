package shareddir

import (
	"sort"

	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/xla/jaxcache"
)

// JAXTier is the tier name JAX entries carry among xlacache's entries
// (`ls --json`); it cannot clash with an xlacache tier, whose names are
// "executables" or "<backend>/<subcache>".
const JAXTier = "jax"

// EntryInfos converts JAX listings to entry rows of tier JAXTier, sorted
// by key, to list beside xlacache's own.
func EntryInfos(ls []jaxcache.Listing) []cache.EntryInfo {
	out := make([]cache.EntryInfo, 0, len(ls))
	for _, l := range ls {
		ei := cache.EntryInfo{Tier: JAXTier, Key: l.Key, Path: l.Path, Size: l.Size, LastUsed: l.LastUse, CompileTime: l.Header.CompileTime, Codec: string(l.Header.Codec)}
		if l.Err != nil {
			ei.Err = l.Err.Error()
		}
		out = append(out, ei)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Key < out[j].Key })
	return out
}

// JAXVerifyReport is the JAX part of a verify report (`verify --json`).
type JAXVerifyReport struct {
	Checked int `json:"checked"`
	// Bad are damaged files; MaybeInFlight ones were modified recently
	// and may still be being written, so they do not fail the command.
	Bad []JAXProblem `json:"bad"`
}

// JAXProblem is one damaged JAX file.
type JAXProblem struct {
	Path          string `json:"path"`
	Err           string `json:"error"`
	MaybeInFlight bool   `json:"maybe_in_flight"`
}

// NewJAXVerifyReport is r's report, and the number of damaged files that
// are not possibly in flight (a recent one may still be being written by
// JAX).
func NewJAXVerifyReport(r jaxcache.VerifyResult) (JAXVerifyReport, int) {
	rep := JAXVerifyReport{Checked: r.Checked, Bad: []JAXProblem{}}
	bad := 0
	for _, p := range r.Problems {
		rep.Bad = append(rep.Bad, JAXProblem{Path: p.Path, Err: p.Err.Error(), MaybeInFlight: p.MaybeInFlight})
		if !p.MaybeInFlight {
			bad++
		}
	}
	return rep, bad
}

// JAXExplainReport is the JAX part of an explain report (`explain --json`).
type JAXExplainReport struct {
	Query string `json:"query"`
	// Found is true when an entry with exactly the queried key is stored.
	Found bool `json:"found"`
	// SameModule are the keys of the module's other entries.
	SameModule []string `json:"same_module"`
	Lines      []string `json:"lines"`
}

// NewJAXExplainReport is the report of ex, the explanation of query.
func NewJAXExplainReport(query string, ex jaxcache.Explanation) JAXExplainReport {
	rep := JAXExplainReport{Query: query, SameModule: []string{}}
	rep.Found, rep.Lines = ex.Found != nil && ex.Found.Err == nil, ex.Lines
	for _, e := range ex.SameModule {
		rep.SameModule = append(rep.SameModule, e.Key)
	}
	return rep
}

package cache

import "time"

// Report describes one Compile.
type Report struct {
	// Key is the key text, "" when the backend could not supply key parts.
	Key string `json:"key"`
	// Hit is true when the executable came from the cache.
	Hit bool `json:"hit"`
	// Source is where a hit came from: "local" or "shared".
	Source string `json:"source,omitempty"`
	// Alias is true when the hit was found through the alias of the
	// program's exact text (alias.go): the backend's KeyParts, and its
	// parse of the program, were skipped. Key is still the full key.
	Alias bool `json:"alias,omitempty"`
	// Stored is true when this compile's result was written to the cache.
	Stored bool `json:"stored"`
	// NotStored says why a compiled executable was not stored, when a
	// threshold or the process's role explains it.
	NotStored string `json:"not_stored,omitempty"`
	// Tiers counts lookups per tier name during this compile.
	Tiers map[string]TierResult `json:"tiers"`
	// Phases are timings in the order recorded: "alias" (the text's key
	// and its alias lookup), "key", "lookup", "load",
	// "wait", "compile" (the whole backend compile), "store", and the
	// backend's own phases.
	Phases []Phase `json:"phases"`
	// CompileTime is the backend compile time (zero on a hit).
	CompileTime time.Duration `json:"compile_time_ns"`
	// Explain says, for a miss with ExplainMisses on, which key component
	// differs from the closest stored entry of the same module.
	Explain string `json:"explain,omitempty"`
}

func newReport() *Report { return &Report{Tiers: map[string]TierResult{}} }

func (r *Report) clone() *Report {
	cp := *r
	cp.Tiers = make(map[string]TierResult, len(r.Tiers))
	for k, v := range r.Tiers {
		cp.Tiers[k] = v
	}
	cp.Phases = append([]Phase(nil), r.Phases...)
	return &cp
}

// TierResult counts lookups of one tier during one compile.
type TierResult struct {
	Hits   int `json:"hits"`
	Misses int `json:"misses"`
}

// Phase is the time one named compile phase took ("parse", "fuse",
// "autotune", "compile", "link", "load", ...).
type Phase struct {
	Name     string        `json:"name"`
	Duration time.Duration `json:"duration_ns"`
}

// PhaseTime sums the durations of the phases named name.
func (r *Report) PhaseTime(name string) time.Duration {
	var d time.Duration
	for _, p := range r.Phases {
		if p.Name == name {
			d += p.Duration
		}
	}
	return d
}

// PhaseTotals sums the phases of a report by name, in the order each name
// first appears: a phase can repeat (code generation runs once per
// candidate set and once for the final program).
func (r *Report) PhaseTotals() []Phase {
	var out []Phase
	at := map[string]int{}
	for _, p := range r.Phases {
		i, ok := at[p.Name]
		if !ok {
			i = len(out)
			at[p.Name] = i
			out = append(out, Phase{Name: p.Name})
		}
		out[i].Duration += p.Duration
	}
	return out
}

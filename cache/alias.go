package cache

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/layout"
)

// A warm start's cost is mostly the backend's KeyParts, which parses the
// program to key it by its canonical form (a 124 KB StableHLO text takes
// about 9 ms of a 10 ms warm start). Like Go's build cache, which maps an
// action ID to an output ID, Compile keeps an alias from a key of the
// program's exact bytes (a FastKeyer's parts, no parse) to the full key,
// in the backend's local "<backend>/aliases" tier. The alias is an
// ordinary entry (checksummed, signed when keys are set, bounded and
// trimmed like any), and what it names is checked against the executable
// entry's own recorded part digests before it is loaded: every part but
// the program must be the one this process would key with. Any failure
// (no alias, damaged, foreign, stale, a target that is gone or does not
// load) falls through to the full path unchanged. A client whose text
// differs in every process (names drawn at random) never hits its alias
// and leaves one small alias per process, trimmed like any entry: package
// gomlx keeps its text stable for that reason.

// aliasDomain is an extra part of every alias key, so that an alias key
// can never equal an executable key (nor a future alias format's).
const aliasDomain = "xlacache executable alias v1"

// errAlias marks an alias entry that verified but names no usable
// executable key: an entry whose payload is unusable, counted as a "load"
// error like an executable the backend refuses.
var errAlias = fmt.Errorf("%w: the alias names no executable this program's key parts allow", errLoad)

// aliasTierName is the aliases tier of backend ("cpu/aliases").
func aliasTierName(backend string) string { return backend + "/" + layout.AliasesSub }

// isAliasTier reports whether name is a backend's aliases tier.
func isAliasTier(name string) bool { return strings.HasSuffix(name, "/"+layout.AliasesSub) }

// fastKey returns the alias key of p from b's FastKeyParts and those
// parts, or ok false when b has none (not a FastKeyer, or it failed: the
// full path then says what is wrong, once).
func fastKey(ctx context.Context, b Backend, p Program) (Key, []KeyPart, bool) {
	fk, ok := b.(FastKeyer)
	if !ok {
		return Key{}, nil, false
	}
	parts, err := fk.FastKeyParts(ctx, p)
	if err != nil {
		return Key{}, nil, false
	}
	n := 0
	for _, kp := range parts {
		switch kp.Name {
		case ProgramTextPart:
			n++
		case "program", "alias":
			return Key{}, nil, false
		}
	}
	if n != 1 {
		return Key{}, nil, false
	}
	all := append(parts[:len(parts):len(parts)], KeyPart{Name: "alias", Data: []byte(aliasDomain)})
	return NewKey(p.Name, all), parts, true
}

// loadByAlias tries the alias of p's exact text: it returns the
// executable, ok true, on a hit (env's report then has the full key and
// Alias set), and the alias key (zero when b has none) for writeAlias.
// It counts no executables-tier miss for a target it does not find: the
// full path that follows looks the key up again and counts that.
func (c *Cache) loadByAlias(ctx context.Context, b Backend, p Program, env *Session) (Executable, Key, bool) {
	start := time.Now()
	fk, parts, ok := fastKey(ctx, b, p)
	if !ok {
		return nil, Key{}, false
	}
	at := c.Tier(aliasTierName(b.Name())).withSession(env)
	if at == nil {
		return nil, Key{}, false
	}
	payload, ok := at.Get(ctx, fk)
	env.Phase("alias", time.Since(start))
	if !ok {
		return nil, fk, false
	}
	target, err := decodeAlias(payload, fk.Module)
	if err != nil {
		at.Reject(fk, err)
		return nil, fk, false
	}
	tier := c.Tier(ExecutablesTier).withSession(env)
	lstart := time.Now()
	e, src, n, ok := tier.find(ctx, target)
	env.Phase("lookup", time.Since(lstart))
	if !ok {
		// Evicted (or never stored here): the full path compiles and
		// stores it again under the same key, which revives the alias.
		return nil, fk, false
	}
	if err := aliasMatches(e, target, parts); err != nil {
		at.Reject(fk, err)
		return nil, fk, false
	}
	exe, ok := loadFound(ctx, c, b, tier, target, env, e, src, n)
	if !ok {
		return nil, fk, false
	}
	env.mu.Lock()
	env.report.Key = target.String()
	env.report.Alias = true
	env.mu.Unlock()
	return exe, fk, true
}

// writeAlias records, in a writer, that alias key fk names the executable
// key key (just stored or found by it). It is a no-op for a zero fk and
// in a reader (Put); a failure is logged once by Put and otherwise
// ignored: the next warm start takes the full path.
func (c *Cache) writeAlias(ctx context.Context, b Backend, fk, key Key, env *Session) {
	if fk.IsZero() || !c.writer {
		return
	}
	at := c.Tier(aliasTierName(b.Name())).withSession(env)
	if at == nil || at.exists(fk) {
		return
	}
	_ = at.Put(ctx, fk, encodeAlias(key), 0)
}

// encodeAlias is an alias entry's payload: the full key text.
func encodeAlias(key Key) []byte { return []byte(key.String()) }

// decodeAlias parses an alias payload (untrusted until here, although its
// entry verified): a key text of the alias's own module.
func decodeAlias(payload []byte, module string) (Key, error) {
	k, err := keyFromText(string(payload))
	if err != nil {
		return Key{}, fmt.Errorf("%w: %v", errAlias, err)
	}
	if k.Module != module {
		return Key{}, fmt.Errorf("%w: module %q, want %q", errAlias, k.Module, module)
	}
	return k, nil
}

// aliasMatches checks the executable entry e, found under target, against
// the fast key's parts: e's recorded parts must hash to target's digest,
// be the fast parts with ProgramTextPart replaced by "program", and agree
// on every one but the program. So an alias written under other options,
// another backend version or compiler, or by mistake, never loads.
func aliasMatches(e *entry.Entry, target Key, fast []KeyPart) error {
	if keyDigest(target.Module, e.Parts) != target.Digest {
		return fmt.Errorf("%w: the entry's recorded parts do not make its key", errAlias)
	}
	if len(e.Parts) != len(fast) {
		return fmt.Errorf("%w: %d key parts, want %d", errAlias, len(e.Parts), len(fast))
	}
	byName := make(map[string][32]byte, len(e.Parts))
	for _, pd := range e.Parts {
		byName[pd.Name] = pd.Digest
	}
	if _, ok := byName["program"]; !ok {
		return fmt.Errorf("%w: no program part", errAlias)
	}
	for _, kp := range fast {
		if kp.Name == ProgramTextPart {
			continue
		}
		d, ok := byName[kp.Name]
		if !ok {
			return fmt.Errorf("%w: no %q part", errAlias, kp.Name)
		}
		if d != partDigest(kp.Name, kp.Data) {
			return fmt.Errorf("%w: its %q part differs", errAlias, kp.Name)
		}
	}
	return nil
}

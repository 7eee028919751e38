package cache

import (
	"bytes"
	"context"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/xlacache/xlacache/config"
)

// aliasBackend is fakeBackend with a canonical form (the text's words
// joined by single spaces, as a parser that ignores layout would see it)
// and a FastKeyer: it counts KeyParts calls, the stand-in for the parse
// an alias hit must skip.
type aliasBackend struct {
	*fakeBackend
	keyParts atomic.Int64
}

func newAliasBackend() *aliasBackend { return &aliasBackend{fakeBackend: &fakeBackend{}} }

func canonical(p Program) Program {
	p.Text = []byte(strings.Join(strings.Fields(string(p.Text)), " "))
	return p
}

func (b *aliasBackend) KeyParts(ctx context.Context, p Program) ([]KeyPart, error) {
	b.keyParts.Add(1)
	return b.fakeBackend.KeyParts(ctx, canonical(p))
}

func (b *aliasBackend) FastKeyParts(ctx context.Context, p Program) ([]KeyPart, error) {
	parts, err := b.fakeBackend.KeyParts(ctx, p)
	if err != nil {
		return nil, err
	}
	parts[0] = KeyPart{Name: ProgramTextPart, Data: p.Text}
	return parts, nil
}

func (b *aliasBackend) Compile(ctx context.Context, p Program, env *Session) (Executable, error) {
	return b.fakeBackend.Compile(ctx, canonical(p), env)
}

// compileAlias compiles p through c with b and checks the executable is
// p's.
func compileAlias(t *testing.T, c *Cache, b *aliasBackend, p Program) *Report {
	t.Helper()
	exe, rep, err := Compile(context.Background(), c, b, p)
	if err != nil {
		t.Fatalf("Compile(%s): %v", p.Name, err)
	}
	if got, want := exe.(*fakeExe).payload, b.expected(canonical(p)); !bytes.Equal(got, want) {
		t.Fatalf("Compile(%s) returned the wrong executable: %q, want %q", p.Name, got, want)
	}
	return rep
}

// aliasPath returns where p's alias entry lives in c.
func aliasPath(t *testing.T, c *Cache, b *aliasBackend, p Program) string {
	t.Helper()
	fk, _, ok := fastKey(context.Background(), b, p)
	if !ok {
		t.Fatal("no fast key")
	}
	return c.Tier(aliasTierName(b.Name())).path(fk)
}

func countLines(s string) int { return strings.Count(s, "\n") }

func TestAliasWarmStartSkipsKeyParts(t *testing.T) {
	dir := t.TempDir()
	p := Program{Name: "m", Text: []byte("add  x y"), Options: []byte("opt=1")}
	b := newAliasBackend()
	c := mustOpen(t, testOptions(dir), nil)
	cold := compileAlias(t, c, b, p)
	if cold.Hit || !cold.Stored || cold.Alias {
		t.Fatalf("cold compile: %+v", cold)
	}
	if _, err := os.Stat(aliasPath(t, c, b, p)); err != nil {
		t.Fatalf("no alias after the store: %v", err)
	}

	// A warm start: a new cache and backend on the directory.
	b2 := newAliasBackend()
	c2 := mustOpen(t, testOptions(dir), nil)
	warm := compileAlias(t, c2, b2, p)
	if !warm.Hit || !warm.Alias || warm.Key != cold.Key {
		t.Fatalf("warm start: hit %v alias %v key %s, want a hit through the alias with key %s", warm.Hit, warm.Alias, warm.Key, cold.Key)
	}
	if n := b2.keyParts.Load(); n != 0 {
		t.Fatalf("warm start called KeyParts %d times, want 0", n)
	}
	if n := b2.compiles.Load(); n != 0 {
		t.Fatalf("warm start compiled %d times", n)
	}
	if tr := warm.Tiers["fake/aliases"]; tr.Hits != 1 {
		t.Fatalf("report tiers %v: want one hit in fake/aliases", warm.Tiers)
	}

	// A changed option, backend version or topology is another fast key:
	// the full path, never the alias.
	for _, tc := range []struct {
		name string
		p    Program
		b    *aliasBackend
	}{
		{"options", Program{Name: p.Name, Text: p.Text, Options: []byte("opt=2")}, newAliasBackend()},
		{"version", p, &aliasBackend{fakeBackend: &fakeBackend{version: "v2"}}},
		{"topology", p, &aliasBackend{fakeBackend: &fakeBackend{topology: "x8"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := compileAlias(t, mustOpen(t, testOptions(dir), nil), tc.b, tc.p)
			if r.Hit || r.Alias || tc.b.compiles.Load() != 1 {
				t.Fatalf("hit %v alias %v compiles %d: want a compile", r.Hit, r.Alias, tc.b.compiles.Load())
			}
		})
	}
}

func TestAliasFallsThrough(t *testing.T) {
	p := Program{Name: "m", Text: []byte("mul x y"), Options: []byte("opt=1")}
	other := Program{Name: p.Name, Text: p.Text, Options: []byte("opt=2")}
	for _, tc := range []struct {
		name string
		// damage breaks the alias of p in dir (c is a writer on it).
		damage func(t *testing.T, c *Cache, b *aliasBackend)
		// compiles is how many compiles the next Compile of p takes.
		compiles int64
		// failLoad makes the next Compile's backend fail every load.
		failLoad bool
	}{
		{"corrupt", func(t *testing.T, c *Cache, b *aliasBackend) {
			if err := os.WriteFile(aliasPath(t, c, b, p), []byte("not an entry"), 0o644); err != nil {
				t.Fatal(err)
			}
		}, 0, false},
		{"target gone", func(t *testing.T, c *Cache, b *aliasBackend) {
			k := fullKey(t, b, p)
			if err := os.Remove(c.Tier(ExecutablesTier).path(k)); err != nil {
				t.Fatal(err)
			}
		}, 1, false},
		{"target does not load", func(t *testing.T, c *Cache, b *aliasBackend) {}, 1, true},
		{"not a key", func(t *testing.T, c *Cache, b *aliasBackend) {
			rewriteAlias(t, c, b, p, []byte("nonsense"))
		}, 0, false},
		{"other options", func(t *testing.T, c *Cache, b *aliasBackend) {
			// An alias that names the executable of other options (stored
			// and loadable): it must not be loaded for p.
			compileAlias(t, c, b, other)
			rewriteAlias(t, c, b, p, []byte(fullKey(t, b, other).String()))
		}, 0, false},
		{"foreign", func(t *testing.T, c *Cache, b *aliasBackend) {
			// The other options' alias entry copied over p's: its header
			// names another key.
			compileAlias(t, c, b, other)
			data, err := os.ReadFile(aliasPath(t, c, b, other))
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(aliasPath(t, c, b, p), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b := newAliasBackend()
			c := mustOpen(t, testOptions(dir), nil)
			want := compileAlias(t, c, b, p).Key
			tc.damage(t, c, b)

			var logs logBuffer
			b2 := newAliasBackend()
			b2.failLoad.Store(tc.failLoad)
			c2 := mustOpen(t, testOptions(dir), &logs)
			r := compileAlias(t, c2, b2, p)
			if r.Alias || r.Key != want || b2.keyParts.Load() != 1 || b2.compiles.Load() != tc.compiles {
				t.Fatalf("alias %v key %s keyparts %d compiles %d: want the full path (key %s, %d compiles)",
					r.Alias, r.Key, b2.keyParts.Load(), b2.compiles.Load(), want, tc.compiles)
			}
			if n := countLines(logs.String()); n > 1 {
				t.Fatalf("%d log lines, want at most one:\n%s", n, logs.String())
			}
			// The full path wrote a good alias again.
			b3 := newAliasBackend()
			r = compileAlias(t, mustOpen(t, testOptions(dir), nil), b3, p)
			if !r.Alias || r.Key != want || b3.keyParts.Load() != 0 {
				t.Fatalf("after repair: alias %v key %s keyparts %d", r.Alias, r.Key, b3.keyParts.Load())
			}
		})
	}
}

// fullKey is p's executable key.
func fullKey(t *testing.T, b *aliasBackend, p Program) Key {
	t.Helper()
	parts, err := b.fakeBackend.KeyParts(context.Background(), canonical(p))
	if err != nil {
		t.Fatal(err)
	}
	return NewKey(p.Name, parts)
}

// rewriteAlias replaces p's alias entry with a good entry holding payload.
func rewriteAlias(t *testing.T, c *Cache, b *aliasBackend, p Program, payload []byte) {
	t.Helper()
	if err := os.Remove(aliasPath(t, c, b, p)); err != nil {
		t.Fatal(err)
	}
	fk, _, _ := fastKey(context.Background(), b, p)
	if err := c.Tier(aliasTierName(b.Name())).Put(context.Background(), fk, payload, 0); err != nil {
		t.Fatal(err)
	}
}

func TestAliasReaderWritesNone(t *testing.T) {
	dir := t.TempDir()
	p := Program{Name: "m", Text: []byte("sub x y")}
	b := newAliasBackend()
	c := mustOpen(t, testOptions(dir), nil)
	compileAlias(t, c, b, p)
	if err := os.Remove(aliasPath(t, c, b, p)); err != nil {
		t.Fatal(err)
	}
	ro := testOptions(dir)
	ro.Role = config.RoleReader
	for i := range 2 {
		b2 := newAliasBackend()
		r := compileAlias(t, mustOpen(t, ro, nil), b2, p)
		if !r.Hit || r.Alias || b2.keyParts.Load() != 1 {
			t.Fatalf("reader start %d: hit %v alias %v keyparts %d, want a hit by the full key", i, r.Hit, r.Alias, b2.keyParts.Load())
		}
	}
	if _, err := os.Stat(aliasPath(t, c, b, p)); !os.IsNotExist(err) {
		t.Fatalf("a reader wrote an alias (stat: %v)", err)
	}
}

func TestAliasSameCanonicalTexts(t *testing.T) {
	dir := t.TempDir()
	b := newAliasBackend()
	c := mustOpen(t, testOptions(dir), nil)
	texts := []Program{
		{Name: "m", Text: []byte("neg x")},
		{Name: "m", Text: []byte("neg   x\n")},
		{Name: "m", Text: []byte("\tneg x ")},
	}
	var key string
	for i, p := range texts {
		r := compileAlias(t, c, b, p)
		if i == 0 {
			key = r.Key
		} else if !r.Hit || r.Key != key {
			t.Fatalf("text %d: hit %v key %s, want a hit on %s", i, r.Hit, r.Key, key)
		}
	}
	if n := b.compiles.Load(); n != 1 {
		t.Fatalf("%d compiles, want 1", n)
	}
	seen := map[string]bool{}
	for i, p := range texts {
		path := aliasPath(t, c, b, p)
		if seen[path] {
			t.Fatalf("text %d shares an alias", i)
		}
		seen[path] = true
		b2 := newAliasBackend()
		r := compileAlias(t, mustOpen(t, testOptions(dir), nil), b2, p)
		if !r.Alias || r.Key != key || b2.keyParts.Load() != 0 {
			t.Fatalf("text %d warm: alias %v key %s keyparts %d", i, r.Alias, r.Key, b2.keyParts.Load())
		}
	}
}

func TestDecodeAlias(t *testing.T) {
	k := NewKey("m", []KeyPart{{Name: "program", Data: []byte("x")}})
	for _, tc := range []struct {
		payload string
		ok      bool
	}{
		{k.String(), true},
		{"", false},
		{"m-" + strings.Repeat("0", 63), false},
		{"other-" + strings.Repeat("0", 64), false},
		{"../m-" + strings.Repeat("0", 64), false},
		{k.String() + "\n", false},
		{strings.ToUpper(k.String()), false},
	} {
		got, err := decodeAlias([]byte(tc.payload), "m")
		if (err == nil) != tc.ok || (tc.ok && got.String() != k.String()) {
			t.Errorf("decodeAlias(%q) = %v, %v; want ok %v", tc.payload, got, err, tc.ok)
		}
	}
}

func FuzzDecodeAlias(f *testing.F) {
	f.Add([]byte(NewKey("m", nil).String()), "m")
	f.Add([]byte("m-zz"), "m")
	f.Fuzz(func(t *testing.T, payload []byte, module string) {
		k, err := decodeAlias(payload, module)
		if err != nil {
			return
		}
		if k.Module != module || k.String() != string(payload) {
			t.Fatalf("decodeAlias(%q, %q) = %s", payload, module, k)
		}
	})
}

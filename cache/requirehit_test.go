package cache

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/sign"
)

// publishingFlight stands for another process holding the single-flight
// claim: its wait ends with that process's entry stored (publish), and
// release nil, as a real wait that sees the entry appear does.
type publishingFlight struct{ publish func() }

func (f publishingFlight) Acquire(ctx context.Context, name string, ready func() bool) (func(), error) {
	f.publish()
	if !ready() {
		return func() {}, nil // the wait ran out: compile
	}
	return nil, nil
}

// fill compiles p into dir with a writer that requires nothing.
func fill(t *testing.T, dir string, b *fakeBackend, p Program) {
	t.Helper()
	c := mustOpen(t, testOptions(dir), nil)
	if _, rep := compileOK(t, c, b, p); !rep.Stored {
		t.Fatalf("filling %s: not stored", p.Name)
	}
	c.Close()
}

// entryFile is the one executables entry file under dir.
func entryFile(t *testing.T, dir string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(dir, ExecutablesTier, "*", "*"))
	if len(m) != 1 {
		t.Fatalf("want one entry under %s, found %v", dir, m)
	}
	return m[0]
}

// TestRequireHitFail: under fail, a compile the cache cannot serve
// returns a *MissError naming the program and why, compiles nothing and
// stores nothing; a hit (direct, or at the end of another process's
// single-flight claim) goes through.
func TestRequireHitFail(t *testing.T) {
	prog := Program{Name: "mlp", Text: []byte("the program")}
	for _, tc := range []struct {
		name string
		// setup prepares dir (and may change the options, backend or
		// program) before the require-hit process opens it.
		setup   func(t *testing.T, dir string, o *config.Options, b *fakeBackend, p *Program) []Option
		hit     bool
		reason  string // the error's reason contains this
		noKey   bool   // the error has no key
		storeOK bool   // the dir may hold entries afterwards (filled before)
	}{
		{name: "cold", reason: "no entry for this program"},
		{name: "warm", hit: true, setup: func(t *testing.T, dir string, _ *config.Options, b *fakeBackend, p *Program) []Option {
			fill(t, dir, b, *p)
			return nil
		}},
		{name: "shared hit", hit: true, setup: func(t *testing.T, _ string, _ *config.Options, b *fakeBackend, p *Program) []Option {
			shared := memblob.New(memblob.Options{})
			w := mustOpen(t, testOptions(t.TempDir()), nil, WithShared(shared))
			compileOK(t, w, b, *p)
			w.Close()
			return []Option{WithShared(shared)}
		}},
		{name: "program changed", storeOK: true, reason: "differs in: program", setup: func(t *testing.T, dir string, _ *config.Options, b *fakeBackend, p *Program) []Option {
			fill(t, dir, b, *p)
			p.Text = []byte("the program, edited")
			return nil
		}},
		{name: "backend changed", storeOK: true, reason: "differs in: backend", setup: func(t *testing.T, dir string, _ *config.Options, b *fakeBackend, p *Program) []Option {
			fill(t, dir, b, *p)
			b.version = "2"
			return nil
		}},
		{name: "damaged entry", reason: "stored entry failed verification", setup: func(t *testing.T, dir string, o *config.Options, b *fakeBackend, p *Program) []Option {
			fill(t, dir, b, *p)
			f := entryFile(t, dir)
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			data[len(data)-1] ^= 0xff
			if err := os.WriteFile(f, data, 0o600); err != nil {
				t.Fatal(err)
			}
			return nil
		}},
		{name: "signed with another key", storeOK: true, reason: "signed with another key", setup: func(t *testing.T, dir string, o *config.Options, b *fakeBackend, p *Program) []Option {
			w := testOptions(dir)
			w.SigningKey = sign.NewHMAC([]byte("the CI's key"))
			c := mustOpen(t, w, nil)
			compileOK(t, c, b, *p)
			c.Close()
			o.SigningKey = sign.NewHMAC([]byte("another key"))
			return nil
		}},
		{name: "entry does not load", reason: "could not be loaded", setup: func(t *testing.T, dir string, _ *config.Options, b *fakeBackend, p *Program) []Option {
			fill(t, dir, b, *p)
			b.failLoad.Store(true)
			return nil
		}},
		{name: "shared tier unreachable", reason: "shared tier unreachable: 500 internal error", setup: func(t *testing.T, _ string, _ *config.Options, _ *fakeBackend, _ *Program) []Option {
			return []Option{WithShared(failingOpen{Store: memblob.New(memblob.Options{}), err: errors.New("500 internal error")})}
		}},
		{name: "no key", noKey: true, reason: "could not derive a cache key", setup: func(t *testing.T, _ string, _ *config.Options, _ *fakeBackend, p *Program) []Option {
			p.Text = []byte("unkeyable")
			return nil
		}},
		{name: "cache off", noKey: true, reason: "caching is off", setup: func(t *testing.T, _ string, o *config.Options, _ *fakeBackend, _ *Program) []Option {
			o.Dir = ""
			return nil
		}},
		{name: "another process's claim ends with its entry", hit: true, setup: func(t *testing.T, dir string, _ *config.Options, b *fakeBackend, p *Program) []Option {
			q := *p
			return []Option{WithFlight(publishingFlight{publish: func() { fill(t, dir, &fakeBackend{}, q) }})}
		}},
		{name: "another process's claim ends without an entry", reason: "no entry for this program", setup: func(t *testing.T, _ string, _ *config.Options, _ *fakeBackend, _ *Program) []Option {
			return []Option{WithFlight(publishingFlight{publish: func() {}})}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			o := testOptions(dir)
			b := &fakeBackend{}
			p := prog
			var extra []Option
			if tc.setup != nil {
				extra = tc.setup(t, dir, &o, b, &p)
			}
			o.RequireHit = config.RequireHitFail
			o.Role = config.RoleWriter
			var logs logBuffer
			c := mustOpen(t, o, &logs, extra...)
			defer c.Close()
			compiles := b.compiles.Load()
			exe, rep, err := Compile(context.Background(), c, b, p)
			if tc.hit {
				if err != nil || exe == nil || !rep.Hit {
					t.Fatalf("Compile = %v, hit %v: want a hit", err, rep.Hit)
				}
				return
			}
			var me *MissError
			if !errors.Is(err, ErrHitRequired) || !errors.As(err, &me) || exe != nil {
				t.Fatalf("Compile = %v (exe %v): want a *MissError", err, exe)
			}
			if b.compiles.Load() != compiles {
				t.Errorf("the backend compiled under fail")
			}
			if !strings.Contains(me.Reason, tc.reason) {
				t.Errorf("reason %q, want it to contain %q", me.Reason, tc.reason)
			}
			if me.Module != p.Name || (me.Key == "") != tc.noKey || me.Key != rep.Key {
				t.Errorf("error names module %q key %q (report's key %q)", me.Module, me.Key, rep.Key)
			}
			for _, s := range []string{"program " + p.Name, config.EnvRequireHit + "=fail", tc.reason} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("message %q lacks %q", err, s)
				}
			}
			if rep.Stored {
				t.Error("report says stored")
			}
			if !tc.storeOK && o.Dir != "" {
				if m, _ := filepath.Glob(filepath.Join(dir, ExecutablesTier, "*", "*")); len(m) != 0 {
					t.Errorf("entries stored under fail: %v", m)
				}
			}
			if got := c.Stats().Backends[b.Name()].RequireHitFailed; got != 1 {
				t.Errorf("RequireHitFailed = %d, want 1", got)
			}
		})
	}
}

// TestRequireHitWarn: under warn, every compile the cache could not spare
// goes ahead and logs one line naming the program, its key, the reason
// and what the backend's subcaches missed; hits log nothing; off logs
// nothing.
func TestRequireHitWarn(t *testing.T) {
	for _, tc := range []struct {
		mode  config.RequireHit
		lines int
	}{
		{config.RequireHitOff, 0},
		{config.RequireHitWarn, 2},
	} {
		t.Run(tc.mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			o := testOptions(dir)
			o.RequireHit = tc.mode
			var logs logBuffer
			c := mustOpen(t, o, &logs)
			defer c.Close()
			b := &fakeBackend{useTier: config.SubcacheAutotune}
			a := Program{Name: "a", Text: []byte("program a")}
			z := Program{Name: "z", Text: []byte("program z")}
			compileOK(t, c, b, a)
			compileOK(t, c, b, z)
			if _, rep := compileOK(t, c, b, a); !rep.Hit {
				t.Fatal("third compile: want a hit")
			}
			if b.compiles.Load() != 2 {
				t.Fatalf("%d compiles, want 2", b.compiles.Load())
			}
			var lines []string
			for _, l := range strings.Split(logs.String(), "\n") {
				if strings.Contains(l, config.EnvRequireHit) {
					lines = append(lines, l)
				}
			}
			if len(lines) != tc.lines {
				t.Fatalf("%d require-hit lines, want %d:\n%s", len(lines), tc.lines, logs.String())
			}
			if got := c.Stats().Backends[b.Name()].RequireHitWarned; got != int64(tc.lines) {
				t.Errorf("RequireHitWarned = %d, want %d", got, tc.lines)
			}
			if tc.lines == 0 {
				return
			}
			for i, want := range []string{"module=a key=a-", "module=z key=z-"} {
				l := lines[i]
				for _, s := range []string{want, "reason=\"no entry for this program", "subcaches=\"fake/autotune 1 of 1 missed\""} {
					if !strings.Contains(l, s) {
						t.Errorf("line %q lacks %q", l, s)
					}
				}
			}
		})
	}
}

// TestRequireHitStatsPersisted: the counters survive a writer's flush and
// add up across processes like the others.
func TestRequireHitStatsPersisted(t *testing.T) {
	dir := t.TempDir()
	for i := range 2 {
		o := testOptions(dir)
		o.RequireHit = config.RequireHitWarn
		c := mustOpen(t, o, nil)
		compileOK(t, c, &fakeBackend{}, Program{Name: "p", Text: []byte{byte('a' + i)}})
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
	}
	st, err := ReadPersistedStats(dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := st.Backends["fake"].RequireHitWarned; got != 2 {
		t.Errorf("persisted RequireHitWarned = %d, want 2", got)
	}
}

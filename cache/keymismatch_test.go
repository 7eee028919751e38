package cache

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/blob/memblob"
	"github.com/xlacache/xlacache/internal/layout"
	"github.com/xlacache/xlacache/internal/sign"
)

// Issue 20, items 5 and 23: an entry whose checksum holds but whose
// signature does not verify with this process's key was signed with
// another key. It is not damage: never quarantined, repaired or replaced,
// in the local directory or the shared tier, and a process meeting many
// such entries says so in one line naming the likely cause.

// keyedPrograms compiles n programs with a writer holding key in dir and
// returns them, with the entry files' bytes by path.
func keyedPrograms(t *testing.T, dir, key string, n int) ([]Program, map[string][]byte) {
	t.Helper()
	o := testOptions(dir)
	o.SigningKey = sign.NewHMAC([]byte(key))
	c := mustOpen(t, o, nil)
	b := &fakeBackend{}
	var progs []Program
	files := map[string][]byte{}
	for i := range n {
		p := Program{Name: "f", Text: fmt.Appendf(nil, "program %d, first signed with %q", i, key)}
		_, rep := compileOK(t, c, b, p)
		if !rep.Stored {
			t.Fatalf("program %d not stored", i)
		}
		k, err := keyFromText(rep.Key)
		if err != nil {
			t.Fatal(err)
		}
		path := c.Tier(ExecutablesTier).path(k)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		files[path] = data
		progs = append(progs, p)
	}
	c.Close()
	return progs, files
}

// checkUntouched fails unless every file still holds its bytes and the
// quarantine is empty.
func checkUntouched(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for p, want := range files {
		got, err := os.ReadFile(p)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("entry %s was moved or rewritten (err %v)", p, err)
		}
	}
	if ents, _ := os.ReadDir(filepath.Join(dir, QuarantineDir)); len(ents) != 0 {
		t.Errorf("%d file(s) quarantined for a key mismatch", len(ents))
	}
}

func TestKeyMismatchLocalOneLineNoQuarantine(t *testing.T) {
	dir := t.TempDir()
	progs, files := keyedPrograms(t, dir, "the right key", 12)

	o := testOptions(dir)
	o.SigningKey = sign.NewHMAC([]byte("the rihgt key")) // mistyped
	var logs logBuffer
	w := mustOpen(t, o, &logs)
	b := &fakeBackend{}
	for _, p := range progs {
		if _, rep := compileOK(t, w, b, p); rep.Hit {
			t.Fatal("entry signed with another key was loaded")
		}
	}
	w.Close()
	if n := w.Stats().Errors["signature"]; n != int64(len(progs)) {
		t.Errorf("signature errors %d, want %d", n, len(progs))
	}
	checkUntouched(t, dir, files)
	text := logs.String()
	if n := strings.Count(text, KeyMismatchWarning); n != 1 {
		t.Errorf("key mismatch logged %d times, want once:\n%s", n, text)
	}
	if n := strings.Count(text, "\n"); n != 1 {
		t.Errorf("%d log lines for one misconfiguration, want 1:\n%s", n, text)
	}
	if !strings.Contains(text, "XLACACHE_SIGNING_KEY") {
		t.Errorf("the line does not name the variable:\n%s", text)
	}

	// With the right key every entry is still there and good.
	o.SigningKey = sign.NewHMAC([]byte("the right key"))
	r := mustOpen(t, o, nil)
	for _, p := range progs {
		if _, rep := compileOK(t, r, b, p); !rep.Hit {
			t.Fatalf("%s missed with the right key after a wrong-key run", p.Text)
		}
	}
}

func TestKeyMismatchSharedNeverReplaced(t *testing.T) {
	shared := memblob.New(memblob.Options{})
	host := func(key string, logs *logBuffer) *Cache {
		o := testOptions(t.TempDir())
		o.Subcaches, o.SubcachesExplicit = nil, true
		o.SigningKey = sign.NewHMAC([]byte(key))
		return mustOpen(t, o, logs, WithShared(shared))
	}
	b := &fakeBackend{}
	var progs []Program
	good := host("k-good", nil)
	for i := range 6 {
		p := Program{Name: "f", Text: fmt.Appendf(nil, "shared %d", i)}
		compileOK(t, good, b, p)
		progs = append(progs, p)
	}
	good.Close()
	before := map[string][]byte{}
	infos, err := shared.List(context.Background(), ExecutablesTier+"/")
	if err != nil || len(infos) != len(progs) {
		t.Fatalf("bucket holds %d objects (err %v), want %d", len(infos), err, len(progs))
	}
	for _, in := range infos {
		before[in.Name], _ = shared.Get(context.Background(), in.Name)
	}

	var logs logBuffer
	bad := host("k-bda", &logs) // a host set up with another key
	for _, p := range progs {
		if _, rep := compileOK(t, bad, b, p); rep.Hit {
			t.Fatal("object signed with another key was used")
		}
	}
	bad.Close()
	if n := bad.Stats().Errors["replaced"]; n != 0 {
		t.Errorf("the host with another key replaced %d shared objects", n)
	}
	for name, want := range before {
		got, err := shared.Get(context.Background(), name)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("shared object %s was replaced (err %v)", name, err)
		}
	}
	if n := strings.Count(logs.String(), KeyMismatchWarning); n != 1 {
		t.Errorf("key mismatch logged %d times, want once:\n%s", n, logs.String())
	}

	// Good hosts still hit: nothing for them to see as damage.
	fresh := host("k-good", nil)
	for _, p := range progs {
		if _, rep := compileOK(t, fresh, b, p); !rep.Hit || rep.Source != "shared" {
			t.Fatalf("good host: hit=%v source=%q after a host with another key ran", rep.Hit, rep.Source)
		}
	}
	if n := fresh.Stats().Errors["signature"]; n != 0 {
		t.Errorf("good host saw %d signature failures", n)
	}
}

func TestVerifyRepairWrongKeyChangesNothing(t *testing.T) {
	dir := t.TempDir()
	_, files := keyedPrograms(t, dir, "the right key", 5)
	o := testOptions(dir)
	o.SigningKey = sign.NewHMAC([]byte("the wrong key"))
	c := mustOpen(t, o, nil)
	res, err := c.Verify(context.Background(), true)
	if !errors.Is(err, ErrWrongKey) {
		t.Fatalf("verify --repair with the wrong key: err %v, want ErrWrongKey", err)
	}
	if !strings.Contains(err.Error(), "XLACACHE_SIGNING_KEY") {
		t.Errorf("error does not name the variable: %v", err)
	}
	if res.Checked != 5 || res.KeyMismatches != 5 {
		t.Errorf("checked %d, key mismatches %d, want 5 and 5", res.Checked, res.KeyMismatches)
	}
	checkUntouched(t, dir, files)
}

// With the right key, entries signed with another key are reported and
// left in place, while real damage is still quarantined.
func TestVerifyRepairMixedKeys(t *testing.T) {
	dir := t.TempDir()
	_, mine := keyedPrograms(t, dir, "mine", 3)
	_, theirs := keyedPrograms(t, dir, "theirs", 2)
	var damaged string
	for p := range mine {
		damaged = p
		break
	}
	data := bytes.Clone(mine[damaged])
	data[len(data)/2] ^= 0xff
	if err := os.WriteFile(damaged, data, 0o600); err != nil {
		t.Fatal(err)
	}
	o := testOptions(dir)
	o.SigningKey = sign.NewHMAC([]byte("mine"))
	c := mustOpen(t, o, nil)
	res, err := c.Verify(context.Background(), true)
	if err != nil {
		t.Fatal(err)
	}
	if res.Checked != 5 || len(res.Bad) != 3 || res.KeyMismatches != 2 {
		t.Fatalf("checked %d, bad %d, mismatches %d: %+v", res.Checked, len(res.Bad), res.KeyMismatches, res.Bad)
	}
	for _, b := range res.Bad {
		switch {
		case b.KeyMismatch && b.Quarantined != "":
			t.Errorf("entry signed with another key quarantined: %+v", b)
		case !b.KeyMismatch && b.Quarantined == "":
			t.Errorf("damaged entry not quarantined: %+v", b)
		}
	}
	for p, want := range theirs {
		if got, err := os.ReadFile(p); err != nil || !bytes.Equal(got, want) {
			t.Errorf("entry signed with another key %s was moved or rewritten (err %v)", p, err)
		}
	}
}

func TestRestoreQuarantined(t *testing.T) {
	dir := t.TempDir()
	progs, files := keyedPrograms(t, dir, "k", 4)
	o := testOptions(dir)
	o.SigningKey = sign.NewHMAC([]byte("k"))
	c := mustOpen(t, o, nil)
	// What a wrong-key repair of an earlier build did: every entry
	// quarantined.
	for p := range files {
		if dst, err := c.quarantine(ExecutablesTier, p, nil); err != nil || dst == "" {
			t.Fatalf("quarantine %s: %q %v", p, dst, err)
		}
	}
	// Real damage in the quarantine stays there.
	qdir := filepath.Join(dir, QuarantineDir)
	junk := filepath.Join(qdir, layout.QuarantineName(ExecutablesTier, "f-00", "x"))
	if err := os.WriteFile(junk, []byte("XLCE garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	// One entry's place was taken by a fresh compile meanwhile.
	b := &fakeBackend{}
	if _, rep := compileOK(t, c, b, progs[0]); rep.Hit || !rep.Stored {
		t.Fatalf("recompile: %+v", rep)
	}

	res, err := c.Restore(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Checked != 5 || len(res.Restored) != 3 || len(res.Kept) != 2 {
		t.Fatalf("checked %d, restored %d, kept %d: %+v", res.Checked, len(res.Restored), len(res.Kept), res)
	}
	for _, r := range res.Restored {
		want, ok := files[r.To]
		if !ok || r.Tier != ExecutablesTier {
			t.Errorf("restored to %s (tier %s), not to an original path", r.To, r.Tier)
			continue
		}
		if got, err := os.ReadFile(r.To); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s: restored bytes differ (err %v)", r.To, err)
		}
	}
	if _, err := os.Stat(junk); err != nil {
		t.Errorf("damaged quarantined file was moved: %v", err)
	}
	for _, p := range progs {
		if _, rep := compileOK(t, c, b, p); !rep.Hit {
			t.Errorf("%s missed after restore", p.Text)
		}
	}
	if res, err := c.Verify(context.Background(), false); err != nil || len(res.Bad) != 0 {
		t.Errorf("verify after restore: %v %+v", err, res.Bad)
	}
}

// A quarantined file of a backend tier goes back into that tier, although
// tier names spell "/" as "_" in the quarantine.
func TestRestoreBackendTier(t *testing.T) {
	dir := t.TempDir()
	c := mustOpen(t, testOptions(dir), nil)
	tier := c.Tier("cpu/autotune")
	k := NewKey("tune_x", []KeyPart{{Name: "p", Data: []byte("1")}})
	if err := tier.Put(context.Background(), k, []byte("tuned"), 0); err != nil {
		t.Fatal(err)
	}
	if _, err := c.quarantine(tier.name, tier.path(k), nil); err != nil {
		t.Fatal(err)
	}
	if _, ok := tier.Get(context.Background(), k); ok {
		t.Fatal("hit on a quarantined entry")
	}
	res, err := c.Restore(context.Background())
	if err != nil || len(res.Restored) != 1 || res.Restored[0].Tier != "cpu/autotune" {
		t.Fatalf("restore: %v %+v", err, res)
	}
	if got, ok := tier.Get(context.Background(), k); !ok || string(got) != "tuned" {
		t.Fatalf("after restore: %q %v", got, ok)
	}
}

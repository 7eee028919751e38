package cache

import (
	"bytes"
	"crypto/ed25519"
	"os"
	"strings"
	"testing"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/entry"
	"github.com/xlacache/xlacache/internal/sign"
)

// A process holding only Ed25519 public keys is a reader whatever its
// role: it is served what the writer signed, stores nothing, and leaves
// an entry it cannot verify (re-signed by another key, or altered) exactly
// where and as it is.
func TestVerifyOnlyIsAReader(t *testing.T) {
	dir := t.TempDir()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	writerKeys, _ := sign.NewEd25519(priv)
	readerKeys, _ := sign.NewEd25519(nil, priv.Public().(ed25519.PublicKey))
	attacker, _ := sign.NewEd25519(ed25519.NewKeyFromSeed(bytes.Repeat([]byte{9}, ed25519.SeedSize)))
	b := &fakeBackend{}
	progs := []Program{{Name: "f", Text: []byte("signed by CI")}, {Name: "g", Text: []byte("forged later")}, {Name: "h", Text: []byte("altered later")}}

	o := testOptions(dir)
	o.SigningKey = writerKeys
	w := mustOpen(t, o, nil)
	paths := map[string]string{}
	for _, p := range progs {
		_, rep := compileOK(t, w, b, p)
		if !rep.Stored {
			t.Fatalf("%s not stored by the writer", p.Name)
		}
		k, err := keyFromText(rep.Key)
		if err != nil {
			t.Fatal(err)
		}
		paths[p.Name] = w.Tier(ExecutablesTier).path(k)
	}
	w.Close()

	// Re-sign g's entry with another key; flip a byte of h's signature.
	data, _ := os.ReadFile(paths["g"])
	e, err := entry.Decode(data, nil)
	if err != nil {
		t.Fatal(err)
	}
	forged, _ := entry.Encode(e.Header, e.Payload, attacker)
	os.WriteFile(paths["g"], forged, 0o600)
	altered, _ := os.ReadFile(paths["h"])
	altered[len(altered)-10] ^= 1
	os.WriteFile(paths["h"], altered, 0o600)
	files := map[string][]byte{}
	for _, p := range paths {
		files[p], _ = os.ReadFile(p)
	}

	o = testOptions(dir)
	o.SigningKey, o.Role = readerKeys, config.RoleWriter
	var logs logBuffer
	r := mustOpen(t, o, &logs)
	defer r.Close()
	if r.Writer() || !strings.Contains(logs.String(), "verify-only") {
		t.Fatalf("a verify-only process writes (writer %v); log:\n%s", r.Writer(), logs.String())
	}
	if _, rep := compileOK(t, r, b, progs[0]); !rep.Hit {
		t.Fatal("the writer's entry was not served to the reader")
	}
	for _, p := range progs[1:] {
		_, rep := compileOK(t, r, b, p)
		if rep.Hit || rep.Stored || !strings.Contains(rep.NotStored, "cannot sign") {
			t.Fatalf("%s: hit %v, stored %v (%s)", p.Name, rep.Hit, rep.Stored, rep.NotStored)
		}
	}
	checkUntouched(t, dir, files)
	if n, _ := os.ReadDir(dir); len(n) == 0 {
		t.Fatal("directory emptied")
	}
	if _, rep := compileOK(t, r, b, Program{Name: "new", Text: []byte("never seen")}); rep.Stored {
		t.Fatal("a verify-only process stored an entry")
	}
}

package archive

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"slices"
	"testing"

	"github.com/xlacache/xlacache/internal/sign"
	"github.com/xlacache/xlacache/internal/testsupport/cachetest"
)

// An archive exported by an Ed25519 writer imports whole (entries and the
// raw files its signed manifest vouches for) for a process holding only
// the public key, and not at all for one holding another key.
func TestExportImportEd25519(t *testing.T) {
	ctx := context.Background()
	priv := ed25519.NewKeyFromSeed(bytes.Repeat([]byte{1}, ed25519.SeedSize))
	writer, _ := sign.NewEd25519(priv)
	reader, _ := sign.NewEd25519(nil, priv.Public().(ed25519.PublicKey))
	other, _ := sign.NewEd25519(nil, ed25519.NewKeyFromSeed(bytes.Repeat([]byte{2}, ed25519.SeedSize)).Public().(ed25519.PublicKey))
	src := t.TempDir()
	keys := cachetest.PopulateKeys(t, src, writer)
	var buf bytes.Buffer
	if st, err := Export(ctx, src, &buf, Options{SigningKey: writer}); err != nil || st.Files != 5 {
		t.Fatalf("export: %+v %v", st, err)
	}
	dst := t.TempDir()
	ist, err := Import(ctx, bytes.NewReader(buf.Bytes()), dst, Options{SigningKey: reader})
	if err != nil || ist.Files != 5 || len(ist.Refused) != 0 {
		t.Fatalf("import with the public key: %+v %v", ist, err)
	}
	if got := cachetest.Listed(t, dst); !slices.Equal(got, keys) {
		t.Fatalf("imported entries %q, want %q", got, keys)
	}
	ist, err = Import(ctx, bytes.NewReader(buf.Bytes()), t.TempDir(), Options{SigningKey: other})
	if ist.Files != 0 || len(ist.Refused) != 5 {
		t.Fatalf("import with another key: %+v %v", ist, err)
	}
	// A verify-only exporter ships entries, whose signatures travel with
	// them, under an unsigned manifest: its raw files are then refused.
	var unsigned bytes.Buffer
	if st, err := Export(ctx, src, &unsigned, Options{SigningKey: reader}); err != nil || st.Files != 5 {
		t.Fatalf("export by a reader: %+v %v", st, err)
	}
	ist, err = Import(ctx, bytes.NewReader(unsigned.Bytes()), t.TempDir(), Options{SigningKey: reader})
	if ist.Files != 3 || len(ist.Refused) != 2 {
		t.Fatalf("import of a reader's export: %+v %v", ist, err)
	}
}

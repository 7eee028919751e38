package cpu

import (
	"bytes"
	"context"
	"testing"

	"github.com/xlacache/xlacache/backend/cpu/internal/cc"
	"github.com/xlacache/xlacache/cache"
	"github.com/xlacache/xlacache/stablehlo"
)

// TestUseParsed: a module the caller parsed gives the same key as the
// backend's own parse of the text (the executable key must not change),
// and KeyParts takes it instead of parsing the text again.
func TestUseParsed(t *testing.T) {
	ctx := context.Background()
	if _, err := cc.Find(ctx); err != nil {
		t.Skip(err)
	}
	text := []byte(parallelPrograms["dot_cols"])
	m, err := stablehlo.Parse(text, "path/to/dot_cols.mlir")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		text []byte
	}{
		// The same text: the key parts are byte for byte the backend's own.
		{"same text", text},
		// Text the parser refuses: a success proves KeyParts did not parse.
		{"not parsed again", []byte("this is not StableHLO")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			want, err := New().KeyParts(ctx, cache.Program{Name: "p", Text: text})
			if err != nil {
				t.Fatal(err)
			}
			b := New()
			p := cache.Program{Name: "p", Text: tc.text}
			b.UseParsed(p, m)
			got, err := b.KeyParts(ctx, p)
			if err != nil {
				t.Fatalf("KeyParts after UseParsed: %v", err)
			}
			if len(got) != len(want) {
				t.Fatalf("%d key parts, want %d", len(got), len(want))
			}
			for i := range want {
				if got[i].Name != want[i].Name || !bytes.Equal(got[i].Data, want[i].Data) {
					t.Errorf("key part %d: %s %q, want %s %q", i, got[i].Name, got[i].Data, want[i].Name, want[i].Data)
				}
			}
			if m.File != "path/to/dot_cols.mlir" {
				t.Errorf("UseParsed changed the caller's module: File %q", m.File)
			}
		})
	}
}

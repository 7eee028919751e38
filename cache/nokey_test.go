package cache

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestNoKeyReason: the report's reason for a compile without a key names
// what the user can fix: no directory, a directory that cannot be used
// (and why), or a backend that derived no key.
func TestNoKeyReason(t *testing.T) {
	for _, tc := range []struct {
		name string
		dir  func(t *testing.T) string
		want string
	}{
		{"no directory", func(t *testing.T) string { return "" }, "cache off: set XLACACHE_DIR"},
		{"a file", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "file")
			if err := os.WriteFile(p, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, "is not a directory"},
		{"usable", func(t *testing.T) string { return t.TempDir() }, "the backend could not derive one"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.dir(t)
			c, err := Open(context.Background(), testOptions(dir), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.NoKeyReason(dir); !strings.Contains(got, tc.want) {
				t.Fatalf("NoKeyReason(%q) = %q, want it to say %q", dir, got, tc.want)
			}
		})
	}
}

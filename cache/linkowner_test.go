//go:build unix

package cache

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestPlantedSymlinkRefused: a cache directory name that another user
// planted as a symbolic link to a directory this user owns is refused by
// Open (run) and CheckDir (exec), and nothing is written through it; a
// link this user owns is followed as before. Changing a link's owner needs
// root.
func TestPlantedSymlinkRefused(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to give a symbolic link another owner")
	}
	base := t.TempDir()
	victim := filepath.Join(base, "victim")
	if err := os.Mkdir(victim, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		owner   int
		refused bool
	}{
		{"another user's link", 4242, true},
		{"own link", os.Geteuid(), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			link := filepath.Join(base, tc.name)
			if err := os.Symlink(victim, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Lchown(link, tc.owner, tc.owner); err != nil {
				t.Fatal(err)
			}
			// Through a second, own link: the planted one is in the middle.
			dir := filepath.Join(link, "cache")
			root, _, err := CheckDir(dir, testOptions(dir))
			if root != nil {
				root.Close()
			}
			if got := errors.Is(err, ErrUntrustedDir); got != tc.refused {
				t.Fatalf("CheckDir: err %v, refused %v, want %v", err, got, tc.refused)
			}
			c, err := Open(context.Background(), testOptions(dir), slog.New(slog.DiscardHandler))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if got := c.Dir() == ""; got != tc.refused {
				t.Fatalf("Open: dir %q, refused %v, want %v", c.Dir(), got, tc.refused)
			}
			entries, _ := os.ReadDir(victim)
			if tc.refused && len(entries) > 0 {
				t.Fatalf("refused, yet %d files were made in the victim's directory", len(entries))
			}
			os.RemoveAll(filepath.Join(victim, "cache"))
		})
	}
}

// TestNoKeyReasonLeavesRefusedDirAlone: explaining why a directory was
// refused writes nothing into it (it used to create and remove a probe
// directory there, which changes its modification time).
func TestNoKeyReasonLeavesRefusedDirAlone(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "open to all")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	c, err := Open(context.Background(), testOptions(dir), slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Dir() != "" {
		t.Fatalf("a world-writable directory was used: %s", c.Dir())
	}
	old := time.Now().Add(-time.Hour).Truncate(time.Second)
	if err := os.Chtimes(dir, old, old); err != nil {
		t.Fatal(err)
	}
	why := c.NoKeyReason(dir)
	if !strings.Contains(why, "lets other users plant entries") {
		t.Errorf("NoKeyReason = %q, want the refusal's reason", why)
	}
	if st, err := os.Stat(dir); err != nil || !st.ModTime().Equal(old) {
		t.Fatalf("the refused directory was written to (mtime %v, want %v; %v)", st.ModTime(), old, err)
	}
}

//go:build unix

package cache

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/xlacache/xlacache/config"
)

// This file exposes, for `xlacache exec` (package jobrun), the checks
// Open makes of a cache directory, so that both commands trust a
// directory on the same terms.

// UnsignedSharedTierWarning is the line `run` logs (once per process) when the
// shared tier is used without a signing key; exec logs the same line.
const UnsignedSharedTierWarning = unsignedSharedWarning

// ErrUntrustedDir is wrapped by CheckDir's error when the directory is
// refused for who owns or can write it (rather than for being unusable).
var ErrUntrustedDir = errSharedDir

// DirTrust is what CheckDir found.
type DirTrust struct {
	// Resolved is the directory with symbolic links in its name resolved.
	Resolved string
	// Shared is true when another user owns the directory or others can
	// write it, and it was accepted only because a signing key (or
	// XLACACHE_ALLOW_SHARED_DIR) is set: what is in it may have been
	// planted, so nothing from it may be published under this user's key.
	Shared bool
	// Why says why the directory counts as shared.
	Why error
}

// CheckDir opens dir as a writer's Open does: it creates it when missing
// (refusing to create it under a parent others can write), resolves
// symbolic links in its name once, opens a root on it and checks its
// owner and mode on that root, with the same functions and the same
// exceptions (a signing key or XLACACHE_ALLOW_SHARED_DIR accept a
// directory others can write; the result then says Shared). An error
// wrapping ErrUntrustedDir means the directory was refused.
func CheckDir(dir string, o config.Options) (*os.Root, DirTrust, error) {
	c := &Cache{opts: o}
	if err := c.checkCreateParent(dir); err != nil {
		return nil, DirTrust{}, err
	}
	// Before anything is created through a planted link.
	if err := checkLinkOwners(dir); err != nil {
		return nil, DirTrust{}, err
	}
	if err := os.MkdirAll(dir, o.EffectiveDirMode()); err != nil {
		return nil, DirTrust{}, fmt.Errorf("creating cache directory: %w", err)
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, DirTrust{}, err
	}
	root, err := os.OpenRoot(resolved)
	if err != nil {
		return nil, DirTrust{}, err
	}
	// The checks look at the directory the root holds open, so it cannot
	// be swapped between the check and its use.
	st, err := root.Stat(".")
	if err != nil {
		root.Close()
		return nil, DirTrust{}, err
	}
	t := DirTrust{Resolved: resolved}
	if err := trustedDir(resolved, st, o.EffectiveDirMode()&0o020 != 0); err != nil {
		if !sharedDirAllowed(o) {
			root.Close()
			return nil, t, err
		}
		t.Shared, t.Why = true, err
	}
	return root, t, nil
}

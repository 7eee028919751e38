//go:build unix

package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"

	"github.com/xlacache/xlacache/config"
	"github.com/xlacache/xlacache/internal/logonce"
)

// The cache directory is trusted only as far as who can write it. Every
// file operation under it goes through one *os.Root opened on the
// resolved directory (Cache.root), so a symbolic link planted in the tree
// can never redirect a read or a write outside it; and a directory that
// another user owns or that others can write is refused, since whoever can
// write it can plant entries that readers load and run.

// errSharedDir marks a refused cache directory.
var errSharedDir = errors.New("refusing cache directory")

// openDir makes dir usable: a writer creates it (refusing to create it
// under a parent others can write), symbolic links in its name are
// resolved once (a symlinked XLACACHE_DIR is a normal setup), its owner and
// mode are checked, and c.root is opened on it. A writer that cannot
// create its fixed files becomes a reader. The error, when not nil, was
// logged and means "no local directory".
func (c *Cache) openDir(dir string) error {
	writer := c.opts.Writer()
	// Before anything is created or read through a planted link.
	if err := checkLinkOwners(dir); err != nil {
		c.logger.Warn("refusing cache directory; compiling without a cache", "dir", dir, "err", err)
		c.countError("", "permission")
		return err
	}
	if writer {
		if err := c.checkCreateParent(dir); err != nil {
			c.logger.Warn("refusing cache directory; compiling without a cache", "dir", dir, "err", err)
			c.countError("", "permission")
			return err
		}
		if err := os.MkdirAll(dir, c.opts.EffectiveDirMode()); err != nil {
			c.logger.Warn("cache directory unusable; compiling without a cache", "dir", dir, "err", fmt.Errorf("creating cache directory: %w", err))
			c.countError("", kindOf(err))
			return err
		}
	}
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		if !writer && errors.Is(err, fs.ErrNotExist) {
			// A reader never creates anything: a missing directory just
			// misses.
			c.dir = dir
			return nil
		}
		c.logger.Warn("cache directory unusable; compiling without a cache", "dir", dir, "err", err)
		c.countError("", kindOf(err))
		return err
	}
	root, err := os.OpenRoot(resolved)
	var st fs.FileInfo
	if err == nil {
		// The checks look at the directory the root holds open, so it
		// cannot be swapped between the check and its use.
		st, err = root.Stat(".")
		if err != nil {
			root.Close()
		}
	}
	if err != nil {
		c.logger.Warn("cache directory unusable; compiling without a cache", "dir", resolved, "err", err)
		c.countError("", kindOf(err))
		return err
	}
	if err := c.checkTrusted(resolved, st); err != nil {
		root.Close()
		c.logger.Warn("refusing cache directory; compiling without a cache", "dir", resolved, "err", err)
		c.countError("", "permission")
		return err
	}
	c.dir, c.root, c.opts.Dir = resolved, root, resolved
	if writer {
		if err := c.initWriter(); err != nil {
			// Keyed by the failure's kind: the leases meeting the same
			// read-only mount later add no line.
			c.logOnce(logonce.FailureKey(err), "cache directory not writable; reading only", "dir", resolved, "err", err)
			c.countError("", kindOf(err))
		}
	}
	return nil
}

// sharedDirAllowed reports whether the user accepted a directory others
// can write: explicitly, or by signing entries (then a planted entry fails
// verification).
func sharedDirAllowed(o config.Options) bool { return o.AllowSharedDir || o.SigningKey.Enabled() }

// checkTrusted refuses a cache directory owned by another user or
// writable by others (by group too, unless XLACACHE_DIR_MODE asks for a
// group-writable directory), like ssh and Go's module cache.
func (c *Cache) checkTrusted(dir string, st fs.FileInfo) error {
	err := trustedDir(dir, st, c.opts.EffectiveDirMode()&0o020 != 0)
	if err != nil && sharedDirAllowed(c.opts) {
		if !c.opts.SigningKey.Enabled() {
			c.logger.Warn("using a cache directory others can write without XLACACHE_SIGNING_KEY: they can make this process run their code", "dir", dir, "reason", err)
		}
		return nil
	}
	return err
}

func trustedDir(dir string, st fs.FileInfo, groupOK bool) error {
	uid := os.Geteuid()
	if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid {
		return fmt.Errorf("%w %s: owned by uid %d, not by this user (uid %d); set XLACACHE_SIGNING_KEY (and XLACACHE_ALLOW_SHARED_DIR=1) to share a directory", errSharedDir, dir, sys.Uid, uid)
	}
	perm := st.Mode().Perm()
	if perm&0o002 != 0 || (perm&0o020 != 0 && !groupOK) {
		return fmt.Errorf("%w %s: mode %04o lets other users plant entries; chmod go-w it, or set XLACACHE_SIGNING_KEY (and XLACACHE_ALLOW_SHARED_DIR=1) to share it", errSharedDir, dir, perm)
	}
	return nil
}

// checkCreateParent refuses to create the cache directory under a parent
// others can write (they could swap what we create for their own): the
// nearest existing ancestor of a missing dir must not be writable by
// group or others unless it is sticky and owned by root or us, like /tmp.
func (c *Cache) checkCreateParent(dir string) error {
	if sharedDirAllowed(c.opts) {
		return nil
	}
	if _, err := os.Lstat(dir); err == nil {
		return nil
	}
	p := dir
	for {
		parent := filepath.Dir(p)
		if parent == p {
			return nil
		}
		p = parent
		st, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil // MkdirAll reports it
		}
		perm := st.Mode().Perm()
		groupOK := c.opts.EffectiveDirMode()&0o020 != 0
		if perm&0o002 == 0 && (perm&0o020 == 0 || groupOK) {
			return nil
		}
		sys, ok := st.Sys().(*syscall.Stat_t)
		if st.Mode()&fs.ModeSticky != 0 && ok && (sys.Uid == 0 || int(sys.Uid) == os.Geteuid()) {
			return nil
		}
		return fmt.Errorf("%w %s: it would be created under %s (mode %04o), which other users can write", errSharedDir, dir, p, perm)
	}
}

// adminRoot resolves an admin command's directory argument (a symlinked
// directory is normal) and opens a root on it.
func adminRoot(dir string) (*os.Root, string, error) {
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, "", err
	}
	root, err := os.OpenRoot(resolved)
	if err != nil {
		return nil, "", err
	}
	return root, resolved, nil
}

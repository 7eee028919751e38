//go:build unix

package cache

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// maxLinkDepth bounds the symbolic links checkLinkOwners follows, as the
// kernel's ELOOP does.
const maxLinkDepth = 40

// checkLinkOwners refuses a cache directory whose path goes through a
// symbolic link owned by neither this user nor root, as ssh refuses such
// links to its files: another user who can create the directory's name
// (under /tmp or a shared scratch) could otherwise point it at a directory
// this user owns, which would pass every owner and mode check and be
// filled with cache files. Components that do not exist yet are left to
// MkdirAll and EvalSymlinks.
func checkLinkOwners(dir string) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil // EvalSymlinks reports it
	}
	return linkOwners(abs, os.Geteuid(), 0)
}

func linkOwners(path string, uid, depth int) error {
	if depth > maxLinkDepth {
		return fmt.Errorf("%s: too many levels of symbolic links", path)
	}
	cur := "/"
	for _, comp := range strings.Split(filepath.Clean(path), "/") {
		if comp == "" {
			continue
		}
		next := filepath.Join(cur, comp)
		st, err := os.Lstat(next)
		if err != nil {
			return nil
		}
		if st.Mode()&fs.ModeSymlink == 0 {
			cur = next
			continue
		}
		if sys, ok := st.Sys().(*syscall.Stat_t); ok && int(sys.Uid) != uid && sys.Uid != 0 {
			return fmt.Errorf("%w %s: it goes through the symbolic link %s, owned by uid %d, neither this user (uid %d) nor root; remove the link or point XLACACHE_DIR at the directory itself",
				errSharedDir, path, next, sys.Uid, uid)
		}
		target, err := os.Readlink(next)
		if err != nil {
			return nil
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(cur, target)
		}
		if err := linkOwners(target, uid, depth+1); err != nil {
			return err
		}
		if cur, err = filepath.EvalSymlinks(next); err != nil {
			return nil
		}
	}
	return nil
}

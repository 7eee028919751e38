package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// MkdirInside creates directory p and its missing parents below root with
// mode perm, refusing to pass through anything under root that is not a
// real directory. Unlike os.MkdirAll it never follows a symlink planted in
// the tree, so a writer that installs files from untrusted names (an
// import, a sync) cannot be redirected outside root. root itself must
// exist; p must be inside it.
func MkdirInside(root, p string, perm fs.FileMode) error {
	rel, err := filepath.Rel(root, p)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return fmt.Errorf("%s is not inside %s", p, root)
	}
	cur := root
	for _, seg := range strings.Split(rel, string(filepath.Separator)) {
		if seg == "." || seg == "" {
			continue
		}
		cur = filepath.Join(cur, seg)
		st, err := os.Lstat(cur)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := os.Mkdir(cur, perm); err != nil && !errors.Is(err, fs.ErrExist) {
				return err
			}
		case err != nil:
			return err
		case !st.IsDir():
			return fmt.Errorf("%s exists and is not a directory", cur)
		}
	}
	return nil
}

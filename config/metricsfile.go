package config

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// checkMetricsFile reports a MetricsFile that cannot be used: one inside
// the cache directory dir (readers never write there, and a writer's trim
// would see a file the layout does not explain), the directory itself, or
// a path with a NUL byte. Symbolic links in either path are resolved as
// far as the paths exist, so a link cannot hide the metrics file inside
// the cache.
func checkMetricsFile(file, dir string) error {
	if file == "" {
		return nil
	}
	if strings.ContainsRune(file, 0) {
		return fmt.Errorf("MetricsFile %q contains a NUL byte", file)
	}
	if strings.HasSuffix(file, string(filepath.Separator)) {
		return fmt.Errorf("MetricsFile %q names a directory; want a file such as /var/lib/node_exporter/textfile/xlacache.prom", file)
	}
	if dir == "" {
		return nil
	}
	f, ferr := resolvePath(file)
	d, derr := resolvePath(dir)
	if ferr != nil || derr != nil {
		return fmt.Errorf("MetricsFile %q: %w", file, errors.Join(ferr, derr))
	}
	if rel, err := filepath.Rel(d, f); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return fmt.Errorf("MetricsFile %q is inside the cache directory %s: choose a path outside it (%s), for example the node exporter's textfile directory", file, dir, EnvMetricsFile)
	}
	return nil
}

// resolvePath makes p absolute and resolves the symbolic links of its
// longest existing prefix; the rest is appended as written (cleaned).
func resolvePath(p string) (string, error) {
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	rest := ""
	for cur := abs; ; {
		r, err := filepath.EvalSymlinks(cur)
		if err == nil {
			return filepath.Join(r, rest), nil
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrInvalid) {
			// Unreadable (permission): compare as written.
			return abs, nil
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return abs, nil
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

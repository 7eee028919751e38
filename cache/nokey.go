package cache

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
)

// NoKeyReason says, for a report, why a compile through c had no cache
// key: the directory is unusable (with the reason), no directory is set,
// or the backend could not derive a key. dir is the directory as the user
// configured it, which the message names.
func (c *Cache) NoKeyReason(dir string) string {
	switch {
	case c.Dir() != "" || c.Shared() != nil:
		return "no key: the backend could not derive one; compiled without the cache"
	case dir == "":
		return "cache off: set XLACACHE_DIR"
	}
	return "cache directory unusable: " + dirProblem(dir)
}

// dirProblem says why dir cannot serve as a cache directory, for a cache
// that found it unusable when it opened (its own reason went to the log).
func dirProblem(dir string) string {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Sprintf("%s is not a directory", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err.Error()
	}
	// Missing, or there but not usable: creating it (and the tiers in it)
	// fails the way it failed for the cache.
	probe, err := os.MkdirTemp(dir, ".tmp-probe-")
	if err == nil {
		os.Remove(probe)
		return fmt.Sprintf("%s could not be set up when the cache opened (see the warning above)", dir)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("%s does not exist and could not be created (see the warning above)", dir)
	}
	return err.Error()
}

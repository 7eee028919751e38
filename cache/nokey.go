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
	return "cache directory unusable: " + c.dirProblem(dir)
}

// dirProblem says why dir cannot serve as a cache directory, for a cache
// that found it unusable when it opened (its own reason went to the log).
func (c *Cache) dirProblem(dir string) string {
	st, err := os.Stat(dir)
	switch {
	case err == nil && !st.IsDir():
		return fmt.Sprintf("%s is not a directory", dir)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return err.Error()
	}
	if c.dirErr != nil {
		// Open's own reason.
		return c.dirErr.Error()
	}
	// Nothing is written to find out more: the directory was refused or
	// unusable, and the warning logged when the cache opened says why.
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("%s does not exist and could not be created (see the warning above)", dir)
	}
	return fmt.Sprintf("%s could not be set up when the cache opened (see the warning above)", dir)
}

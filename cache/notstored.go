package cache

import (
	"fmt"
	"time"

	"github.com/xlacache/xlacache/config"
)

// notStoredReason says why a compile's executable, of size bytes and worth
// compileTime, is not in the cache after a writer's Put: a threshold the
// user can change, naming its variable, or "" when no threshold explains it
// (a failure Put logged, or another writer's entry won).
func (c *Cache) notStoredReason(compileTime time.Duration, size int) string {
	o := c.opts
	switch {
	case compileTime < o.MinCompileTime:
		return fmt.Sprintf("compiled faster than %s=%g; only slower compiles are worth storing (set it to 0 to store every compile)",
			config.EnvMinCompileTime, o.MinCompileTime.Seconds())
	case int64(size) < o.MinEntrySize:
		return fmt.Sprintf("%d bytes, smaller than %s=%d", size, config.EnvMinEntrySize, o.MinEntrySize)
	case o.MaxSize > 0 && int64(size) > o.MaxSize:
		return fmt.Sprintf("%d bytes, larger than %s=%d", size, config.EnvMaxSize, o.MaxSize)
	}
	return ""
}

// readerNotStored is Report.NotStored for a process that only reads.
const readerNotStored = "this process only reads the cache (" + config.EnvRole + ", or a process index other than 0)"

// verifyOnlyNotStored is Report.NotStored for a process whose keys verify
// but cannot sign (config.Options.VerifyOnly).
const verifyOnlyNotStored = "this process only reads the cache: its Ed25519 keys verify but cannot sign (" + config.EnvVerifyKeys + " without " + config.EnvSigningPrivateKeyFile + ")"

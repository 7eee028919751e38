package cache

import "sync"

// Hooks for the external test package (cache_test), whose tests open
// caches through xlacache.Open.

// ResetUnsignedWarning lets the next cache with an unsigned shared tier
// warn again, as in a new process.
func ResetUnsignedWarning() { warnUnsignedOnce = sync.Once{} }

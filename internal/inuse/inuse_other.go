//go:build !linux

package inuse

// OpenForWrite has no portable implementation; outside Linux only the
// grace period and the re-check protect files being written.
func OpenForWrite(string) map[string]bool { return map[string]bool{} }

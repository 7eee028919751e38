//go:build !linux

package jaxcache

// openForWrite has no portable implementation; outside Linux only the
// modification-time grace period protects files being written.
func openForWrite(string) map[string]bool { return map[string]bool{} }

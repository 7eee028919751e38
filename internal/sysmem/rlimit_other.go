//go:build !linux

package sysmem

// systemRlimits reports no rlimits: outside Linux there is no
// /proc/self/status to say how much of them the process already uses.
func systemRlimits() []Rlimit { return nil }
